"""Deliberately wrong models, for the self-test: each must make the comparison fail on the
recorded real runs of ``conformance/testdata``.

Each is the real ``replay`` binary with its input or its output changed so that it behaves
exactly as a model with that one mistake would (the reason each change is exact is given):

- **deadline -1 s, +1 s, +2 s** (every deadline moved): the TTLs moved by that much. Legacy's
  deadline is the draining tick plus the TTL; rfc's are the last signal plus the active TTL and
  the committed suspicion plus the suspicion TTL.
- **TTL x2**: both TTLs doubled.
- **tick 500 ms**: rfc: ``monitor_tick_ms: 500`` (every real tick is still a model tick; the
  model ticks in between too). Legacy's tick is main's fixed 1 s, so its trace's times and TTL
  are doubled instead and the predicted times halved: on the doubled clock a 1 s tick is 500 ms.
- **``<`` for ``<=``** (a deadline must be strictly passed): a deadline that sits on the tick
  grid (legacy's, anchored at a tick, and rfc's suspicion deadline, a whole number of seconds
  after the tick that committed Suspected) then passes one tick later, so those TTLs get one
  tick more (a second for legacy and upstream's settings, 100 ms under our defaults); rfc's
  active deadline is off the grid (last signal + TTL, in whole ms), where ``now - s > A`` is
  ``now - (s + 1 ms) >= A``: every signal moves 1 ms later.
- **suspicion counted from the last signal instead of the commit** (rfc): the Offline tick is
  recomputed from the model's own lines as the first tick, at least one after the Suspected
  one, at or after the last signal + active + suspicion TTL; a recovery that comes after that
  tick is dropped, with everything later of that client. Only a late Suspected commit (the
  monitor held up by a master pause) separates it from the right rule, so only such a run can
  catch it. The probes are left as the right model's: the times must catch it.
"""

import dataclasses
import json

from . import trace

# The library's monitor period (src/config/mod.rs), what a model config without the key ticks at.
DEFAULT_TICK_MS = 100


@dataclasses.dataclass(frozen=True)
class Mutant:
    name: str
    policy: str
    config_fn: object = None
    ops_fn: object = None
    pred_fn: object = None

    def config(self, config):
        return self.config_fn(dict(config)) if self.config_fn else config

    def ops(self, ops):
        return self.ops_fn(ops) if self.ops_fn else ops

    def prediction(self, pred, record, tb):
        return self.pred_fn(pred, record) if self.pred_fn else pred


def _ttls(da=0, ds=0, factor=1):
    def f(c):
        for key, d in (("client_live_ttl_sec", da), ("client_active_ttl_sec", da), ("client_suspicion_ttl_sec", ds)):
            if key in c:
                c[key] = c[key] * factor + d
        return c

    return f


def _one_tick_more_suspicion(c):
    """The suspicion TTL one monitor tick longer (fractional seconds are valid config)."""
    c["client_suspicion_ttl_sec"] = c["client_suspicion_ttl_sec"] + c.get("monitor_tick_ms", DEFAULT_TICK_MS) / 1000.0
    return c


def _doubled(ops):
    out = []
    for ms, seq, op, i in ops:
        op = dict(op)
        for k in ("ms", "wake_ms"):
            if k in op:
                op[k] *= 2
        out.append((ms * 2, seq, op, i))
    return out


def _halved(pred, record):
    pred.transitions = [(ms / 2.0, c, k) for ms, c, k in pred.transitions]
    return pred


def _signals_later(ops):
    return [(ms + 1 if op["op"] in trace.SIGNALS else ms, seq, op, i) for ms, seq, op, i in ops]


def _grid(lines):
    """first_tick_at_or_after(t) for the trace's monitor: multiples of its tick, restarted at
    each ``stall``'s ``wake_ms``."""
    cfg = json.loads(lines[0])["config"]
    tick = cfg.get("monitor_tick_ms", DEFAULT_TICK_MS)
    wakes = sorted(o["t_ms"] + o["wake_ms"] for o in map(json.loads, lines[1:]) if o.get("op") == "stall" and "wake_ms" in o)

    def first_at_or_after(t):
        start = max([w for w in wakes if w <= t], default=0)
        return start + -(-(t - start) // tick) * tick

    return first_at_or_after, tick


def _from_last_signal(pred, record):
    cfg = json.loads(pred.lines[0])["config"]
    total = (cfg["client_active_ttl_sec"] + cfg["client_suspicion_ttl_sec"]) * 1000
    at_or_after, tick = _grid(pred.lines)
    signals = {}
    for o in map(json.loads, pred.lines[1:]):
        if o.get("op") in trace.SIGNALS:
            signals.setdefault(o["client"], []).append(o["t_ms"])
    out = []
    for client in sorted({c for _, c, _ in pred.transitions}):
        mine = sorted((ms, k) for ms, c, k in pred.transitions if c == client)
        suspected_at = None
        skip_from = None
        for ms, kind in mine:
            if skip_from is not None and ms >= skip_from:
                continue
            if kind == "suspected":
                suspected_at = ms
                s = max(t for t in signals.get(client, [0]) if t < ms)
                off = max(at_or_after(ms + 1), at_or_after(s + total))
                out.append((ms, client, kind))
                continue
            if suspected_at is not None and kind in ("offline", "offboarded"):
                out.append((off, client, kind))
                continue
            if suspected_at is not None and kind == "recovered" and off <= ms:
                out += [(off, client, "offline"), (off, client, "offboarded")]
                skip_from = ms
                continue
            out.append((ms, client, kind))
            if kind == "recovered":
                suspected_at = None
    pred.transitions = out
    return pred


MUTANTS = [
    Mutant("deadline -1 s", "legacy", _ttls(-1)),
    Mutant("deadline +1 s", "legacy", _ttls(1)),
    Mutant("deadline +2 s", "legacy", _ttls(2)),
    Mutant("TTL x2", "legacy", _ttls(factor=2)),
    Mutant("tick 500 ms", "legacy", _ttls(factor=2), _doubled, _halved),
    Mutant("< for <=", "legacy", _ttls(1)),
    Mutant("deadline -1 s", "rfc", _ttls(-1, -1)),
    Mutant("deadline +1 s", "rfc", _ttls(1, 1)),
    Mutant("deadline +2 s", "rfc", _ttls(2, 2)),
    Mutant("TTL x2", "rfc", _ttls(factor=2)),
    Mutant("tick 500 ms", "rfc", lambda c: {**c, "monitor_tick_ms": 500}),
    Mutant("< for <=", "rfc", _one_tick_more_suspicion, _signals_later),
    Mutant("suspicion from the last signal", "rfc", pred_fn=_from_last_signal),
]
