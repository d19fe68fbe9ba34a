"""The namespace's network: ``lo`` and a veth pair that lives entirely inside it.

The transfer engine refuses a loopback-only host (``setup`` returns -600), and the master's
metadata server and every client's transfer engine bind all interfaces; so all of it runs in a
network namespace of its own that holds nothing but these interfaces.
"""

import os
import subprocess
import time

ADDR = "192.0.2.1"  # TEST-NET-1 (RFC 5737): exists only inside this namespace
PEER = "192.0.2.2"
# The ports the clients' outgoing connections take (a sysctl of the namespace, not the
# machine's): below the masters' RPC ports (50051 + the run's index,
# :class:`conformance.realmaster.Master`), so a connection of an earlier case's client, or its
# TIME_WAIT, never holds the port a later case's master must bind.
EPHEMERAL = (32768, 49999)


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
    with open("/proc/sys/net/ipv4/ip_local_port_range", "w") as f:
        f.write(f"{EPHEMERAL[0]} {EPHEMERAL[1]}\n")


# A client that can be partitioned lives in a network namespace of its own, joined to this one
# by a veth pair of its own: 198.51.100.(4n+1) here, 198.51.100.(4n+2) there (TEST-NET-2, RFC
# 5737, /30 per client). Taking this side down cuts it off from the master and every other
# client (its packets are dropped, TCP retransmits); bringing it up heals the partition.
def isolated_addr(n):
    return f"198.51.100.{4 * n + 2}"


def _run(cmd):
    subprocess.run(cmd, check=True)


def isolate(pid, n):
    """Joins the (fresh) network namespace of process ``pid`` to this one as client ``n``;
    returns the address the client has there."""
    here, there = f"198.51.100.{4 * n + 1}", isolated_addr(n)
    # `unshare --net` creates the namespace before it execs the client: wait until it has.
    ours = os.readlink("/proc/self/ns/net")
    for _ in range(500):
        if os.readlink(f"/proc/{pid}/ns/net") != ours:
            break
        time.sleep(0.01)
    else:
        raise SystemExit(f"error: process {pid} did not enter a network namespace of its own")
    _run(["ip", "link", "add", f"vp{n}", "type", "veth", "peer", "name", f"vc{n}", "netns", str(pid)])
    _run(["ip", "addr", "add", f"{here}/30", "dev", f"vp{n}"])
    _run(["ip", "link", "set", f"vp{n}", "up"])
    inside = ["nsenter", "-t", str(pid), "-n", "ip"]
    _run(inside + ["link", "set", "lo", "up"])
    _run(inside + ["addr", "add", f"{there}/30", "dev", f"vc{n}"])
    _run(inside + ["link", "set", f"vc{n}", "up"])
    _run(inside + ["route", "add", "default", "via", here])
    return there


def partition(n, cut):
    """Cuts client ``n`` off (``cut``) or heals it."""
    _run(["ip", "link", "set", f"vp{n}", "down" if cut else "up"])


def remove_isolated(n):
    """Deletes client ``n``'s veth pair (both ends go)."""
    subprocess.run(["ip", "link", "del", f"vp{n}"], capture_output=True)
