//! Mooncake `main`'s client monitor (`MasterService::ClientMonitorFunc`) as a small separate
//! policy: the **legacy** model that `replay --policy legacy` and the fleet simulator run, and
//! that `scripts/conformance.sh` checks against the real `mooncake_master`.
//!
//! # What it models (mooncake-master-paths §1.8, §2.2–§2.4, §2.6; `master_service.cpp` on main)
//!
//! - **The ping queue**: `Ping`, `MountSegment` (before mounting) and the non-idempotent path of
//!   `ReMountSegment` push the client id on main's `client_ping_queue_`, a
//!   `boost::lockfree::queue<PodUUID>` built with [`PING_QUEUE_CAPACITY`] entries
//!   (`kClientPingQueueSize`, `master_service.h`). That number preallocates the queue's node
//!   pool; it is **not a bound**: the queue is not `fixed_sized`, and its `push` (what `Ping`,
//!   `MountSegment` and `ReMountSegment` call) takes a fresh node from the allocator when the pool
//!   is empty (boost.lockfree `freelist_stack::allocate_impl<Bounded = false>`; only
//!   `bounded_push` fails on an empty pool). So main's `client_ping_queue_full` branch
//!   (`INTERNAL_ERROR`) is not reached short of allocation failure, and [`LegacyMonitor::new`]'s
//!   queue has no bound. [`LegacyMonitor::with`] takes a bound, for a what-if (a fixed-size queue
//!   or `bounded_push`): a push onto a full queue then fails the RPC with `INTERNAL_ERROR`
//!   ([`LegacyError::QueueFull`]): that liveness signal is lost, and a mount is not attempted.
//! - **The monitor tick**, every [`TICK_MS`] (`kClientMonitorSleepMs`): take `now`, drain the
//!   whole queue setting each drained client's deadline to `now + ttl` (anchored at the tick, not
//!   at the ping's arrival), then expire every client whose deadline has passed, **in one
//!   synchronous batch**. There is no token bucket, no stall detection, no suspicion window.
//! - **Expiry**: the client leaves the ready set (`ok_client_`: its next Ping answers
//!   `NEED_REMOUNT`), every memory segment it owns is unmounted, and every replica on those
//!   segments goes; an object left without a replica is erased — completed *and* in-flight ones
//!   (main's `ClearInvalidHandles` drops completed replicas with a dead handle and erases every
//!   object that is no longer `IsValid()`, which a Put in progress on a dead segment is not).
//!   The reference master's [`Master::unmount`](crate::master::Master::unmount) does exactly that to its data.
//! - **No remount barrier**: after expiry the client may ReMount at once (main has no Offline
//!   state); its segments come back empty. ReMount of a client already ready is an idempotent
//!   `OK` that pushes no ping (main returns before the push).
//! - A `Ping` from a client that never mounted is tracked like any other (main keeps no client
//!   objects, only the TTL map) and expires with nothing to unmount.
//!
//! ## Where a deadline "passes"
//! Main expires when `deadline < now`. Its loop sleeps `kClientMonitorSleepMs` *after* doing its
//! work, so consecutive ticks are strictly more than 1000 ms apart and the tick `ttl / 1 s`
//! periods after the drain is already strictly past the deadline (the drift, a fraction of a
//! millisecond per tick, never adds up to a whole tick within a TTL). On a virtual clock whose
//! ticks are exactly [`TICK_MS`] apart that same tick has `now == deadline`, so the model expires
//! at `deadline <= now`: with `client_ttl = 3` a client whose last ping was drained at τ expires
//! at τ + 3000, the 3rd tick after. `scripts/conformance.sh` measures the real master's delay.
//!
//! # What it does not model
//! LocalDisk (SSD) registrations, snapshots and failover, HA, NoF, and the time the expiry batch
//! itself takes (a long sweep delays the next tick in main; here a tick is instantaneous). When
//! the real master's batch was held up (it waits for the metadata shards a long RPC holds),
//! `scripts/conformance.sh` reads the late tick from the master's own log and wakes this monitor
//! there ([`wake_at`](LegacyMonitor::wake_at), a `stall` line's `wake_ms`).
//!
//! # API (stable: the fleet simulator and `replay --policy legacy` build on it)
//! The reference [`Master`] keeps the data (segments, objects, allocation, Get); its own liveness
//! core must never act: build it with [`LegacyMonitor::master_config`] and **never call
//! [`Master::tick`](crate::master::Master::tick)**. Route the liveness-carrying RPCs through the monitor — [`ping`],
//! [`mount`], [`remount`], [`unmount`] — and everything else (put, get, ...) to the master
//! directly. Drive time with [`run_ticks_to`] before each operation (ticks `<=` its time run
//! first, like `replay`); a master that stops for a while skips its ticks with [`skip_ticks`].
//!
//! ```
//! use mooncake_liveness::clock::{Clock, ManualClock};
//! use mooncake_liveness::master::{Master, MasterOptions, SegmentSpec};
//! use mooncake_liveness::sim::legacy::{LegacyMonitor, LegacyPing};
//! use std::sync::Arc;
//!
//! let clock = Arc::new(ManualClock::new(0));
//! let mut mon = LegacyMonitor::new(3_000); // --client_ttl=3
//! let config = LegacyMonitor::master_config(&Default::default());
//! let mut m = Master::new(clock.clone() as Arc<dyn Clock>, config, MasterOptions::default());
//! mon.mount(&mut m, "c1", "s1", 64 << 20).unwrap();
//! assert_eq!(mon.ping(&mut m, "c1").unwrap(), LegacyPing::NeedRemount);
//! let specs = [SegmentSpec { segment: "s1".into(), size: 64 << 20 }];
//! mon.remount(&mut m, "c1", &specs).unwrap();
//! m.put("k", 65_536, 1).unwrap();
//! m.put_end("k").unwrap();
//! // Silent from t = 0: the tick at 1000 drains the pushes (deadline 4000), 4000 expires it.
//! assert!(mon.run_ticks_to(&mut m, 3_999).is_empty());
//! let expired = mon.run_ticks_to(&mut m, 4_000);
//! assert_eq!((expired[0].client.as_str(), expired[0].objects_lost), ("c1", 1));
//! assert!(m.get("k").is_err());
//! // No barrier: it remounts at once, empty.
//! assert_eq!(mon.ping(&mut m, "c1").unwrap(), LegacyPing::NeedRemount);
//! mon.remount(&mut m, "c1", &specs).unwrap();
//! ```
//!
//! [`ping`]: LegacyMonitor::ping
//! [`mount`]: LegacyMonitor::mount
//! [`remount`]: LegacyMonitor::remount
//! [`unmount`]: LegacyMonitor::unmount
//! [`run_ticks_to`]: LegacyMonitor::run_ticks_to
//! [`skip_ticks`]: LegacyMonitor::skip_ticks
#![forbid(unsafe_code)]

