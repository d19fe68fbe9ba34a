#!/usr/bin/env python3
"""Prints the benchmark report: every benchmark's median and every target the issues set.

Usage: bench_report.py CRITERION_DIR LOG_FILE START_EPOCH

Reads `CRITERION_DIR/<group>/<function>/new/estimates.json` (criterion's median, ns per
iteration) and `benchmark.json` (throughput, for per-element figures), and the
`hot_path-note:` and `master-note: key=value` lines the benches print into LOG_FILE (facts that are not
timings, such as the record size). Estimates older than START_EPOCH are marked stale: they
were not produced by this run. Exits 0; prints every FAIL in a banner at the end.
"""
import json
import os
import re
import sys

crit, log, start_epoch = sys.argv[1], sys.argv[2], int(sys.argv[3])

# (suite, group, function): every benchmark the report prints, in order.
BENCHES = [
    ("hot_path", "eligibility", "word"),
    ("hot_path", "eligibility", "no_check"),
    ("hot_path", "eligibility", "mutex_record"),
    ("hot_path", "eligibility", "rwlock_set"),
    ("hot_path", "eligibility", "word_contended"),
    ("hot_path", "eligibility", "mutex_record_contended"),
    ("hot_path", "ping", "word"),
    ("hot_path", "ping", "queue_push"),
    ("hot_path", "monitor", "idle_tick_1m"),
    ("hot_path", "monitor", "full_scan_1m"),
    ("hot_path", "monitor", "expire_100k"),
    ("hot_path", "monitor", "worst_tick_1m"),
    ("hot_path", "monitor", "mass_expiry_100k"),
    ("master", "master", "get_hit"),
    ("master", "master", "get_hit_noseam"),
    ("master", "master", "put_alloc"),
    ("master", "master", "put_alloc_noseam"),
    ("master", "offboard", "own_index_1k_of_1m"),
    ("master", "offboard", "full_sweep_1k_of_1m"),
    ("master", "ping", "idle"),
    ("master", "ping", "during_offboarding"),
    ("master", "ping", "during_offboarding_locked"),
    ("master", "snapshot", "encode_1m"),
    ("master", "snapshot", "restore_1m"),
] + [
    ("queue", "queue", f"{q}/p{p}_b{b}")
    for p in (2, 4) for b in (1, 32, 256) for q in ("mpsc_ours", "segqueue")
] + [("queue", "queue", "std_mpsc/p2_b32")]


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
            m = re.match(r"(?:hot_path|master)-note: ([\w.]+)=(.*)$", line.strip())
            if m:
                notes[m.group(1)] = m.group(2)

res = {f"{g}/{n}": load(g, n) for _, g, n in BENCHES}


def med(key):
    r = res.get(key)
    return None if r is None else r["median"]


def per_element(key):
    r = res.get(key)
    return None if r is None or not r["elements"] else r["median"] / r["elements"]


print()
print("## Results (criterion quick mode, median per iteration)")
print()
print("| suite | benchmark | median / iter | 95% CI of median | per element |")
print("|---|---|---:|---:|---:|")
for suite, g, n in BENCHES:
    key = f"{g}/{n}"
    r = res[key]
    if r is None:
        print(f"| {suite} | `{key}` | not run | | |")
        continue
    per = fmt_ns(per_element(key)) if r["elements"] else ""
    stale = " (stale: not from this run)" if r["stale"] else ""
    print(f"| {suite} | `{key}`{stale} | {fmt_ns(r['median'])} | {fmt_ns(r['lo'])} – {fmt_ns(r['hi'])} | {per} |")


def at_most(a, b, bound):
    """`a` costs at most `bound` times `b`: (value, shown, ok)."""
    x, y = med(a), med(b)
    if x is None or y is None or y == 0:
        return None
    r = x / y
    return r, f"{r:.2f}× ({fmt_ns(x)} vs {fmt_ns(y)})", r <= bound


def faster(a, b, bound):
    """`a` is at least `bound` times faster than `b`."""
    x, y = med(a), med(b)
    if x is None or y is None or x == 0:
        return None
    r = y / x
    return r, f"{r:,.1f}× faster ({fmt_ns(x)} vs {fmt_ns(y)})", r >= bound


def ns_at_most(a, bound):
    x = med(a)
    return None if x is None else (x, fmt_ns(x), x <= bound)


def record_size():
    size = notes.get("record_size_bytes")
    if not size:
        return None
    return int(size), f"{int(size)} bytes", int(size) <= 64


def queue_at_most(producers, bound):
    """Every batch size: `mpsc_ours` costs at most `bound` times `segqueue` at `producers`."""
    ratios = []
    for b in (1, 32, 256):
        x, y = med(f"queue/mpsc_ours/p{producers}_b{b}"), med(f"queue/segqueue/p{producers}_b{b}")
        if x is None or y is None or y == 0:
            return None
        ratios.append((b, x / y))
    worst = max(r for _, r in ratios)
    shown = ", ".join(f"b{b}: {r:.2f}×" for b, r in ratios)
    return worst, shown, worst <= bound


def recorded_only(m):
    """A measurement shown beside the targets without a verdict (`ok` is None)."""
    return None if m is None else (m[0], m[1], None)


