#!/usr/bin/env bash
# Runs the loom models in loom_tests/ (one `loom_*` test target per race; see Cargo.toml).
#
#   scripts/loom.sh                          # every model, preemption bound 3
#   scripts/loom.sh two_first_mounts         # extra arguments go to `cargo test` (a name filter)
#   LOOM_MAX_PREEMPTIONS=4 scripts/loom.sh   # a deeper search
#   scripts/loom.sh -- --nocapture           # show each model's iterations and outcomes
#
# The crate is built with `--cfg loom` (core/src/sync.rs switches atomics, Arc, Mutex, thread and
# Backoff to loom) and debug assertions on, in release mode and in its own target directory, so
# switching between loom and normal builds does not rebuild everything. First build ~65 s.
#
# Environment (defaults in parentheses):
#   CARGO_TARGET_DIR          (target/loom)
#   LOOM_MAX_PREEMPTIONS      (3) preemptions per execution; 2-3 catches most bugs.
#
# Debugging a failing model (these are read by loom itself; loom_tests/common/mod.rs passes
# them through):
#   LOOM_CHECKPOINT_FILE=f.json   where loom saves the exploration path, and, if the file exists
#                                 when a run starts, the path it resumes from (needs loom's
#                                 `checkpoint` feature, which Cargo.toml enables).
#   LOOM_CHECKPOINT_INTERVAL=n    save the path every n iterations (loom's default 20_000 is more
#                                 than our models run: use 1, so the file holds the path of the
#                                 iteration that failed).
#   LOOM_LOG=trace                log every modelled operation and thread switch (replay one
#                                 failing iteration from a checkpoint, or the output is enormous).
#   LOOM_LOCATION=1               record the source location of each operation, so the log and
#                                 causality errors name the line.
# Typical session (record, then replay only the failing iteration with a full trace):
#   rm -f /tmp/m.json
#   LOOM_CHECKPOINT_FILE=/tmp/m.json LOOM_CHECKPOINT_INTERVAL=1 scripts/loom.sh mount_vs_offline_sweep
#   LOOM_CHECKPOINT_FILE=/tmp/m.json LOOM_LOG=trace LOOM_LOCATION=1 \
#       scripts/loom.sh mount_vs_offline_sweep -- --nocapture
# Runs cut short on purpose (LOOM_CHECKPOINT_FILE, LOOM_MAX_PERMUTATIONS, LOOM_MAX_DURATION, or a
# bound below 2) skip the models' "every allowed outcome was reached" check.
set -euo pipefail

cd "$(dirname "$0")/.."
source scripts/toolchain.sh # the pinned toolchain, aliased to stable where that is the same release

export RUSTFLAGS="--cfg loom -C debug-assertions=on"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target/loom}"
export LOOM_MAX_PREEMPTIONS="${LOOM_MAX_PREEMPTIONS:-3}"

exec cargo test --locked --release --test 'loom_*' "$@"
