"""The real ``mooncake_master``: started inside the namespace, its log and metrics read back."""

import datetime
import os
import re
import signal
import time
import urllib.request

from . import net, procs

_EXPIRED = re.compile(r"^I(\d{4}) (\d\d:\d\d:\d\d\.\d{6}) .*client_id=(\S+?), action=client_expired")
_PING = re.compile(r"^I(\d{4}) (\d\d:\d\d:\d\d\.\d{6}) .*\] Ping request: client_id=(\S+)")
_UNMOUNTED = re.compile(r"client_id=(\S+?), segment_name=(\S+?), action=unmount_expired_mem_segment")


def binary():
    """The master shipped in the wheel."""
    import mooncake

    path = os.path.join(os.path.dirname(mooncake.__file__), "mooncake_master")
    if not os.access(path, os.X_OK):
        raise SystemExit(f"error: {path} is missing or not executable")
    return path


def _glog_time(mmdd, hms):
    """A glog line's local time (``MMDD HH:MM:SS.ffffff``) as a Unix time, this year."""
    now = datetime.datetime.now()
    t = datetime.datetime.strptime(f"{now.year}{mmdd} {hms}", "%Y%m%d %H:%M:%S.%f")
    return t.timestamp()


class Master:
    """One master process with ``--client_ttl=ttl_s``, ports offset by ``index``."""

    def __init__(self, ttl_s, index, logdir):
        self.ttl_s = ttl_s
        self.rpc_port = 50051 + index
        self.http_port = 18080 + index
        self.metrics_port = 19003 + index
        self.log_path = os.path.join(logdir, f"master-{index}.log")
        self.version = None
        self._log = open(self.log_path, "w")
        self.started_at = time.time()
        self.proc = procs.spawn(
            [
                binary(),
                f"--rpc_port={self.rpc_port}",
                f"--client_ttl={ttl_s}",
                "--enable_http_metadata_server=true",
                f"--http_metadata_server_port={self.http_port}",
                f"--http_metadata_server_host={net.ADDR}",
                f"--metrics_port={self.metrics_port}",
                # Each RPC's "request" line (rpc_service.cpp's ScopedVLogTimer logs it with VLOG(1),
                # from scoped_vlog_timer.h): when the master handled each client's Pings.
                "--vmodule=scoped_vlog_timer=1",
            ],
            stdout=self._log,
            stderr=self._log,
        )
        self._wait_ready()

    @property
    def rpc(self):
        return f"{net.ADDR}:{self.rpc_port}"

    @property
    def metadata(self):
        return f"http://{net.ADDR}:{self.http_port}/metadata"

    def _wait_ready(self, timeout=20.0):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"error: mooncake_master exited with {self.proc.returncode}; see {self.log_path}")
            try:
                self.metrics()
                return
            except OSError:
                time.sleep(0.2)
        raise SystemExit(f"error: mooncake_master not serving metrics after {timeout} s; see {self.log_path}")

    def metrics(self):
        """The Prometheus metrics, as {name-with-labels: value}."""
        url = f"http://{net.ADDR}:{self.metrics_port}/metrics"
        text = urllib.request.urlopen(url, timeout=2).read().decode()
        out = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                name, _, value = line.rpartition(" ")
                try:
                    out[name] = float(value)
                except ValueError:
                    pass
        return out

    def segment_mounted(self, segment):
        return f'segment_total_capacity_bytes{{segment="{segment}"}}' in self.metrics()

    def _times(self, pattern):
        """[(unix time, client id)] of every log line so far that ``pattern`` matches."""
        self._log.flush()
        out = []
        with open(self.log_path) as f:
            for line in f:
                m = pattern.search(line)
                if m:
                    out.append((_glog_time(m.group(1), m.group(2)), m.group(3)))
        return out

    def expiries(self):
        """[(unix time, client id)] of every ``action=client_expired`` line so far."""
        return self._times(_EXPIRED)

    def pings(self):
        """[(unix time, client id)] of every Ping the master has begun to handle so far (its
        "Ping request" line is written before the Ping pushes the client on the ping queue)."""
        return self._times(_PING)

    def unmounted(self):
        """[(client id, segment)] of every ``unmount_expired_mem_segment`` line so far."""
        with open(self.log_path) as f:
            return [m.groups() for m in map(_UNMOUNTED.search, f) if m]

    def pause(self):
        os.kill(self.proc.pid, signal.SIGSTOP)

    def resume(self):
        os.kill(self.proc.pid, signal.SIGCONT)

    def stop(self):
        procs.stop(self.proc)
        self._log.close()
