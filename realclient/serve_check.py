"""`mooncake-liveness serve` with the real 0.3.13.post1 client, in a private network namespace.

Run by ``scripts/serve_real.sh`` (inside ``unshare -n``). Starts ``serve`` with the flags a
script would give the real ``mooncake_master`` (active TTL 2 s, suspicion TTL 4 s, lease 1 s,
the built-in HTTP metadata server) and checks, each as one named case:

- basic: setup, put, get (bytes equal), exist, remove (-706 during the lease, then 0, then
  -704), put_batch / get_batch / batch_is_exist / batch_remove, remove_all;
- malformed: a bad magic byte closes that connection, an unknown function id and a garbage
  body get upstream's error replies, and the client is served all along;
- pause: a client stopped (SIGSTOP) for less than active + suspicion keeps its data (another
  client reads it after the resume; the master logged suspected and recovered, not offline);
- kill: a killed client is offboarded after active + suspicion (offline and
  client_offboarding_complete logged, its keys gone);
- restart: serve restarted under a live client: the client's Ping hears NEED_REMOUNT, it
  ReMounts, and put/get work again;
- close: close() unmounts (UnmountSegment) and returns 0.

Exit status 0 when every case passed, 1 otherwise; one line per check on stdout.
"""

import argparse
import json
import os
import re
import signal
import socket
import struct
import sys
import tempfile
import time
import urllib.request

from conformance import net, procs
from realclient.handle import Client
from realclient.proxy import read_frame

RPC_PORT = 50051
HTTP_PORT = 18080
METRICS_PORT = 19003
ACTIVE_S, SUSPICION_S, LEASE_MS = 2, 4, 1000
PING_FID = 0xD6C2DAE5

failures = []


def check(name, ok, detail=""):
    print(f"{'ok  ' if ok else 'FAIL'} {name}{': ' + str(detail) if detail and not ok else ''}", flush=True)
    if not ok:
        failures.append(name)
    return ok


class Serve:
    def __init__(self, binary, logdir, n):
        self.log_path = os.path.join(logdir, f"serve-{n}.log")
        self._log = open(self.log_path, "w")
        self.proc = procs.spawn(
            [
                binary,
                "serve",
                f"--rpc_port={RPC_PORT}",
                f"--client_active_ttl_sec={ACTIVE_S}",
                f"--client_suspicion_ttl_sec={SUSPICION_S}",
                "--enable_http_metadata_server=true",
                f"--http_metadata_server_port={HTTP_PORT}",
                f"--http_metadata_server_host={net.ADDR}",
                f"--metrics_port={METRICS_PORT}",
                f"--default_kv_lease_ttl={LEASE_MS}",
            ],
            stdout=self._log,
            stderr=self._log,
        )
        deadline = time.time() + 20
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"error: serve exited with {self.proc.returncode}; see {self.log_path}")
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{METRICS_PORT}/health", timeout=1).read()
                return
            except OSError:
                time.sleep(0.1)
        raise SystemExit(f"error: serve not up after 20 s; see {self.log_path}")

    def log(self):
        self._log.flush()
        with open(self.log_path) as f:
            return f.read()

    def actions(self, client_id):
        """The action names logged for ``client_id``, in order."""
        pat = re.compile(r"client_id=" + re.escape(client_id) + r",.*action=(\w+)")
        return [m.group(1) for m in map(pat.search, self.log().splitlines()) if m]

    def stop(self):
        procs.stop(self.proc, grace=10)
        self._log.close()
        return self.proc.returncode


def wait_for(pred, timeout, step=0.2):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if pred():
            return True
        time.sleep(step)
    return pred()


def raw(frames):
    """Sends each frame on its own connection; returns [(reply frame or None, closed)]."""
    out = []
    for f in frames:
        s = socket.create_connection(("127.0.0.1", RPC_PORT), timeout=3)
        try:
            s.sendall(f)
            try:
                r = read_frame(s, request=False)
            except OSError:
                r = None
            out.append(r)
        finally:
            s.close()
    return out


