#!/usr/bin/env bash
# The mutation campaign (issue 17; results in MUTANTS.md). Not part of scripts/test.sh: on 2 cores
# it takes hours for the whole core, so it runs by hand, one area at a time.
#
#   scripts/mutants.sh                 # every area below, in order
#   scripts/mutants.sh word monitor    # only these areas
#   scripts/mutants.sh --list          # the areas, their files and test filters
#
# What keeps it feasible on 2 cores:
# - one file (or folder) per run (`-f`), one mutant at a time (`--in-place` implies it), the baseline skipped (`scripts/test.sh` is
#   the baseline) with explicit timeouts;
# - `--in-place`: mutants are built in this checkout's own `target/`, so only the mutated crate
#   rebuilds (no copy of the tree, no cold build per run). The script therefore refuses to run on
#   a tree with uncommitted changes under src/, tests/ or Cargo.*, and restores src/ on exit
#   (cargo-mutants restores each file itself; the trap covers an interrupted run);
# - `--profile mutants` (Cargo.toml: dev without debug info): each mutant relinks fast;
# - per area, only the tests that can see that code: the unit tests (`--lib`) and the named
#   integration tests. A mutant one of the *other* tests would catch shows up here as missed and
#   is then either killed by a test in the filter or explained in MUTANTS.md.
#
# Env: MUTANTS_ITERATE=1 re-runs only what the last run of an area did not catch (`--iterate`:
#      after adding tests for its survivors), MUTANTS_TIMEOUT (test timeout per mutant, s; 300), MUTANTS_BUILD_TIMEOUT (s; 900),
#      MUTANTS_OUT (where each area's mutants.out goes; target/mutants/<area>),
#      MUTANTS_RE (only the mutants whose name matches this regex, `--re`: e.g. one function's
#      new code, `MUTANTS_RE=pull_in scripts/mutants.sh wheel`),
#      MUTANTS_SHARD (`K/N`: only every N-th mutant from the K-th, `--shard K/N --sharding
#      round-robin`: a sample spread over every file of an area too big to run whole, e.g.
#      `MUTANTS_SHARD=0/6 scripts/mutants.sh master`).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/toolchain.sh

VERSION=27.1.0
if [ "$(cargo mutants --version 2>/dev/null)" != "cargo-mutants $VERSION" ]; then
    cargo install --locked cargo-mutants --version "$VERSION"
fi

# area | files (-f globs) | test targets (cargo args: also limit what each mutant rebuilds) |
# test-binary arguments (a name filter for the unit tests: the slow wheel/loadtest proptests are
# skipped where they cannot see the mutated code)
# (The wheel's `tests.rs` is not listed: cargo-mutants does not see `#[cfg(all(test, not(loom)))]`
# as test code and would mutate the tests' own inputs.)
LIB_SKIP="--skip loadtest:: --skip sim:: --skip monitor::wheel"
AREAS=(
    "word|core/src/liveness/word.rs|--lib|liveness::"
    "record|core/src/liveness/record.rs|--lib --test liveness_transitions --test liveness_signals --test monitor_timing --test monitor_brakes --test master_requests --test master_offboarding|$LIB_SKIP"
    "registry|core/src/liveness/registry.rs|--lib --test liveness_transitions --test liveness_signals --test monitor_timing --test monitor_brakes --test master_requests --test master_offboarding|$LIB_SKIP"
    "mount|core/src/liveness/mount.rs|--lib --test liveness_transitions --test liveness_signals --test monitor_timing --test monitor_brakes --test master_requests --test master_offboarding|$LIB_SKIP"
    "liveness|core/src/liveness/mod.rs|--lib --test liveness_transitions --test liveness_signals --test monitor_timing --test monitor_brakes --test master_requests --test master_offboarding|$LIB_SKIP"
    "slab|core/src/liveness/slab.rs core/src/liveness/owner.rs|--lib --test liveness_transitions --test liveness_signals --test monitor_timing --test monitor_brakes --test master_requests --test master_offboarding --test master_paths|$LIB_SKIP"
    "eligibility|core/src/eligibility.rs|--lib --test master_paths --test liveness_signals --test monitor_timing --test monitor_brakes --test master_requests --test master_offboarding|$LIB_SKIP"
    "monitor|core/src/monitor/mod.rs core/src/monitor/brake.rs core/src/monitor/thread.rs|--lib --test liveness_transitions --test liveness_signals --test monitor_timing --test monitor_brakes --test master_requests --test master_offboarding --test monitor_thread|$LIB_SKIP"
    "offboarding|core/src/offboarding/mod.rs core/src/offboarding/job.rs core/src/offboarding/brakes.rs|--lib --test offboarding_retry --test liveness_transitions --test liveness_signals --test monitor_timing --test monitor_brakes --test master_requests --test master_offboarding|$LIB_SKIP"
    "wheel|core/src/monitor/wheel/mod.rs core/src/monitor/wheel/level.rs|--lib --test liveness_transitions|--skip loadtest:: --skip sim::"
    "queue|core/src/offboarding/queue.rs|--lib --test offboarding_queue|$LIB_SKIP"
    "executor|core/src/offboarding/executor.rs|--lib --test offboarding_executor --test offboarding_executor_telemetry|$LIB_SKIP"
    "config|core/src/config/**|--lib --test config_aliases|$LIB_SKIP"
    # master: every test that drives the reference master, the differential fuzzer's seeds
    # (fuzz_smoke) included, so `--features=fuzzing` (about 35 s a mutant)
    "master|master/src/master/**|--features=fuzzing --lib --test master_paths --test master_failover --test liveness_signals --test monitor_timing --test monitor_brakes --test master_requests --test master_offboarding --test master_seam --test master_stress --test snapshot_restore --test snapshot_restore_errors --test snapshot_fuzz_regressions --test replay_policy --test sim_replay --test offboarding_retry --test telemetry --test differential_threads --test fuzz_smoke|$LIB_SKIP"
)