use crate::config::{LivenessConfig, MAX_DURATION_MS};
use crate::master::{Master, MasterError, SegmentSpec};
use std::collections::BTreeSet;
use std::fmt;

/// Main's monitor period, `kClientMonitorSleepMs`.
pub const TICK_MS: u64 = 1_000;

/// The nodes main's ping queue preallocates, `kClientPingQueueSize`: a size hint, not a bound
/// (the module doc says why).
pub const PING_QUEUE_CAPACITY: usize = 131_072;

/// Main's default `--client_ttl` (`DEFAULT_CLIENT_LIVE_TTL_SEC`), ms.
pub const DEFAULT_TTL_MS: u64 = 10_000;

/// A Ping's answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum LegacyPing {
    /// The client completed a ReMount and has not expired since (`ClientStatus::OK`).
    #[serde(rename = "OK")]
    Ok,
    /// First contact, or expired since its last ReMount.
    #[serde(rename = "NEED_REMOUNT")]
    NeedRemount,
}

/// Why a legacy RPC failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LegacyError {
    /// The ping queue was full: main answers `INTERNAL_ERROR` and the signal is lost.
    QueueFull,
    /// The reference master refused the segment work.
    Master(MasterError),
}

impl LegacyError {
    /// The upper-case code (`INTERNAL_ERROR`, or the master's own).
    pub fn code(self) -> &'static str {
        match self {
            Self::QueueFull => "INTERNAL_ERROR",
            Self::Master(e) => e.code(),
        }
    }
}

impl fmt::Display for LegacyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

impl std::error::Error for LegacyError {}

