"""``python -m realload``: one join-storm run of real 0.3.13.post1 clients against one master.

Run it through ``scripts/realload.sh``, which makes the private network namespace, the venv and
the master binaries. Steps (every process is stopped by id at the end, and dies with us):
1. the master starts with ``--vmodule=scoped_vlog_timer=1`` (every RPC logged with its latency);
2. ``--holders`` clients with large segments and ``--pingers`` clients with small ones start
   (each: MountSegment, then its heartbeat's first Ping answers NEED_REMOUNT and it ReMounts);
3. the holders preload with ``put_batch`` for ``--preload-s`` seconds;
4. the holders run the Get/Put/Remove mix for ``--run-s`` seconds; ``--storm-at-s`` seconds in,
   ``--joiners`` new clients start at once (a burst of MountSegment + ReMount) while everyone
   else keeps pinging;
5. the master's log gives Ping latency, the worst heartbeat gap as the master saw it (holders
   and pingers, over the mix), ReMount latencies and every liveness transition; the clients
   give ops/s and Put/Get latency.
With ``--pause-s``, one pinger is SIGSTOPped ``--pause-at-s`` into the mix for that long
(:mod:`realload.fault`); it is left out of the heartbeat gaps, and the report says what the
master did to it and to the keys on its segment. ``--rpc-threads N`` passes
``--rpc_thread_num=N`` to the master (every kind takes it). ``--check`` fails the run (exit 1)
when the master's log did not give the figures (no Ping paired, a joiner's ReMount missing):
the CI smoke of the driver against ``serve``; it judges no timing.
Prints one JSON object (also written to ``--json``).
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

from conformance import net, procs

from . import fault, masterlog

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _on_signal(signum, _frame):
    raise SystemExit(f"error: stopped by signal {signum}")


def loadavg():
    """The 1-minute load average (the machine is shared; every figure carries it)."""
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def peak_rss_mb(pid):
    """A live process's peak resident set (``VmHWM``), MiB; ``None`` if it cannot be read."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return None


