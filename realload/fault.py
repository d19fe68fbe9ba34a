"""The fault of a ``--pause-s`` run: one pinging client (the *victim*) is SIGSTOPped a few seconds
into the mix and SIGCONTed ``--pause-s`` later, long enough to pass the active TTL and short
enough to stay inside active + suspicion. What each master did is read afterwards: its liveness
lines for the victim (time after the stop), the victim's first Ping answer after the resume
(OK, or NEED_REMOUNT when the master had dropped it), whether it ReMounted, and how many keys
lived on the victim's segment before the stop and after the resume (``batch_get_replica_desc``
from a holder).

The legacy master (0.3.13.post1) expires a client after ``--client_ttl`` without a Ping and
unmounts its segment with every replica on it; an RFC master marks it Suspected, stops serving
its replicas, and keeps them until active + suspicion TTL.
"""

import os
import signal
import threading
import time

from . import masterlog


class Pause:
    """Stops ``proc`` ``at`` seconds from now for ``seconds`` seconds, on a timer thread."""

    def __init__(self, proc, at, seconds):
        self.proc, self.seconds = proc, seconds
        self.stopped_at = self.resumed_at = None
        self._timer = threading.Timer(at, self._run)
        self._timer.daemon = True
        self._timer.start()

    def _run(self):
        os.kill(self.proc.pid, signal.SIGSTOP)
        self.stopped_at = time.time()
        time.sleep(self.seconds)
        # Stamped before the signal: the client's first Ping can be logged within microseconds.
        self.resumed_at = time.time()
        os.kill(self.proc.pid, signal.SIGCONT)

    def join(self):
        self._timer.join()


def report(pause, victim_id, rpcs, transitions, before, after, hostname):
    """The fault's part of the run's JSON."""
    t0 = pause.stopped_at
    acts = [[round(at - t0, 2), action] for at, client, action in transitions if client == victim_id and at >= t0]
    pings = sorted((r for r in rpcs if r.name == "Ping" and r.client == victim_id and r.at >= pause.resumed_at), key=lambda r: r.at)
    first = pings[0] if pings else None
    remounted = [r for r in rpcs if r.name == "ReMountSegment" and r.client == victim_id and r.at >= t0]
    return {
        "pause_s": round(pause.resumed_at - t0, 2),
        "victim": victim_id,
        "victim_actions": acts,
        "first_ping_after_resume": None
        if first is None
        else {
            "after_s": round(first.at - pause.resumed_at, 2),
            "status": "OK" if masterlog.ping_ok(first) else "NEED_REMOUNT" if '"client_status":2' in first.response else first.response,
        },
        "victim_remounted": bool(remounted),
        "keys_on_victim_before": before["by_endpoint"].get(hostname, 0),
        "keys_on_victim_after": after["by_endpoint"].get(hostname, 0),
        "keys_found_before": before["found"],
        "keys_found_after": after["found"],
    }