impl From<MasterError> for LegacyError {
    fn from(e: MasterError) -> Self {
        Self::Master(e)
    }
}

/// One client expired by a tick.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Expiry {
    /// When (the tick's time).
    pub at_ms: u64,
    /// The client.
    pub client: String,
    /// The memory segments unmounted, by name.
    pub segments: Vec<String>,
    /// Objects erased because their last replica was on those segments.
    pub objects_lost: usize,
}

/// A client as [`LegacyMonitor`] keys it (main keys its ping queue and TTL map by the client's
/// UUID): from [`LegacyMonitor::register`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LegacyClientId(u32);

/// What the monitor knows of one client (diagnostics; main exposes none of it).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct LegacyClient {
    /// The client.
    pub client: String,
    /// In the TTL map (drained at least once, not expired since).
    pub tracked: bool,
    /// In the ready set (`ok_client_`): its Ping answers `OK`.
    pub ready: bool,
    /// Its deadline, when tracked.
    pub deadline_ms: Option<u64>,
}

/// Main's client monitor: the ping queue, the TTL map and the ready set.
///
/// Clients are interned to dense slots on first contact (a name is hashed once per RPC, and
/// nothing allocates after a client's first contact); the queue, the TTL map and the ready set
/// are indexed by slot. Every order the monitor reports (expiries, [`clients`](Self::clients))
/// is by name, as before, so the slots' order never shows.
#[derive(Clone, Debug)]
pub struct LegacyMonitor {
    ttl_ms: u64,
    tick_ms: u64,
    capacity: usize,
    /// Client name → slot.
    slots: hashbrown::HashMap<Box<str>, u32, foldhash::fast::FixedState>,
    /// Slot → client name.
    names: Vec<Box<str>>,
    /// `client_ping_queue_`: slots pushed since the last drain, in push order.
    queue: Vec<u32>,
    /// The monitor thread's `client_ttl` map: slot → deadline, `None` when not tracked.
    deadlines: Vec<Option<u64>>,
    /// `ok_client_`: by slot, clients that completed a ReMount and have not expired since.
    ready: Vec<bool>,
    next_tick_ms: u64,
    /// Pings refused because the queue was full (main logs nothing else for them).
    rejected: u64,
}

impl LegacyMonitor {
    /// A monitor with main's tick and main's ping queue (no bound) and `--client_ttl` of
    /// `ttl_ms`; its first tick is at [`TICK_MS`].
    pub fn new(ttl_ms: u64) -> Self {
        Self::with(ttl_ms, TICK_MS, usize::MAX)
    }

    /// A monitor with a given tick (ticks at its multiples, the first at `tick_ms`) and a ping
    /// queue bounded at `capacity` (`usize::MAX`: no bound, main's). Both at least 1.
    pub fn with(ttl_ms: u64, tick_ms: u64, capacity: usize) -> Self {
        let tick_ms = tick_ms.max(1);
        Self {
            ttl_ms,
            tick_ms,
            capacity: capacity.max(1),
            slots: hashbrown::HashMap::with_hasher(foldhash::fast::FixedState::default()),
            names: Vec::new(),
            queue: Vec::new(),
            deadlines: Vec::new(),
            ready: Vec::new(),
            next_tick_ms: tick_ms,
            rejected: 0,
        }
    }

    /// The slot of `client`, if it was ever seen.
    fn slot(&self, client: &str) -> Option<usize> {
        self.slots.get(client).map(|&s| s as usize)
    }

    /// The slot of `client`, allocating one on first contact.
    fn intern(&mut self, client: &str) -> u32 {
        if let Some(&s) = self.slots.get(client) {
            return s;
        }
        let s = u32::try_from(self.names.len()).expect("fewer than 2^32 clients");
        self.slots.insert(client.into(), s);
        self.names.push(client.into());
        self.deadlines.push(None);
        self.ready.push(false);
        s
    }

    /// The configuration to build the reference [`Master`] with: `base` with TTLs so long that
    /// the library's own liveness never acts (and both brakes off), so only this monitor decides.
    pub fn master_config(base: &LivenessConfig) -> LivenessConfig {
        LivenessConfig {
            active_ttl_ms: MAX_DURATION_MS,
            suspicion_ttl_ms: MAX_DURATION_MS,
            stall_brake: false,
            mass_suspicion_brake: false,
            ..base.clone()
        }
    }

