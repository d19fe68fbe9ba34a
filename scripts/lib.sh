# Shared by the scripts that run the real Mooncake client and masters (realmasters.sh,
# realload.sh, serve_real.sh, conformance.sh): sourced, never run. Everything it prints goes to
# stderr, so a script whose stdout is data (realmasters.sh) may use it.

die() {
    echo "error: $*" >&2
    exit 1
}

# need_root_and_python WHY: root (for apt-get and unshare -n) and python3.11 (the pinned wheels
# are cp311); sets PY.
need_root_and_python() {
    [[ $(id -u) == 0 ]] || die "needs root ($1)"
    PY=$(command -v python3.11 || true)
    [[ -n $PY ]] || die "python3.11 not found (the pinned wheels are cp311)"
}

# The Debian libraries the client and masters link, and iproute2 for the namespaces.
ensure_debs() {
    local missing=() pkg
    for pkg in libibverbs1 librdmacm1 libnuma1 iproute2; do
        dpkg-query -W -f '${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
    done
    if ((${#missing[@]})); then
        echo "apt-get install ${missing[*]}" >&2
        apt-get update -qq >/dev/null || die "apt-get update failed"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null ||
            die "apt-get could not install ${missing[*]}"
    fi
}

# ensure_client_venv VENV: a venv at VENV holding exactly conformance/requirements.txt (the
# 0.3.13.post1 client and legacy master, pinned). Needs PY (need_root_and_python).
ensure_client_venv() {
    if [[ ! -x $1/bin/python ]]; then
        "$PY" -m venv "$1" >&2 || die "cannot create the venv $1"
    fi
    "$1/bin/python" -m pip install -q --disable-pip-version-check -r conformance/requirements.txt >&2 ||
        die "PyPI refused or failed to serve the pinned packages of conformance/requirements.txt"
}

# The driver process a script started in the background (its id in `driver`), stopped on exit:
# TERM, up to 5 s for it to stop its own children, then KILL.
driver=""
stop_driver() {
    if [[ -n $driver ]] && kill -0 "$driver" 2>/dev/null; then
        kill -TERM "$driver" 2>/dev/null || true
        for _ in $(seq 50); do
            kill -0 "$driver" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL "$driver" 2>/dev/null || true
    fi
}
