"""The fault schedules. Each runs, unchanged, on every master (one :class:`~conformance.run.Run`
each); what the master did is read from its log and the reader's probes, never assumed.

Clients: A writes every object and holds some, V (the victim) holds the others, O only reads
(no segment, no Pings). TTLs: active 3 s, suspicion 4 s (``--client_ttl=3`` for the legacy
master). A client that stops at t0 was last heard in (t0 - 1, t0], so the master's monitor
(1 s period) suspects or expires it by t0 + 4 and upstream's takes it Offline by t0 + 8: the
probes are placed after those times and between two monitor ticks. Times and outcomes are then
what the log shows; the model is given the same transcript and must reproduce them.
"""

import math
import time

from .run import SEGMENT

ACTIVE_S = 3
SUSPICION_S = 4
OBJECTS = 200

STALL_BRAKE = (
    "the stall brake: a tick later than the stall bound credits the gap to every deadline "
    "(decisions.md \"Master stalls\", core/src/docs/guarantees.rs \"What each brake can and cannot see\"); upstream has no brake"
)


def holders_stored(run, isolate=None, p2p=False, victims=("V",)):
    """A, the victims and O started; A's objects stored; a first probe: (a, victims, o)."""
    a = run.add("A", p2p=p2p)
    vs = [run.add(v, isolate=isolate, p2p=p2p) for v in victims]
    o = run.add("O", 0, p2p=p2p)
    time.sleep(1.5)  # every holder remounted and pinging
    run.store(a, o, OBJECTS)
    run.probe("before", o)
    return a, vs, o


def sleep_until(t):
    time.sleep(max(0.0, t - time.time()))


def after_ping(run, client, timeout=3.0):
    """Returns as soon as the master logged ``client``'s next Ping (within ~10 ms of it)."""
    seen = sum(1 for r in run.master.records() if r["kind"] == "ping" and r.get("client") == client.client_id)
    deadline = time.time() + timeout
    while time.time() < deadline:
        if sum(1 for r in run.master.records() if r["kind"] == "ping" and r.get("client") == client.client_id) > seen:
            return
        time.sleep(0.005)
    raise SystemExit(f"error: the master logged no Ping of {client.name} within {timeout} s")


def client_pause(run, pause_s):
    """V (a holder) is stopped (SIGSTOP) for ``pause_s``, right after a Ping of its: so it is
    silent for the pause (plus the ~10 ms the harness takes to see the Ping, and the moments its
    first Ping after the resume takes), not for up to a Ping period more. A stop at a random
    moment silences it for up to ``pause_s`` + 1 s, which straddles a TTL the pause is meant to
    stay short of (2 s against the active 3 s, 6 s against active + suspicion, 7 s): with a 100 ms
    tick that decides the outcome, where upstream's 1 s tick, which commits up to a second after
    a deadline, hides it."""
    a, (v,), o = holders_stored(run)
    after_ping(run, v)
    t0 = run.fault()
    v.pause()
    if pause_s > ACTIVE_S + 1.3:
        sleep_until(t0 + ACTIVE_S + 1.3)
        run.probe("during", o)
    sleep_until(t0 + pause_s)
    v.resume()
    time.sleep(3.0)
    run.probe("after", o)


def client_kill(run):
    """V (a holder) is killed (SIGKILL) for good."""
    a, (v,), o = holders_stored(run)
    t0 = run.fault()
    v.kill()
    sleep_until(t0 + ACTIVE_S + 1.3)
    run.probe("during", o)
    sleep_until(t0 + ACTIVE_S + SUSPICION_S + 1.3)
    run.probe("after", o)


def two_killed(run):
    """V1 and V2 killed at the same instant, between the same two monitor ticks."""
    a, (v1, v2), o = holders_stored(run, victims=("V1", "V2"))
    run.off_tick(100, 600)
    t0 = run.fault()
    v1.signal(9)
    v2.signal(9)
    sleep_until(t0 + ACTIVE_S + 1.3)
    run.probe("during", o)
    sleep_until(t0 + ACTIVE_S + SUSPICION_S + 1.3)
    run.probe("after", o)


def partition(run, cut_s):
    """V, in a network namespace of its own, is cut off (its veth taken down) for ``cut_s``."""
    a, (v,), o = holders_stored(run, isolate=0)
    from . import net

    t0 = run.fault()
    net.partition(0, True)
    for at, label in ((ACTIVE_S + 1.3, "during"), (ACTIVE_S + SUSPICION_S + 1.3, "offline")):
        if cut_s > at:
            sleep_until(t0 + at)
            run.probe(label, o)
    sleep_until(t0 + cut_s)
    net.partition(0, False)
    time.sleep(3.5)
    run.probe("after", o)