    /// The TTL, ms.
    pub fn ttl_ms(&self) -> u64 {
        self.ttl_ms
    }

    /// The tick period, ms.
    pub fn tick_ms(&self) -> u64 {
        self.tick_ms
    }

    /// The time of the next tick.
    pub fn next_tick_ms(&self) -> u64 {
        self.next_tick_ms
    }

    /// Pings (and mounts) refused so far because the queue was full.
    pub fn rejected_pings(&self) -> u64 {
        self.rejected
    }

    /// Pushes waiting for the next tick.
    pub fn queued(&self) -> usize {
        self.queue.len()
    }

    /// Is `client` in the TTL map (drained at least once and not expired since)?
    pub fn is_tracked(&self, client: &str) -> bool {
        self.deadline_ms(client).is_some()
    }

    /// Has `client` completed a ReMount and not expired since?
    pub fn is_ready(&self, client: &str) -> bool {
        self.slot(client).is_some_and(|s| self.ready[s])
    }

    /// `client`'s deadline, if tracked.
    pub fn deadline_ms(&self, client: &str) -> Option<u64> {
        self.slot(client).and_then(|s| self.deadlines[s])
    }

    /// Every client tracked, ready or queued, in name order.
    pub fn clients(&self) -> Vec<LegacyClient> {
        let queued: BTreeSet<u32> = self.queue.iter().copied().collect();
        let mut out: Vec<LegacyClient> = (0..self.names.len())
            .filter(|&s| self.deadlines[s].is_some() || self.ready[s] || queued.contains(&(s as u32)))
            .map(|s| LegacyClient {
                client: self.names[s].to_string(),
                tracked: self.deadlines[s].is_some(),
                ready: self.ready[s],
                deadline_ms: self.deadlines[s],
            })
            .collect();
        out.sort_by(|a, b| a.client.cmp(&b.client));
        out
    }

    /// Pushes `client`'s slot (interning it); returns the slot.
    fn push(&mut self, client: &str) -> Result<usize, LegacyError> {
        self.check_room()?;
        let s = self.intern(client);
        self.queue.push(s);
        Ok(s as usize)
    }

    /// Refuses a push onto a full (bounded) queue.
    fn check_room(&mut self) -> Result<(), LegacyError> {
        if self.queue.len() >= self.capacity {
            self.rejected += 1;
            return Err(LegacyError::QueueFull);
        }
        Ok(())
    }

    /// The id main's monitor keys `client` by (main: the client's UUID), for
    /// [`ping_id`](Self::ping_id). Registering changes nothing the monitor reports: a client
    /// is tracked, ready or queued only through the RPCs.
    pub fn register(&mut self, client: &str) -> LegacyClientId {
        LegacyClientId(self.intern(client))
    }

    /// Ping: answers from the ready set, then pushes the id (even for an unknown client).
    /// A full queue (only with a bound, [`with`](Self::with)) fails the RPC (`INTERNAL_ERROR`).
    /// The master's data is not touched (main's Ping only reads `ok_client_`); it is taken for
    /// symmetry with the other RPCs.
    pub fn ping(&mut self, master: &mut Master, client: &str) -> Result<LegacyPing, LegacyError> {
        let id = self.register(client);
        self.ping_id(master, id)
    }

    /// [`ping`](Self::ping) by the id [`register`](Self::register) gave (main's Ping carries
    /// the client's UUID): no name is hashed. An id from another monitor is a caller bug (it
    /// may name another client, or panic).
    pub fn ping_id(&mut self, _master: &mut Master, id: LegacyClientId) -> Result<LegacyPing, LegacyError> {
        self.check_room()?;
        self.queue.push(id.0);
        Ok(if self.ready[id.0 as usize] {
            LegacyPing::Ok
        } else {
            LegacyPing::NeedRemount
        })
    }

    /// MountSegment: pushes the id first (a full queue fails it before mounting), then mounts.
    /// It does not make the client ready; ReMount does.
    pub fn mount(&mut self, master: &mut Master, client: &str, segment: &str, size: u64) -> Result<(), LegacyError> {
        self.push(client)?;
        Ok(master.mount(client, segment, size)?)
    }

