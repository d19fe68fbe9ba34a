"""Conformance of mooncake-liveness's legacy model against the real ``mooncake_master``.

Run by ``scripts/conformance.sh`` inside a network namespace of its own (``unshare -n``): it
starts the real master (PyPI ``mooncake-transfer-engine-non-cuda``) and real clients
(``mooncake.store.MooncakeDistributedStore`` over tcp), injects each fault schedule of
:mod:`conformance.cases`, records what the master did, replays the same schedule with
``mooncake-liveness replay --policy legacy`` and ``--policy rfc``, and writes
``docs/CONFORMANCE.md``. Modules:

- :mod:`conformance.procs`: child processes, each stopped by id (and killed if we die).
- :mod:`conformance.net`: the namespace's ``lo`` and veth pair.
- :mod:`conformance.realmaster`: the master process, its log and its metrics.
- :mod:`conformance.worker`: one client process driven over stdin/stdout.
- :mod:`conformance.cases`: the fault schedules and what was observed.
- :mod:`conformance.trace`: a schedule as a replay trace, and what a policy predicts.
- :mod:`conformance.report`: the comparison and ``docs/CONFORMANCE.md``.
- :mod:`conformance.selftest`: the comparison catches wrong predictions.
"""
