//! Taking and restoring HA snapshots of the master.
//!
//! # Taking one: a per-shard cut, never stop-the-world
//!
//! A snapshot runs while requests run. It holds the membership gate exclusively (mounts,
//! unmounts and the offboarding steps that unmount wait; Ping, Get, Put, Remove, callbacks,
//! ticks and the offboarding `metadata` batches do not) and copies:
//! 1. the segment table, LocalDisk registrations and external entries (stable under the gate);
//! 2. each metadata shard in turn, under its lock, with the tasks naming its objects (every
//!    change to an object and its tasks happens under that lock: each shard is a consistent cut);
//! 3. *then* the registry, names, parked jobs, scratch, quotas limits and NoF.
//!
//! Why this is never torn (invariant 19): an offboarding sweep starts only after its Offline
//! commit, and Offline is terminal, so any incarnation whose objects a sweep touched before some
//! shard was copied is already Offline when the registry is copied in step 3: it is captured
//! with its job, which a restored master resumes (steps are idempotent and consume their inputs,
//! so progress recorded as a lower bound is safe). No job can *complete* during the snapshot —
//! its `segments` step needs the gate — so no incarnation captured in a shard disappears from
//! the registry before step 3. A job whose unmounting steps ran *before* the snapshot took the
//! gate can still erase its record during step 3 (the final compare-and-erase takes no gate):
//! the incarnation is then captured Offline with its job, its vacant slot read a moment later
//! is dropped, and the restored master runs the job again (its steps are idempotent). No mount
//! can publish a new incarnation or segment meanwhile.
//!
//! Derived state is not trusted across the cut: segment usage and key indexes, LocalDisk usage
//! and keys, and quota usage are recomputed at restore from the objects, tasks and scratch the
//! snapshot holds (they are sums over them), so they balance whatever moment each shard was
//! copied at. One sum needs more: space freed in a shard already copied and allocated again
//! by a Put in a shard copied later would be counted twice, a segment (or LocalDisk) holding
//! more than its size, which restore refuses. So while a snapshot runs, releases are *held*
//! (`Segment::hold_frees`): the bytes stay counted as used until the snapshot ends, and every
//! allocation during it comes from space that was free when it began. The price: space freed
//! during a snapshot is not reusable until it ends.
//!
//! # Restoring
//!
//! Restoring builds a *new* master; any inconsistency is refused before it is returned, with an
//! error naming what is wrong (a snapshot can pass its checksum and still contradict itself).
//! Every restored client is Active with a fresh active TTL and not ready; every resource is
//! re-bound to its restored record; every pending job is re-minted by committing its restored
//! record Suspected → Offline (the only way to mint a job), stamped with the restore time, and
//! handed to whoever runs jobs in the new master (inline, the outbox or the workers), so the
//! barrier survives failover in both offboarding modes.
//!
//! | file | owns |
//! |---|---|
//! | `cut` | taking a snapshot: the cut and the table → `*Snap` encoding |
//! | `restore` | building a master from a snapshot, table by table, refusing contradictions |
//! | `restore::objects` | the objects phase: a check pass in object order, shards built on two threads |
//! | `claims` | which claimed offboarding progress a restored job keeps |

mod claims;
mod cut;
mod restore;
