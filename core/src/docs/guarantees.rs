//! What each path promises.
//!
//! # Progress
//!
//! | path | progress | bound |
//! |---|---|---|
//! | serving check (`is_serving`, `should_retain`) | wait-free | one `Acquire` load and a compare |
//! | Ping | lock-free, on every outcome | an arc-swap load of one registry shard (wait-free in the common case), a hash probe, one CAS loop on the word; the loop retries only when the monitor or another signal changed the same word in between. A recovery adds atomic counters and one push to the lock-free event log; no mutex of the master is taken (`a_recovering_ping_returns_while_another_thread_holds_every_master_lock`) |
//! | mount signal (`Liveness::mount`) | lock-free around the caller's work | as Ping; publishing a *new* incarnation takes the shard's writer mutex (never taken by Ping) and the monitor inbox mutex |
//! | monitor tick | single-threaded | O(entries due + stall check); healthy clients that keep pinging cost one re-arm per active TTL, not per tick |
//!
//! # Timing (manual or system clock)
//!
//! - An incarnation becomes Suspected at the first tick `τ` with `τ − s ≥ active TTL`, where `s`
//!   is its last accepted signal, and Offline at the first tick `τ'` with `τ' − τ ≥ suspicion
//!   TTL`: never early (inclusive `≥`), at most one tick late, however many clients are
//!   registered (invariants 2–4).
//! - The suspicion window starts at the *committed* transition: a late monitor lengthens it,
//!   never shortens it (invariant 3).
//! - A tick more than `stall_bound_ms` late means the master did not run: the whole gap since the
//!   previous tick is credited to the liveness clock, so every deadline moves later by the gap;
//!   a `StallDetected` event reports it (invariant 5).
//!
//! # What each brake can and cannot see
//!
//! | silence | stall brake (monitor lateness) | mass-suspicion brake (Suspected fraction) |
//! |---|---|---|
//! | whole master paused (`master_pause`) | **sees it**: the first tick after it is late; the gap is credited to every deadline, nobody is charged | not needed; had pings been lost it would hold Offline commits |
//! | Ping path blocked, monitor on time (`heartbeat_blocked`) | **cannot see it**: every tick is on time | **sees it** when the block holds more than `mass_suspicion_fraction` of the fleet past the active TTL: Offline commits wait until the pings return; suspicions still happen (clients leave serving for the rest of the block) |
//! | the same, for a minority of the clients | cannot see it | cannot see it: charged to those clients after active + suspicion TTL |
//! | client paused, partitioned, crashed | cannot see it (and must not: the client is silent) | sees a partition of more than the fraction; otherwise charged to the client |
//!
//! Neither brake prevents suspicion during a blocked Ping path; the suspicion TTL is what keeps
//! data. `simulate`'s report says which brake fired in each run.
//!
//! # Exclusion
//!
//! - A signal racing the Suspected → Offline commit: exactly one CAS wins on the same Suspected
//!   word. Either the incarnation is recovered and the Offline commit fails, or it is Offline and
//!   the signal answers `NEED_REMOUNT` (invariant 7).
//! - Exactly one `ClientOffboardingJob` per incarnation: minting it needs the proof of winning the
//!   Offline CAS (invariant 15).
//! - A failed mount never signals; a mount whose work finishes after its incarnation went Offline
//!   is reported `Lost` so the caller undoes it; a new client's record is published only after
//!   its first mount succeeded (invariant 6).
//! - The Offline record stays in the registry until its job completes; only then may a mount
//!   create incarnation n + 1 (invariant 14). Erasure is compare-and-erase on record identity.
