"""A real client process (:mod:`realclient.worker`) as a driver sees it."""

import json
import os
import re
import select
import signal
import sys

from conformance import procs

_CLIENT_ID = re.compile(r"client_id=(\S+)")


class Client:
    """``MooncakeDistributedStore`` in its own process with a segment of ``segment_bytes``."""

    def __init__(self, name, host, master_rpc, metadata_url, segment_bytes, logdir):
        self.name = name
        self.log_path = os.path.join(logdir, f"{name}.log")
        self._log = open(self.log_path, "w")
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        self.proc = procs.spawn(
            [sys.executable, "-m", "realclient.worker", host, master_rpc, metadata_url, str(segment_bytes)],
            stdin=procs.subprocess.PIPE,
            stdout=procs.subprocess.PIPE,
            stderr=self._log,
            text=True,
            cwd=root,
        )
        self.ready = self.read(60.0)
        self.hostname = self.ready.get("hostname")

    def read(self, timeout=30.0):
        r, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not r:
            raise SystemExit(f"error: client {self.name}: no answer within {timeout} s; see {self.log_path}")
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit(f"error: client {self.name} exited ({self.proc.poll()}); see {self.log_path}")
        return json.loads(line)

    def call(self, timeout=30.0, **cmd):
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()
        return self.read(timeout)

    def client_id(self):
        """The UUID the client logged at setup (``client_id=...``), if any."""
        self._log.flush()
        with open(self.log_path) as f:
            for line in f:
                m = _CLIENT_ID.search(line)
                if m:
                    return m.group(1).rstrip(",")
        return None

    def signal(self, sig):
        os.kill(self.proc.pid, sig)

    def pause(self):
        self.signal(signal.SIGSTOP)

    def resume(self):
        self.signal(signal.SIGCONT)

    def kill(self):
        self.signal(signal.SIGKILL)
        self.proc.wait(timeout=5)

    def stop(self):
        if self.proc.poll() is None:
            try:
                self.resume()
                self.proc.stdin.write(json.dumps({"cmd": "quit"}) + "\n")
                self.proc.stdin.flush()
                self.proc.wait(timeout=10)
            except Exception:  # noqa: BLE001 - stopped by id below whatever went wrong
                pass
        procs.stop(self.proc)
        self._log.close()
