#!/usr/bin/env bash
# The C ABI from C and C++ (issue 14): builds the FFI staticlib, checks that the committed
# cbindgen header is fresh, compiles the header as C11, builds and runs the GoogleTest suite
# (cpp/test_*.cpp; test_after_free.cpp: objects that outlive their Core, issue 29) plain, under
# ASan+UBSan and under TSan, and builds and runs examples/cpp/mini_master.cpp.
#
#   scripts/cpp.sh                 # what scripts/test.sh runs (~3-4 min on 2 cores, warm cargo cache)
#   scripts/cpp.sh --regen-header  # rewrite include/mooncake_liveness.h from ffi/
#   scripts/cpp.sh --bench         # also build and run the Google Benchmark (cpp/bench_is_serving.cpp)
#
# TSan note: only the C++ side is instrumented. The Rust library is built by stable rustc,
# which has no -Zsanitizer; its atomics and futex-based locks are invisible to TSan, so the
# TSan build links the cdylib and cpp/tsan.supp ignores reports from interceptors called inside
# it (its own memcpy/malloc). Every C++ access is still checked: what TSan verifies is the
# embedder's side of the contract (callbacks on library threads, handles shared across
# threads); the library's own concurrency is checked by loom (scripts/loom.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

CBINDGEN_VERSION=0.29.4
OUT=target/cpp
mkdir -p "$OUT"
step() { printf '\n==> %s\n' "$*"; }

regen=0
bench=0
for a in "$@"; do
    case "$a" in
        --regen-header) regen=1 ;;
        --bench) bench=1 ;;
        *) echo "unknown argument: $a" >&2; exit 2 ;;
    esac
done

if ! command -v g++ >/dev/null || [ ! -f /usr/include/gtest/gtest.h ] || [ ! -f /usr/include/benchmark/benchmark.h ]; then
    step "installing g++, GoogleTest and Google Benchmark (Debian packages)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq g++ libgtest-dev libbenchmark-dev >/dev/null
fi
if [ "$(cbindgen --version 2>/dev/null || true)" != "cbindgen $CBINDGEN_VERSION" ]; then
    step "installing cbindgen $CBINDGEN_VERSION"
    cargo install --locked --quiet cbindgen --version "$CBINDGEN_VERSION"
fi

gen_header() { (cd ffi && cbindgen --quiet --config cbindgen.toml --crate mooncake-liveness-ffi --output "$1"); }
if [ "$regen" = 1 ]; then
    gen_header ../include/mooncake_liveness.h
    echo "include/mooncake_liveness.h regenerated"
    exit 0
fi

step "header is fresh (cbindgen $CBINDGEN_VERSION from ffi/)"
gen_header "../$OUT/mooncake_liveness.h"
if ! diff -u include/mooncake_liveness.h "$OUT/mooncake_liveness.h"; then
    echo "include/mooncake_liveness.h is stale: run scripts/cpp.sh --regen-header and commit it" >&2
    exit 1
fi

step "cargo build --release -p mooncake-liveness-ffi"
cargo build --release --quiet -p mooncake-liveness-ffi
LIB=target/release/libmooncake_liveness_ffi.a
LINK=("$LIB" -lpthread -ldl -lm)

step "the header compiles as C11 and the wrapper as C++17"
printf '#include "mooncake_liveness.h"\nint main(void){return 0;}\n' >"$OUT/c_header.c"
gcc -std=c11 -Wall -Wextra -Werror -Iinclude "$OUT/c_header.c" -o "$OUT/c_header" "${LINK[@]}"

CXX=(g++ -std=c++17 -Wall -Wextra -Werror -g -Iinclude)
TESTS=(cpp/test_story.cpp cpp/test_stress.cpp cpp/test_after_free.cpp)
GTEST=(-lgtest -lgtest_main)

build_and_run() { # name, link..., -- flags...
    local name=$1; shift
    local link=()
    while [ "$1" != "--" ]; do link+=("$1"); shift; done
    shift
    step "C++ tests: $name"
    "${CXX[@]}" "$@" "${TESTS[@]}" -o "$OUT/tests_$name" "${GTEST[@]}" "${link[@]}"
    "$OUT/tests_$name" --gtest_brief=1
}

build_and_run plain "${LINK[@]}" -- -O1
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    build_and_run asan_ubsan "${LINK[@]}" -- -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all
# TSan links the cdylib so that cpp/tsan.supp can name the uninstrumented library (see the top).
TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/cpp/tsan.supp" \
    build_and_run tsan -Ltarget/release -lmooncake_liveness_ffi "-Wl,-rpath,$PWD/target/release" -lpthread -- \
    -O1 -fsanitize=thread

step "example: examples/cpp/mini_master.cpp"
"${CXX[@]}" -O1 -fsanitize=address,undefined examples/cpp/mini_master.cpp -o "$OUT/mini_master" "${LINK[@]}"
test "$(wc -l <examples/cpp/mini_master.cpp)" -le 300
"$OUT/mini_master"

if [ "$bench" = 1 ]; then
    step "Google Benchmark: is_serving through the C ABI vs the mutex designs"
    g++ -std=c++17 -O2 -Iinclude cpp/bench_is_serving.cpp -o "$OUT/bench_is_serving" -lbenchmark "${LINK[@]}"
    "$OUT/bench_is_serving" --benchmark_min_time=0.5
fi
step "C++ checks passed"
