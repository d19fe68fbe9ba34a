#!/usr/bin/env bash
# Conformance of our models against the real Mooncake masters, and of our own master
# (`mooncake-liveness serve`) against our model and against upstream's (docs/CONFORMANCE.md).
#
# Installs the two real masters, pinned (scripts/realmasters.sh: PyPI's 0.3.13.post1 — main's
# single-TTL monitor, and the Python client — and 0.3.14 — upstream's implementation of the
# liveness RFC, wheel pinned by version and sha256, only its mooncake_master used), builds the
# binary, runs the self-test (the recorded runs of conformance/testdata must agree with the right
# models and catch every deliberately wrong one), then `python -m conformance` inside a network
# namespace of its own (`unshare -n`: lo and veth pairs that live only there; nothing listens in
# the machine's own namespace). Every case runs on three masters: the two real ones and serve
# (with the library's defaults); each master's transcript is replayed with `mooncake-liveness
# replay --policy legacy` / `--policy rfc` (upstream's settings; our defaults for serve) and
# compared, times included, and serve's outcome is compared with upstream's wherever the designs
# agree. Exit status: 0 when every model agrees with its master in every case (upstream's design
# differences are marked, not failures) and serve with upstream, 1 otherwise or when anything
# cannot be installed or run.
#
# Bounded: the cases run under `timeout 1200`; every process is stopped by id at the end, even on
# failure (the Python driver stops its children in a `finally`, the kernel kills them if the
# driver dies: PR_SET_PDEATHSIG; this script stops the driver by id on exit).
#
#   scripts/conformance.sh                 # every case on the three masters, writes docs/CONFORMANCE.md
#   CONFORMANCE_ARGS="--cases client_kill --logs /tmp/logs" scripts/conformance.sh
#   CONFORMANCE_ARGS="--masters serve" scripts/conformance.sh     # only serve's column
#   CONFORMANCE_ARGS="--master 'mine=rfc:path/to/master'" scripts/conformance.sh  # a fourth column
# About 11 minutes on 2 cores (10 min 36 s measured, 2026-12-05); the first run also downloads
# the two wheels (~80 MB).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
OUT=${CONFORMANCE_OUT:-$ROOT/docs/CONFORMANCE.md}

source scripts/lib.sh

[[ $(id -u) == 0 ]] || die "needs root (apt-get, and unshare -n for the network namespace)"
masters=$(scripts/realmasters.sh) || die "the real masters could not be installed; nothing was checked"
eval "$masters"

cargo build --quiet --bin mooncake-liveness
BIN=$ROOT/target/debug/mooncake-liveness

"$MOONCAKE_PY" -m conformance.selftest --bin "$BIN" || die "the comparison's self-test failed"

trap stop_driver EXIT
trap 'exit 130' INT TERM

# shellcheck disable=SC2086 # CONFORMANCE_ARGS is a list of words
eval "args=(${CONFORMANCE_ARGS:-})"
timeout --kill-after=10 1200 unshare --net -- "$MOONCAKE_PY" -m conformance \
    --bin "$BIN" --legacy-master "$MOONCAKE_LEGACY_MASTER" --rfc-master "$MOONCAKE_RFC_MASTER" \
    --out "$OUT" "${args[@]}" &
driver=$!
status=0
wait "$driver" || status=$?
driver=""
if ((status == 124)); then
    die "the cases did not finish within 1200 s"
fi
exit "$status"
