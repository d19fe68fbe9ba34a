"""A real client process (:mod:`conformance.worker`) as seen from the harness."""

import json
import os
import re
import signal
import subprocess
import sys
import time

from . import net, procs

_CLIENT_ID = re.compile(r"\] client_id=(\S+)$")
_P2P_ENDPOINT = re.compile(r"P2P handshake, listening on (\S+)")
P2P = "P2PHANDSHAKE"


class Client:
    """A ``MooncakeDistributedStore`` in its own process, with a segment of ``segment_bytes``.

    ``host`` (default: the namespace's address) may carry a port, the segment name to take
    over; ``p2p`` uses the transfer engine's P2P handshake instead of the master's HTTP metadata
    server; ``isolate`` (a small integer) runs it in a network namespace of its own
    (:func:`conformance.net.isolate`) so that it can be partitioned. ``must_start=False`` lets
    ``setup`` fail (``rc`` says how) instead of stopping the run.
    """

    def __init__(self, name, master, segment_bytes, logdir, log_name=None, host=None, p2p=False, isolate=None, must_start=True):
        self.name = name
        self.segment_bytes = segment_bytes
        self.isolated = isolate
        self.log_path = os.path.join(logdir, f"{log_name or name}.log")
        self._log = open(self.log_path, "w")
        if isolate is not None:
            host = host or net.isolated_addr(isolate)
        host = host or net.ADDR
        argv = [sys.executable, "-m", "conformance.worker", host, master.rpc, P2P if p2p else master.metadata, str(segment_bytes)]
        if isolate is not None:
            argv = ["unshare", "--net", "--", *argv, "--wait"]
        self.started_at = time.time()
        self.proc = procs.spawn(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
            cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
        )
        if isolate is not None:
            net.isolate(self.proc.pid, isolate)
            self.send({"cmd": "go"})
        ready = self.read()
        self.rc = ready.get("rc")
        self.mounted_at = time.time()
        self.segment = None
        self.client_id = None
        self.endpoint = None
        if self.rc != 0:
            if must_start:
                raise SystemExit(f"error: client {name}: setup returned {self.rc}; see {self.log_path}")
            # Its id, if it got as far as logging it: a mount the master refused is its.
            self.client_id = self._from_log(_CLIENT_ID, "client_id", required=False)
            return
        self.segment = ready["hostname"] if segment_bytes else None
        self.client_id = self._from_log(_CLIENT_ID, "client_id")
        # Where get_replica_desc says a replica on this client's segment lives.
        self.endpoint = self._from_log(_P2P_ENDPOINT, "P2P endpoint") if p2p else self.segment

    def _from_log(self, pattern, what, required=True):
        self._log.flush()
        with open(self.log_path) as f:
            for line in f:
                m = pattern.search(line.strip())
                if m:
                    return m.group(1)
        if not required:
            return None
        raise SystemExit(f"error: client {self.name}: no {what} in {self.log_path}")

    def read(self):
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

    def sizes(self, keys):
        """``get_size`` of each key: the size, or the master's (negative) error code."""
        return self.call({"cmd": "size", "keys": keys})["sizes"]

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
        if self.isolated is not None:
            net.remove_isolated(self.isolated)
