#!/usr/bin/env bash
# Runs the hot-path criterion benches in quick mode and prints a markdown report: every
# benchmark's median (ns per iteration, and per resource where the group scans N resources) and
# every target of the liveness issue with PASS/FAIL.
#
# Usage: scripts/bench.sh [extra criterion args, e.g. a filter such as `eligibility`]
#   BENCH_SKIP_RUN=1 scripts/bench.sh   # only re-read target/criterion (no cargo run)
#   HOT_PATH_NO_STEADY=1 scripts/bench.sh  # skip the hand-timed steady-state tick note (~6 s)
# The monitor states (1M clients) are built even when a filter skips their benches.
#
# Always exits 0 when the benches ran: it is a report, not a gate. FAILs are printed loudly.
set -euo pipefail

cd "$(dirname "$0")/.."
root="$(pwd)"
crit="${CARGO_TARGET_DIR:-$root/target}/criterion"
log="$crit/hot_path.log"
mkdir -p "$crit"

if [[ "${BENCH_SKIP_RUN:-0}" != "1" ]]; then
    start_epoch="$(date +%s)"  # estimates older than this are flagged as stale
    # pipefail: a failing build or a panicking bench still stops the script with its status.
    cargo bench --bench hot_path -- --quick --noplot "$@" 2>&1 | tee "$log"
else
    start_epoch=0
fi

python3 - "$crit" "$log" "$start_epoch" <<'PY'
import json, os, re, sys

crit, log, start_epoch = sys.argv[1], sys.argv[2], int(sys.argv[3])

BENCHES = [
    ("eligibility", "word"),
    ("eligibility", "no_check"),
    ("eligibility", "mutex_record"),
    ("eligibility", "rwlock_set"),
    ("eligibility", "word_contended"),
    ("eligibility", "mutex_record_contended"),
    ("ping", "word"),
    ("ping", "queue_push"),
    ("monitor", "idle_tick_1m"),
    ("monitor", "full_scan_1m"),
    ("monitor", "expire_100k"),
]

def load(group, func):
    d = os.path.join(crit, group, func)
    est = os.path.join(d, "new", "estimates.json")
    if not os.path.exists(est):
        return None
    with open(est) as f:
        e = json.load(f)
    elements = None
    meta = os.path.join(d, "new", "benchmark.json")
    if os.path.exists(meta):
        with open(meta) as f:
            tp = json.load(f).get("throughput") or {}
        elements = tp.get("Elements")
    return {
        "median": e["median"]["point_estimate"],
        "lo": e["median"]["confidence_interval"]["lower_bound"],
        "hi": e["median"]["confidence_interval"]["upper_bound"],
        "elements": elements,
        "stale": os.path.getmtime(est) < start_epoch,
    }

def fmt_ns(ns):
    if ns is None:
        return "—"
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if ns >= scale:
            return f"{ns / scale:.3g} {unit}"
    return f"{ns:.3g} ns"

notes = {}
if os.path.exists(log):
    with open(log, errors="replace") as f:
        for line in f:
            m = re.match(r"hot_path-note: ([\w.]+)=(.*)$", line.strip())
            if m:
                notes[m.group(1)] = m.group(2)

res = {f"{g}/{n}": load(g, n) for g, n in BENCHES}

print()
print("## Results (criterion quick mode, median per iteration)")
print()
print("| benchmark | median / iter | 95% CI of median | per resource |")
print("|---|---:|---:|---:|")
for key, r in res.items():
    if r is None:
        print(f"| `{key}` | not run | | |")
        continue
    per = fmt_ns(r["median"] / r["elements"]) if r["elements"] else ""
    stale = " (stale: not from this run)" if r["stale"] else ""
    print(f"| `{key}`{stale} | {fmt_ns(r['median'])} | {fmt_ns(r['lo'])} – {fmt_ns(r['hi'])} | {per} |")

def med(key):
    r = res.get(key)
    return None if r is None else r["median"]

def ratio(a, b):
    a, b = med(a), med(b)
    return None if a is None or b is None or b == 0 else a / b

targets = []
r = ratio("eligibility/word", "eligibility/no_check")
targets.append(("`eligibility/word` ≤ 1.3× `eligibility/no_check`", r, r is not None and r <= 1.3, f"{r:.2f}×" if r else None))
r = ratio("eligibility/mutex_record_contended", "eligibility/word_contended")
targets.append(("`eligibility/word_contended` ≥ 10× faster than `mutex_record_contended`", r, r is not None and r >= 10, f"{r:.1f}× faster" if r else None))
r = ratio("eligibility/rwlock_set", "eligibility/word")
targets.append(("`eligibility/word` ≥ 20× faster than `eligibility/rwlock_set`", r, r is not None and r >= 20, f"{r:.1f}× faster" if r else None))
p = med("ping/word")
targets.append(("`ping/word` ≤ 50 ns", p, p is not None and p <= 50, f"{p:.1f} ns" if p else None))
r = ratio("monitor/full_scan_1m", "monitor/idle_tick_1m")
targets.append(("`monitor/idle_tick_1m` ≥ 1000× faster than `monitor/full_scan_1m`", r, r is not None and r >= 1000, f"{r:,.0f}× faster" if r else None))
size = notes.get("record_size_bytes")
size_v = int(size) if size else None
targets.append(("`size_of::<ClientLivenessRecord>()` ≤ 64 bytes", size_v, size_v is not None and size_v <= 64, f"{size_v} bytes" if size_v else None))

print()
print("## Targets")
print()
print("| target | measured | result |")
print("|---|---:|:---:|")
fails = []
for name, value, ok, shown in targets:
    if value is None:
        print(f"| {name} | not measured | SKIP |")
        continue
    verdict = "PASS" if ok else "**FAIL**"
    if not ok:
        fails.append(name)
    print(f"| {name} | {shown} | {verdict} |")

if notes:
    print()
    print("## Notes printed by the bench")
    print()
    for k, v in notes.items():
        print(f"- `{k}` = {v}")
    steady, scan = notes.get("steady_tick_1m.mean_ns"), med("monitor/full_scan_1m")
    p99 = int(notes.get("steady_tick_1m.p99_ns", "0"))
    worst = int(notes.get("steady_tick_1m.max_ns", "0"))
    if steady and scan and p99 and worst:
        print(f"- informational (no target): `full_scan_1m` / steady-state tick = "
              f"{scan / float(steady):,.0f}× (mean tick), {scan / p99:,.1f}× (p99 tick), "
              f"{scan / worst:,.1f}× (slowest tick)")
    a, f_ = notes.get("queue_push.attempts"), notes.get("queue_push.failed_full")
    if a and f_ and int(a) > 0:
        print(f"- `ping/queue_push`: {100.0 * int(f_) / int(a):.2f}% of pushes failed because the queue was full")

print()
if fails:
    print("!" * 72)
    for name in fails:
        print(f"FAIL: {name}")
    print("!" * 72)
else:
    print("All measured targets PASS.")
PY
exit 0
