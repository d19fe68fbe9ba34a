#!/usr/bin/env bash
# Runs every criterion suite (benches/hot_path/, master.rs, queue.rs) in quick mode and prints
# a markdown report (scripts/bench_report.py): each benchmark's median, and every ratio the
# issues set as a target with PASS/FAIL. BENCHMARKS.md holds the latest report.
#
# Usage: scripts/bench.sh [criterion args, e.g. a filter such as `eligibility`]
#   BENCH_SUITES="hot_path queue" scripts/bench.sh  # only these suites (default: all three)
#   BENCH_SKIP_RUN=1 scripts/bench.sh               # only re-read target/criterion (no cargo run)
#   HOT_PATH_NO_STEADY=1 scripts/bench.sh           # skip the hand-timed steady-state tick (~6 s)
#   HOT_PATH_NO_MONITOR=1 scripts/bench.sh          # skip the monitor group (1M-client setups)
# The master suite builds 1M-object masters: it needs a few GiB of RAM and about 10 minutes.
#
# Always exits 0 when the benches ran: it is a report, not a gate. FAILs are printed loudly.
set -euo pipefail

cd "$(dirname "$0")/.."
source scripts/toolchain.sh # the pinned toolchain, aliased to stable where that is the same release
root="$(pwd)"
crit="${CARGO_TARGET_DIR:-$root/target}/criterion"
log="$crit/bench.log"
mkdir -p "$crit"

if [[ "${BENCH_SKIP_RUN:-0}" != "1" ]]; then
    start_epoch="$(date +%s)"  # estimates older than this are flagged as stale
    : >"$log"
    for suite in ${BENCH_SUITES:-hot_path master queue}; do
        echo "==> cargo bench --bench $suite -- --quick --noplot $*"
        # pipefail: a failing build or a panicking bench still stops the script with its status.
        cargo bench --locked --bench "$suite" -- --quick --noplot "$@" 2>&1 | tee -a "$log"
    done
else
    start_epoch=0
fi

python3 scripts/bench_report.py "$crit" "$log" "$start_epoch"
exit 0
