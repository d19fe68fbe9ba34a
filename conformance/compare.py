"""A model's prediction against what a real master did, item by item.

Compared, for every client of the case:

- each liveness line, in order per client and kind (``expired``; ``suspected``,
  ``recovered``, ``offline``, ``offboarded``): the same lines must exist, and each model time
  must lie within the measured slack of the real one on the model's clock
  (:class:`~conformance.timebase.TimeBase`): that is, on the same monitor tick, since the real
  ticks are mapped onto the model's;
- each probe: the reader's answers per holder (a probe during which a real tick changed a
  client is not compared: each Get came on one side of it or the other) (``ok``, ``REPLICA_IS_NOT_READY``,
  ``OBJECT_NOT_FOUND``): what a Get of a Suspected owner's object returns, and the objects lost
  per holder;
- each MountSegment / ReMountSegment: accepted or refused (a remount refused while an
  offboarding runs, a segment name refused to a new client id);
- a Put stopped between PutStart and PutEnd: whether its PutEnd failed.

:func:`judge` tries the measured uncertainty either way (a signal within the slack of a
deadline could have fallen on either side of it) and every order of a resume race the log
allows, and keeps the first that agrees. A difference whose item the case lists in
``by_design`` is reported as a design difference, not a failure.
"""

import collections

from . import trace


def real_transitions(record, tb):
    """(model ms, client, kind) of each real liveness line: a line of a logged tick is at that
    tick (:meth:`~conformance.timebase.TimeBase.at_tick`)."""
    by_id = trace.names(record)
    return [
        (tb.at_tick(r["t"]) if r["kind"] in trace.AT_TICK else tb.ms(r["t"]), by_id[r["client"]], r["kind"])
        for r in record["log"]
        if r["kind"] in trace.LIVENESS and r.get("client") in by_id
    ]


def real_rpcs(record):
    out = {}
    for i, r in enumerate(record["log"]):
        if r["kind"] in ("mount", "remount") and trace.who(record, r) is not None and "ok" in r:
            out[i] = (r["ok"], r.get("error"))
    return out


def _series(items):
    out = collections.defaultdict(list)
    for ms, client, kind in sorted(items):
        out[(client, kind)].append(ms)
    return out


def differences(record, pred, tb):
    """[(item, text)]: every way ``pred`` differs from the real run ([] when it agrees)."""
    out = []
    real = _series(real_transitions(record, tb))
    model = _series(pred.transitions)
    for client, kind in sorted(set(real) | set(model)):
        r, m = real.get((client, kind), []), model.get((client, kind), [])
        item = f"{kind} {client}"
        if len(r) != len(m):
            out.append((item, f"{item}: real at {_secs(r)}, model at {_secs(m)}"))
            continue
        for a, b in zip(r, m):
            if abs(a - b) > tb.slack_ms:
                out.append((item, f"{item}: real at {a / 1000:.3f} s, model at {b / 1000:.3f} s (slack {tb.slack_ms:.1f} ms)"))
    ticks = [r["t"] for r in record["log"] if r["kind"] in trace.AT_TICK]
    for p in record["probes"]:
        if any(p["t"] <= t <= p.get("t1", p["t"]) for t in ticks):
            continue  # a real tick changed a client while the reader was probing: either side is right
        got = pred.probes.get(p["label"], {})
        want = {h: a for h, a in p["answers"].items()}
        if _norm(got) != _norm(want):
            out.append((f"probe {p['label']}", f"probe {p['label']}: real {_norm(want)}, model {_norm(got)}"))
    for i, (ok, err) in real_rpcs(record).items():
        if i not in pred.rpcs:
            continue
        mok, merr = pred.rpcs[i]
        if ok != mok:
            r = record["log"][i]
            item = f"{r['kind']} {trace.who(record, r)}"
            out.append((item, f"{item} at {tb.ms(r['t']) / 1000:.3f} s: real {'ok' if ok else err}, model {'ok' if mok else merr}"))
    rc = record.get("in_flight_rc")
    if rc is not None and (rc != 0) != (pred.in_flight_ok is False):
        out.append(("put in flight", f"put in flight: real rc {rc}, model PutEnd ok={pred.in_flight_ok}"))
    return out


def _norm(answers):
    return {h: dict(sorted(a.items())) for h, a in sorted(answers.items()) if a}


def _secs(ms_list):
    return "[" + ", ".join(f"{m / 1000:.3f} s" for m in ms_list) + "]" if ms_list else "never"


def judge(record, binary, policy, config, tb=None, mutant=None):
    """(prediction, failures, by-design differences, the alternative that was kept).

    Tries each (shift, race order) of :func:`conformance.trace.alternatives`; keeps the first
    whose differences are all by design, else the one with the fewest failures."""
    tb = tb or trace.base(record)
    design = record.get("by_design", {})
    best = None
    for shift, first in trace.alternatives(record, tb):
        pred = trace.predict(record, binary, policy, config, tb, shift, first, mutant)
        diffs = differences(record, pred, tb)
        fails = [t for item, t in diffs if item not in design]
        by = [f"{t} (by design: {design[item]})" for item, t in diffs if item in design]
        cand = (pred, fails, by, (shift, first))
        if not fails:
            return cand
        if best is None or len(fails) < len(best[1]):
            best = cand
    return best
