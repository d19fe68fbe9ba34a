#!/usr/bin/env bash
# Real-client load against a real master: 0.3.13.post1 Python clients (MooncakeDistributedStore)
# preload keys for about a minute, then run a Get/Put mix while a burst of new clients joins and
# everyone else keeps pinging; the master's own log (--vmodule=scoped_vlog_timer=1) gives Ping
# latency, the worst heartbeat gap as it saw it, ReMount latency and every liveness transition
# (python -m realload; see realload/__main__.py). Prints one JSON object per master.
#
#   scripts/realload.sh legacy            # the 0.3.13.post1 master (--client_ttl)
#   scripts/realload.sh rfc               # upstream's RFC master, 0.3.14 (--client_active_ttl_sec ...)
#   scripts/realload.sh serve             # mooncake-liveness serve, release build (cargo build
#                                         # --release first), with the RFC master's flags
#   scripts/realload.sh custom "CMD ..."  # any master taking the RFC master's flags
#   scripts/realload.sh sides             # REALLOAD_ROUNDS (3) rounds of legacy, rfc, serve in
#                                         # turn, then the table (python3 -m realload.table)
#   REALLOAD_ARGS="--preload-s 20 --run-s 30" scripts/realload.sh rfc
#   REALLOAD_ARGS="--rpc-threads 2 --pause-s 15" scripts/realload.sh sides   # the fault run
#
# REALLOAD_SERVE_BIN runs that binary instead of building target/release/mooncake-liveness;
# REALLOAD_VENV the clients from another venv of conformance/requirements.txt.
# `sides` writes each run's JSON and logs under REALLOAD_OUT (default target/realload-out/<UTC
# time>) and waits REALLOAD_GAP_S (10) seconds between runs.
#
# Installs the clients (and the legacy master) from PyPI at the versions pinned in
# conformance/requirements.txt into target/realload-venv, the Debian libraries they link, and,
# for `rfc`, the mooncake/mooncake_master binary of mooncake-transfer-engine-cuda13==0.3.14 through
# scripts/realmasters.sh (pinned by version and sha256, into target/realmasters, shared with the
# conformance harness). Everything runs inside a network namespace of its own
# (unshare -n: lo and a veth pair that exist only there), under `timeout`; the driver stops every
# process it starts by id. About 2 minutes per master at the defaults.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
VENV=${REALLOAD_VENV:-$ROOT/target/realload-venv}

source scripts/lib.sh

which=${1:-}
case $which in
legacy | rfc | serve | sides) ;;
custom) [[ -n ${2:-} ]] || die "custom needs the master command as its second argument" ;;
*) die "usage: scripts/realload.sh legacy|rfc|serve|sides|custom \"CMD\" (got '${which}')" ;;
esac
ROUNDS=${REALLOAD_ROUNDS:-3}
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || die "REALLOAD_ROUNDS must be a positive whole number (got '$ROUNDS')"
GAP_S=${REALLOAD_GAP_S:-10}
[[ $GAP_S =~ ^[0-9]+$ ]] || die "REALLOAD_GAP_S must be a whole number of seconds (got '$GAP_S')"

need_root_and_python "apt-get, and unshare -n for the network namespace"
ensure_debs
ensure_client_venv "$VENV"

# Sets master, kind and version for one master: resolve legacy|rfc|serve|custom [CMD].
resolve() {
    case $1 in
    legacy)
        master=$("$VENV/bin/python" -c 'import mooncake, os; print(os.path.join(os.path.dirname(mooncake.__file__), "mooncake_master"))')
        kind=legacy
        version="0.3.13.post1 (mooncake-transfer-engine-non-cuda)"
        ;;
    rfc)
        # The pinned, sha256-checked 0.3.14 master that the conformance harness uses too
        # (scripts/realmasters.sh, into target/realmasters; run with this script's venv).
        local assigns
        assigns=$(CONFORMANCE_VENV=$VENV scripts/realmasters.sh) || die "the 0.3.14 master could not be installed"
        master=$(sed -n 's/^MOONCAKE_RFC_MASTER=//p' <<<"$assigns")
        [[ -x $master ]] || die "scripts/realmasters.sh gave no 0.3.14 master"
        kind=rfc
        version="" # it logs its own ("Mooncake master version: ...")
        ;;
    serve)
        local bin=${REALLOAD_SERVE_BIN:-}
        if [[ -z $bin ]]; then
            cargo build --quiet --locked --release --bin mooncake-liveness || die "cargo build --release failed"
            bin=$ROOT/target/release/mooncake-liveness
        fi
        [[ -x $bin ]] || die "REALLOAD_SERVE_BIN=$bin is not an executable"
        master="$bin serve"
        kind=rfc
        local dirty=""
        git diff --quiet HEAD -- src wire Cargo.toml Cargo.lock 2>/dev/null || dirty="-dirty"
        version="$("$bin" --version) (git $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$dirty, $bin)"
        ;;
    custom)
        master=$2
        kind=rfc
        version=""
        ;;
    esac
}

trap stop_driver EXIT
trap 'exit 130' INT TERM

# One run of the driver against the resolved master: run_one LABEL [JSON LOGDIR].
run_one() {
    local label=$1 out=()
    [[ -z ${2:-} ]] || out=(--json "$2" --logs "$3")
    # shellcheck disable=SC2086 # REALLOAD_ARGS is a list of words
    timeout --kill-after=10 600 unshare --net -- "$VENV/bin/python" -m realload \
        --master-cmd "$master" --kind "$kind" --label "$label" --master-version "$version" \
        "${out[@]}" ${REALLOAD_ARGS:-} &
    driver=$!
    local status=0
    wait "$driver" || status=$?
    driver=""
    ((status != 124)) || die "the $label run did not finish within 600 s"
    return "$status"
}

if [[ $which != sides ]]; then
    resolve "$which" "${2:-}"
    run_one "$which"
    exit
fi

OUT=${REALLOAD_OUT:-$ROOT/target/realload-out/$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$OUT"
declare -A MASTER KIND VERSION
for m in legacy rfc serve; do # every binary ready (serve built) before the first run
    resolve "$m"
    MASTER[$m]=$master KIND[$m]=$kind VERSION[$m]=$version
done
first=1 failed=0
for round in $(seq "$ROUNDS"); do
    for m in legacy rfc serve; do
        ((first)) || sleep "$GAP_S"
        first=0
        master=${MASTER[$m]} kind=${KIND[$m]} version=${VERSION[$m]}
        echo "realload: round $round/$ROUNDS, $m, $(date -u +%H:%M:%S) UTC, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
        status=0
        run_one "$m" "$OUT/$m-$round.json" "$OUT/logs-$m-$round" >"$OUT/$m-$round.out" || status=$?
        if ((status != 0)); then
            echo "realload: the $m run of round $round failed (status $status); see $OUT/$m-$round.out" >&2
            failed=1
        fi
    done
done
shopt -s nullglob
jsons=("$OUT"/*.json)
((${#jsons[@]})) || die "no run finished; see $OUT"
"$VENV/bin/python" -m realload.table "${jsons[@]}"
echo "realload: runs in $OUT" >&2
exit "$failed"
