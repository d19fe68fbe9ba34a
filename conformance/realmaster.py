"""A master process (:class:`conformance.masters.Kind`) started inside the namespace; its log
(:mod:`conformance.masterlog`) and metrics read back."""

import os
import signal
import time
import urllib.request

from . import masterlog, net, procs


class Master:
    """One master of ``kind`` with the case's TTLs, ports offset by ``index``."""

    def __init__(self, kind, active_s, suspicion_s, index, logdir, extra_flags=()):
        self.kind = kind
        self.rpc_port = 50051 + index
        self.http_port = 18080 + index
        self.metrics_port = 19003 + index
        self.log_path = os.path.join(logdir, f"master-{index}-{kind.key}.log")
        self._log = open(self.log_path, "w")
        self.started_at = time.time()
        self.pauses = []  # [(stopped at, resumed at)], Unix times
        self.proc = procs.spawn(
            [
                *kind.argv,
                f"--rpc_port={self.rpc_port}",
                *kind.ttl_flags(active_s, suspicion_s),
                "--enable_http_metadata_server=true",
                f"--http_metadata_server_port={self.http_port}",
                f"--http_metadata_server_host={net.ADDR}",
                f"--metrics_port={self.metrics_port}",
                # Each RPC's "request" and "response" lines (rpc_service.cpp's ScopedVLogTimer
                # logs them with VLOG(1), from scoped_vlog_timer.h): what the master handled, when.
                # `monitor=1`: serve logs each monitor tick (no file of the real masters is
                # named monitor.*, so glog's vmodule changes nothing there).
                "--vmodule=scoped_vlog_timer=1,monitor=1",
                *extra_flags,
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
                raise SystemExit(f"error: {self.kind.key} exited with {self.proc.returncode}; see {self.log_path}")
            try:
                self.metrics()
                if self.anchor() is not None:
                    return
            except OSError:
                pass
            time.sleep(0.1)
        raise SystemExit(f"error: {self.kind.key} not serving metrics (or no monitor start line) after {timeout} s; see {self.log_path}")

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

    def segment_capacity(self, segment):
        """The capacity the master's metrics report for ``segment`` (None: no such label)."""
        return self.metrics().get(f'segment_total_capacity_bytes{{segment="{segment}"}}')

    def records(self):
        """Everything its log says so far (:func:`conformance.masterlog.parse`)."""
        self._log.flush()
        return masterlog.read(self.log_path)

    def anchor(self):
        """When its monitor thread started (Unix time), or None before the line is written."""
        return next((r["t"] for r in self.records() if r["kind"] == "anchor"), None)

    def pause(self):
        os.kill(self.proc.pid, signal.SIGSTOP)
        self.pauses.append([time.time(), None])  # after the signal: nothing is logged since

    def resume(self):
        self.pauses[-1][1] = time.time()  # before the signal: it may run at once
        os.kill(self.proc.pid, signal.SIGCONT)

    def stop(self):
        procs.stop(self.proc)
        self._log.close()
