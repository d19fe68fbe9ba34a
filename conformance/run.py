"""One case on one master: the master, its clients, the probes, and the record of it all.

A :class:`Run` starts a fresh master of a :class:`~conformance.masters.Kind` and clients; a case
(:mod:`conformance.cases`) injects its faults through it; :meth:`Run.finish` returns the
*record*, a JSON object that is everything the comparison needs (and what the self-test replays
from ``conformance/testdata``):

- ``kind``, ``policy``, ``active_s``, ``suspicion_s``: which master, with which TTLs;
- ``clients``: name -> ``{"id", "segment", "endpoint"}`` (clients whose id is known: a client
  whose setup the master refused has no segment); ``refused``: name -> what a refused setup
  returned;
- ``log``: the master's records (:mod:`conformance.masterlog`) about those clients, plus the
  anchor: the transcript the model replays and the liveness lines it must reproduce;
- ``pauses``: ``[[stopped, resumed]]`` of the master (Unix times);
- ``puts``: ``{"t", "placement": {holder: objects}}``: the objects stored before the fault;
- ``in_flight``: ``{"key", "holder", "t"}`` of a Put stopped between PutStart and PutEnd, and
  ``in_flight_rc``, what its PutEnd returned to the client;
- ``probes``: ``[{"label", "t", "answers": {holder: {answer: count}}}]``: a reader's Get
  (``get_size``) of every stored object, counted per holder and answer (``ok`` or the
  master's error: ``REPLICA_IS_NOT_READY`` while its owner is Suspected, ``OBJECT_NOT_FOUND``
  once it is gone);
- ``notes``: what the case wants said; ``design``: the decision of ours that makes our own
  defaults predict differently from upstream's settings in this case; ``by_design``: which
  compared items may disagree with the rfc model because of a design difference
  (``{"mount V2": "why"}``; see :mod:`conformance.compare`).
"""

import collections
import time

from . import client as clientmod
from . import realmaster

OBJECT = 64 << 10
SEGMENT = 64 << 20
ERRORS = {-703: "REPLICA_IS_NOT_READY", -704: "OBJECT_NOT_FOUND"}


def answer(size):
    if size >= 0:
        return "ok"
    return ERRORS.get(size, f"error {size}")


class Run:
    """One case's master and clients; everything is stopped by :meth:`close`."""

    def __init__(self, kind, active_s, suspicion_s, index, logdir, case, extra_flags=()):
        self.kind = kind
        self.active_s, self.suspicion_s = active_s, suspicion_s
        self.index = index
        self.logdir = logdir
        self.master = realmaster.Master(kind, active_s, suspicion_s, index, logdir, extra_flags)
        self.anchor = self.master.anchor()
        self.clients = {}
        self.keys = []
        self.holder_of = {}  # key -> holder name
        self.record = {
            "case": case,
            "kind": kind.key,
            "policy": kind.policy,
            "active_s": active_s,
            "suspicion_s": suspicion_s,
            "tick_ms": kind.tick_ms,
            "fault": None,
            "puts": None,
            "in_flight": None,
            "in_flight_rc": None,
            "probes": [],
            "notes": [],
            "design": None,
            "by_design": {},
        }

    def add(self, name, segment_bytes=SEGMENT, **kw):
        c = clientmod.Client(name, self.master, segment_bytes, self.logdir, f"{self.index}-{self.kind.key}-{name}", **kw)
        self.clients[name] = c
        return c

    def fault(self):
        """Marks now as the case's fault (times in the report are counted from it)."""
        self.record["fault"] = time.time()
        return self.record["fault"]

    def note(self, text):
        self.record["notes"].append(text)

    def tick_phase_ms(self, t=None):
        """Where ``t`` (default now) falls between two ticks of the real monitor, from its start
        line (drift ignored: a case uses it only to keep probes away from ticks)."""
        t = time.time() if t is None else t
        return ((t - self.anchor) * 1000.0) % 1000.0

    def off_tick(self, lo=250, hi=650):
        """Waits until the real monitor is between ticks (``lo``..``hi`` ms past one)."""
        while not lo <= self.tick_phase_ms() < hi:
            time.sleep(0.01)

    def store(self, writer, reader, n):
        """Puts ``n`` objects from ``writer``; which client holds each, as ``reader`` sees it."""
        keys = [f"key-{i}" for i in range(n)]
        rcs = writer.put(keys, OBJECT)
        if rcs.count(0) != len(keys):
            raise SystemExit(f"error: {len(keys) - rcs.count(0)} of {len(keys)} puts failed before the fault")
        t = time.time()
        holders = reader.holders(keys)
        names = {c.endpoint: n for n, c in self.clients.items() if c.endpoint}
        self.keys = keys
        self.holder_of = {k: names.get(holders[k], str(holders[k])) for k in keys}
        self.record["puts"] = {"t": t, "placement": dict(collections.Counter(self.holder_of.values()))}

    def probe(self, label, reader, off_tick=True):
        """``reader``'s Get of every stored object, counted per holder and answer."""
        if off_tick:
            self.off_tick()
        t = time.time()
        sizes = reader.sizes(self.keys)
        counts = collections.defaultdict(collections.Counter)
        for k, s in zip(self.keys, sizes):
            counts[self.holder_of[k]][answer(s)] += 1
        self.record["probes"].append(
            {"label": label, "t": t, "t1": time.time(), "answers": {h: dict(c) for h, c in sorted(counts.items())}}
        )

    def finish(self):
        """The record (see the module doc)."""
        ids = {c.client_id: n for n, c in self.clients.items() if c.client_id}
        segs = {c.segment for c in self.clients.values() if c.segment}
        in_flight = (self.record["in_flight"] or {}).get("key")
        log = []
        for r in self.master.records():
            if r["kind"] == "put_end" and r.get("key") != in_flight:
                continue  # the stored objects are in "puts"; only the Put in flight is replayed
            if r["kind"] in ("anchor", "tick") or r.get("client") in ids or (r["kind"] == "mount" and r.get("segment") in segs):
                log.append(r)
        self.record["clients"] = {
            n: {"id": c.client_id, "segment": c.segment, "endpoint": c.endpoint, "started": c.started_at}
            for n, c in self.clients.items()
            if c.client_id
        }
        self.record["refused"] = {n: c.rc for n, c in self.clients.items() if c.rc != 0}
        self.record["log"] = log
        self.record["pauses"] = [list(p) for p in self.master.pauses]
        return self.record

    def close(self):
        for c in self.clients.values():
            c.stop()
        self.master.stop()
