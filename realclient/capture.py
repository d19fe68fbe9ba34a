"""Records the coro_rpc traffic between a real 0.3.13.post1 client and the real master.

Run inside a fresh network namespace (``scripts/wire_capture.sh``): brings up the namespace's
network, starts the wheel's ``mooncake_master`` on 127.0.0.1:50151, a recording proxy
(:mod:`realclient.proxy`) on 192.0.2.1:50051 in front of it, and one client whose master address
is the proxy; then walks the phases below (each labels the frames it caused) and writes every
frame as a JSON line to ``--out``. ``wire/tests/data/extract.py`` turns that into golden data.
"""

import argparse
import json
import os
import signal
import socket
import struct
import sys
import tempfile
import time
import urllib.request

from conformance import net, procs
from realclient.handle import Client
from realclient.proxy import Proxy, read_frame

RPC_PORT = 50151
PROXY_PORT = 50051
HTTP_PORT = 18080
METRICS_PORT = 19003
LEASE_MS = 2000


def master_binary():
    import mooncake

    return os.path.join(os.path.dirname(mooncake.__file__), "mooncake_master")


def start_master(logdir, n):
    log = open(os.path.join(logdir, f"master-{n}.log"), "w")
    p = procs.spawn(
        [
            master_binary(),
            f"--rpc_port={RPC_PORT}",
            "--rpc_address=127.0.0.1",
            "--enable_http_metadata_server=true",
            f"--http_metadata_server_port={HTTP_PORT}",
            f"--http_metadata_server_host={net.ADDR}",
            f"--metrics_port={METRICS_PORT}",
            f"--default_kv_lease_ttl={LEASE_MS}",
            "--client_ttl=10",
        ],
        stdout=log,
        stderr=log,
    )
    deadline = time.time() + 20
    while time.time() < deadline:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{METRICS_PORT}/metrics", timeout=1).read()
            return p
        except OSError:
            time.sleep(0.2)
    raise SystemExit("error: master did not come up")


def raw_exchange(frames, expect_reply=True):
    """Sends ``frames`` to the master on a fresh connection; returns (replies, closed)."""
    s = socket.create_connection(("127.0.0.1", RPC_PORT), timeout=3)
    replies = []
    closed = False
    try:
        for f in frames:
            s.sendall(f)
            if expect_reply:
                try:
                    r = read_frame(s, request=False)
                except OSError:
                    r = None
                if r is None:
                    closed = True
                    break
                replies.append(r.hex())
    finally:
        s.close()
    return replies, closed


def header(seq, fid, body, attach=b""):
    return struct.pack("<BBBBIIII", 0x15, 0, 0, 0, seq, fid, len(body), len(attach)) + body + attach


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--logs", default=None)
    args = ap.parse_args()
    net.setup()
    logdir = args.logs or tempfile.mkdtemp(prefix="wire-capture-")
    os.makedirs(logdir, exist_ok=True)
    notes = []
    master = None
    client = None
    proxy = None
    try:
        master = start_master(logdir, 0)
        proxy = Proxy((net.ADDR, PROXY_PORT), ("127.0.0.1", RPC_PORT))
        meta = f"http://{net.ADDR}:{HTTP_PORT}/metadata"
        proxy.phase = "setup"
        client = Client("c1", net.ADDR, f"{net.ADDR}:{PROXY_PORT}", meta, 64 << 20, logdir)
        notes.append({"phase": "setup", "answer": client.ready})
        host = client.hostname
        time.sleep(2.5)

        def step(phase, **cmd):
            proxy.phase = phase
            ans = client.call(**cmd)
            notes.append({"phase": phase, "cmd": cmd, "answer": ans})
            print(phase, cmd.get("cmd"), ans, flush=True)
            time.sleep(0.2)
            return ans

        step("put", cmd="put", key="k1", size=1000)
        step("put_exists", cmd="put", key="k1", size=1000)
        step("get", cmd="get", key="k1", size=1000)
        step("get_missing", cmd="get", key="missing", size=0)
        step("exist", cmd="exist", key="k1")
        step("exist_missing", cmd="exist", key="missing")
        step("remove_lease", cmd="remove", key="k1")
        time.sleep(LEASE_MS / 1000 + 0.5)
        step("remove", cmd="remove", key="k1")
        step("remove_missing", cmd="remove", key="k1")
        step("put", cmd="put", key="k2", size=4096)
        step("get", cmd="get", key="k2", size=4096)
        step("remove_force", cmd="remove", key="k2", force=True)
        long_key = "L" * 300
        step("put_long_key", cmd="put", key=long_key, size=512)
        step("get_long_key", cmd="get", key=long_key, size=512)
        batch = [f"b{i}" for i in range(3)]
        step("batch_put", cmd="put_batch", keys=batch, size=2000)
        step("batch_get", cmd="get_batch", keys=batch, size=2000)
        step("batch_exist", cmd="batch_exist", keys=batch + ["missing"])
        step("batch_remove_lease", cmd="batch_remove", keys=batch[:1] + ["missing"])
        time.sleep(LEASE_MS / 1000 + 0.5)
        step("batch_remove", cmd="batch_remove", keys=batch[:2])
        step("remove_all", cmd="remove_all")

        # A PutStart reply naming a segment that does not exist (the client's own endpoint with
        # its address changed, same length): the transfer fails and the client revokes.
        def wrong_endpoint(fid, frame):
            return frame.replace(host.encode(), host.replace("192.0.2.1", "192.0.2.7").encode())

        proxy.tamper = wrong_endpoint
        step("put_revoke", cmd="put", key="k3", size=1000)
        step("batch_put_revoke", cmd="put_batch", keys=["r0", "r1"], size=1000)
        proxy.tamper = None
        time.sleep(0.5)

        # Frames no client sends, straight to the master.
        proxy.phase = "raw"
        ping_fid = 0xD6C2DAE5
        for name, frames in [
            ("unknown_function", [header(7, 0xDEADBEEF, b"")]),
            ("ping_garbage_body", [header(8, ping_fid, b"\x01\x02\x03")]),
            ("ping_empty_body", [header(9, ping_fid, b"")]),
            ("bad_magic", [b"\x16" + header(10, ping_fid, b"")[1:]]),
        ]:
            replies, closed = raw_exchange(frames)
            notes.append({"phase": "raw", "name": name, "sent": [f.hex() for f in frames], "replies": replies,
                          "closed": closed})
            print("raw", name, replies, closed, flush=True)

        # The master restarted under a live client: NEED_REMOUNT, then ReMountSegment.
        proxy.phase = "restart"
        procs.stop(master)
        time.sleep(1.0)
        master = start_master(logdir, 1)
        time.sleep(6.0)
        step("after_restart_put", cmd="put", key="k4", size=1000)
        step("after_restart_get", cmd="get", key="k4", size=1000)
        step("close", cmd="close")
        time.sleep(0.5)
    finally:
        if client is not None:
            client.stop()
        if master is not None:
            procs.stop(master)
        if proxy is not None:
            proxy.close()
        procs.stop_all()
        with open(args.out, "w") as f:
            for r in proxy.records if proxy else []:
                f.write(json.dumps(r) + "\n")
            for n in notes:
                f.write(json.dumps({"note": n}) + "\n")
        print(f"logs in {logdir}", file=sys.stderr)


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    main()
