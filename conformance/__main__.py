"""``python -m conformance``: run every case, compare, write the report; exit 1 on disagreement."""

import argparse
import importlib.metadata
import os
import signal
import subprocess
import sys
import tempfile
import time

from . import cases, net, procs, report, trace


def _on_signal(signum, _frame):
    raise SystemExit(f"error: stopped by signal {signum}")


def race_at_resume(sched, binary, real, legacy, rfc, bad):
    """Main's monitor and the buffered Pings race when the master resumes (the Pings won in 14
    of 17 runs on 2026-12-03). A tick that runs before a client's buffered Ping expires the
    client if the tick before the pause had drained its last Ping. Which clients' Pings came
    first is read from the master's log where it can be (:func:`conformance.trace.orders`);
    the tick's phase is not observed, so each is tried in 10 ms steps. The expiry then comes at
    the resume, not a TTL after the fault, so the TTL window does not apply; clients, losses and
    remounts must still agree. Returns (legacy, rfc, disagreements), the first two in the order
    that agrees if one does."""
    for first in trace.orders(sched):
        for phase in range(0, 1000, 10):
            ordered = trace.monitor_first(sched, phase, first)
            alt = trace.predict(ordered, binary, "legacy", phase)
            if not report.disagreements(real, alt):
                # rfc in the same order, so its column shows what it would have done.
                rfc = trace.predict(ordered, binary, "rfc", phase)
                before = ", ".join(sorted(first)) or "none"
                real.notes = (
                    f"the monitor ran before the buffered Pings this time (Pings before it: {before}); "
                    f"legacy agrees in that order with its ticks {(1000 - phase) % 1000} ms past each second of its clock"
                )
                return alt, rfc, []
    return legacy, rfc, bad


def main():
    ap = argparse.ArgumentParser(prog="python -m conformance")
    ap.add_argument("--bin", required=True, help="the mooncake-liveness binary")
    ap.add_argument("--out", default="docs/CONFORMANCE.md")
    ap.add_argument("--ttl", type=int, default=3, help="--client_ttl of the real master, seconds")
    ap.add_argument(
        "--cases", default="", help="comma-separated case names (default: every case of cases.CASES)"
    )
    ap.add_argument("--logs", default="", help="keep the master and client logs here")
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    named = args.cases.split(",") if args.cases else []
    chosen = [c for c in cases.CASES + cases.EXTRA if (c[0] in named if named else c in cases.CASES)]
    if not chosen:
        raise SystemExit(f"error: no case named {args.cases!r}")
    logdir = args.logs or tempfile.mkdtemp(prefix="conformance-")
    os.makedirs(logdir, exist_ok=True)
    net.setup()
    rows = []
    try:
        for index, (name, desc, run_case) in enumerate(chosen):
            started = time.time()
            run = cases.Run(args.ttl, index, logdir)
            try:
                sched, real = run_case(run)
                sched.pings = run.pings()
            finally:
                run.close()
            legacy = trace.predict(sched, args.bin, "legacy")
            rfc = trace.predict(sched, args.bin, "rfc")
            with open(os.path.join(logdir, f"{name}.trace.jsonl"), "w") as f:
                f.write("\n".join(legacy["trace"]) + "\n")
            fault_ms = min([a for v in sched.silent.values() for a, _ in v] + ([sched.master_pause[0]] if sched.master_pause else []))
            bad = report.disagreements(real, legacy, args.ttl)
            if bad and sched.master_pause:
                legacy, rfc, bad = race_at_resume(sched, args.bin, real, legacy, rfc, bad)
            rows.append((name, desc, real, legacy, rfc, fault_ms, bad))
            verdict = "agrees" if not bad else "DIFFERS: " + "; ".join(bad)
            print(f"{name}: {time.time() - started:.1f} s; real: {report.real_cell(real)}", flush=True)
            print(f"  legacy {verdict}: {report.model_cell(legacy, fault_ms)}", flush=True)
            print(f"  rfc: {report.rfc_cell(rfc, fault_ms, legacy)}", flush=True)
    finally:
        procs.stop_all()
    binver = subprocess.run([args.bin, "--version"], capture_output=True, text=True).stdout.strip()
    debs = subprocess.run(
        ["dpkg-query", "-W", "-f", "${Package} ${Version}, ", "libibverbs1", "librdmacm1", "libnuma1"],
        capture_output=True,
        text=True,
    ).stdout.strip(", ")
    versions = {
        "mooncake-transfer-engine-non-cuda (PyPI wheel, `mooncake_master` and the client)": importlib.metadata.version(
            "mooncake-transfer-engine-non-cuda"
        ),
        "mooncake-liveness": binver.removeprefix("mooncake-liveness ") or "unknown",
        "Debian libraries": debs or "unknown",
        "Python": sys.version.split()[0],
    }
    date = time.strftime("%Y-%m-%d", time.gmtime())
    text = report.markdown(rows, versions, args.ttl, date)
    with open(args.out, "w") as f:
        f.write(text)
    print(f"wrote {args.out}; logs and traces in {logdir}")
    failed = [r[0] for r in rows if r[6]]
    if failed:
        print(f"error: the legacy model disagrees with the real master in: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
