"""A case's schedule as a ``replay`` trace, and what a policy predicts from it.

The trace follows the real clients' protocol: mount, ReMount 10 ms later (their first Ping
answers ``NEED_REMOUNT`` at once), Pings when the real master logged them before the fault and
one a second after that (one a second from the mount when there is no log), nothing while
silent, and on resuming a Ping and a ReMount (a no-op for a client that is still ready). A
master pause is a ``stall``; each client's Ping sent during it is buffered and handled when the
master resumes, before its next tick (the usual order; :func:`monitor_first` gives the others),
followed by the client's ReMount (what it sends when the Ping answers ``NEED_REMOUNT``). The
objects are put at the time the real ones were, counted per holder: each holder's segment in the
trace is sized to hold exactly the objects the real master placed on it, so the model's
allocation reproduces the real placement counts (which key lands where differs; what is compared
is counted per holder). ``get`` probes at the real probes' times count what is visible; a last
probe 30 s later shows where ``rfc`` ends up.
"""

import dataclasses
import json
import subprocess

from .cases import OBJECT

RFC_SUSPICION_TTL_S = 20  # the library's default suspicion TTL
TAIL_MS = 30_000


def _size(sched, name):
    n = sched.placement.get(name, 0)
    if sched.in_flight and sched.in_flight[1] == name:
        n += 1
    return max(n * OBJECT, 1)


def _silent(sched, name, t):
    return any(a <= t and (b is None or t < b) for a, b in sched.silent.get(name, []))


def _paused(sched, t):
    p = sched.master_pause
    return p is not None and p[0] <= t < p[1]


def _first_fault(sched):
    starts = [a for v in sched.silent.values() for a, _ in v]
    if sched.master_pause:
        starts.append(sched.master_pause[0])
    return min(starts, default=None)


def _ping_times(sched, name, mount_ms, fault, end_ms):
    """When ``name`` pings: the Pings the real master logged before the first fault, then one a
    second after the last of them (or, with no log, one a second from the mount on)."""
    seen = [t for t in (sched.pings or {}).get(name, []) if fault is None or t < fault]
    t = (seen[-1] if seen else mount_ms) + 1000
    later = []
    while t <= end_ms:
        later.append(t)
        t += 1000
    return seen + later


