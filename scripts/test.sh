#!/usr/bin/env bash
# The project's test command (the README's promise; .ci/run calls it).
# Runs: rustfmt check, clippy -D warnings, rustdoc -D warnings, unit + integration + doc tests
# (with the fuzz smoke test, feature `fuzzing`), the full simulate scenario in release, a build
# check of the fuzz crate, the C ABI (ffi crate tests, scripts/cpp.sh: header freshness, C++
# tests plain/ASan+UBSan/TSan, the C++ example), and the loom models in their own target dir.
# Installs what it needs; on 2 cores from a clean clone it takes well under 25 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }

if ! cargo fmt --version >/dev/null 2>&1 || ! cargo clippy --version >/dev/null 2>&1; then
    step "installing rustfmt and clippy"
    rustup component add rustfmt clippy
fi

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy --all-targets --features fuzzing -D warnings"
cargo clippy --all-targets --features fuzzing -- -D warnings

step "rustdoc without warnings (broken or private links)"
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --features fuzzing --quiet

step "unit, integration, doc and fuzz-smoke tests"
cargo test --features fuzzing

step "the full simulate scenario (release): the qualitative story of the main job"
cargo test --release --test sim_simulate -- --ignored

step "fuzz crate builds"
(cd fuzz && cargo check --quiet)

step "C ABI: FFI crate tests, then C++ tests (plain, ASan+UBSan, TSan) and the example"
cargo clippy --quiet -p mooncake-liveness-ffi --all-targets -- -D warnings
cargo test --quiet -p mooncake-liveness-ffi
scripts/cpp.sh

step "loom models (LOOM_MAX_PREEMPTIONS=${LOOM_MAX_PREEMPTIONS:-3})"
scripts/loom.sh

step "all checks passed"
