#!/usr/bin/env bash
# `mooncake-liveness serve` against the real Mooncake client (PyPI
# mooncake-transfer-engine-non-cuda==0.3.13.post1, MooncakeDistributedStore over tcp), in a
# network namespace of its own (`unshare -n`: lo plus a veth pair that exist only there).
# realclient/serve_check.py starts serve with the flags a script gives mooncake_master and checks
# setup, put, get (bytes equal), exist, remove (lease -706), the batch forms, remove_all, upstream's
# error replies to malformed frames, a SIGSTOPped client keeping its data, a killed client being
# offboarded, serve restarted under a live client (NEED_REMOUNT, ReMount, service resumes) and
# close (UnmountSegment). Exit status 0 when every check passed.
#
# Installs what it needs (the same venv and Debian libraries as scripts/conformance.sh); bounded
# by `timeout 240`; every process is stopped by id (PR_SET_PDEATHSIG if the driver dies).
#   scripts/serve_real.sh                      # ~1 min once the venv exists and serve is built
#   SERVE_REAL_LOGS=/tmp/l scripts/serve_real.sh   # keep serve's and the clients' logs there
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
VENV=${CONFORMANCE_VENV:-$ROOT/target/conformance-venv}

source scripts/lib.sh

need_root_and_python "apt-get, and unshare -n for the network namespace"
ensure_debs
ensure_client_venv "$VENV"

cargo build --quiet --locked --bin mooncake-liveness
LOGS=${SERVE_REAL_LOGS:-$ROOT/target/serve-real-logs}
status=0
timeout --kill-after=10 240 unshare --net -- "$VENV/bin/python" -m realclient.serve_check \
    --bin "$ROOT/target/debug/mooncake-liveness" --logs "$LOGS" || status=$?
if ((status == 124)); then
    die "the checks did not finish within 240 s; logs in $LOGS"
fi
exit "$status"
