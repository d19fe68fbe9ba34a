"""The fault schedules, run against the real master, and what it did.

Every case starts a fresh master (``--client_ttl`` = TTL) and fresh clients, injects one fault,
and records, on the master's own clock of events (seconds since the master was started):
which clients it expired (its ``action=client_expired`` log lines), the objects visible before
and after the fault counted per holder (placement is random across holders), whether the victim
remounted (its segment is back in the master's metrics), and the :class:`Schedule` the trace
is built from.
"""

import collections
import dataclasses
import time

from . import client as clientmod
from . import realmaster

OBJECT = 64 << 10
SEGMENT = 64 << 20
OBJECTS = 200


@dataclasses.dataclass
class Schedule:
    """A case as a replay trace needs it; times are ms since the master started."""

    ttl_s: int
    # name -> (mount ms, segment name or None)
    clients: dict
    # name -> [(silent from, silent until or None = dead)]
    silent: dict = dataclasses.field(default_factory=dict)
    master_pause: tuple = None
    # holder -> number of complete objects on it, put at ``puts_ms``
    placement: dict = dataclasses.field(default_factory=dict)
    puts_ms: int = 0
    # the put in flight: (key, holder, PutStart ms, PutEnd ms) or None
    in_flight: tuple = None
    before_ms: int = 0
    after_ms: int = 0
    # name -> the times the master began to handle its Pings (its log), or None: a Ping a second
    # from the mount on is assumed
    pings: dict = None
    # The race at a master pause's resume, as the log shows it when the monitor expired a client
    # then: name -> "after" (its first Ping after the resume began after the expiry, so it was
    # pushed after the monitor's drain) or "either" (it began before; the push may still have
    # come after the drain). None: no client expired at the resume.
    resume_order: dict = None
    # The order a trace gives the resume: None, every buffered Ping before the monitor's next tick;
    # else the clients whose buffered Ping comes before that tick (the others come after it)
    buffered_first: frozenset = None


@dataclasses.dataclass
class Observed:
    """What the real master did."""

    expired: list
    expiry_delay_s: dict
    visible_before: dict
    visible_after: dict
    remounted: dict
    in_flight_rc: int = None
    notes: str = ""


class Run:
    """One case's master and clients; everything is stopped by :meth:`close`."""

    def __init__(self, ttl_s, index, logdir):
        self.ttl_s = ttl_s
        self.index = index
        self.logdir = logdir
        self.master = realmaster.Master(ttl_s, index, logdir)
        self.clients = {}

    def ms(self, t=None):
        return int(round(((time.time() if t is None else t) - self.master.started_at) * 1000))

    def add(self, name, segment_bytes):
        c = clientmod.Client(name, self.master, segment_bytes, self.logdir, f"{self.index}-{name}")
        self.clients[name] = c
        return c

    def schedule(self):
        return Schedule(
            ttl_s=self.ttl_s,
            clients={
                n: (self.ms(c.mounted_at), c.segment) for n, c in self.clients.items() if c.segment is not None
            },
        )

    def pings(self):
        """name -> [ms] of every Ping the master has begun to handle from each client."""
        by_id = {c.client_id: n for n, c in self.clients.items()}
        out = {}
        for t, cid in self.master.pings():
            if cid in by_id:
                out.setdefault(by_id[cid], []).append(self.ms(t))
        return out

    def resume_order(self, t1):
        """:attr:`Schedule.resume_order` for a master resumed at ``t1`` (Unix time)."""
        expiries = [t for t, _ in self.master.expiries() if t >= t1]
        if not expiries:
            return None
        first_expiry = min(expiries)
        by_id = {c.client_id: n for n, c in self.clients.items() if c.segment is not None}
        order = {}
        for t, cid in self.master.pings():
            if t >= t1 and cid in by_id and by_id[cid] not in order:
                order[by_id[cid]] = "after" if t >= first_expiry else "either"
        return order

    def expired_since(self, t0):
        by_id = {c.client_id: n for n, c in self.clients.items()}
        out = {}
        for t, cid in self.master.expiries():
            if t >= t0 and cid in by_id:
                out.setdefault(by_id[cid], t - t0)
        return out

    def close(self):
        for c in self.clients.values():
            c.stop()
        self.master.stop()


def per_holder(keys, holders, exist, names):
    """Visible objects counted per holder name."""
    count = collections.Counter()
    for k, e in zip(keys, exist):
        if e == 1:
            count[names.get(holders[k], holders[k])] += 1
    return dict(count)


def stored_run(run, writer, observer, victim_names):
    """Puts OBJECTS keys from ``writer``; returns (keys, holder of each key, schedule, names)."""
    keys = [f"key-{i}" for i in range(OBJECTS)]
    rcs = writer.put(keys, OBJECT)
    if rcs.count(0) != len(keys):
        raise SystemExit(f"error: {len(keys) - rcs.count(0)} of {len(keys)} puts failed before the fault")
    holders = observer.holders(keys)
    names = {c.segment: n for n, c in run.clients.items() if c.segment}
    sched = run.schedule()
    sched.puts_ms = run.ms()
    sched.placement = dict(collections.Counter(names.get(holders[k], holders[k]) for k in keys))
    return keys, holders, sched, names


def two_holders(run):
    a = run.add("A", SEGMENT)
    v = run.add("V", SEGMENT)
    o = run.add("O", 0)
    return a, v, o


def holders_stored(run, victims):
    """A, V (holders) and O (looks only), A's objects stored: (a, v, o, keys, holders, sched,
    names, visible before the fault)."""
    a, v, o = two_holders(run)
    time.sleep(1.5)  # both clients remounted and pinging
    keys, holders, sched, names = stored_run(run, a, o, victims)
    sched.before_ms = run.ms()
    before = per_holder(keys, holders, o.exist(keys), names)
    return a, v, o, keys, holders, sched, names, before