def master_pause(run, pause_s, kill_first=False):
    """The master process is stopped (SIGSTOP) for ``pause_s``; the clients keep trying. With
    ``kill_first``, V is killed 1.5 s before, so its deadline passes while the master is stopped.

    With ``kill_first`` the last probe comes active + suspicion after the resume: a master
    without the stall brake takes V Offline a suspicion TTL after the resume, one with it (our
    design credits the pause to V's deadline) up to an active TTL later; probed any earlier,
    whether V is gone yet would depend on where V's last Ping fell, not on the design.

    V is killed right after a Ping of its (as :func:`client_pause` stops it), so its deadline
    falls 1.5 s into the pause: a master without the brake suspects it at the resume, one with
    it about 1.5 s later (the pause credited). The ``resumed`` probe, 0.8 s after the resume,
    sits between the two in every run; at a random kill time the braked suspicion fell anywhere
    from 0.5 to 1.5 s after the resume, on either side of a probe there."""
    a, (v,), o = holders_stored(run)
    if kill_first:
        after_ping(run, v)
    run.fault()
    if kill_first:
        v.kill()
        time.sleep(1.5)
    run.master.pause()
    time.sleep(pause_s)
    run.master.resume()
    t1 = time.time()
    if run.kind.upstream:
        run.record["design"] = STALL_BRAKE
    if kill_first:
        sleep_until(t1 + 0.8)
        run.probe("resumed", o)
        sleep_until(t1 + ACTIVE_S + SUSPICION_S + 1.3)
    else:
        sleep_until(t1 + ACTIVE_S + 1.3)
    run.probe("after", o)


def put_in_flight(run, pause_s, tries=200):
    """V, the only holder, writes in a loop and is stopped between PutStart and PutEnd.

    The stop lands wherever the Put is, up to a Ping period after V's last Ping, so V is silent
    for up to ``pause_s`` + 1 s (and its first Ping after the resume): 5 s keeps that short of
    active + suspicion (7 s) for every phase (6 s did not: :func:`client_pause`).

    The master's PutStart/PutEnd counters tell whether the stop landed there; if not, V is
    resumed at once (well within the TTL) and stopped again a little later.
    """
    v = run.add("V")
    o = run.add("O", 0)
    time.sleep(1.5)
    v.send({"cmd": "put_loop", "prefix": "loop", "size": 64 << 10})
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
    t0 = run.fault()
    run.keys = [f"loop-{i}" for i in range(in_flight)]
    run.holder_of = {k: "V" for k in run.keys}
    run.record["puts"] = {"t": t0 - 0.001, "placement": {"V": in_flight}}
    run.record["in_flight"] = {"key": f"loop-{in_flight}", "holder": "V", "t": t0 - 0.001}
    run.probe("before", o)
    if pause_s > ACTIVE_S + 1.3:
        sleep_until(t0 + ACTIVE_S + 1.3)
        run.probe("during", o)
    sleep_until(t0 + pause_s)
    v.resume()
    rc = None
    while rc is None:
        line = v.read()
        if line.get("done") == in_flight:
            rc = line["rc"]
    v.send({"cmd": "stop"})
    while "stopped" not in v.read():
        pass
    run.record["in_flight_rc"] = rc
    run.note(f"{in_flight} puts completed before the stop")
    time.sleep(3.0)
    run.probe("after", o)


def restart(run, label, suspected=True, p2p=True):
    """V is killed; a new process (a new client id) takes over its segment name: 1.5 s after the
    master suspected or expired V (``suspected``), or aimed at the tick V's incarnation goes
    Offline under rfc (its Suspected line plus the suspicion TTL; under legacy, its expiry line
    plus the same). Clients use the transfer engine's P2P handshake: with the master's HTTP
    metadata server the new process's transfer engine is refused before it reaches the master
    (the old incarnation's ``rpc_meta`` key is still there: "Duplicate rpc_meta key not allowed").
    V2's segment has V's name and an id of its own; every master keys segments by id
    (:func:`conformance.trace.segment_key`), so none of them has a reason to refuse it, and a
    refusal fails the case."""
    a, (v,), o = holders_stored(run, p2p=p2p)
    t0 = run.fault()
    v.kill()
    first = None
    while first is None and time.time() < t0 + ACTIVE_S + 3:
        time.sleep(0.02)
        first = next((r["t"] for r in run.master.records() if r["kind"] in ("suspected", "expired") and r.get("client") == v.client_id), None)
    if first is None:
        raise SystemExit("error: the master neither suspected nor expired V within the active TTL + 3 s")
    # The new process's MountSegment comes about 0.1 s after it starts (transfer engine setup).
    sleep_until(first + 1.5 if suspected else first + SUSPICION_S - 0.1)
    v2 = run.add("V2", host=v.segment, p2p=p2p, must_start=False)
    sleep_until(t0 + ACTIVE_S + SUSPICION_S + 2.3)
    recs = run.master.records()
    mount = next((r["t"] for r in recs if r["kind"] == "mount" and r.get("client") == v2.client_id), None)
    lines = [(r["t"], r["kind"]) for r in recs if r.get("client") == v.client_id and r["kind"] in ("suspected", "expired", "offboarded")]
    where = ", ".join(f"{(mount - t) * 1000:+.0f} ms from V's {k} line" for t, k in lines) if mount else "not logged"
    run.note(f"V2 (a new process, a new client id) started {label}: setup returned {v2.rc}; its MountSegment came {where}")
    run.probe("after", o)


