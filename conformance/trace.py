"""A run's record as a ``replay`` trace, and what a policy predicts from it.

The trace is the master's own transcript (:mod:`conformance.masterlog`) on the model's clock
(:mod:`conformance.timebase`): every MountSegment, ReMountSegment and Ping of the case's
clients at the time the real master began to handle it, the PutEnd of a Put in flight, and a
master pause as a ``stall``. The stored objects are put at the time the real ones were, counted
per holder: each holder's segment in the trace is sized to hold exactly the objects the real
master placed on it, so the model's allocation reproduces the real placement counts (which key
lands where differs; what is compared is counted per holder). The reader's probes are ``get``
lines of every object at the probes' times.

When a paused master resumes, its monitor (awake at once) and the Pings buffered during the
pause race. Ops the log shows after the resume tick's first liveness line come after that tick;
ops before it may have been handled on either side (the log line is written before the
handler's work), and a run with no liveness line at the resume is modelled with the Pings
first. :func:`race_orders` lists the orders the log allows.
"""

import dataclasses
import itertools
import json
import subprocess

from . import timebase as tbmod
from .run import OBJECT

RACE_MS = 100
STEADY_MS = 100.0
LIVENESS = ("expired", "suspected", "recovered", "offline", "offboarded")
# Committed by a monitor tick (a recovery happens when its signal is handled, not at a tick).
AT_TICK = ("expired", "suspected", "offline", "offboarded")
SIGNALS = ("mount", "remount", "ping")


def base(record):
    """The record's :class:`~conformance.timebase.TimeBase`."""
    log = record["log"]
    first = next(r for r in log if r["kind"] == "anchor")
    anchor = first["t"]
    acts = [r["t"] for r in log if r["kind"] in AT_TICK]
    lat = max((r.get("latency_us", 0) for r in log if r["kind"] == "ping"), default=0)
    others = [r["t"] for r in log if r["kind"] not in AT_TICK and r["kind"] not in ("anchor", "tick")]
    ticks = [(r["t"], r["us"]) for r in log if r["kind"] == "tick"]
    return tbmod.TimeBase(
        anchor,
        resumed(record),
        acts,
        others,
        lat,
        ping_jitter(record),
        record.get("tick_ms", 1000),
        first.get("schedule", "sleep"),
        ticks,
    )


