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
//! Incarnation numbers are `u64`, saturating; a client id's slot keeps its last number
//! after the record is erased (one small entry per client id ever seen), so incarnation n + 1
//! really follows n.
//!
//! # TTL reload
//!
//! New TTLs apply to deadlines computed after the swap. A signal never moves a
//! deadline earlier, so a shorter active TTL takes effect for a client within one old TTL.
//! The monitor tick length is fixed at construction.
//!
//! # Ping-path stalls
//!
//! The monitor measures its own lateness. Our Ping path takes no lock,
//! so upstream's #3936 failure (pings blocked behind `client_mutex_`) cannot happen here; a
//! starved RPC layer in front of the library is outside what the library can observe.
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
//! # Replay's executor
//!
//! is the virtual clock: `replay` always offboards synchronously, at the
//! tick, whatever `offboarding_mode` says, so its output stays deterministic.
//!
//! # Injected faults
//!
//! (`fail_step`) are not part of a snapshot; a failover clears them.
//!
//! # The MPSC queue
//!
//! allocates one node per job; it moves an item in 1.16–1.5× the time of
//! crossbeam's `SegQueue` (block allocation) in `BENCHMARKS.md`'s runs. Offboarding jobs are
//! rare, so the queue's job is never to lose one, not raw throughput.
//!
//! # Wheel cascades come in bursts
//!
//! The monitor's per-tick cost is O(entries due), but a
//! level-1 slot is re-filed into level 0 in the one tick that reaches it. With 1M clients
//! whose deadlines spread over the active TTL, that is hundreds of thousands of entries once
//! every 64 ticks: the mean steady-state tick is ~1.4 ms, the slowest ~38 ms. A tick runs on
//! the monitor's own thread, and a late tick only delays transitions (never a signal), but
//! spreading a cascade over the ticks before it is due is future work.
//!
//! # Allocation
//!
//! scans every mounted segment per Put (`choose_segments`), O(segments); a
//! production allocator would keep a serving-segment index ordered by free ratio.
//!
//! # loom cannot see inside arc-swap
//!
//! Under `--cfg loom`, `sync::ArcCell` (arc-swap's `ArcSwap` in normal builds: the registry
//! shards and the configuration) is a loom *mutex* around an `Arc`, because loom cannot model
//! arc-swap's own atomics. The models therefore check our copy-on-write protocols on top of the
//! cell, not arc-swap's lock-freedom: that Ping's registry lookup takes no lock is a property of
//! arc-swap (wait-free `load`) and of the code review that only `sync.rs` names it, not of a
//! model. The `ping/*` benches measure it.