if [ "${1:-}" = "--list" ]; then
    printf '%s\n' "${AREAS[@]}" | column -t -s '|'
    exit 0
fi

if [ -n "$(git status --porcelain --untracked-files=all -- src tests Cargo.toml Cargo.lock)" ]; then
    echo "mutants.sh mutates this checkout in place: commit or stash the changes under src/, tests/, Cargo.* first" >&2
    git status --short -- src tests Cargo.toml Cargo.lock >&2
    exit 1
fi
trap 'git checkout -- src' EXIT

wanted=("$@")
for entry in "${AREAS[@]}"; do
    IFS='|' read -r area files targets filter <<<"$entry"
    if [ ${#wanted[@]} -gt 0 ] && [[ ! " ${wanted[*]} " == *" $area "* ]]; then
        continue
    fi
    out="${MUTANTS_OUT:-target/mutants}/$area"
    mkdir -p "$out"
    file_args=()
    for f in $files; do file_args+=(-f "$f"); done
    target_args=()
    for t in $targets; do target_args+=("--cargo-arg=$t"); done
    printf '\n==> %s: %s (cargo test %s -- %s)\n' "$area" "$files" "$targets" "$filter"
    # cargo-mutants exits 2 when a mutant is missed, 3 on a timeout: the campaign goes on;
    # anything else (a usage error, a broken tree) stops it.
    rc=0
    select=()
    if [ "${MUTANTS_ITERATE:-0}" = 1 ]; then select=(--iterate); fi
    if [ -n "${MUTANTS_RE:-}" ]; then select+=(--re "$MUTANTS_RE"); fi
    if [ -n "${MUTANTS_SHARD:-}" ]; then select+=(--shard "$MUTANTS_SHARD" --sharding round-robin); fi
    # shellcheck disable=SC2086 # $filter is a list of test-binary arguments
    PROPTEST_MAX_SHRINK_ITERS=0 PROPTEST_DISABLE_FAILURE_PERSISTENCE=1 cargo mutants --in-place --baseline skip --no-shuffle \
        --profile mutants \
        --timeout "${MUTANTS_TIMEOUT:-300}" --build-timeout "${MUTANTS_BUILD_TIMEOUT:-900}" \
        --cargo-arg=--locked \
        --output "$out" "${select[@]}" "${file_args[@]}" "${target_args[@]}" -- -- $filter || rc=$?
    if [ "$rc" != 0 ] && [ "$rc" != 2 ] && [ "$rc" != 3 ]; then
        echo "cargo mutants failed on $area (exit $rc)" >&2
        exit "$rc"
    fi
    for k in caught missed unviable timeout; do
        n=$(grep -c . "$out/mutants.out/$k.txt" 2>/dev/null || true)
        printf '%s %s: %s\n' "$area" "$k" "${n:-0}"
    done
done
