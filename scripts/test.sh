#!/usr/bin/env bash
# The project's test command (the README's promise; .ci/run calls it).
# Runs: rustfmt check, clippy -D warnings, rustdoc -D warnings, unit + integration + doc tests
# (with the fuzz smoke test, feature `fuzzing`), the invariant-map check (every test, loom
# model, fuzz target and path core/src/docs/invariants.rs cites exists; a few seconds), the import
# check (no circle between the files of src/; scripts/check_imports.py, a second), the size
# check (no source file over 600 lines; scripts/check_sizes.py), the full
# simulate scenario and the minimised differential corpus (fuzz/corpus-min) in release, the
# embedding example (examples/embed.rs, asserts its story), a build check of the fuzz crate,
# the C ABI (ffi crate tests, scripts/cpp.sh: header freshness, C++ tests plain/ASan+UBSan/TSan,
# the C++ example), the loom models in their own target dir, and the conformance harness
# against both real masters (PyPI 0.3.13.post1 and 0.3.14, in a network namespace of its own)
# and serve (13 cases x 3 masters and the self-test: 10m36s warm on 2 cores, timed with `time
# scripts/conformance.sh`; bounded by its own `timeout 1200`), the wire crate's golden captures,
# `serve` with the real client (scripts/serve_real.sh; ~1 min), and a smoke of the real-client
# load driver against `serve` (scripts/realload.sh; ~20 s).
# Installs what it needs. Warm (everything built), its steps took about 17 minutes on this 2-core
# machine while other work ran; a clean clone adds the builds. CI's budget is 40 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/toolchain.sh # the pinned toolchain, aliased to stable where that is the same release

# Each step prints the time elapsed since the start, so a slow step shows in the CI log.
step() { printf '\n==> [%dm%02ds] %s\n' $((SECONDS / 60)) $((SECONDS % 60)) "$*"; }

if ! cargo fmt --version >/dev/null 2>&1 || ! cargo clippy --version >/dev/null 2>&1; then
    step "installing rustfmt and clippy"
    rustup component add rustfmt clippy
fi

step "cargo fmt --check"
cargo fmt --all -- --check

# The libraries and the tools: the core, the reference master and this package (`TOOLS`);
# the wire crate and the C ABI have steps of their own below.
TOOLS=(-p mooncake-liveness-core -p mooncake-liveness-master -p mooncake-liveness --features mooncake-liveness/fuzzing)

step "cargo clippy --all-targets -D warnings (core, master, tools with the fuzzing feature)"
cargo clippy --locked "${TOOLS[@]}" --all-targets -- -D warnings

step "rustdoc without warnings (broken or private links)"
RUSTDOCFLAGS="-D warnings" cargo doc --locked --no-deps "${TOOLS[@]}" --quiet

step "unit, integration, doc and fuzz-smoke tests (core, master, tools)"
cargo test --locked "${TOOLS[@]}"

step "wire crate (mooncake-liveness-wire): clippy, unit, golden-capture and mutation tests (seconds)"
cargo clippy --locked -p mooncake-liveness-wire --all-targets --features fuzzing -- -D warnings
RUSTDOCFLAGS="-D warnings" cargo doc --locked --no-deps -p mooncake-liveness-wire --quiet
cargo test --locked -p mooncake-liveness-wire --features fuzzing

step "the invariant map cites only tests, loom models, fuzz targets and paths that exist"
cargo test --locked "${TOOLS[@]}" -- --list --format terse >target/test-list.txt 2>&1
python3 scripts/check_invariant_map.py target/test-list.txt

step "no import circle between the files of any crate's src/ (core, master, tools; a second or two)"
python3 scripts/check_imports.py

step "no source file over 600 lines in any crate's src/ (test files apart; under a second)"
python3 scripts/check_sizes.py

step "realload: the real-client driver reads a master log right (made-up log, under a second)"
python3 -m realload.selftest

step "the full simulate scenario and the minimised differential corpus (release): the main job's story; every committed corpus input checked against the model"
# `--features fuzzing` on both release steps, so they share one build.
cargo test --locked --release --features fuzzing --test sim_simulate --test fuzz_smoke -- --ignored

step "examples/embed.rs: the core embedded in a toy master, its story asserted (release, reuses the build above; ~1 s to run)"
cargo run --locked --release --features fuzzing --example embed

step "fuzz crate builds"
(cd fuzz && cargo check --locked --quiet)

step "C ABI: FFI crate tests, then C++ tests (plain, ASan+UBSan, TSan) and the example"
cargo clippy --quiet -p mooncake-liveness-ffi --all-targets -- -D warnings
cargo test --quiet -p mooncake-liveness-ffi
scripts/cpp.sh

step "loom models (LOOM_MAX_PREEMPTIONS=${LOOM_MAX_PREEMPTIONS:-3})"
scripts/loom.sh

step "conformance: our models against the real masters 0.3.13.post1 and 0.3.14, and serve (docs/CONFORMANCE.md; ~11 min)"
CONFORMANCE_OUT=target/CONFORMANCE.md scripts/conformance.sh

step "serve: the real 0.3.13.post1 client against mooncake-liveness serve (namespace; ~1 min)"
scripts/serve_real.sh

step "realload: the side-by-side driver against serve, with a paused client (namespace; ~20 s, judges no timing)"
# The release binary of the simulate step above (same features: nothing new to compile) and the
# conformance venv; --check fails the run when serve's log does not give the driver its figures.
cargo build --locked --release --features fuzzing --bin mooncake-liveness --quiet
REALLOAD_VENV=$PWD/target/conformance-venv REALLOAD_SERVE_BIN=$PWD/target/release/mooncake-liveness \
    REALLOAD_ARGS="--holders 1 --pingers 2 --joiners 2 --preload-s 3 --run-s 8 --storm-at-s 1 --rpc-threads 2 \
    --active-ttl 2 --pause-s 3 --pause-at-s 1 --check --json target/realload-smoke.json" \
    scripts/realload.sh serve >/dev/null

step "all checks passed"
