#!/usr/bin/env bash
# Runs every cargo-fuzz target for SECONDS each (default 60) on stable, without a sanitizer
# (`-s none`), starting from the committed seeds in fuzz/seeds/<target>/. Installs cargo-fuzz if
# it is missing. Findings land in fuzz/artifacts/<target>/ (git-ignored); a finding that is
# fixed becomes a seed. Usage: scripts/fuzz.sh [SECONDS] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
shift || true
if ! cargo fuzz --version >/dev/null 2>&1; then
    cargo install cargo-fuzz --locked
fi
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    mapfile -t targets < <(cd fuzz && cargo fuzz list)
fi
for t in "${targets[@]}"; do
    echo "==> fuzz $t for ${secs}s"
    mkdir -p "fuzz/corpus/$t"
    cargo fuzz run "$t" -s none "fuzz/corpus/$t" "fuzz/seeds/$t" -- -max_total_time="$secs" -print_final_stats=1 2>&1 \
        | grep -E '^(#[0-9]+.*DONE|stat::number_of_executed_units|stat::peak_rss_mb|==[0-9]+==|SUMMARY|Done)' || true
    if ls "fuzz/artifacts/$t"/crash-* >/dev/null 2>&1; then
        echo "FINDING in $t: see fuzz/artifacts/$t" >&2
        exit 1
    fi
done