    /// ReMountSegment: `OK` at once for a ready client (no push); else pushes the id, mounts
    /// every segment not yet mounted and makes the client ready.
    pub fn remount(&mut self, master: &mut Master, client: &str, specs: &[SegmentSpec]) -> Result<(), LegacyError> {
        if self.is_ready(client) {
            return Ok(());
        }
        let s = self.push(client)?;
        master.remount(client, specs)?;
        self.ready[s] = true;
        Ok(())
    }

    /// UnmountSegment (voluntary): the segment, its replicas and the objects left without one go.
    pub fn unmount(&mut self, master: &mut Master, client: &str, segment: &str) -> Result<(), LegacyError> {
        Ok(master.unmount(client, segment)?)
    }

    /// Runs every tick due at or before `t_ms`, in order; returns the clients they expired.
    pub fn run_ticks_to(&mut self, master: &mut Master, t_ms: u64) -> Vec<Expiry> {
        let mut out = Vec::new();
        while self.next_tick_ms <= t_ms {
            let now = self.next_tick_ms;
            out.extend(self.tick(master, now));
            self.next_tick_ms += self.tick_ms;
        }
        out
    }

    /// The master process stops until `resume_ms`: the ticks before it never run; the next one
    /// is the first tick time at or after `resume_ms` (pushes made before it are drained there).
    ///
    /// Pings sent during the pause are buffered by the transport and handled on resume, racing
    /// the monitor (main drains, then expires). Pings first — what the real master did in every
    /// conformance run: [`ping`](Self::ping) each buffered client, then
    /// [`run_ticks_to`](Self::run_ticks_to). Monitor first: `run_ticks_to(resume)` before the
    /// pings, with `resume_ms` on a tick (a multiple of [`tick_ms`](Self::tick_ms)).
    pub fn skip_ticks(&mut self, resume_ms: u64) {
        let resume = resume_ms.div_ceil(self.tick_ms) * self.tick_ms;
        self.next_tick_ms = self.next_tick_ms.max(resume);
    }

    /// The master process stops and its monitor thread, asleep between two ticks, wakes when it
    /// resumes at `at_ms` (main's monitor sleeps `kClientMonitorSleepMs` after its work; a
    /// sleep whose deadline passed while the process was stopped returns at once): the ticks
    /// before `at_ms` never run, the next one runs at `at_ms` and the later ones every
    /// [`tick_ms`](Self::tick_ms) after it. Buffered pings race that tick as with
    /// [`skip_ticks`](Self::skip_ticks).
    pub fn wake_at(&mut self, at_ms: u64) {
        self.next_tick_ms = self.next_tick_ms.max(at_ms);
    }

    /// One tick at `now`: drain, then expire in one batch (clients in name order).
    pub fn tick(&mut self, master: &mut Master, now: u64) -> Vec<Expiry> {
        let deadline = now.saturating_add(self.ttl_ms);
        for s in self.queue.drain(..) {
            self.deadlines[s as usize] = Some(deadline);
        }
        let mut expired: Vec<usize> = (0..self.deadlines.len())
            .filter(|&s| self.deadlines[s].is_some_and(|d| d <= now))
            .collect();
        expired.sort_by(|&a, &b| self.names[a].cmp(&self.names[b]));
        for &s in &expired {
            self.deadlines[s] = None;
            self.ready[s] = false;
        }
        expired
            .into_iter()
            .map(|s| expire(master, now, self.names[s].to_string()))
            .collect()
    }
}

/// Unmounts every memory segment of `client`; counts the objects that went with them.
fn expire(master: &mut Master, now: u64, client: String) -> Expiry {
    let mut segments = Vec::new();
    let mut keys = BTreeSet::new();
    if let Some(id) = master.known_client_id(&client) {
        let owned = master.segments().owned_by(id);
        for seg in owned {
            segments.push(seg.name.clone());
            keys.extend(seg.alloc().keys.iter().cloned());
        }
    }
    segments.sort();
    for name in &segments {
        // The library's record of a legacy client is always Active, so this cannot be refused.
        let _ = master.unmount(&client, name);
    }
    let objects_lost = keys.iter().filter(|k| master.object(k).is_none()).count();
    Expiry {
        at_ms: now,
        client,
        segments,
        objects_lost,
    }
}

#[cfg(test)]
mod tests;
