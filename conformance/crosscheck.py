"""Our master against upstream's: in each case, what ``serve`` really did against what upstream's
RFC master (0.3.14) really did, wherever the two designs agree.

Each run is already judged against its own model, times included (:mod:`conformance.compare`).
This compares two real runs of the same case with each other, so only what does not depend on
when each run's clients happened to ping is compared, the **outcome**: which liveness lines each
client got (``suspected``, ``recovered``, ``offline``, ``offboarded``; how many of each), what
the reader's Gets of each holder's objects answered at each probe (which answers, not how many:
the placement differs between runs), which mounts or remounts were refused, and whether the Put
in flight survived. Times differ by design (our monitor ticks every 100 ms, upstream's every
second) and are not compared here.

The reference is upstream's real run where our design predicts the same outcome on upstream's
own transcript (the ``rfc`` model under our defaults: :func:`conformance.trace.predict`, the
"ours" of :func:`conformance.__main__.judge_run`). Where it predicts another, the case must
document the design difference (its ``design``, or a by-design item that showed: the stall
brake, for example), and then ``serve`` must do what our design predicts there; an undocumented
difference fails. A probe during which a real tick changed a client in either run is not
compared (each Get came on one side of it or the other).
"""

from . import compare, trace

UPSTREAM = "upstream-rfc-real"


def ticked_probes(record):
    """Labels of the probes during which a real tick changed a client."""
    ticks = [r["t"] for r in record["log"] if r["kind"] in trace.AT_TICK]
    return {p["label"] for p in record["probes"] if any(p["t"] <= t <= p.get("t1", p["t"]) for t in ticks)}


def outcome(record, tb, pred=None):
    """The outcome of a real run (``pred`` None) or of a prediction on it."""
    if pred is None:
        transitions = compare.real_transitions(record, tb)
        probes = {p["label"]: p["answers"] for p in record["probes"]}
        rpcs = compare.real_rpcs(record)
        rc = record.get("in_flight_rc")
        in_flight = None if rc is None else rc == 0
    else:
        transitions, probes, rpcs, in_flight = pred.transitions, pred.probes, pred.rpcs, pred.in_flight_ok
    kinds = {}
    for _, client, kind in transitions:
        kinds.setdefault(client, []).append(kind)
    return {
        "liveness lines": {c: sorted(k) for c, k in sorted(kinds.items())},
        "probes": {
            label: {h: sorted(a for a, n in answers.items() if n) for h, answers in sorted(per.items()) if answers}
            for label, per in probes.items()
        },
        "refused": sorted({f"{record['log'][i]['kind']} {trace.who(record, record['log'][i])}" for i, (ok, _) in rpcs.items() if not ok}),
        "put in flight kept": in_flight,
    }


def differences(a, b, skip=()):
    """[text] of every way outcome ``a`` differs from ``b`` (probes in ``skip`` aside)."""
    out = []
    for item in ("liveness lines", "refused", "put in flight kept"):
        if a[item] != b[item]:
            out.append(f"{item}: {a[item]} against {b[item]}")
    for label in sorted(set(a["probes"]) | set(b["probes"])):
        if label not in skip and a["probes"].get(label) != b["probes"].get(label):
            out.append(f"probe {label}: {a['probes'].get(label)} against {b['probes'].get(label)}")
    return out


def row(runs, kinds):
    """[(kind key, agrees, text)] for each master of ours in this case's ``runs`` (kind key ->
    (record, tb, prediction, failures, by-design, ours)), against upstream's rfc master."""
    up = runs.get(UPSTREAM)
    out = []
    for kind in kinds:
        if kind.upstream or kind.policy != "rfc" or kind.key not in runs:
            continue
        if up is None or up[1] is None or up[5] is None:
            out.append((kind.key, True, "not compared: upstream rfc real did not run, or its run could not be judged"))
            continue
        mine = runs[kind.key]
        if mine[1] is None:
            out.append((kind.key, False, "not compared: this run could not be judged"))
            continue
        u_record, u_tb, _, _, u_by, u_ours = up
        skip = ticked_probes(u_record) | ticked_probes(mine[0])
        real, ours = outcome(u_record, u_tb), outcome(u_record, u_tb, u_ours)
        design = u_record.get("design") or ("; ".join(u_by) if u_by else None)
        if not differences(real, ours, skip):
            reference, what = real, "the same outcome as upstream rfc real"
        elif design:
            reference, what = ours, f"the outcome our design predicts on upstream's run, where the designs differ ({design})"
        else:
            diff = "; ".join(differences(ours, real, skip))
            out.append((kind.key, False, f"our design predicts another outcome on upstream's run and the case documents no design difference: {diff}"))
            continue
        diff = differences(outcome(mine[0], mine[1]), reference, skip)
        if diff:
            out.append((kind.key, False, f"differs from {what}: " + "; ".join(diff)))
        else:
            out.append((kind.key, True, what + (f" (probes {', '.join(sorted(skip))} not compared: a tick during them)" if skip else "")))
    return out
