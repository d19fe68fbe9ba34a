"""The namespace's network: ``lo`` and a veth pair that lives entirely inside it.

The transfer engine refuses a loopback-only host (``setup`` returns -600), and the master's
metadata server and every client's transfer engine bind all interfaces; so all of it runs in a
network namespace of its own that holds nothing but these interfaces.
"""

import subprocess

ADDR = "192.0.2.1"  # TEST-NET-1 (RFC 5737): exists only inside this namespace
PEER = "192.0.2.2"


def interfaces():
    out = subprocess.run(["ip", "-o", "link", "show"], check=True, capture_output=True, text=True).stdout
    return [line.split(":")[1].strip().split("@")[0] for line in out.splitlines() if line.strip()]


def setup():
    """Checks that this is a fresh namespace (only ``lo``), then brings up lo and the veth pair."""
    found = interfaces()
    if found != ["lo"]:
        raise SystemExit(
            f"error: not in a fresh network namespace (interfaces: {', '.join(found)}); "
            "run through scripts/conformance.sh (unshare -n)"
        )
    for cmd in (
        "ip link set lo up",
        "ip link add veth0 type veth peer name veth1",
        f"ip addr add {ADDR}/24 dev veth0",
        f"ip addr add {PEER}/24 dev veth1",
        "ip link set veth0 up",
        "ip link set veth1 up",
    ):
        subprocess.run(cmd.split(), check=True)