def header(seq, fid, body):
    return struct.pack("<BBBBIIII", 0x15, 0, 0, 0, seq, fid, len(body), 0) + body


def case_basic(a):
    check("basic: setup", a.ready.get("rc") == 0, a.ready)
    check("basic: put", a.call(cmd="put", key="k1", size=1000)["rc"] == 0)
    check("basic: put 4 MiB", a.call(cmd="put", key="big", size=4 << 20)["rc"] == 0)
    got = a.call(cmd="get", key="k1", size=1000)
    check("basic: get bytes equal", got == {"len": 1000, "equal": True}, got)
    got = a.call(cmd="get", key="big", size=4 << 20)
    check("basic: get 4 MiB bytes equal", got.get("equal") is True, got)
    check("basic: exist", a.call(cmd="exist", key="k1")["rc"] == 1)
    check("basic: exist missing", a.call(cmd="exist", key="missing")["rc"] == 0)
    check("basic: remove during the lease is -706", a.call(cmd="remove", key="k1")["rc"] == -706)
    time.sleep(LEASE_MS / 1000 + 0.3)
    check("basic: remove after the lease", a.call(cmd="remove", key="k1")["rc"] == 0)
    check("basic: remove again is -704", a.call(cmd="remove", key="k1")["rc"] == -704)
    keys = [f"b{i}" for i in range(4)]
    check("basic: put_batch", a.call(cmd="put_batch", keys=keys, size=3000)["rc"] == 0)
    got = a.call(cmd="get_batch", keys=keys, size=3000)
    check("basic: get_batch bytes equal", got.get("equal") == [True] * 4, got)
    got = a.call(cmd="batch_exist", keys=keys + ["missing"])
    check("basic: batch_is_exist", got.get("rcs") == [1, 1, 1, 1, 0], got)
    got = a.call(cmd="batch_remove", keys=keys[:2], force=True)
    check("basic: batch_remove (force)", got.get("rcs") == [0, 0], got)
    time.sleep(LEASE_MS / 1000 + 0.3)
    got = a.call(cmd="remove_all")
    check("basic: remove_all removes the rest", got.get("rc") == 3, got)
    check("basic: nothing left", a.call(cmd="exist", key="b3")["rc"] == 0)


def case_malformed(a):
    bad_magic, unknown, garbage = raw(
        [b"\x16" + header(1, PING_FID, b"")[1:], header(2, 0xDEADBEEF, b""), header(3, PING_FID, b"\x01\x02")]
    )
    check("malformed: bad magic closes the connection", bad_magic is None)
    check("malformed: unknown function → err_code 11", unknown is not None and unknown[2] == 11, unknown)
    check("malformed: garbage arguments → err_code 4", garbage is not None and garbage[2] == 4, garbage)
    check("malformed: the client is still served", a.call(cmd="put", key="m1", size=100)["rc"] == 0)


def case_pause(a, b, serve, a_id):
    keys = [f"p{i}" for i in range(3)]
    for k in keys:
        check(f"pause: put {k}", a.call(cmd="put", key=k, size=2048)["rc"] == 0)
    a.pause()
    stopped = time.time()
    suspected = wait_for(lambda: "client_liveness_suspected" in serve.actions(a_id), ACTIVE_S + 2)
    check("pause: the stopped client is Suspected", suspected, serve.actions(a_id))
    hidden = b.call(cmd="get", key=keys[0], size=2048)
    check("pause: a Suspected owner's replicas are not handed out", hidden.get("len") == 0, hidden)
    # Stopped for less than active + suspicion (6 s): resume with a 1.5 s margin.
    time.sleep(max(0.0, ACTIVE_S + SUSPICION_S - 1.5 - (time.time() - stopped)))
    a.resume()
    recovered = wait_for(lambda: "client_liveness_recovered" in serve.actions(a_id), 5)
    check("pause: Ping recovered it", recovered, serve.actions(a_id))
    check("pause: never Offline", "client_liveness_offline" not in serve.actions(a_id), serve.actions(a_id))
    got = [b.call(cmd="get", key=k, size=2048) for k in keys]
    check("pause: its data is still there (read by another client)", all(g.get("equal") for g in got), got)