def heartbeat_blocked(run, block_s=5.0):
    """The master serves RPCs on one thread (``--rpc_thread_num=1``); O's ``remove_by_regex``
    with a pattern that backtracks exponentially on a few keys runs for ``block_s``. A master
    that runs the handler on its io thread (0.3.13.post1) handles no Ping until it ends, while
    its monitor keeps ticking; 0.3.14 runs handlers on workers apart from the io threads
    (``--handler_worker_thread_num``) and keeps handling Pings."""
    a, (v,), o = holders_stored(run)
    run.fault()  # the calibration below already holds the RPC thread a little
    length = 23
    evil = "a" * length + "!"
    o.put([evil + "0"], 1024)
    r = o.call({"cmd": "regex", "pattern": "^(a+)+$"})
    per_key = max(r["t1"] - r["t0"], 0.05)
    n = max(1, math.ceil(block_s / per_key))
    o.put([evil + str(i) for i in range(1, n)], 1024)
    r = o.call({"cmd": "regex", "pattern": "^(a+)+$"})
    run.note(
        f"remove_by_regex over {n} keys of {length + 2} characters took {r['t1'] - r['t0']:.1f} s "
        f"({per_key:.2f} s per key measured first)"
    )
    time.sleep(2.5)
    run.probe("after", o)


# (name, description, function(run), extra master flags)
CASES = [
    ("client_pause_6s", "V stopped (SIGSTOP) 6 s: past the active TTL, short of active + suspicion", lambda r: client_pause(r, 6.0), ()),
    ("client_pause_2s", "V stopped (SIGSTOP) 2 s: short of the active TTL", lambda r: client_pause(r, 2.0), ()),
    ("client_kill", "V killed (SIGKILL)", client_kill, ()),
    ("two_killed", "V1 and V2 killed between the same two ticks", two_killed, ()),
    ("partition_1s", "V partitioned 1 s (its veth down): short of the active TTL", lambda r: partition(r, 1.0), ()),
    ("partition_4_5s", "V partitioned 4.5 s: past the active TTL, short of active + suspicion", lambda r: partition(r, 4.5), ()),
    ("partition_9s", "V partitioned 9 s: past active + suspicion", lambda r: partition(r, 9.0), ()),
    ("master_pause_8s", "master stopped (SIGSTOP) 8 s, every client alive", lambda r: master_pause(r, 8.0), ()),
    (
        "master_pause_dead_v",
        "V killed, then the master stopped 5.5 s across V's deadline",
        lambda r: master_pause(r, 5.5, kill_first=True),
        (),
    ),
    ("put_in_flight", "V, the only holder, stopped 5 s between PutStart and PutEnd", lambda r: put_in_flight(r, 5.0), ()),
    (
        "restart_suspected",
        "V killed; a new process (new id) takes V's segment name 1.5 s after V is suspected (expired)",
        lambda r: restart(r, "1.5 s after V's Suspected (legacy: expired) line"),
        (),
    ),
    (
        "restart_offline",
        "V killed; a new process takes V's segment name as V goes Offline and is offboarded",
        lambda r: restart(r, "aimed at V's Offline tick", suspected=False),
        (),
    ),
    (
        "heartbeat_blocked",
        "a 5 s remove_by_regex on a master with one RPC thread (a Ping behind it waits)",
        heartbeat_blocked,
        ("--rpc_thread_num=1",),
    ),
]

# Run only when named (--cases): longer variants.
EXTRA = [
    ("master_pause_20s", "master stopped (SIGSTOP) 20 s", lambda r: master_pause(r, 20.0), ()),
    ("client_pause_10s", "V stopped (SIGSTOP) 10 s", lambda r: client_pause(r, 10.0), ()),
    (
        "restart_http_metadata",
        "restart_suspected with the master's HTTP metadata server instead of the P2P handshake",
        lambda r: restart(r, "1.5 s after V's Suspected (legacy: expired) line, HTTP metadata", p2p=False),
        (),
    ),
]

__all__ = ["ACTIVE_S", "SUSPICION_S", "CASES", "EXTRA", "SEGMENT"]
