"""The comparison must be able to fail: ``python -m conformance.selftest --bin BIN`` replays the
recorded real runs of ``conformance/testdata`` (one JSON record per case and master, written by
a full run of ``python -m conformance --logs DIR``) through the right models, which must agree
with every one, and through each deliberately wrong model of :mod:`conformance.mutants`, each
of which must be caught by at least one record of its policy. Run by ``scripts/conformance.sh``
before the cases. Exit status 1 when a wrong model goes uncaught or a right one is refused."""

import argparse
import glob
import json
import os
import sys

from . import compare, masters, mutants, trace

TESTDATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "testdata")


def model_config(record):
    kind = {k.key: k for k in masters.real("-", "-") + [masters.serve("-")]}[record["kind"]]
    return kind.model(record["active_s"], record["suspicion_s"])


def main():
    ap = argparse.ArgumentParser(prog="python -m conformance.selftest")
    ap.add_argument("--bin", required=True, help="the mooncake-liveness binary")
    ap.add_argument("--testdata", default=TESTDATA)
    args = ap.parse_args()
    paths = sorted(glob.glob(os.path.join(args.testdata, "*.json")))
    if not paths:
        raise SystemExit(f"error: no recorded runs in {args.testdata}")
    records = []
    failed = []
    for p in paths:
        with open(p) as f:
            record = json.load(f)
        tb = trace.base(record)
        _, fails, _, _ = compare.judge(record, args.bin, record["policy"], model_config(record), tb)
        if fails:
            failed.append(f"the right {record['policy']} model disagrees with {os.path.basename(p)}: {'; '.join(fails)}")
        records.append((os.path.basename(p), record, tb))
    for m in mutants.MUTANTS:
        caught = []
        for name, record, tb in records:
            if record["policy"] != m.policy:
                continue
            _, fails, _, _ = compare.judge(record, args.bin, m.policy, model_config(record), tb, m)
            if fails:
                caught.append(name.removesuffix(".json"))
        mine = sum(1 for _, r, _ in records if r["policy"] == m.policy)
        print(f"selftest: {m.policy} model with {m.name}: caught by {len(caught)} of {mine} recorded runs" + (f" ({', '.join(caught[:3])}{', ...' if len(caught) > 3 else ''})" if caught else ""))
        if not caught:
            failed.append(f"not caught: the {m.policy} model with {m.name}")
    print(f"selftest: {len(records)} recorded runs agree with the right models" if not failed else "")
    for f in failed:
        print(f"selftest: error: {f}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
