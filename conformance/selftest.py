"""The comparison must be able to fail: ``python -m conformance.selftest --bin BIN`` feeds
:func:`conformance.report.disagreements` predictions that are wrong in one way each and checks
that each is caught, then checks the master-pause trace against the model in both orders of the
race at the resume (run by ``scripts/conformance.sh`` before the cases)."""

import argparse
import copy
import dataclasses
import json
import sys

from . import trace
from .cases import Observed, Schedule
from .report import disagreements

REAL = Observed(
    expired=["V"],
    expiry_delay_s={"V": 3.1},
    visible_before={"A": 100, "V": 100},
    visible_after={"A": 100},
    remounted={"V": True},
    in_flight_rc=-704,
)
AGREES = {
    "expired": ["V"],
    "visible_before": {"A": 100, "V": 100},
    "visible_after": {"A": 100},
    "remounted": {"V": True},
    "put_end_ok": False,
}


def wrong(**changes):
    p = copy.deepcopy(AGREES)
    p.update(changes)
    return p


# A master pause as run 6 of 2026-12-03 recorded it (ms since the master started): A pinged
# at 369 ms past each second, V at 481; the master stopped at 3421 for 8 s. Main's monitor drains
# each Ping at its next tick, so if the monitor beats the buffered Pings at the resume, a client
# expires when its last Ping before the pause was drained already: V alone when the last tick
# came in (2481, 3369), both in (3369, 3421], none in (2421, 2481). Never A alone.
PAUSE = Schedule(
    ttl_s=3,
    clients={"A": (1369, "a:1"), "V": (1481, "v:1")},
    master_pause=(3421, 11423),
    placement={"A": 77, "V": 123},
    puts_ms=3421,
    before_ms=3421,
    after_ms=15423,
)


# The run that failed CI on 2026-12-03 (23:49, clean clone of 982ce49): A pinged at 315 ms past
# each second, V at 418, the master stopped at 3125 for 8 s, and V alone expired at the resume.
# The last tick before the pause drained both Pings unless it came in (2315, 2418), which expires
# A, not V. So V alone needs A's buffered Ping to beat the monitor and V's to lose to it.
SPLIT = Schedule(
    ttl_s=3,
    clients={"A": (1315, "a:1"), "V": (1418, "v:1")},
    master_pause=(3125, 11126),
    placement={"A": 111, "V": 89},
    puts_ms=3124,
    before_ms=3124,
    after_ms=15126,
)


def paused(sched, expired):
    kept = {h: n for h, n in sched.placement.items() if h not in expired}
    return Observed(
        expired=expired,
        expiry_delay_s={c: 8.0 for c in expired},
        visible_before=dict(sched.placement),
        visible_after=kept,
        remounted={c: True for c in expired},
    )


def reachable(binary, sched, expired, first=frozenset()):
    """The first prediction of the monitor-first order, with the buffered Pings of ``first``
    before the tick, that expires exactly ``expired`` at some tick phase (None: none does)."""
    for phase in range(0, 1000, 10):
        p = trace.predict(trace.monitor_first(sched, phase, first), binary, "legacy", phase)
        if not disagreements(paused(sched, expired), p):
            return p
    return None


def check_master_pause(binary):
    lines, _ = trace.build(PAUSE, "legacy")
    ops = [json.loads(line).get("op") for line in lines[1:]]
    stall = ops.index("stall")
    assert ops.count("get") == 3 * 200 and ops.index("get") < stall, "the probe before the pause, in its ms"
    assert disagreements(paused(PAUSE, []), trace.predict(PAUSE, binary, "legacy"), 3) == [], "pings first: none"
    # Logged Pings replace the assumed ones before the fault; a Ping a second follows the last.
    logged = dataclasses.replace(PAUSE, pings={"A": [1370, 2371, 3372, 11500], "V": [1482, 2483]})
    lines, _ = trace.build(logged, "legacy")
    pings = [(o["t_ms"], o["client"]) for o in map(json.loads, lines[1:]) if o.get("op") == "ping"]
    assert [t for t, c in pings if c == "A" and t < 3421] == [1370, 2371, 3372], pings
    assert [t for t, c in pings if c == "V"][:4] == [1482, 2483, 11423, 11483], pings
    for expired in (["V"], ["A", "V"], []):
        assert reachable(binary, PAUSE, expired), f"monitor first: {expired} not reachable"
    assert not reachable(binary, PAUSE, ["A"]), "not caught: A expired alone"
    for expired in (["A"], ["A", "V"]):
        assert not reachable(binary, PAUSE, expired, {"A"}), f"not caught: {expired} with A's Ping first"
    assert not reachable(binary, SPLIT, ["V"]), "not caught: V alone with both Pings after the tick"
    split = reachable(binary, SPLIT, ["V"], {"A"})
    assert split, "A's Ping first: V alone not reachable"
    assert split["expiry_at_ms"] == {"V": SPLIT.master_pause[1]}, f"V expires at the resume: {split['expiry_at_ms']}"
    assert {frozenset(), frozenset("A")} == set(trace.orders(dataclasses.replace(SPLIT, resume_order={"A": "either", "V": "after"})))
    return 4, 5  # wrong predictions caught, right ones accepted


def main():
    ap = argparse.ArgumentParser(prog="python -m conformance.selftest")
    ap.add_argument("--bin", required=True, help="the mooncake-liveness binary")
    args = ap.parse_args()
    assert disagreements(REAL, AGREES, 3) == [], disagreements(REAL, AGREES, 3)
    cases = {
        "no expiry": wrong(expired=[]),
        "another client expired": wrong(expired=["A", "V"]),
        "objects kept": wrong(visible_after={"A": 100, "V": 100}),
        "objects lost on the wrong holder": wrong(visible_after={"V": 100}),
        "one object too many lost": wrong(visible_after={"A": 99}),
        "no remount": wrong(remounted={"V": False}),
        "put in flight survives": wrong(put_end_ok=True),
    }
    for name, p in cases.items():
        assert disagreements(REAL, p, 3), f"not caught: {name}"
    late = copy.deepcopy(REAL)
    late.expiry_delay_s = {"V": 4.6}
    assert disagreements(late, AGREES, 3), "not caught: expiry outside the window"
    caught, accepted = check_master_pause(args.bin)
    print(f"selftest: {len(cases) + 1 + caught} wrong predictions caught, {1 + accepted} right ones accepted")
    return 0


if __name__ == "__main__":
    sys.exit(main())
