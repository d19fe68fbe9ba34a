#!/usr/bin/env bash
# Real-client load against a real master: 0.3.13.post1 Python clients (MooncakeDistributedStore)
# preload keys for about a minute, then run a Get/Put mix while a burst of new clients joins and
# everyone else keeps pinging; the master's own log (--vmodule=scoped_vlog_timer=1) gives Ping
# latency, the worst heartbeat gap as it saw it, ReMount latency and every liveness transition
# (python -m realload; see realload/__main__.py). Prints one JSON object per master.
#
#   scripts/realload.sh legacy            # the 0.3.13.post1 master (--client_ttl)
#   scripts/realload.sh rfc               # upstream's RFC master, 0.3.14 (--client_active_ttl_sec ...)
#   scripts/realload.sh custom "CMD ..."  # any master taking the RFC master's flags, e.g.
#                                         # "target/release/mooncake-liveness serve"
#   REALLOAD_ARGS="--preload-s 20 --run-s 30" scripts/realload.sh rfc
#
# Installs the clients (and the legacy master) from PyPI at the versions pinned in
# conformance/requirements.txt into target/realload-venv, the Debian libraries they link, and,
# for `rfc`, only the mooncake/mooncake_master binary of mooncake-transfer-engine-cuda13==0.3.14
# (pip download --no-deps, sha256 checked; the libraries its RPATH names come from the same
# wheel) into target/realload-rfc. Everything runs inside a network namespace of its own
# (unshare -n: lo and a veth pair that exist only there), under `timeout`; the driver stops every
# process it starts by id. About 2 minutes per master at the defaults.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
VENV=${REALLOAD_VENV:-$ROOT/target/realload-venv}
RFC_DIR=$ROOT/target/realload-rfc
RFC_WHEEL=mooncake_transfer_engine_cuda13-0.3.14-cp311-cp311-manylinux_2_28_x86_64.whl
RFC_SHA256=1fc1d8597e5501d6967a3d2835878500460d7dd40999f6f987131126dcba5c8f

die() {
    echo "error: $*" >&2
    exit 1
}

which=${1:-}
case $which in
legacy | rfc) ;;
custom) [[ -n ${2:-} ]] || die "custom needs the master command as its second argument" ;;
*) die "usage: scripts/realload.sh legacy|rfc|custom \"CMD\" (got '${which}')" ;;
esac

[[ $(id -u) == 0 ]] || die "needs root (apt-get, and unshare -n for the network namespace)"
PY=$(command -v python3.11 || true)
[[ -n $PY ]] || die "python3.11 not found (the pinned client wheel is cp311)"

missing=()
for pkg in libibverbs1 librdmacm1 libnuma1 iproute2; do
    dpkg-query -W -f '${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if ((${#missing[@]})); then
    apt-get update -qq >/dev/null || die "apt-get update failed"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null ||
        die "apt-get could not install ${missing[*]}"
fi

if [[ ! -x $VENV/bin/python ]]; then
    "$PY" -m venv "$VENV" || die "cannot create the venv $VENV"
fi
"$VENV/bin/python" -m pip install -q --disable-pip-version-check -r conformance/requirements.txt ||
    die "PyPI refused or failed to serve the pinned client packages (conformance/requirements.txt)"

case $which in
legacy)
    master=$("$VENV/bin/python" -c 'import mooncake, os; print(os.path.join(os.path.dirname(mooncake.__file__), "mooncake_master"))')
    kind=legacy
    ;;
rfc)
    master=$RFC_DIR/mooncake/mooncake_master
    if [[ ! -x $master ]]; then
        mkdir -p "$RFC_DIR"
        if [[ ! -f $RFC_DIR/$RFC_WHEEL ]]; then
            "$VENV/bin/python" -m pip download -q --no-deps -d "$RFC_DIR" mooncake-transfer-engine-cuda13==0.3.14 ||
                die "PyPI refused or failed to serve mooncake-transfer-engine-cuda13==0.3.14"
        fi
        echo "$RFC_SHA256  $RFC_DIR/$RFC_WHEEL" | sha256sum -c --quiet - ||
            die "$RFC_WHEEL does not have the pinned sha256 $RFC_SHA256"
        # Only the master binary and the libraries its RPATH ($ORIGIN/../…libs) names.
        "$VENV/bin/python" - "$RFC_DIR" "$RFC_DIR/$RFC_WHEEL" <<'EOF'
import sys, zipfile
out, wheel = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as z:
    for name in z.namelist():
        if name == "mooncake/mooncake_master" or name.startswith("mooncake_transfer_engine_cuda13.libs/"):
            z.extract(name, out)
EOF
        chmod +x "$master"
    fi
    kind=rfc
    ;;
custom)
    master=$2
    kind=rfc
    ;;
esac

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

# shellcheck disable=SC2086 # REALLOAD_ARGS is a list of words
timeout --kill-after=10 600 unshare --net -- "$VENV/bin/python" -m realload \
    --master-cmd "$master" --kind "$kind" --label "$which" ${REALLOAD_ARGS:-} &
driver=$!
status=0
wait "$driver" || status=$?
driver=""
((status != 124)) || die "the run did not finish within 600 s"
exit "$status"
