"""``python3 -m realload.selftest``: the master-log reading of :mod:`realload.masterlog` on a
made-up log in the master's format (glog lines, ``scoped_vlog_timer`` request/response pairs
from interleaved threads). No Mooncake needed; scripts/test.sh runs it."""

import os
import tempfile

from . import masterlog

A = "111-222"
B = "333-444"
LOG = f"""I1204 10:00:00.000000   7 master.cpp:1449] Mooncake master version: test
I1204 10:00:00.000100   7 master.cpp:1585] Master service started on port 50051, max_threads=2, rpc_thread_num=3, rpc_port=50051
I1204 10:00:01.000000  11 scoped_vlog_timer.h:46] Ping request: client_id={A}
I1204 10:00:01.000100  12 scoped_vlog_timer.h:46] ReMountSegment request: segments_count=1, client_id={B}
I1204 10:00:01.000200  11 scoped_vlog_timer.h:90] Ping response: status=success, value={{"view_version_id":0,"client_status":1}}, latency=200us
I1204 10:00:01.500000  11 scoped_vlog_timer.h:46] Ping request: client_id={B}
I1204 10:00:01.500010  11 scoped_vlog_timer.h:90] Ping response: status=success, value={{"view_version_id":0,"client_status":2}}, latency=10us
I1204 10:00:03.000100  12 scoped_vlog_timer.h:90] ReMountSegment response: status=success, value=void, latency=2000000us
I1204 10:00:03.500000  11 scoped_vlog_timer.h:46] Ping request: client_id={A}
I1204 10:00:03.500050  11 scoped_vlog_timer.h:90] Ping response: status=success, value={{"view_version_id":0,"client_status":1}}, latency=50us
I1204 10:00:04.000000  13 master_service.cpp:11082] client_id={A}, action=client_liveness_suspected
I1204 10:00:05.000000  14 monitor.rs:91] client_id={B}, incarnation=1, from=Suspected, to=Active, cause=Ping, action=client_liveness_recovered
I1204 10:00:05.000001  14 monitor.rs:91] client_id={B}, action=mount_segment, segment_name=x
"""


def main():
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "master.log")
        with open(path, "w") as f:
            f.write(LOG)
        rpcs, transitions = masterlog.parse(path, year=2026)
        started = masterlog.startup(path)
    assert started == ("test", 3), started
    names = [(r.name, r.client, r.latency_us) for r in rpcs]
    assert names == [
        ("Ping", A, 200),
        ("Ping", B, 10),
        ("ReMountSegment", B, 2000000),
        ("Ping", A, 50),
    ], names
    assert [masterlog.ping_ok(r) for r in rpcs if r.name == "Ping"] == [True, False, True]
    start = rpcs[0].at - 0.5
    end = rpcs[-1].at + 1.0
    gaps = masterlog.worst_gaps(rpcs, [A, B], start, end)
    assert abs(gaps[A] - 2.49985) < 1e-3, gaps  # 01.0002 -> 03.50005
    assert abs(gaps[B] - (end - start)) < 1e-6, gaps  # its only Ping answered NEED_REMOUNT
    assert [(c, a) for _, c, a in transitions] == [
        (A, "client_liveness_suspected"),
        (B, "client_liveness_recovered"),
    ], transitions
    assert masterlog.missing_figures(rpcs, [A], {B}, 1, 10) == []
    failed = masterlog.missing_figures(rpcs, [A, B], {A}, 1, 0)
    assert len(failed) == 3 and B in failed[0] and A in failed[1], failed  # B never pinged OK
    assert masterlog.missing_figures([], [A], set(), 0, 1) != [], "a log without Ping lines fails"
    assert masterlog.percentiles([5, 1, 3]) == {"p50": 3, "p99": 5, "max": 5}
    print("realload selftest: ok")


if __name__ == "__main__":
    main()