def _resume(sched, tick_ms=1000):
    """(ms of the buffered Pings that come before the monitor's next tick, ms of the others)
    after a master pause. The stall ends at the first of these. With :attr:`buffered_first` set
    the pause ends 1 ms before a tick, so the trace runs the first group, the tick, then the
    second group; otherwise all come at the resume, and a resume that falls on a tick is moved
    1 ms later (the trace runs a tick before the ops of its millisecond)."""
    if not sched.master_pause:
        return None, None
    b = sched.master_pause[1]
    if sched.buffered_first is None:
        b += b % tick_ms == 0
        return b, b
    tick = -(-b // tick_ms) * tick_ms
    return tick - 1, tick


def build(sched, policy):
    """The trace's lines (JSON strings) for ``policy`` (``legacy`` or ``rfc``)."""
    if policy == "legacy":
        config = {"client_live_ttl_sec": sched.ttl_s}
    else:
        config = {"client_active_ttl_sec": sched.ttl_s, "client_suspicion_ttl_sec": RFC_SUSPICION_TTL_S}
    end_ms = sched.after_ms + TAIL_MS
    ops = []  # (t_ms, is the stall, sequence, op)

    def add(t, op):
        # A stall sorts after everything else at its millisecond: what the harness did in that
        # millisecond (the probe before the fault, a ping) happened before it stopped the master.
        ops.append((t, op["op"] == "stall", len(ops), dict(t_ms=t, **op)))

    resume = _resume(sched)
    fault = _first_fault(sched)
    for name, (mount_ms, segment) in sorted(sched.clients.items()):
        spec = [{"segment": segment, "size": _size(sched, name)}]
        add(mount_ms, {"op": "mount", "client": name, "segment": segment, "size": spec[0]["size"]})
        add(mount_ms + 10, {"op": "remount", "client": name, "segments": spec})
        buffered = False
        for t in _ping_times(sched, name, mount_ms, fault, end_ms):
            if _silent(sched, name, t):
                pass
            elif _paused(sched, t):
                buffered = True
            else:
                add(t, {"op": "ping", "client": name})
        if buffered:
            # The buffered Ping, then the ReMount the client sends if it answered NEED_REMOUNT
            # (the monitor ran first and expired it); a no-op for a client that is still ready.
            at = resume[0] if sched.buffered_first is None or name in sched.buffered_first else resume[1]
            add(at, {"op": "ping", "client": name})
            add(at, {"op": "remount", "client": name, "segments": spec})
        for a, b in sched.silent.get(name, []):
            if b is None:
                continue
            add(b, {"op": "ping", "client": name})
            if sched.in_flight and sched.in_flight[1] == name:
                add(b, {"op": "put_end", "key": sched.in_flight[0]})
            add(b, {"op": "remount", "client": name, "segments": spec})
            t = b + 1000
            while t <= end_ms:
                if not _silent(sched, name, t):
                    add(t, {"op": "ping", "client": name})
                t += 1000
    keys = [f"{h}-{i}" for h, n in sorted(sched.placement.items()) for i in range(n)]
    for k in keys:
        add(sched.puts_ms, {"op": "put", "key": k, "size": OBJECT})
        add(sched.puts_ms, {"op": "put_end", "key": k})
    if sched.in_flight:
        add(sched.in_flight[2], {"op": "put", "key": sched.in_flight[0], "size": OBJECT})
    if sched.master_pause:
        a = sched.master_pause[0]
        add(a, {"op": "stall", "ms": resume[0] - a})
    for t in (sched.before_ms, sched.after_ms, end_ms):
        for k in keys:
            add(t, {"op": "get", "key": k})
    ops.sort(key=lambda o: o[:3])
    # Nothing may come between a stall and its end (the trace contract): later ops wait for it.
    lines = [json.dumps({"config": config})]
    stall_end = None
    for t, _, _, op in ops:
        if stall_end is not None and t < stall_end:
            continue  # pings scheduled inside the pause (handled as buffered ones above)
        lines.append(json.dumps(op))
        if op["op"] == "stall":
            stall_end = t + op["ms"]
    return lines, (sched.before_ms, sched.after_ms, end_ms)


def replay(binary, lines, policy):
    """Runs ``mooncake-liveness replay --policy POLICY`` on the lines; its output lines, parsed."""
    out = subprocess.run(
        [binary, "replay", "--policy", policy, "-"],
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        timeout=60,
    )
    if out.returncode != 0:
        raise SystemExit(f"error: replay --policy {policy} failed ({out.returncode}): {out.stderr.strip()}")
    return [json.loads(line) for line in out.stdout.splitlines()]


def monitor_first(sched, phase_ms, first=frozenset()):
    """``sched`` for the other order of a master pause: main's monitor tick runs before the
    buffered Pings of the clients not in ``first`` (the Pings of those in it come before the
    tick). The real master's tick phase is not observed (its monitor thread starts some time
    after the process), so every time is moved ``phase_ms`` later against the model's ticks;
    :func:`_resume` puts the tick at the resume. :func:`predict` with ``shift_ms=phase_ms``
    reports times on ``sched``'s clock."""

    def mv(t):
        return None if t is None else t + phase_ms

    a, b = sched.master_pause
    return dataclasses.replace(
        sched,
        clients={n: (mv(m), seg) for n, (m, seg) in sched.clients.items()},
        silent={n: [(mv(x), mv(y)) for x, y in v] for n, v in sched.silent.items()},
        master_pause=(mv(a), mv(b)),
        puts_ms=mv(sched.puts_ms),
        in_flight=sched.in_flight and (*sched.in_flight[:2], mv(sched.in_flight[2]), mv(sched.in_flight[3])),
        before_ms=mv(sched.before_ms),
        after_ms=mv(sched.after_ms),
        pings=sched.pings and {n: [mv(t) for t in v] for n, v in sched.pings.items()},
        buffered_first=frozenset(first),
    )


def orders(sched):
    """Every ``first`` for :func:`monitor_first` the log allows: each client whose first Ping
    after the resume began after the expiry came after the tick; the others either way. With no
    log of the race (no expiry at the resume, or an older schedule), every subset of the clients."""
    names = sorted(sched.clients)
    order = sched.resume_order or {}
    free = [n for n in names if order.get(n, "either") == "either"]
    return [frozenset(c for i, c in enumerate(free) if mask >> i & 1) for mask in range(1 << len(free))]


def predict(sched, binary, policy, shift_ms=0):
    """What ``policy`` predicts: the same fields as :class:`conformance.cases.Observed`;
    ``shift_ms`` is taken off the expiry times (see :func:`monitor_first`)."""
    lines, (before, after, end) = build(sched, policy)
    # In the monitor-first orders the trace's pause lasts to its next tick, which stands for the
    # real resume: expiries from then on are reported on the real clock.
    resume = _resume(sched)[1]
    stretch = resume - sched.master_pause[1] if sched.buffered_first is not None else 0
    out = replay(binary, lines, policy)
    gone_kind = "expired" if policy == "legacy" else "offboarded"
    expired_at = {}
    suspected = set()
    visible = {before: {}, after: {}, end: {}}
    withheld = {before: {}, after: {}, end: {}}
    remounted = {}
    put_end_ok = None
    holder = {}
    for o in out:
        if o.get("op") == "put" and o["ok"]:
            holder[o["key"]] = o["replicas"][0]["client"]
        t = o["t_ms"]
        if o.get("event") == gone_kind and o["client"] not in expired_at:
            expired_at[o["client"]] = t
        if o.get("event") == "transition" and o.get("to") == "Suspected" and t <= after:
            suspected.add(o["client"])
        if o.get("op") == "get" and t in visible:
            h = holder.get(o["key"], "?")
            if o["ok"]:
                visible[t][h] = visible[t].get(h, 0) + 1
            elif o["error"] == "REPLICA_IS_NOT_READY":
                withheld[t][h] = withheld[t].get(h, 0) + 1
        if o.get("op") == "remount" and o["client"] in expired_at:
            remounted[o["client"]] = remounted.get(o["client"], False) or o["ok"]
        if o.get("op") == "put_end" and sched.in_flight and o["key"] == sched.in_flight[0]:
            put_end_ok = o["ok"]
    return {
        "expired": sorted(c for c, t in expired_at.items() if t <= after),
        "expired_by_end": sorted(expired_at),
        "expiry_at_ms": {c: t - shift_ms - (stretch if stretch and t >= resume else 0) for c, t in expired_at.items()},
        "suspected": sorted(suspected),
        "visible_before": visible[before],
        "visible_after": visible[after],
        "visible_end": visible[end],
        "withheld_after": withheld[after],
        "withheld_end": withheld[end],
        "remounted": remounted,
        "put_end_ok": put_end_ok,
        "trace": lines,
    }
