#!/usr/bin/env bash
# The two real Mooncake masters, installed once under target/ and pinned; reusable by any script.
#
#   legacy-real        mooncake-transfer-engine-non-cuda==0.3.13.post1 (PyPI): `mooncake_master`
#                      (main's single-TTL monitor) and the Python client every harness drives, in a
#                      venv of its own, with its dependencies pinned (conformance/requirements.txt).
#   upstream-rfc-real  mooncake-transfer-engine-cuda13==0.3.14 (PyPI): only its
#                      `mooncake/mooncake_master` (upstream's implementation of the liveness RFC,
#                      PR #2991; it links no CUDA library) and the libraries bundled beside it.
#                      The wheel is pinned by version AND sha256 (pip --require-hashes, then checked
#                      again with sha256sum) and installed with --no-deps into its own directory.
#
# Also installs the Debian libraries both link (libibverbs1 librdmacm1 libnuma1) and iproute2.
# Needs root (apt-get). Prints nothing but the three paths, as shell assignments:
#
#   eval "$(scripts/realmasters.sh)"
#   "$MOONCAKE_PY" -c 'import mooncake.store'        # the client (0.3.13.post1)
#   "$MOONCAKE_LEGACY_MASTER" --version              # 0.3.13.post1
#   "$MOONCAKE_RFC_MASTER" --version                 # 0.3.14 (git: e1ea5d3)
#
# Run the masters and clients only inside a network namespace of your own (`unshare -n`).
# Environment: REALMASTERS_DIR (default target/realmasters), CONFORMANCE_VENV (default
# target/conformance-venv).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
VENV=${CONFORMANCE_VENV:-$ROOT/target/conformance-venv}
DIR=${REALMASTERS_DIR:-$ROOT/target/realmasters}

RFC_WHEEL=mooncake_transfer_engine_cuda13-0.3.14-cp311-cp311-manylinux_2_28_x86_64.whl
RFC_SHA256=1fc1d8597e5501d6967a3d2835878500460d7dd40999f6f987131126dcba5c8f
RFC_PIN="mooncake-transfer-engine-cuda13==0.3.14"

source scripts/lib.sh
say() { echo "realmasters: $*" >&2; }

need_root_and_python "apt-get for the Debian libraries"
ensure_debs

# legacy-real and the client: the venv, exactly conformance/requirements.txt.
ensure_client_venv "$VENV"
LEGACY=$("$VENV/bin/python" -c 'import mooncake, os; print(os.path.join(os.path.dirname(mooncake.__file__), "mooncake_master"))')
[[ -x $LEGACY ]] || die "$LEGACY is missing or not executable"

# upstream-rfc-real: the 0.3.14 wheel, checked, unpacked with --no-deps; only the master is used.
RFC_DIR=$DIR/0.3.14
RFC=$RFC_DIR/mooncake/mooncake_master
if [[ ! -x $RFC || ! -f $RFC_DIR/.sha256-verified ]]; then
    rm -rf "$RFC_DIR" "$DIR/wheel"
    mkdir -p "$DIR/wheel"
    echo "$RFC_PIN --hash=sha256:$RFC_SHA256" >"$DIR/wheel/requirements.txt"
    say "downloading $RFC_WHEEL (about 50 MB)"
    "$VENV/bin/python" -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
        --python-version 3.11 --platform manylinux_2_28_x86_64 --require-hashes \
        -r "$DIR/wheel/requirements.txt" -d "$DIR/wheel" >&2 ||
        die "PyPI refused or failed to serve $RFC_PIN with sha256 $RFC_SHA256"
    [[ -f $DIR/wheel/$RFC_WHEEL ]] || die "pip did not fetch $RFC_WHEEL"
    got=$(sha256sum "$DIR/wheel/$RFC_WHEEL" | cut -d' ' -f1)
    [[ $got == "$RFC_SHA256" ]] || die "$RFC_WHEEL has sha256 $got, expected $RFC_SHA256"
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check --no-deps --no-compile \
        --target "$RFC_DIR" "$DIR/wheel/$RFC_WHEEL" >&2 || die "cannot unpack $RFC_WHEEL into $RFC_DIR"
    echo "$RFC_SHA256  $RFC_WHEEL" >"$RFC_DIR/.sha256-verified"
    rm -rf "$DIR/wheel"
fi
[[ -x $RFC ]] || die "$RFC is missing or not executable"
version=$("$RFC" --version 2>/dev/null | head -1)
[[ $version == *"0.3.14"* ]] || die "$RFC reports '$version', expected 0.3.14"

printf 'MOONCAKE_PY=%q\nMOONCAKE_LEGACY_MASTER=%q\nMOONCAKE_RFC_MASTER=%q\n' "$VENV/bin/python" "$LEGACY" "$RFC"
