"""Conformance of mooncake-liveness's models against the real Mooncake masters.

Run by ``scripts/conformance.sh`` inside a network namespace of its own (``unshare -n``). Every
case runs on each master of :mod:`conformance.masters` (PyPI's 0.3.13.post1, main's single-TTL
monitor, and 0.3.14, upstream's implementation of the liveness RFC; ``--master`` adds more)
with real clients (``mooncake.store.MooncakeDistributedStore`` over tcp). The master's log is
its transcript; it is replayed with ``mooncake-liveness replay --policy legacy`` or ``--policy
rfc`` on the master's own clock, and the two are compared, times included. Modules:

- :mod:`conformance.procs`: child processes, each stopped by id (and killed if we die).
- :mod:`conformance.net`: the namespace's ``lo`` and veth pair, and a namespace per client that
  can be partitioned.
- :mod:`conformance.masters`: which masters, their flags, the model each is compared with.
- :mod:`conformance.realmaster`: a master process, its log and its metrics.
- :mod:`conformance.masterlog`: the master's log as records (RPCs handled, liveness lines).
- :mod:`conformance.worker`, :mod:`conformance.client`: one client process, driven over stdio.
- :mod:`conformance.run`: one case on one master, and its record.
- :mod:`conformance.cases`: the fault schedules.
- :mod:`conformance.timebase`: the master's clock as the model's (every real tick a model tick).
- :mod:`conformance.trace`: a record as a replay trace, and what a policy predicts from it.
- :mod:`conformance.compare`: a prediction against the record, item by item.
- :mod:`conformance.report`: the cells and ``docs/CONFORMANCE.md``.
- :mod:`conformance.mutants`, :mod:`conformance.selftest`: deliberately wrong models, which the
  recorded runs of ``conformance/testdata`` must catch.
"""
