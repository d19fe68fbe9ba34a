"""The comparison must be able to fail: ``python -m conformance.selftest`` feeds
:func:`conformance.report.disagreements` predictions that are wrong in one way each and checks
that each is caught (run by ``scripts/conformance.sh`` before the cases)."""

import copy
import sys

from .cases import Observed
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


def main():
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
    print(f"selftest: {len(cases) + 1} wrong predictions caught, 1 right one accepted")
    return 0


if __name__ == "__main__":
    sys.exit(main())
