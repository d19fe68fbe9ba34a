#!/usr/bin/env bash
# Records the coro_rpc traffic between the real 0.3.13.post1 client and the real mooncake_master
# (PyPI wheel, in a network namespace of its own: `unshare -n`, lo plus a veth pair that exist
# only there) and rewrites the wire crate's golden data, wire/tests/data/{exchanges.jsonl,
# sequence.txt,answers.jsonl}. Not part of CI: the data is committed; run this to re-record it
# (then `cargo test -p mooncake-liveness-wire` must still pass, or the decoders need work).
#
#   scripts/wire_capture.sh            # ~40 s once the venv exists
#   WIRE_CAPTURE_LOGS=/tmp/l scripts/wire_capture.sh   # keep master/client logs there
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
VENV=${CONFORMANCE_VENV:-$ROOT/target/conformance-venv}
[[ $(id -u) == 0 ]] || { echo "error: needs root (unshare -n)" >&2; exit 1; }
if [[ ! -x $VENV/bin/python ]]; then
    python3.11 -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install -q --disable-pip-version-check -r conformance/requirements.txt
RAW=$ROOT/target/wire-capture-raw.jsonl
LOGS=${WIRE_CAPTURE_LOGS:-$ROOT/target/wire-capture-logs}
timeout --kill-after=10 240 unshare --net -- "$VENV/bin/python" -m realclient.capture --out "$RAW" --logs "$LOGS"
python3 -m realclient.extract "$RAW" wire/tests/data
