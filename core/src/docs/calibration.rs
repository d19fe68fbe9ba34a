//! Where every number of `simulate`'s scenarios comes from.
//!
//! Sources: **(real)** the real upstream master (PyPI `mooncake-transfer-engine-non-cuda`
//! 0.3.13.post1, `mooncake/mooncake_master`) run as a new user would, with SIGSTOP/SIGKILL of a
//! client or of the master (issue 15 of this project; `scripts/conformance.sh` on the
//! `conformance` branch repeats it); **(main)** Mooncake `main`'s source, as summarized in the
//! project's reference notes (`mooncake-master-paths.md` §1.8, §2.3, §2.6); **(#N)** upstream
//! issues and pull requests as summarized in `upstream-rfc-implementation.md` §14. **Assumed**
//! means no measurement was found: the number is a stress value, chosen to be visible, and a
//! reader should substitute their own (every knob is a field of
//! `Trouble` (the tools' `sim::fleet::Trouble`)).
//!
//! | number | value | source |
//! |---|---|---|
//! | ping interval | 1 s (± 50 ms jitter) | (real) clients ping every 1 s; jitter assumed |
//! | legacy monitor tick | 1 s | (main) `kClientMonitorSleepMs`; (real) the master checks every 1 s |
//! | legacy deadline | the draining tick + `client_ttl` | (main) `ClientMonitorFunc`; (real) expiry TTL + up to ~2 s after the last ping |
//! | `client_ttl` (`legacy`) | 10 s | (main) `DEFAULT_CLIENT_LIVE_TTL_SEC` |
//! | `legacy@30s` | 30 s | rfc's total budget (10 + 20 s); users raised `client_ttl` from 10 to 30 s for client-side stalls (issue 15) |
//! | `legacy@60s` | 60 s | upstream's sample `master.yaml` |
//! | ping queue | no bound (131,072 nodes preallocated) | (main) `client_ping_queue_` is a `boost::lockfree::queue` built with `kClientPingQueueSize` nodes but not `fixed_sized`: its `push` allocates a node when the pool is empty, so the `client_ping_queue_full` branch is not reached |
//! | rfc TTLs | 10 s + 20 s | the library's defaults (the RFC's) |
//! | `client_pause` rate, size | 0.05 per client-minute; LogNormal(median 0.8 s, σ 1.2), at most 25 s | **assumed**. What is known: a 2 s client SIGSTOP cost nothing and a 6 s one past a 3 s TTL cost the client its data (real); users raised `client_ttl` 10 → 30 s because GC / a loaded Python interpreter starved the heartbeat thread, so pauses past 10 s happen |
//! | `client-freeze` | 0.2 per client-minute; median 2 s, at most 60 s | **assumed** (a heavier tail of the same kind) |
//! | `partition` | 2 × 5 % of the fleet × Uniform(8 s, 20 s) | **assumed** |
//! | `rack-partition` | 2 × 1/32 of the fleet × Uniform(8 s, 60 s) | **assumed** (a rack of 32) |
//! | `master_pause` | 1 × Uniform(8 s, 20 s), buffered pings applied before the first check | (real) master SIGSTOP 8 s expired no one in 3 runs, and in 14 of 17 runs on 2026-12-03; 20 s (1 run) expired no one: the buffered pings were processed before the monitor's next check. In the other 3 the monitor ran first and expired the clients whose last ping it had drained before the pause (V once, A and V twice). It can also run *between* the buffered pings: on 2026-12-04 (`--vmodule=scoped_vlog_timer=1` logs each Ping) A's buffered Ping began 93 µs before the monitor expired V and V's 5 µs after, with both last Pings drained before the pause; V alone expired (1 of 14 logged runs that day: 12 expired no one, 1 both). (main) drains its queue, then expires: a race the pings usually win, so `master_pause_ticks_first` shows the other order |
//! | `heartbeat_blocked` (stress) | 1 × 13.8 s, every client's pings | (#3936) a joining client's ReMount held `client_mutex_` for 13.8 s (18 M keys) against a 10 s TTL; the ping counter stayed flat for 9 s (io threads blocked); in production all 12 live clients expired at once |
//! | `join-storm` | 2 × Uniform(13.8 s, 91 s), every client's pings | (#3936) 13.8 s; (#4181) worst heartbeat gap in a join storm at 18 M keys: 91.0 s with PR-A only, 213.6 s on main (beyond this range: set `heartbeat_block_max_s`) |
//! | `crash` | 0.5 % of the fleet, at Uniform(10 %, 55 %) of the run | **assumed**. (real) a SIGKILLed client expired 3.35 s after its last ping with a 3 s TTL |
//! | ping loss | 0.5 % of pings | **assumed** |
//! | traffic | 200 Puts/s (1–2 replicas, 256 KiB–4 MiB), 400 Gets/s, 20,000 objects kept | **assumed** (a small cache) |
//! | fleet | 2,000 clients, one 1 GiB segment each, 300 s | **assumed** |
//! | incident window | each partition, master pause and heartbeat block, and 30 s after it | a choice of this report (recovery and re-puts) |
//!
//! The default, `stress`, puts every stall kind into one 300 s run. It is a stress test: a real
//! fleet rarely sees a blocked Ping path, a master pause and two partitions in five minutes.
//! Its purpose is that each stall kind shows in its own row, against the same traffic.
//!
//! The race's cost (`--master-pause-ticks-first`): main's tick drains its ping queue before it
//! expires, and the queue holds the pings that arrived since the last tick before the pause, so
//! a lost race expires only the clients whose ping was still to come — about the fraction of
//! main's 1 s tick that was left when the pause began (`tests/sim_simulate.rs`).
//!
//! What the real master shows, and the model reproduces: a master pause expires no one
//! (`by master_pause` is 0 for `legacy`); a client pause or partition longer than `client_ttl`
//! costs the client its data; a blocked Ping path longer than `client_ttl` expires every client
//! whose pings it holds (#3936's production incident).
