"""``python -m conformance``: run every case on every master, compare, write the report; exit 1 on
a disagreement that is not a design difference."""

import argparse
import importlib.metadata
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

from . import cases, compare, crosscheck, masters, net, procs, report, run, timebase, trace


def _on_signal(signum, _frame):
    raise SystemExit(f"error: stopped by signal {signum}")


def version(argv):
    try:
        out = subprocess.run([*argv, "--version"], capture_output=True, text=True, timeout=10)
        return (out.stdout.strip() or out.stderr.strip()).splitlines()[0]
    except (OSError, IndexError, subprocess.TimeoutExpired):
        return "unknown"


def judge_run(record, binary, kind):
    """(record, tb, prediction, failures, by-design, our-defaults prediction) of one real run."""
    a, s = record["active_s"], record["suspicion_s"]
    try:
        tb = trace.base(record)
    except timebase.TooNoisy as e:
        return record, None, None, [str(e)], [], None
    pred, fails, by, _ = compare.judge(record, binary, kind.policy, kind.model(a, s), tb)
    ours = None
    if kind.policy == "rfc" and kind.model_config:
        ours = trace.predict(record, binary, "rfc", {"client_active_ttl_sec": a, "client_suspicion_ttl_sec": s}, tb)
    return record, tb, pred, fails, by, ours


def main():
    ap = argparse.ArgumentParser(prog="python -m conformance")
    ap.add_argument("--bin", required=True, help="the mooncake-liveness binary")
    ap.add_argument("--legacy-master", required=True, help="mooncake_master 0.3.13.post1 (scripts/realmasters.sh)")
    ap.add_argument("--rfc-master", required=True, help="mooncake_master 0.3.14 (scripts/realmasters.sh)")
    ap.add_argument(
        "--master",
        action="append",
        default=[],
        help="another master column: LABEL=POLICY:COMMAND (for example 'serve=rfc:target/debug/mooncake-liveness serve')",
    )
    ap.add_argument("--out", default="docs/CONFORMANCE.md")
    ap.add_argument("--cases", default="", help="comma-separated case names (default: every case of cases.CASES)")
    ap.add_argument("--masters", default="", help="comma-separated master keys to run (default: all)")
    ap.add_argument("--logs", default="", help="keep the master and client logs and the records here")
    ap.add_argument(
        "--from-records",
        default="",
        help="judge the records a run kept (--logs DIR) again and write the report; runs no master",
    )
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    kinds = masters.real(args.legacy_master, args.rfc_master) + [masters.serve(args.bin)]
    kinds += [masters.parse_extra(m) for m in args.master]
    if args.masters:
        kinds = [k for k in kinds if k.key in args.masters.split(",")]
    named = args.cases.split(",") if args.cases else []
    chosen = [c for c in cases.CASES + cases.EXTRA if (c[0] in named if named else c in cases.CASES)]
    if not chosen or not kinds:
        raise SystemExit(f"error: no case named {args.cases!r} or no master named {args.masters!r}")
    if args.from_records:
        rows = rejudge(args.from_records, chosen, kinds, args.bin)
        return finish(args, kinds, rows, args.from_records)
    logdir = args.logs or tempfile.mkdtemp(prefix="conformance-")
    os.makedirs(logdir, exist_ok=True)
    net.setup()
    rows = []
    index = 0
    try:
        for name, desc, run_case, flags in chosen:
            runs = {}
            for kind in kinds:
                started = time.time()
                r = run.Run(kind, cases.ACTIVE_S, cases.SUSPICION_S, index, logdir, name, flags)
                index += 1
                try:
                    run_case(r)
                    record = r.finish()
                finally:
                    r.close()
                with open(os.path.join(logdir, f"{name}.{kind.key}.json"), "w") as f:
                    json.dump(record, f, separators=(",", ":"))
                result = judge_run(record, args.bin, kind)
                runs[kind.key] = result
                _, tb, pred, fails, by, ours = result
                verdict = "agrees" if not fails else "DIFFERS: " + "; ".join(fails)
                print(f"{name} on {kind.key}: {time.time() - started:.1f} s", flush=True)
                if tb is not None:
                    print(f"  real:  {report.cell(record, tb)}", flush=True)
                    print(f"  model {verdict}: {report.cell(record, tb, pred)}", flush=True)
                    for b in by:
                        print(f"  by design: {b}", flush=True)
                    if ours is not None and (record.get("design") or report.outcome(ours, record) != report.outcome(pred, record)):
                        print(f"  ours (our defaults): {report.cell(record, tb, ours)}", flush=True)
                else:
                    print(f"  {verdict}", flush=True)
            checks = crosscheck.row(runs, kinds)
            for key, ok, text in checks:
                print(f"  {key} against upstream: {'' if ok else 'DIFFERS: '}{text}", flush=True)
            rows.append((name, desc, runs, checks))
    finally:
        procs.stop_all()
    return finish(args, kinds, rows, logdir)


def rejudge(directory, chosen, kinds, binary):
    """The rows of a past run, from the records it kept."""
    rows = []
    for name, desc, _, _ in chosen:
        runs = {}
        for kind in kinds:
            path = os.path.join(directory, f"{name}.{kind.key}.json")
            if os.path.exists(path):
                with open(path) as f:
                    runs[kind.key] = judge_run(json.load(f), binary, kind)
        if runs:
            rows.append((name, desc, runs, crosscheck.row(runs, kinds)))
    return rows


def finish(args, kinds, rows, logdir):
    """Writes the report; 1 if a model disagrees with its master."""
    versions = {
        "legacy real: mooncake-transfer-engine-non-cuda (PyPI, `mooncake_master` and every client)": importlib.metadata.version(
            "mooncake-transfer-engine-non-cuda"
        ),
        "upstream rfc real: mooncake-transfer-engine-cuda13 (PyPI, only `mooncake/mooncake_master`)": (
            "0.3.14, wheel mooncake_transfer_engine_cuda13-0.3.14-cp311-cp311-manylinux_2_28_x86_64.whl, sha256 "
            "1fc1d8597e5501d6967a3d2835878500460d7dd40999f6f987131126dcba5c8f; "
            + version([args.rfc_master])
        ),
        "mooncake-liveness": version([args.bin]).removeprefix("mooncake-liveness "),
        "Debian libraries": subprocess.run(
            ["dpkg-query", "-W", "-f", "${Package} ${Version}, ", "libibverbs1", "librdmacm1", "libnuma1"],
            capture_output=True,
            text=True,
        ).stdout.strip(", ")
        or "unknown",
        "Python": sys.version.split()[0],
    }
    for k in kinds:
        if not k.upstream:
            versions[k.label] = version(list(k.argv))  # serve: `serve --version`, as gflags answers it
    date = time.strftime("%Y-%m-%d", time.gmtime())
    with open(args.out, "w") as f:
        f.write(report.markdown(rows, kinds, versions, date, cases.ACTIVE_S, cases.SUSPICION_S, bool(args.from_records)))
    print(f"wrote {args.out}; logs, traces and records in {logdir}")
    failed = sorted({f"{n} on {k}" for n, _, runs, _ in rows for k, r in runs.items() if r[3]})
    failed += sorted({f"{n}: {k} against upstream" for n, _, _, checks in rows for k, ok, _ in checks if not ok})
    if failed:
        print(f"error: a model disagrees with its master, or serve with upstream, in: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