def ping_jitter(record):
    """How much a 1 s sleep loop strayed on this machine before the fault, ms: the largest
    distance of a steady Ping interval from the median interval (a client's Ping thread sleeps
    1 s between Pings, as the monitor thread does between ticks). An interval more than
    :data:`STEADY_MS` from the median is a fault the case injected (a silenced client, a held
    RPC thread), not jitter; each client's first interval spans its start."""
    by = {}
    fault = record.get("fault") or float("inf")
    for r in record["log"]:
        if r["kind"] == "ping" and r["t"] < fault:
            by.setdefault(r.get("client"), []).append(r["t"])
    gaps = [(b - a) * 1000.0 for ts in by.values() for a, b in zip(ts[1:], ts[2:])]
    if len(gaps) < 2:
        return 0.0
    mid = sorted(gaps)[len(gaps) // 2]
    return max((abs(g - mid) for g in gaps if abs(g - mid) <= STEADY_MS), default=0.0)


def resumed(record):
    """The pauses, each resume moved to the first line the master logged after the pause if
    that came first (the harness reads its clock just before it sends SIGCONT)."""
    out = []
    for p, r in record["pauses"]:
        if r is None:
            continue
        after = [x["t"] for x in record["log"] if x["t"] > p]
        out.append((p, min([r] + after)))
    return out


def names(record):
    return {c["id"]: n for n, c in record["clients"].items()}


def who(record, rec):
    """The client name of a log record (a mount without its action line: by segment and time)."""
    by_id = names(record)
    if rec.get("client") in by_id:
        return by_id[rec["client"]]
    cands = [(c["started"], n) for n, c in record["clients"].items() if c["segment"] == rec.get("segment") and c["started"] <= rec["t"]]
    return max(cands)[1] if cands else None


def sizes(record):
    """Each client's segment size in the trace: exactly the objects the real master put on it."""
    placement = (record["puts"] or {}).get("placement", {})
    out = {}
    for n, c in record["clients"].items():
        if c["segment"]:
            k = placement.get(n, 0) + (1 if record["in_flight"] and record["in_flight"]["holder"] == n else 0)
            out[n] = max(k * OBJECT, 1)
    return out


def segment_key(rec):
    """The trace's name of a mounted segment: its id, which both masters key segments by
    (upstream: ``mooncake-store/src/segment.cpp`` ``MountSegment`` at 3b5a594, ``mounted_segments_``
    by ``segment.id``; ``serve``: the core's segment is the id), not its name: a client mounts
    every piece of its global segment under the one name it was set up with (``real_client.cpp``
    and ``client_service.cpp`` ``segment.name = local_hostname_`` at 3b5a594). Records from before
    ids were read fall back to the name."""
    return rec.get("segment_id") or rec["segment"]


def segments(record):
    """Each client's segments, as the trace names them, from its mounts in the log (a ReMount's
    line does not list them; a client re-announces what it mounted)."""
    out = {}
    for rec in record["log"]:
        if rec["kind"] == "mount":
            name = who(record, rec)
            if name is not None and segment_key(rec) not in out.setdefault(name, []):
                out[name].append(segment_key(rec))
    for name, segs in out.items():
        if len(segs) > 1:
            raise SystemExit(f"error: {name} mounted {len(segs)} segments; the trace sizes one per client")
    return out


def keys(record):
    """The trace's object keys, holder by holder (``A-0``, ``A-1``, ..., ``V-0``, ...)."""
    placement = (record["puts"] or {}).get("placement", {})
    return [f"{h}-{i}" for h, n in sorted(placement.items()) for i in range(n)]


def race(record, tb):
    """For each pause the monitor woke from: (model ms of its wake tick, Unix time of the first
    liveness line at that tick or None, [log indexes of signals in the race window]). With every
    tick logged, the wake tick's end stands for the liveness line: a signal logged after it
    came after the tick, one logged before may have come on either side."""
    out = []
    for p, r in tb.wakes():
        window = [i for i, x in enumerate(record["log"]) if r <= x["t"] < r + RACE_MS / 1000.0]
        first = next((record["log"][i]["t"] for i in window if record["log"][i]["kind"] in LIVENESS), None)
        logged = tb.wake_tick(r) if tb.schedule == "logged" else None
        if logged is not None:
            # The tick's own line says when it ran: a signal logged after it ended came after it.
            first = logged[1]
        out.append((tb.wake_ms(r), first, [i for i in window if record["log"][i]["kind"] in SIGNALS]))
    return out


def race_orders(record, tb):
    """Every assignment the log allows: frozensets of log indexes handled before the resume
    tick. A signal logged after that tick's first liveness line came after it; one logged
    before may have come on either side; with no liveness line, every signal came first."""
    forced, free = set(), []
    for g, first, idx in race(record, tb):
        if first is None:
            forced.update(idx)
        else:
            free.extend(i for i in idx if record["log"][i]["t"] < first)
    free_clients = sorted({who(record, record["log"][i]) for i in free})
    out = []
    for mask in range(1 << len(free_clients)):
        chosen = {c for j, c in enumerate(free_clients) if mask >> j & 1}
        out.append(frozenset(forced | {i for i in free if who(record, record["log"][i]) in chosen}))
    return out


def build(record, config, tb, shift_ms=0, first=None, mutate=None):
    """The trace's lines (JSON strings) and, per line, the log index it came from, ``("probe",
    label)`` for a probe's ``get``, or None.
    ``shift_ms`` moves every signal that is not in a resume race; ``first`` is a
    :func:`race_orders` choice (default: the first one)."""
    if first is None:
        first = race_orders(record, tb)[0]
    size = sizes(record)
    ops = []  # (ms, sequence, op, log index)

    def add(ms, op, index=None):
        ops.append((int(round(ms)), len(ops), op, index))

    racing = {}  # log index -> model ms (pinned before or after its wake tick)
    wakes = race(record, tb)
    for g, firstline, idx in wakes:
        for i in idx:
            racing[i] = g - 1 if i in first else max(g, tb.ms(record["log"][i]["t"]))
    guards = [g for g, _, _ in wakes]
    mounted = segments(record)
    for i, rec in enumerate(record["log"]):
        name = who(record, rec) if rec["kind"] in SIGNALS or rec["kind"] == "put_end" else None
        if name is None:
            continue
        if i in racing:
            ms = racing[i]
        else:
            ms = tb.ms(rec["t"]) + shift_ms
            for g in guards:  # a shift never carries a signal across a resume tick
                raw = tb.ms(rec["t"])
                if raw >= g > ms:
                    ms = g
                if raw < g <= ms:
                    ms = g - 1
        if rec["kind"] == "mount":
            add(ms, {"op": "mount", "client": name, "segment": segment_key(rec), "size": size.get(name, 1)}, i)
        elif rec["kind"] == "remount":
            segs = [{"segment": seg, "size": size.get(name, 1)} for seg in mounted.get(name, [])]
            add(ms, {"op": "remount", "client": name, "segments": segs}, i)
        elif rec["kind"] == "ping":
            add(ms, {"op": "ping", "client": name}, i)
        elif rec["kind"] == "put_end" and record["in_flight"] and rec.get("key") == record["in_flight"]["key"]:
            add(ms, {"op": "put_end", "key": "in-flight"}, i)
    if record["puts"]:
        t = tb.ms(record["puts"]["t"])
        for k in keys(record):
            add(t, {"op": "put", "key": k, "size": OBJECT})
            add(t, {"op": "put_end", "key": k})
    if record["in_flight"]:
        add(tb.ms(record["in_flight"]["t"]), {"op": "put", "key": "in-flight", "size": OBJECT})
    for p in record["probes"]:
        for k in keys(record):
            add(tb.ms(p["t"]), {"op": "get", "key": k}, ("probe", p["label"]))
    # The model's monitor ticks when the real one did (logged ticks); before a pause's own stall
    # at the same millisecond (a tick that ran just before the stop).
    for at, wake in tb.align:
        add(at, {"op": "stall", "ms": 0, "wake_ms": wake})
    woke = {p: g for (p, _), (g, _, _) in zip(tb.wakes(), wakes)}
    paused = dict(resumed(record))
    for p, r in tb.wakes():
        # A pause stalls the trace from its start; a held-up monitor from the tick line before.
        start = int(round(tb.ms(p))) + (0 if p in paused else 1)
        g = woke[p]
        add(start, {"op": "stall", "ms": max(1, g - 1 - start), "wake_ms": max(1, g - start)})
    for p, r in paused.items():
        if p not in woke:  # too short to wake the monitor early: its ticks keep their grid
            start = int(round(tb.ms(p)))
            add(start, {"op": "stall", "ms": max(1, int(round(tb.ms(r))) - start)})
    if mutate is not None:
        ops = mutate(ops)
    ops.sort(key=lambda o: (o[0], o[1]))
    lines = [json.dumps({"config": config})]
    index = [None]
    stall_end = -1
    for ms, _, op, i in ops:
        if ms < stall_end:
            raise SystemExit(f"error: {op['op']} at {ms} ms falls inside a master pause of the trace")
        lines.append(json.dumps({"t_ms": max(ms, 0), **op}))
        index.append(i)
        if op["op"] == "stall":
            stall_end = ms + op["ms"]
    return lines, index


def replay(binary, lines, policy):
    """Runs ``mooncake-liveness replay --policy POLICY``; its output lines, parsed."""
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


@dataclasses.dataclass
class Prediction:
    """What a model said: liveness lines, probe answers, RPC outcomes."""

    transitions: list  # [(ms, client, kind)]
    probes: dict  # label -> {holder: {answer: count}}
    rpcs: dict  # log index -> (ok, error)
    in_flight_ok: object
    lines: list  # the trace
    out: list  # replay's output


def parse_output(out, index, record):
    holder = {}
    transitions, probes, rpcs = [], {}, {}
    in_flight_ok = None
    op_lines = iter(index[1:])
    for o in out:
        ev = o.get("event")
        if ev == "expired":
            transitions.append((o["t_ms"], o["client"], "expired"))
        elif ev == "offboarded":
            transitions.append((o["t_ms"], o["client"], "offboarded"))
        elif ev == "transition":
            kind = {"Suspected": "suspected", "Offline": "offline"}.get(o["to"])
            if o["to"] == "Active" and o["from"] == "Suspected":
                kind = "recovered"
            if kind:
                transitions.append((o["t_ms"], o["client"], kind))
        if "op" not in o:
            continue
        i = next(op_lines)
        if o["op"] == "put" and o["ok"]:
            holder[o["key"]] = o["replicas"][0]["client"]
        elif o["op"] == "get" and isinstance(i, tuple):
            ans = "ok" if o["ok"] else o.get("error", "error")
            h = holder.get(o["key"], o["key"].rsplit("-", 1)[0])
            per = probes.setdefault(i[1], {}).setdefault(h, {})
            per[ans] = per.get(ans, 0) + 1
        elif o["op"] in ("mount", "remount") and isinstance(i, int):
            rpcs[i] = (o["ok"], o.get("error"))
        elif o["op"] == "put_end" and o["key"] == "in-flight":
            in_flight_ok = o["ok"]
    return transitions, probes, rpcs, in_flight_ok


def predict(record, binary, policy, config, tb=None, shift_ms=0, first=None, mutant=None):
    """What ``policy`` under ``config`` predicts for the record. ``mutant`` (the self-test's
    deliberately wrong models, :mod:`conformance.mutants`) may change the config, the trace's
    ops and the prediction."""
    tb = tb or base(record)
    if mutant is not None:
        config = mutant.config(config)
    lines, index = build(record, config, tb, shift_ms, first, mutant.ops if mutant else None)
    out = replay(binary, lines, policy)
    transitions, probes, rpcs, in_flight_ok = parse_output(out, index, record)
    pred = Prediction(transitions, probes, rpcs, in_flight_ok, lines, out)
    return mutant.prediction(pred, record, tb) if mutant else pred


def alternatives(record, tb):
    """The (shift, race order) pairs to try: the measured slack either way, each race order."""
    shifts = (0, -tb.slack_ms, tb.slack_ms)
    return list(itertools.product(shifts, race_orders(record, tb)))
