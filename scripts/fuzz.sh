#!/usr/bin/env bash
# Runs every cargo-fuzz target for SECONDS each (default 60) on stable, without a sanitizer
# (`-s none`), starting from the committed seeds in fuzz/seeds/<target>/ and, where a target has
# one, the committed minimised corpus in fuzz/corpus-min/<target>/. Installs cargo-fuzz at a
# pinned version if it is missing or another version, and builds against the committed
# fuzz/Cargo.lock. Findings land in fuzz/artifacts/<target>/ (git-ignored); a finding that is
# fixed becomes a seed. Exits 1 on a finding.
#
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]
#   FUZZ_JOBS=2 scripts/fuzz.sh 3600 differential   # N parallel libFuzzer workers sharing the
#                                                    # corpus; each logs to ./fuzz-<i>.log and
#                                                    # the executions of all are summed
#   FUZZ_TRACE_COMPARES=0 scripts/fuzz.sh 3600 differential
#                              # build without libFuzzer's compare tracing (`--no-trace-compares`):
#                              # the differential target runs about 2.5x faster (its inputs are
#                              # decoded with `arbitrary`, so compare-guided mutation helps little);
#                              # FUZZING.md records which campaigns used it
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/toolchain.sh # the pinned toolchain, aliased to stable where that is the same release
secs=${1:-60}
shift || true
jobs=${FUZZ_JOBS:-1}
build_flags=(-s none)
case "${FUZZ_TRACE_COMPARES:-1}" in
1) ;;
0) build_flags+=(--no-trace-compares) ;;
*)
    echo "FUZZ_TRACE_COMPARES is '${FUZZ_TRACE_COMPARES}': use 1 (default) or 0" >&2
    exit 2
    ;;
esac
# Pinned, so a run means the same thing tomorrow (bump on purpose, with a campaign on it).
CARGO_FUZZ_VERSION=0.13.2
if [ "$(cargo fuzz --version 2>/dev/null)" != "cargo-fuzz $CARGO_FUZZ_VERSION" ]; then
    cargo install cargo-fuzz --version "=$CARGO_FUZZ_VERSION" --locked
fi
# cargo-fuzz has no `--locked`: check fuzz/Cargo.lock is complete and current first, so the
# builds below cannot silently re-resolve it.
(cd fuzz && cargo metadata --locked --format-version 1 >/dev/null)
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    mapfile -t targets < <(cd fuzz && cargo fuzz list)
fi
for t in "${targets[@]}"; do
    echo "==> fuzz $t for ${secs}s ($jobs worker(s))"
    mkdir -p "fuzz/corpus/$t"
    # Build first, so a build failure stops the script instead of reading as "no finding".
    (cd fuzz && cargo fuzz build "${build_flags[@]}" "$t")
    args=(-max_total_time="$secs" -print_final_stats=1)
    # New inputs go to the first (git-ignored) directory; the seeds and the committed minimised
    # corpus (if the target has one) are read only.
    dirs=("fuzz/corpus/$t" "fuzz/seeds/$t")
    if [ -d "fuzz/corpus-min/$t" ]; then dirs+=("fuzz/corpus-min/$t"); fi
    if [ "$jobs" -gt 1 ]; then
        rm -f fuzz-*.log
        cargo fuzz run "$t" "${build_flags[@]}" "${dirs[@]}" -- "${args[@]}" -jobs="$jobs" -workers="$jobs" \
            >/dev/null 2>&1 || true
        total=0
        missing=0
        for log in fuzz-*.log; do
            n=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
            if [ -z "$n" ]; then
                echo "$log: no final stats (the worker stopped early; see the log)"
                missing=1
            else
                echo "$log: $n executions"
                total=$((total + n))
            fi
        done
        echo "total: $total executions of $t"
    else
        cargo fuzz run "$t" "${build_flags[@]}" "${dirs[@]}" -- "${args[@]}" 2>&1 \
            | grep -E '^(#[0-9]+.*DONE|stat::number_of_executed_units|stat::peak_rss_mb|==[0-9]+==|SUMMARY|Done)' || true
    fi
    if compgen -G "fuzz/artifacts/$t/crash-*" >/dev/null || compgen -G "fuzz/artifacts/$t/timeout-*" >/dev/null \
        || compgen -G "fuzz/artifacts/$t/oom-*" >/dev/null; then
        echo "FINDING in $t: see fuzz/artifacts/$t" >&2
        exit 1
    fi
    if [ "$jobs" -gt 1 ] && [ "$missing" -ne 0 ]; then
        echo "a worker of $t stopped without a finding or final stats: see fuzz-*.log" >&2
        exit 1
    fi
done