# (issue, target as the issue states it, measurement or None when not run).
TARGETS = [
    (2, "`eligibility/word` ≤ 1.3× `eligibility/no_check`", at_most("eligibility/word", "eligibility/no_check", 1.3)),
    (2, "`eligibility/word_contended` ≥ 10× faster than `eligibility/mutex_record_contended`",
     faster("eligibility/word_contended", "eligibility/mutex_record_contended", 10)),
    (2, "`eligibility/word` ≥ 20× faster than `eligibility/rwlock_set`",
     faster("eligibility/word", "eligibility/rwlock_set", 20)),
    (2, "`ping/word` ≤ 50 ns", ns_at_most("ping/word", 50)),
    (2, "`monitor/idle_tick_1m` ≥ 1000× faster than `monitor/full_scan_1m`",
     faster("monitor/idle_tick_1m", "monitor/full_scan_1m", 1000)),
    (2, "`size_of::<ClientLivenessRecord>()` ≤ 64 bytes", record_size()),
    (18, "`monitor/full_scan_1m` ≥ 20× `monitor/worst_tick_1m`",
     faster("monitor/worst_tick_1m", "monitor/full_scan_1m", 20)),
    (18, "`monitor/mass_expiry_100k` ≤ `monitor/full_scan_1m` / 5",
     at_most("monitor/mass_expiry_100k", "monitor/full_scan_1m", 0.2)),
    # Issue 18 offers two ways: our queue at least as fast as SegQueue, or ours deleted and
    # crossbeam's queue behind the same batching API, the bench then comparing the batching
    # wrapper with a plain consumer loop. We took the second (core/src/offboarding/queue.rs): the
    # ratio below is the price of the layer (capacity, close, exact drain), recorded, not a gate.
    (18, "`queue/mpsc_ours` (SegQueue + our batching layer) vs `queue/segqueue` (plain loop), 2 producers, "
     "batch 1/32/256: recorded (the issue's second way)", recorded_only(queue_at_most(2, 1.0))),
    (18, "`queue/mpsc_ours` (SegQueue + our batching layer) vs `queue/segqueue` (plain loop), 4 producers, "
     "batch 1/32/256: recorded (the issue's second way)", recorded_only(queue_at_most(4, 1.0))),
    (18, "`snapshot/restore_1m` ≤ 1.5× `snapshot/encode_1m`",
     at_most("snapshot/restore_1m", "snapshot/encode_1m", 1.5)),
    (18, "`eligibility/word` ≤ 1.3× `eligibility/no_check` (this run; the issue asks for three in a row)",
     at_most("eligibility/word", "eligibility/no_check", 1.3)),
    (3, "`master/get_hit` ≤ 1.1× `master/get_hit_noseam`", at_most("master/get_hit", "master/get_hit_noseam", 1.1)),
    (3, "`master/put_alloc` ≤ 1.1× `master/put_alloc_noseam`",
     at_most("master/put_alloc", "master/put_alloc_noseam", 1.1)),
    (4, "`offboard/own_index_1k_of_1m` ≥ 100× faster than `offboard/full_sweep_1k_of_1m`",
     faster("offboard/own_index_1k_of_1m", "offboard/full_sweep_1k_of_1m", 100)),
    (4, "`ping/during_offboarding` ≤ 2× idle ping (`ping/idle`, the same pings without the background job)",
     at_most("ping/during_offboarding", "ping/idle", 2)),
    (4, "`ping/during_offboarding` ≤ 2× `ping/word` (the hot-path bench's idle ping)",
     at_most("ping/during_offboarding", "ping/word", 2)),
]

print()
print("## Targets")
print()
print("| issue | target | measured | result |")
print("|---:|---|---:|:---:|")
fails = []
for issue, name, m in TARGETS:
    if m is None:
        print(f"| {issue} | {name} | not measured | SKIP |")
        continue
    _, shown, ok = m
    if ok is None:
        print(f"| {issue} | {name} | {shown} | recorded |")
        continue
    if not ok:
        fails.append(name)
    print(f"| {issue} | {name} | {shown} | {'PASS' if ok else '**FAIL**'} |")

print()
print("## Recorded without a target")
print()
print("| figure | measured |")
print("|---|---:|")
recorded = [
    ("`ping/during_offboarding_locked` (upstream's shape: the heartbeat behind the data-plane lock)",
     fmt_ns(med("ping/during_offboarding_locked")) if med("ping/during_offboarding_locked") else None),
    ("`snapshot/encode_1m`", fmt_ns(med("snapshot/encode_1m")) if med("snapshot/encode_1m") else None),
    ("`snapshot/restore_1m`", fmt_ns(med("snapshot/restore_1m")) if med("snapshot/restore_1m") else None),
]
for key in [f"{q}/p{p}_b{b}" for p in (2, 4) for b in (1, 32, 256) for q in ("mpsc_ours", "segqueue")] + [
    "std_mpsc/p2_b32"
]:
    p = per_element(f"queue/{key}")
    recorded.append((f"`queue/{key}` (P producers, 1 consumer taking batches of B), per item",
                     fmt_ns(p) if p else None))
for name, shown in recorded:
    print(f"| {name} | {shown or 'not measured'} |")

if notes:
    print()
    print("## Notes printed by the benches")
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
    slowest = notes.get("worst_tick_1m.slowest_ns")
    if slowest and scan and int(slowest) > 0:
        print(f"- informational (no target): `full_scan_1m` / slowest single tick of every "
              f"`worst_tick_1m` window = {scan / int(slowest):,.1f}×")
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
