#!/usr/bin/env bash
# Conformance of the legacy model (src/sim/legacy.rs) against the real mooncake_master.
#
# Installs the real master and client from PyPI at a pinned version (conformance/requirements.txt)
# into its own venv, plus the Debian libraries it links (libibverbs1 librdmacm1 libnuma1), then
# runs `python -m conformance` inside a network namespace of its own (`unshare -n`: lo and a veth
# pair that live only there; nothing listens in the machine's own namespace). Each fault schedule
# runs against the real master, is replayed with `mooncake-liveness replay --policy legacy` and
# `--policy rfc`, and docs/CONFORMANCE.md gets the table. Exit status: 0 when legacy agrees with
# the real master in every case, 1 when it does not or when anything cannot be installed or run.
#
# Bounded: the cases run under `timeout 300`; every process is stopped by id at the end, even on
# failure (the Python driver stops its children in a `finally`, the kernel kills them if the
# driver dies: PR_SET_PDEATHSIG; this script stops the driver by id on exit).
#
#   scripts/conformance.sh                 # every case, writes docs/CONFORMANCE.md
#   CONFORMANCE_ARGS="--cases client_kill --logs /tmp/logs" scripts/conformance.sh
# About 2 minutes once the venv exists (first run: + the wheel download, ~30 s).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
VENV=${CONFORMANCE_VENV:-$ROOT/target/conformance-venv}
OUT=${CONFORMANCE_OUT:-$ROOT/docs/CONFORMANCE.md}

die() {
    echo "error: $*" >&2
    exit 1
}

[[ $(id -u) == 0 ]] || die "needs root (apt-get, and unshare -n for the network namespace)"
PY=$(command -v python3.11 || true)
[[ -n $PY ]] || die "python3.11 not found (the pinned wheel is cp311)"

missing=()
for pkg in libibverbs1 librdmacm1 libnuma1 iproute2; do
    dpkg-query -W -f '${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if ((${#missing[@]})); then
    echo "conformance: apt-get install ${missing[*]}"
    apt-get update -qq >/dev/null || die "apt-get update failed"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null ||
        die "apt-get could not install ${missing[*]}"
fi

if [[ ! -x $VENV/bin/python ]]; then
    "$PY" -m venv "$VENV" || die "cannot create the venv $VENV"
fi
if ! "$VENV/bin/python" -m pip install -q --disable-pip-version-check -r conformance/requirements.txt; then
    die "PyPI refused or failed to serve the pinned packages of conformance/requirements.txt (mooncake-transfer-engine-non-cuda); nothing was checked"
fi

cargo build --quiet --bin mooncake-liveness
BIN=$ROOT/target/debug/mooncake-liveness

"$VENV/bin/python" -m conformance.selftest --bin "$BIN" || die "the comparison's self-test failed"

driver=""
cleanup() {
    if [[ -n $driver ]] && kill -0 "$driver" 2>/dev/null; then
        kill -TERM "$driver" 2>/dev/null || true
        for _ in $(seq 50); do
            kill -0 "$driver" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL "$driver" 2>/dev/null || true
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# shellcheck disable=SC2086 # CONFORMANCE_ARGS is a list of words
timeout --kill-after=10 300 unshare --net -- "$VENV/bin/python" -m conformance \
    --bin "$BIN" --out "$OUT" ${CONFORMANCE_ARGS:-} &
driver=$!
status=0
wait "$driver" || status=$?
driver=""
if ((status == 124)); then
    die "the cases did not finish within 300 s"
fi
exit "$status"
