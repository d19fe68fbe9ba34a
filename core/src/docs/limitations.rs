//! What the design does not do, and why. Each limitation is a heading, so it can be linked
//! (`docs::limitations#sequence-wrap`).
//!
//! # Deadline range
//!
//! Deadlines are 40-bit liveness-clock milliseconds (about 34.8 years from
//! the clock's epoch, which is process start for [`SystemClock`](crate::SystemClock)). Later
//! deadlines saturate at `MAX_DEADLINE_MS`; the wheel clamps far deadlines and re-arms.
//!
//! # Sequence wrap
//!
//! The transition sequence is 22 bits. An ABA on the word would need exactly
//! 2^22 transitions of one incarnation between a monitor's load and its CAS, and the deadline
//! field would also have to match; the monitor's load-to-CAS window is a few instructions.
//!
//! # Incarnation numbers
//!
//! are `u64`; a client id's slot keeps its last number after the record is erased (one small
//! entry per client id ever seen), so incarnation n + 1 really follows n. Nothing follows
//! `u64::MAX`: a mount after it is refused (`INVALID_PARAMS`), and a snapshot naming it is
//! refused at restore, so a number is never reused (a token of the old incarnation would match
//! the new one). Only a crafted snapshot gets a client near it.
//!
//! # The event log is bounded
//!
//! `take_events` drains a lock-free log of at most `MasterOptions::event_log_capacity` events
//! (default 65,536). An embedder that drains less often than that loses the oldest events;
//! each loss is counted (`Stats::events_dropped`, `mooncake_liveness_events_dropped_total`).
//! The counters in `Stats` never lose anything. Ping's recoveries reach the `metrics` facade
//! only at the next tick (as absolute values), because Ping's thread never calls the recorder.
//!
//! # TTL reload
//!
//! New TTLs apply to deadlines computed after the swap. A signal never moves a
//! deadline earlier, so a shorter active TTL takes effect for a client within one old TTL.
//! The monitor tick length is fixed at construction.
//!
//! # Ping-path stalls (`heartbeat_blocked`)
//!
//! The stall brake measures only the monitor's own
//! lateness, so it cannot see a Ping path blocked while the monitor runs on time (upstream
//! #3936/#4181: Ping waiting behind `client_mutex_` or on a busy RPC thread). Our Ping path
//! takes no lock, so the library itself cannot cause that; an RPC layer in front of it still
//! can. What carries such a block is the suspicion TTL (a block shorter than active +
//! suspicion TTL costs suspicions, never data) and the mass-suspicion brake (a block that
//! holds more than `mass_suspicion_fraction` of the fleet's pings past the active TTL holds
//! every Offline commit until the pings return). A block longer than active + suspicion TTL
//! that holds **fewer** than that fraction of the clients is seen by no brake: those clients
//! are offboarded (`tests/sim_simulate.rs`, `a_blocked_heartbeat_path_for_a_minority_is_seen_by_no_brake`).
//! The contract allows an opt-in check of the Ping path's progress (no Ping from any of ≥ 2
//! Active clients for longer than the stall bound while ticks are on time). It is **not built**:
//! it would need a fleet-wide "last Ping" word written by every Ping (a shared cache line on
//! the hot path the design keeps to one CAS on the client's own word), it cannot see the
//! minority case above either (some Pings still arrive), and the one case it adds over the
//! mass-suspicion brake — a whole-fleet block — the brake already holds without losing data
//! (`a_blocked_heartbeat_path_offboards_no_healthy_client_under_rfc_with_brakes`). What it would
//! add is fewer suspicions (no client leaves serving during the block); that is future work.
//!
//! # Mount work runs outside any lock
//!
//! The incarnation may go Offline while the caller's work
//! runs; the caller is told (`MountOutcome::Lost`) and must undo it.
//!
//! # Snapshots in asynchronous mode
//!
//! A job running on the executor is captured as "not
//! started" (its progress lives with the worker); its inputs live in the master, and steps
//! are idempotent and consume their inputs, so the restored job redoes nothing harmful —
//! but it does redo the (empty) sweeps.
//!
//! # Snapshots wait for mounts, and mounts for snapshots
//!
//! A snapshot runs while requests run, but it holds the master's membership gate exclusively:
//! Mount, ReMount, Unmount, LocalDisk mount and the offboarding steps that unmount wait until
//! it is done (Ping, Get, Put, Remove, callbacks, ticks and the offboarding `metadata` batches do
//! not). That is what keeps the segment table still while the shards are copied one at a time
//! (`master::snapshot`). A snapshot of a very large master therefore delays mounts by its
//! duration (hundreds of milliseconds per million objects).
//!
//! # Replay's executor
//!
//! is the virtual clock: `replay` always offboards synchronously, at the
//! tick, whatever `offboarding_mode` says, so its output stays deterministic.
//!
//! # Injected faults
//!
//! (`fail_step`) are not part of a snapshot; a failover clears them.
//!
//! # The offboarding queue
//!
//! is crossbeam's `SegQueue` behind our capacity/close/drain layer
//! (`offboarding::queue`), which adds one compare-and-swap on a shared state word per push
//! and gives slots back in bulk, so a push may see `Full` while the consumer still owes up to
//! 63 slots (at most 1/64 of the capacity).
//! loom checks that layer's protocol over a mutex stand-in for the `SegQueue` (loom cannot see
//! inside crossbeam); the `SegQueue` itself is crossbeam's to check.
//!
//! # Wheel cascades are paced, not free
//!
//! A slot of level `i >= 1` is moved down
//! `ceil(size / ticks left)` entries per tick over the `64^i` ticks before it is due, so at 1M
//! clients a tick re-files ~1/64 of a level-1 slot (~10k entries with a 10 s TTL) instead of
//! the whole slot. The bound is proportional to the slot's size, not a constant, and it holds
//! for a monitor that ticks every tick: after a stall, the one catching-up poll re-files every
//! slot it jumps over at once (it also has that much to fire).
//!
//! # Allocation
//!
//! with `FreeRatioFirst` (the default) scans every mounted segment per Put
//! (`choose_segments`), O(segments); a production allocator would keep a serving-segment index
//! ordered by free ratio. `Random` samples slots of the segment table once it has 64 or more
//! (O(replicas) expected) and falls back to the scan when a bounded number of draws finds
//! too few eligible segments (a table mostly unmounted or not serving).
//!
//! # The word slab
//!
//! Every record's word lives in one process-wide slab of cache lines, eight words to a line
//! (`liveness/slab.rs`), so resources holding an `Owner` check their owners on dense lines. The
//! slab never returns memory (it grows to the peak number of live records, 16 bytes each: the
//! word and, in a separate half of its 64 KiB chunk, the tag an `Owner` finds its record by);
//! eight clients share a line, so one client's Ping invalidates it for readers
//! of the seven others (a few writes a second per line at Mooncake's ping rate); creating and
//! dropping a record takes the slab's lock (mounts and offboarding, never the hot path). Under
//! loom each word is its own `Arc` and an `Owner` holds the record's `Arc` beside it: the models
//! check the protocols on the word, not its placement or the one-pointer `Owner` (its count and
//! its tag are covered by `owner.rs`'s and `slab.rs`'s unit tests, the master's tests and the
//! fuzzers, which build the normal representation).
//!
//! # loom cannot see inside arc-swap
//!
//! Under `--cfg loom`, `sync::ArcCell` (arc-swap's `ArcSwap` in normal builds: the registry
//! shards and the configuration) is a loom *mutex* around an `Arc`, because loom cannot model
//! arc-swap's own atomics. The models therefore check our copy-on-write protocols on top of the
//! cell, not arc-swap's lock-freedom: that Ping's registry lookup takes no lock is a property of
//! arc-swap (wait-free `load`) and of the code review that only `sync.rs` names it, not of a
//! model. The `ping/*` benches measure it.
//!
//! # The executor's loom models are small
//!
//! `offboarding::executor` builds under `--cfg loom` (its idle sleep is a yield there and its
//! shutdown deadline counts the drain's polls, `sync::Deadline`), and three models check that a
//! job is never lost or duplicated across shutdown, retries and a racing submit
//! (`loom_tests/executor_*.rs`). They run one worker taking batches of one, with one or two jobs
//! and a one-poll drain: races between workers (several sharing the consumer lock and `busy`)
//! are argued in the executor's ground rules, not explored. The master's worker pool is not
//! built under loom (its models drive jobs by hand), so the submit-vs-shutdown model rebuilds
//! the pool's lock-and-`Option` handle around the real executor instead of running the pool's
//! code.
