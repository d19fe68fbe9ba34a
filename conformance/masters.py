"""The masters a run compares, one column each, and the model policy each is compared with.

A master is a command plus the flags every Mooncake master takes (``--rpc_port``,
``--enable_http_metadata_server=true``, ...) and its TTL flags, which depend on its policy:

- ``legacy`` (main's single-TTL monitor): ``--client_ttl=A``; compared with ``replay --policy
  legacy`` (the same TTL).
- ``rfc`` (Active -> Suspected -> Offline): ``--client_active_ttl_sec=A
  --client_suspicion_ttl_sec=S``; compared with ``replay --policy rfc`` under ``model_config``
  (for upstream's master: its 1 s monitor tick and no brakes, as it has none).

The two real masters are built in by :func:`real`, and our own master, ``mooncake-liveness
serve``, by :func:`serve`: compared with the ``rfc`` model under our library's defaults, and
(:mod:`conformance.crosscheck`) with upstream's real master wherever the two designs agree.
``--master LABEL=POLICY:COMMAND...`` on the command line adds another, compared with the
``rfc`` model under our library's defaults unless ``model_config`` says otherwise. Every master
must write glog-style lines with the actions :mod:`conformance.masterlog` reads.
"""

import dataclasses
import shlex

# What upstream's 0.3.14 master does that the library's defaults do not: a fixed 1 s monitor
# period (`kClientMonitorSleepMs`) and neither brake (mooncake-store/src/master_service.cpp,
# ClientMonitorFunc, at c19e7c52f, PR #2991's head).
UPSTREAM_RFC_MODEL = {"monitor_tick_ms": 1000, "stall_brake": False, "mass_suspicion_brake": False}
# Our own design: the library's defaults (100 ms tick, both brakes on), with the case's TTLs.
OUR_RFC_MODEL = {}


@dataclasses.dataclass(frozen=True)
class Kind:
    """One master column."""

    key: str  # short name: legacy-real, upstream-rfc-real, serve
    label: str  # the column header
    policy: str  # the model policy compared with it: "legacy" or "rfc"
    argv: tuple  # the command (the master binary, or a binary plus a subcommand)
    model_config: dict = dataclasses.field(default_factory=dict)
    version: str = ""  # for the report
    # One of upstream's masters: where its design differs from ours on purpose (a case's
    # ``design`` and ``by_design``), the difference is marked, not failed. Never for a master
    # of ours: every difference from our model fails.
    upstream: bool = False

    @property
    def tick_ms(self):
        """The master's monitor period as its model has it (main's and upstream's: 1 s)."""
        if self.policy == "legacy":
            return 1000
        return self.model_config.get("monitor_tick_ms", 100)

    def ttl_flags(self, active_s, suspicion_s):
        if self.policy == "legacy":
            return [f"--client_ttl={active_s}"]
        return [f"--client_active_ttl_sec={active_s}", f"--client_suspicion_ttl_sec={suspicion_s}"]

    def model(self, active_s, suspicion_s):
        """The ``replay`` configuration line's object that models this master."""
        if self.policy == "legacy":
            return {"client_live_ttl_sec": active_s}
        return {"client_active_ttl_sec": active_s, "client_suspicion_ttl_sec": suspicion_s, **self.model_config}


def real(legacy_master, rfc_master):
    """The two real masters: PyPI's 0.3.13.post1 (legacy) and 0.3.14 (upstream's RFC)."""
    return [
        Kind("legacy-real", "legacy real (0.3.13.post1)", "legacy", (legacy_master,), upstream=True),
        Kind("upstream-rfc-real", "upstream rfc real (0.3.14)", "rfc", (rfc_master,), dict(UPSTREAM_RFC_MODEL), upstream=True),
    ]


def serve(binary):
    """Our master: ``mooncake-liveness serve`` with the library's defaults, the configuration
    the model replays (``replay`` runs each offboarding job at the tick that commits Offline, as
    ``offboarding_mode: sync``, the library's default, does; ``serve`` defaults to ``async``, whose
    workers finish a job after that tick, by as much as the worker took to pick it up and run it)."""
    return Kind("serve", "serve (ours)", "rfc", (binary, "serve", "--offboarding_mode=sync"), dict(OUR_RFC_MODEL))


def parse_extra(spec):
    """``LABEL=POLICY:COMMAND ARGS...`` (``serve=rfc:target/debug/mooncake-liveness serve``)."""
    label, sep, rest = spec.partition("=")
    policy, sep2, command = rest.partition(":")
    if not sep or not sep2 or not label or policy not in ("legacy", "rfc") or not command.strip():
        raise SystemExit(f"error: --master {spec!r}: expected LABEL=POLICY:COMMAND, POLICY legacy or rfc")
    return Kind(label, label, policy, tuple(shlex.split(command)), dict(OUR_RFC_MODEL))
