//! Every synchronization edge, and why its ordering suffices.
//!
//! | edge | write | read | why |
//! |---|---|---|---|
//! | signal → monitor | word CAS `AcqRel` | word load `Acquire` / CAS | the monitor's CAS is prepared against the word it read; a signal that moved the deadline makes it fail, and the monitor re-reads. No separate "last signal" field can be missed. |
//! | monitor Suspected commit → serving checks | word CAS `AcqRel` | `is_serving` `Acquire` load | a reader that sees Suspected stops routing; one that still sees Active raced the commit and is linearized before it. |
//! | monitor Offline commit → offboarding job | word CAS `AcqRel` (the proof) | the job holds the record `Arc` | the job is created on the monitor thread after its winning CAS; a job moved to another thread carries the happens-before of that move (queue push/pop are Release/Acquire). |
//! | mount work → Offline commit | the mount's resources are registered under the master's own synchronization before the signal CAS | the offboarding sweep | if the sweep ran first, the mount's later CAS reads Offline (coherence after the sweep's lock) and the mount is `Lost`; if the CAS ran first, the sweep sees the resources. |
//! | registry publish → Ping lookup | arc-swap `store` (SeqCst inside arc-swap) under the shard writer mutex | arc-swap `load` | readers see a complete map, old or new. |
//! | stall credit → signals | `fetch_add` `AcqRel` (monitor only) | `Acquire` load | a signal that misses a just-added credit stores a deadline later than needed: in the client's favour. |
//! | record created → its word's first value | word slab `store` `Relaxed`, then the record's `Arc` published (registry: arc-swap, a mount's own synchronization) | any load through the record or an `Owner` | the store precedes the publication in program order, and every reader reached the record through that publication. A slot freed by one record and reused by the next passes through the slab's mutex, so the new store follows every access of the old record. |
//! | `Owner::new` → the slot's tag (the record's address) | `store` `Relaxed` | `Owner::record`, `clone`, `drop` (`load` `Relaxed`) | a thread reads the tag only through an `Owner` it holds, which reached it after `Owner::new`'s store (whatever moved the `Owner` orders them); every store while the record lives writes the same address, and the slab clears it only once the record is dropped, i.e. after every `Owner`'s last read. |
//! | readiness | `store` `Release` (ReMount) | `load` `Acquire` (Ping) | independent of liveness; no ordering with the word is needed (invariant 8). |
//!
//! No operation needs a total order across different records, so none of our own operations
//! use `SeqCst` (the headline of [`docs`](super)); the one `SeqCst` above is arc-swap's.
