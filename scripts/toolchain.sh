# Sourced by the scripts in this folder before their first cargo command.
#
# rust-toolchain.toml pins the toolchain by version (1.95.0). This project's machines carry that
# release as rustup's `stable` and cannot download toolchains, and rustup refuses to `link` a
# custom toolchain under a version name. So when no toolchain of the pinned name is installed
# but `stable` *is* that version, make the pinned name an alias of the stable directory (a
# symlink in rustup's toolchains folder) instead of letting rustup try a download. Any other
# mismatch is an error naming both versions: bump rust-toolchain.toml on purpose, never silently.
pinned=$(sed -n 's/^channel *= *"\(.*\)"/\1/p' "$(dirname "${BASH_SOURCE[0]}")/../rust-toolchain.toml")
if ! rustup toolchain list | grep -q "^${pinned}-"; then
    have=$(rustup run stable rustc --version 2>/dev/null | awk '{print $2}')
    if [ "$have" != "$pinned" ]; then
        echo "rust-toolchain.toml pins $pinned; rustup's stable is '${have:-missing}' and $pinned is not installed" >&2
        exit 1
    fi
    stable_dir=$(rustup run stable rustc --print sysroot)
    host=$(rustup run stable rustc -vV | sed -n 's/^host: //p')
    echo "aliasing toolchain $pinned-$host to rustup's stable ($have)"
    ln -sfn "$stable_dir" "${RUSTUP_HOME:-$HOME/.rustup}/toolchains/$pinned-$host"
fi
