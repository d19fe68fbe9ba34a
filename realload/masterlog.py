"""The master's own account of a run, read from its log (``--vmodule=scoped_vlog_timer=1``).

Every RPC of ``rpc_service.cpp`` logs a ``<Name> request: ...`` line before the handler and a
``<Name> response: ..., latency=<n>us`` line after it (``scoped_vlog_timer.h``), from the thread
that runs the handler; the two are paired per thread. A Ping is *recorded* when its response
line is written (the record was updated before the handler returned). Liveness transitions are
the master's ``action=...`` lines: ``client_liveness_suspected`` / ``client_liveness_recovered`` /
``client_liveness_offline`` (the RFC master, and ``mooncake-liveness serve``, which writes the same
lines) and ``client_expired`` (the legacy one).
"""

import datetime
import re

_LINE = re.compile(r"^([IWEF])(\d{4}) (\d\d:\d\d:\d\d\.\d{6})\s+(\d+) \S+\] (.*)$")
_REQUEST = re.compile(r"^(\w+) request: (.*)$")
_RESPONSE = re.compile(r"^(\w+) response: (.*), latency=(\d+)us$")
_CLIENT = re.compile(r"client_id=([0-9]+-[0-9]+)")
_ACTION = re.compile(r"\baction=(client_liveness_suspected|client_liveness_recovered|client_liveness_offline|client_expired)\b")


def _time(mmdd, hms, year):
    return datetime.datetime.strptime(f"{year}{mmdd} {hms}", "%Y%m%d %H:%M:%S.%f").timestamp()


class Rpc:
    """One handled request: name, client id (if the request names one), when the response was
    written (Unix time), the handler's latency (µs), and the response text."""

    __slots__ = ("name", "client", "at", "latency_us", "response")

    def __init__(self, name, client, at, latency_us, response):
        self.name, self.client, self.at, self.latency_us, self.response = name, client, at, latency_us, response


def parse(path, year=None):
    """``(rpcs, transitions)``: every paired request/response, and ``[(time, client, action)]``."""
    year = year or datetime.datetime.now().year
    pending, rpcs, transitions = {}, [], []
    with open(path, errors="replace") as f:
        for line in f:
            m = _LINE.match(line.rstrip("\n"))
            if not m:
                continue
            at = _time(m.group(2), m.group(3), year)
            thread, msg = m.group(4), m.group(5)
            req = _REQUEST.match(msg)
            if req:
                c = _CLIENT.search(req.group(2))
                pending[thread] = (req.group(1), c.group(1) if c else None)
                continue
            resp = _RESPONSE.match(msg)
            if resp:
                name, client = pending.pop(thread, (resp.group(1), None))
                if name == resp.group(1):
                    rpcs.append(Rpc(name, client, at, int(resp.group(3)), resp.group(2)))
                continue
            act = _ACTION.search(msg)
            c = _CLIENT.search(msg)
            if act and c:  # in either order, other fields between (serve adds incarnation, from, to)
                transitions.append((at, c.group(1), act.group(1)))
    return rpcs, transitions


_VERSION = re.compile(r"master version: (.*)$")
_THREADS = re.compile(r"\brpc_thread_num=(\d+)")


def startup(path):
    """``(version, rpc_thread_num)`` as the master's start-up lines state them (``None`` where
    a master does not: the legacy one prints no version)."""
    version = threads = None
    with open(path, errors="replace") as f:
        for line in f:
            v = _VERSION.search(line)
            version = version or (v and v.group(1).strip())
            t = _THREADS.search(line)
            threads = threads or (t and int(t.group(1)))
            if version and threads:
                break
    return version, threads


def ping_ok(rpc):
    """Did this Ping answer OK (``client_status`` 1; 2 is NEED_REMOUNT)?"""
    return '"client_status":1' in rpc.response


def worst_gaps(rpcs, clients, start, end):
    """Per client of ``clients``: the longest time between two recorded OK Pings within
    [start, end], the gap still open at ``end`` included. Clients with no Ping in the window
    count the whole window."""
    seen = {c: [] for c in clients}
    for r in rpcs:
        if r.name == "Ping" and r.client in seen and ping_ok(r):
            seen[r.client].append(r.at)
    gaps = {}
    for c, times in seen.items():
        times = sorted(t for t in times if start <= t <= end)
        marks = [start] + times + [end]
        gaps[c] = max(b - a for a, b in zip(marks, marks[1:]))
    return gaps


def missing_figures(rpcs, steady, joined, joiners, ops_per_s):
    """What ``--check`` requires of a run (a list of failures, empty when it passed): every
    steady client has a paired Ping answered OK in the master's log, each of the ``joiners``
    joiners a paired ReMount with its client id, and the clients counted operations. It judges
    no timing: it fails when the log cannot be read as the real master's."""
    failures = []
    ok = {r.client for r in rpcs if r.name == "Ping" and ping_ok(r)}
    missing = [c for c in steady if c not in ok]
    if not steady or None in steady or missing:
        failures.append(f"steady clients without an OK Ping in the master's log: {missing or steady}")
    remounted = {r.client for r in rpcs if r.name == "ReMountSegment"}
    if len(joined) != joiners or None in joined or not joined <= remounted:
        failures.append(f"joiners without a ReMount in the master's log: {sorted(map(str, joined - remounted))}")
    if ops_per_s <= 0:
        failures.append(f"the clients counted no operation (ops_per_s={ops_per_s})")
    return failures


def percentiles(values):
    """p50 / p99 / max of a list (0s when empty)."""
    if not values:
        return {"p50": 0, "p99": 0, "max": 0}
    v = sorted(values)
    pick = lambda q: v[min(len(v) - 1, int(q * len(v)))]  # noqa: E731 - a local one-liner
    return {"p50": pick(0.50), "p99": pick(0.99), "max": v[-1]}