def cpu_s(pid):
    """A live process's CPU time so far (user + system, all threads), seconds; ``None`` if it
    cannot be read."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def master_args(kind, active, suspicion, ports, rpc_threads=0):
    """The flags every master gets; ``kind`` says how its TTLs are spelled."""
    rpc, http, metrics = ports
    ttl = (
        [f"--client_ttl={active}"]
        if kind == "legacy"
        else [f"--client_active_ttl_sec={active}", f"--client_suspicion_ttl_sec={suspicion}"]
    )
    return ttl + [
        f"--rpc_port={rpc}",
        "--enable_http_metadata_server=true",
        f"--http_metadata_server_port={http}",
        f"--http_metadata_server_host={net.ADDR}",
        f"--metrics_port={metrics}",
        "--vmodule=scoped_vlog_timer=1",
    ] + ([f"--rpc_thread_num={rpc_threads}"] if rpc_threads > 0 else [])


class Client:
    """A :mod:`realload.worker` process."""

    def __init__(self, name, rpc, metadata, segment, logdir):
        self.name = name
        self.log = open(os.path.join(logdir, f"{name}.log"), "w")
        self.proc = procs.spawn(
            [sys.executable, "-m", "realload.worker", net.ADDR, rpc, metadata, str(segment)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            text=True,
            cwd=ROOT,
        )

    def read(self):
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit(f"error: client {self.name} exited; see {self.log.name}")
        return json.loads(line)

    def ready(self):
        r = self.read()
        if r.get("rc") != 0:
            raise SystemExit(f"error: client {self.name}: setup returned {r.get('rc')}; see {self.log.name}")

    def send(self, cmd):
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()

    def client_id(self):
        """The client id the client logs at setup (``... client_id=A-B``)."""
        self.log.flush()
        with open(self.log.name, errors="replace") as f:
            for line in f:
                m = masterlog._CLIENT.search(line)
                if m:
                    return m.group(1)
        return None


def wait_ready(url, proc, timeout=20.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"error: the master exited with {proc.returncode}")
        try:
            urllib.request.urlopen(url, timeout=2).read()
            return
        except OSError:
            time.sleep(0.2)
    raise SystemExit(f"error: the master does not serve {url} after {timeout} s")


def run(args, logdir):
    ports = (50051, 18080, 19003)
    rpc, metadata = f"{net.ADDR}:{ports[0]}", f"http://{net.ADDR}:{ports[1]}/metadata"
    mlog_path = os.path.join(logdir, "master.log")
    mlog = open(mlog_path, "w")
    load_before = loadavg()
    cmd = args.master_cmd.split() + master_args(args.kind, args.active_ttl, args.suspicion_ttl, ports, args.rpc_threads)
    master = procs.spawn(cmd, stdout=mlog, stderr=mlog)
    wait_ready(f"http://{net.ADDR}:{ports[2]}/metrics", master)

    holders = [Client(f"holder-{i}", rpc, metadata, args.holder_segment_mb << 20, logdir) for i in range(args.holders)]
    pingers = [Client(f"pinger-{i}", rpc, metadata, 64 << 20, logdir) for i in range(args.pingers)]
    for c in holders + pingers:
        c.ready()
    time.sleep(2)  # every client's first Ping, NEED_REMOUNT and ReMount

    for i, h in enumerate(holders):
        h.send({"cmd": "preload", "prefix": f"k{i}", "seconds": args.preload_s, "size": args.size, "batch": 256})
    loaded = [h.read() for h in holders]
    keys = sum(r["count"] for r in loaded)

    pools = [[f"k{i}", r["count"]] for i, r in enumerate(loaded)]
    victim = pingers[0] if args.pause_s > 0 else None
    if victim:
        victim.send({"cmd": "hostname"})
        victim_host = victim.read()["hostname"]
        holders[0].send({"cmd": "owners", "keys": pools})
        owned_before = holders[0].read()
    mix_start = time.time()
    cpu_at_start = cpu_s(master.pid)
    for i, h in enumerate(holders):
        h.send({"cmd": "mix", "seconds": args.run_s, "keys": pools, "size": args.size, "prefix": f"w{i}", "seed": i})
    pause = fault.Pause(victim.proc, args.pause_at_s, args.pause_s) if victim else None
    time.sleep(args.storm_at_s)
    storm_at = time.time()
    joiners = [Client(f"joiner-{i}", rpc, metadata, 64 << 20, logdir) for i in range(args.joiners)]
    for j in joiners:
        j.ready()
    mixed = [h.read() for h in holders]
    end = time.time()
    cpu_at_end = cpu_s(master.pid)
    if pause:
        pause.join()
        holders[0].send({"cmd": "owners", "keys": pools})
        owned_after = holders[0].read()
    master_rss = peak_rss_mb(master.pid)
    for c in holders + pingers + joiners:
        c.send({"cmd": "quit"})
    time.sleep(0.5)
    procs.stop_all()
    mlog.close()
    load_after = loadavg()

    rpcs, transitions = masterlog.parse(mlog_path)
    logged_version, logged_threads = masterlog.startup(mlog_path)
    steady = [c.client_id() for c in holders + pingers if c is not victim]
    joined = {c.client_id() for c in joiners}
    gaps = masterlog.worst_gaps(rpcs, [c for c in steady if c], mix_start, end)
    in_run = [r for r in rpcs if mix_start <= r.at <= end]
    remounts = [r.latency_us for r in in_run if r.name == "ReMountSegment" and r.client in joined]
    mounts = [r.latency_us for r in in_run if r.name == "MountSegment"]
    lat = {k: [] for k in ("get", "put", "remove")}
    for m in mixed:
        for k, v in m["latency_us"].items():
            lat[k].extend(v)
    ops = sum(m["ops"] for m in mixed)
    kinds = {
        "client_liveness_suspected": "suspected",
        "client_liveness_recovered": "recovered",
        "client_liveness_offline": "offline",
        "client_expired": "expired",
    }
    counted = {v: 0 for v in kinds.values()}
    victim_id = victim.client_id() if victim else None
    for at, client, action in transitions:
        if mix_start <= at <= end and client != victim_id:
            counted[kinds[action]] += 1
    out = {
        "master": args.label,
        "master_cmd": args.master_cmd,
        "kind": args.kind,
        "active_ttl_s": args.active_ttl,
        "suspicion_ttl_s": args.suspicion_ttl,
        "holders": args.holders,
        "pingers": args.pingers,
        "joiners": args.joiners,
        "keys": keys,
        "preload_s": args.preload_s,
        "run_s": round(end - mix_start, 1),
        "storm_at_s": round(storm_at - mix_start, 1),
        "ops_per_s": round(ops / max(end - mix_start, 1e-9)),
        "errors": sum(m["errors"] for m in mixed),
        "latency_us": {k: masterlog.percentiles(v) for k, v in lat.items()},
        "ping_latency_us": masterlog.percentiles([r.latency_us for r in in_run if r.name == "Ping"]),
        "pings": sum(1 for r in in_run if r.name == "Ping"),
        "remount_us": masterlog.percentiles(remounts),
        "remounts": len(remounts),
        "mount_us": masterlog.percentiles(mounts),
        "worst_gap_s": round(max(gaps.values(), default=0.0), 3),
        "clients_measured": len(gaps),
        "transitions": counted,
        "master_peak_rss_mb": master_rss,
        "master_cpu_mix_s": None if None in (cpu_at_start, cpu_at_end) else round(cpu_at_end - cpu_at_start, 2),
        "rpc_threads": args.rpc_threads,
        "rpc_thread_num_logged": logged_threads,
        "load_before": load_before,
        "load_after": load_after,
        "started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(mix_start)),
        "version": args.master_version or logged_version,
        "logs": logdir,
    }
    if pause:
        out["fault"] = fault.report(pause, victim_id, rpcs, transitions, owned_before, owned_after, victim_host)
    if args.check:
        out["check"] = masterlog.missing_figures(rpcs, steady, joined, args.joiners, out["ops_per_s"])
    return out


def main():
    ap = argparse.ArgumentParser(prog="python -m realload")
    ap.add_argument("--master-cmd", required=True, help="the master binary and any arguments of its own")
    ap.add_argument("--kind", choices=("legacy", "rfc"), default="rfc", help="how the master spells its TTL flags")
    ap.add_argument("--label", default="", help="the master's name in the report")
    ap.add_argument("--active-ttl", type=int, default=10, help="seconds (legacy: --client_ttl)")
    ap.add_argument("--suspicion-ttl", type=int, default=20, help="seconds (rfc only)")
    ap.add_argument("--holders", type=int, default=4)
    ap.add_argument("--pingers", type=int, default=8)
    ap.add_argument("--joiners", type=int, default=12)
    ap.add_argument("--holder-segment-mb", type=int, default=1024)
    ap.add_argument("--size", type=int, default=128, help="value bytes")
    ap.add_argument("--preload-s", type=float, default=60.0)
    ap.add_argument("--run-s", type=float, default=40.0)
    ap.add_argument("--storm-at-s", type=float, default=5.0)
    ap.add_argument("--rpc-threads", type=int, default=0, help="--rpc_thread_num for the master (0: not passed)")
    ap.add_argument("--pause-s", type=float, default=0.0, help="SIGSTOP one pinger for this long (0: no fault)")
    ap.add_argument("--pause-at-s", type=float, default=5.0, help="seconds into the mix")
    ap.add_argument("--master-version", default="", help="for the report (default: the master's log line)")
    ap.add_argument("--check", action="store_true", help="exit 1 unless the log gave every figure")
    ap.add_argument("--json", default="")
    ap.add_argument("--logs", default="")
    args = ap.parse_args()
    args.label = args.label or os.path.basename(args.master_cmd.split()[0])
    if args.pause_s > 0 and args.pingers < 1:
        ap.error("--pause-s needs a pinger to pause (--pingers 1 or more)")
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    logdir = args.logs or tempfile.mkdtemp(prefix="realload-")
    os.makedirs(logdir, exist_ok=True)
    net.setup()
    try:
        out = run(args, logdir)
    finally:
        procs.stop_all()
    text = json.dumps(out, indent=2)
    print(text)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text + "\n")
    for failure in out.get("check", []):
        print(f"error: {failure}", file=sys.stderr)
    return 1 if out.get("check") else 0


if __name__ == "__main__":
    sys.exit(main())