def observe_after(run, sched, o, keys, holders, names, before, t0, wait_s, remounted, **extra):
    """Waits ``wait_s``, then what O sees and who expired since ``t0``; ``remounted(expired)``
    says which victims' segments are mounted again."""
    time.sleep(wait_s)
    sched.after_ms = run.ms()
    after = per_holder(keys, holders, o.exist(keys), names)
    expired = run.expired_since(t0)
    return sched, Observed(
        expired=sorted(expired),
        expiry_delay_s=expired,
        visible_before=before,
        visible_after=after,
        remounted=remounted(expired),
        **extra,
    )


def client_pause(run, pause_s):
    """V (a holder) stops for ``pause_s``; A writes and holds, O only looks."""
    a, v, o, keys, holders, sched, names, before = holders_stored(run, ["V"])
    t0 = time.time()
    v.pause()
    time.sleep(pause_s)
    v.resume()
    t1 = time.time()
    sched.silent = {"V": [(run.ms(t0), run.ms(t1))]}
    return observe_after(
        run, sched, o, keys, holders, names, before, t0, run.ttl_s + 1.0,
        lambda expired: {"V": "V" in expired and run.master.segment_mounted(v.segment)},
    )


def client_kill(run):
    """V (a holder) is killed for good."""
    a, v, o, keys, holders, sched, names, before = holders_stored(run, ["V"])
    t0 = time.time()
    v.kill()
    sched.silent = {"V": [(run.ms(t0), None)]}
    return observe_after(
        run, sched, o, keys, holders, names, before, t0, 2 * run.ttl_s,
        lambda expired: {"V": run.master.segment_mounted(v.segment)},
    )


def master_pause(run, pause_s):
    """The master process stops for ``pause_s`` (> 2 x TTL); the clients keep trying."""
    a, v, o, keys, holders, sched, names, before = holders_stored(run, ["A", "V"])
    t0 = time.time()
    run.master.pause()
    time.sleep(pause_s)
    run.master.resume()
    t1 = time.time()
    sched.master_pause = (run.ms(t0), run.ms(t1))
    out = observe_after(
        run, sched, o, keys, holders, names, before, t0, run.ttl_s + 1.0,
        lambda expired: {n: n in expired and run.master.segment_mounted(run.clients[n].segment) for n in ("A", "V")},
    )
    sched.resume_order = run.resume_order(t1)
    return out


def put_in_flight(run, pause_s, tries=200):
    """V, the only holder, writes in a loop and is stopped between PutStart and PutEnd.

    The master's PutStart/PutEnd counters tell whether the stop landed there; if not, V is
    resumed at once (well within the TTL) and stopped again a little later.
    """
    v = run.add("V", SEGMENT)
    o = run.add("O", 0)
    time.sleep(1.5)
    sched = run.schedule()
    v.send({"cmd": "put_loop", "prefix": "loop", "size": OBJECT})
    in_flight = None
    for _ in range(tries):
        time.sleep(0.02)
        v.pause()
        time.sleep(0.05)  # let the pipe and the master settle
        m = run.master.metrics()
        starts, ends = m.get("master_put_start_requests_total", 0), m.get("master_put_end_requests_total", 0)
        if starts == ends + 1:
            in_flight = int(starts) - 1
            break
        v.resume()
    if in_flight is None:
        v.resume()
        raise SystemExit(f"error: could not stop V between PutStart and PutEnd in {tries} tries")
    t0 = time.time()
    keys = [f"loop-{i}" for i in range(in_flight)]
    names = {v.segment: "V"}
    holders = {k: v.segment for k in keys}
    sched.before_ms = run.ms()
    before = per_holder(keys, holders, o.exist(keys), names)
    sched.placement = {"V": in_flight}
    sched.puts_ms = run.ms(t0) - 1
    time.sleep(pause_s - (time.time() - t0))
    v.resume()
    t1 = time.time()
    rc = None
    while rc is None:
        line = v.read()
        if line.get("done") == in_flight:
            rc = line["rc"]
    v.send({"cmd": "stop"})
    while "stopped" not in v.read():
        pass
    sched.silent = {"V": [(run.ms(t0), run.ms(t1))]}
    sched.in_flight = (f"loop-{in_flight}", "V", run.ms(t0) - 1, run.ms(t1))
    return observe_after(
        run, sched, o, keys, holders, names, before, t0, run.ttl_s + 1.0,
        lambda expired: {"V": "V" in expired and run.master.segment_mounted(v.segment)},
        in_flight_rc=rc,
        notes=f"{in_flight} puts completed before the stop",
    )


# (name, description, function(run))
CASES = [
    ("client_pause_6s", "client V stopped (SIGSTOP) 6 s, TTL 3 s", lambda run: client_pause(run, 6.0)),
    ("client_pause_2s", "client V stopped (SIGSTOP) 2 s, TTL 3 s", lambda run: client_pause(run, 2.0)),
    ("master_pause_8s", "master stopped (SIGSTOP) 8 s > 2 x TTL", lambda run: master_pause(run, 8.0)),
    ("client_kill", "client V killed (SIGKILL)", client_kill),
    ("put_in_flight", "V, the only holder, stopped 6 s between PutStart and PutEnd", lambda run: put_in_flight(run, 6.0)),
]

# Run only when named (--cases): longer variants for checking the observations.
EXTRA = [
    ("master_pause_20s", "master stopped (SIGSTOP) 20 s", lambda run: master_pause(run, 20.0)),
    ("client_pause_10s", "client V stopped (SIGSTOP) 10 s, TTL 3 s", lambda run: client_pause(run, 10.0)),
]
