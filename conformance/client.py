"""A real client process (:mod:`conformance.worker`) as seen from the harness."""

import json
import os
import re
import signal
import sys
import time

from . import net, procs

_CLIENT_ID = re.compile(r"\] client_id=(\S+)$")


class Client:
    """A ``MooncakeDistributedStore`` in its own process, with a segment of ``segment_bytes``."""

    def __init__(self, name, master, segment_bytes, logdir, log_name=None):
        self.name = name
        self.segment_bytes = segment_bytes
        self.log_path = os.path.join(logdir, f"{log_name or name}.log")
        self._log = open(self.log_path, "w")
        self.proc = procs.spawn(
            [sys.executable, "-m", "conformance.worker", net.ADDR, master.rpc, master.metadata, str(segment_bytes)],
            stdin=procs.subprocess.PIPE,
            stdout=procs.subprocess.PIPE,
            stderr=self._log,
            text=True,
            cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
        )
        ready = self.read()
        if ready.get("rc") != 0:
            raise SystemExit(f"error: client {name}: setup returned {ready.get('rc')}; see {self.log_path}")
        self.mounted_at = time.time()
        self.segment = ready["hostname"] if segment_bytes else None
        self.client_id = self._client_id()

    def _client_id(self):
        self._log.flush()
        with open(self.log_path) as f:
            for line in f:
                m = _CLIENT_ID.search(line.strip())
                if m:
                    return m.group(1)
        raise SystemExit(f"error: client {self.name}: no client_id in {self.log_path}")

    def read(self, timeout=30.0):
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit(f"error: client {self.name} exited; see {self.log_path}")
        return json.loads(line)

    def send(self, cmd):
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()

    def call(self, cmd):
        self.send(cmd)
        return self.read()

    def put(self, keys, size):
        return self.call({"cmd": "put", "keys": keys, "size": size})["rcs"]

    def exist(self, keys):
        return self.call({"cmd": "exist", "keys": keys})["exist"]

    def holders(self, keys):
        return self.call({"cmd": "where", "keys": keys})["holders"]

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
                self.send({"cmd": "quit"})
                self.proc.wait(timeout=5)
            except Exception:  # noqa: BLE001 - stopped by id below whatever went wrong
                pass
        procs.stop(self.proc)
        self._log.close()