def segment_mounted(endpoint):
    """The real master's check (conformance/realmaster.py): the capacity gauge of the segment."""
    text = urllib.request.urlopen(f"http://127.0.0.1:{METRICS_PORT}/metrics", timeout=2).read().decode()
    return f'segment_total_capacity_bytes{{segment="{endpoint}"}}' in text


def case_kill(victim, b, serve, victim_id):
    check("kill: the victim's segment is in /metrics", segment_mounted(victim.hostname))
    for k in ("q0", "q1"):
        check(f"kill: put {k}", victim.call(cmd="put", key=k, size=2048)["rc"] == 0)
    victim.kill()
    done = wait_for(lambda: "client_offboarding_complete" in serve.actions(victim_id), ACTIVE_S + SUSPICION_S + 5)
    acts = serve.actions(victim_id)
    check("kill: Suspected, then Offline, then offboarded", done and "client_liveness_offline" in acts, acts)
    check("kill: its keys are gone", b.call(cmd="exist", key="q0")["rc"] == 0)
    check("kill: its segment left /metrics", wait_for(lambda: not segment_mounted(victim.hostname), 3))


def case_restart(a, binary, logdir, serve):
    check("restart: put before", a.call(cmd="put", key="r1", size=1000)["rc"] == 0)
    check("restart: serve stopped cleanly (SIGTERM → exit 0)", serve.stop() == 0)
    serve = Serve(binary, logdir, 1)
    remounted = wait_for(lambda: "action=remount_segment" in serve.log(), 15)
    check("restart: the client ReMounted after NEED_REMOUNT", remounted)
    check("restart: put after", a.call(cmd="put", key="r2", size=1000)["rc"] == 0)
    got = a.call(cmd="get", key="r2", size=1000)
    check("restart: get after, bytes equal", got.get("equal") is True, got)
    check("restart: the old master's objects are gone", a.call(cmd="exist", key="r1")["rc"] == 0)
    return serve


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--logs", default=None)
    args = ap.parse_args()
    net.setup()
    logdir = args.logs or tempfile.mkdtemp(prefix="serve-real-")
    os.makedirs(logdir, exist_ok=True)
    meta = f"http://{net.ADDR}:{HTTP_PORT}/metadata"
    master = f"{net.ADDR}:{RPC_PORT}"
    serve = None
    try:
        serve = Serve(args.bin, logdir, 0)
        a = Client("a", net.ADDR, master, meta, 64 << 20, logdir)
        b = Client("b", net.ADDR, master, meta, 0, logdir)
        a_id = a.client_id()
        case_basic(a)
        case_malformed(a)
        check("http: /health", urllib.request.urlopen(f"http://{net.ADDR}:{HTTP_PORT}/health").read() == b"OK")
        case_pause(a, b, serve, a_id)
        victim = Client("victim", net.ADDR, master, meta, 16 << 20, logdir)
        case_kill(victim, b, serve, victim.client_id())
        serve = case_restart(a, args.bin, logdir, serve)
        check("close: close() returns 0", a.call(cmd="close")["rc"] == 0)
        check("close: UnmountSegment reached serve", wait_for(lambda: "action=unmount_segment" in serve.log(), 3))
        metrics = urllib.request.urlopen(f"http://127.0.0.1:{METRICS_PORT}/metrics").read().decode()
        check("metrics: Ping counted", 'mooncake_liveness_serve_rpc_total{function="Ping"}' in metrics)
    finally:
        procs.stop_all()
        print(f"logs in {logdir}", file=sys.stderr)
    print(json.dumps({"failures": failures}))
    return 1 if failures else 0


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    sys.exit(main())
