//! A small, sequential reference model of the contract (`contract/invariants.md`,
//! `decisions.md`, the timing rule of `trace-format.md`) for the `differential` fuzz body.
//!
//! Obviously correct rather than fast: no wheel, no atomics, no indexes; every question is a
//! loop over everything (at most 4 clients, 6 segments, 8 keys). Clients, segments and keys
//! are small indices; the harness maps them to names.
//!
//! What it models: per client id the current incarnation (number, state, last accepted signal,
//! the tick that committed Suspected, readiness, LocalDisk registration, the pending offboarding
//! job); memory segments (owner incarnation, size, draining, usage derived from the replicas on
//! them); objects (replicas in memory and on LocalDisks in allocation order, completion,
//! recency); tasks (Copy, Move, Drain's Moves, offloads, promotions: `tasks.rs`); injected step
//! failures; the quota total and the external metadata entries. In async mode
//! (`Config::async_mode`) also where each job is: parked in the master or held by the executor
//! for a retry.
//!
//! What it does not model (see `differential/`): which segment an allocation picks (the
//! harness checks the answer's validity and feeds the choice back), the order in which jobs due
//! at one tick run (the harness feeds the observed order back after checking it is a
//! permutation of the due jobs). The mass-suspicion brake is in `brake.rs`, the stall brake in
//! `stall.rs`, NoF segments (their own probe-driven health) in `nof.rs`.

use std::collections::{BTreeMap, BTreeSet};

mod brake;
mod data;
mod nof;
mod offboarding;
mod stall;
mod tasks;

pub(crate) use tasks::{disk, disk_owner, Kind, Task};

/// Clients in the universe.
pub(crate) const CLIENTS: usize = 4;
/// Memory segments in the universe.
pub(crate) const SEGMENTS: usize = 6;
/// Object keys in the universe.
pub(crate) const KEYS: usize = 8;

/// Offboarding steps, in order, as `fail_step` names them.
pub(crate) const STEPS: [&str; 5] = ["metadata", "segments", "local_disk", "quota", "external_metadata"];

/// Client names.
pub(crate) const CLIENT_NAMES: [&str; CLIENTS] = ["c0", "c1", "c2", "c3"];
/// Segment names.
pub(crate) const SEGMENT_NAMES: [&str; SEGMENTS] = ["s0", "s1", "s2", "s3", "s4", "s5"];
/// NoF segments in the universe, and their names.
pub(crate) const NOF_NAMES: [&str; 3] = ["n0", "n1", "n2"];
/// Key names.
pub(crate) const KEY_NAMES: [&str; KEYS] = ["k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7"];

/// The configuration the model needs (times on the base clock: a stall credit moves the
/// liveness-clock times, `stall.rs`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Config {
    pub(crate) active_ttl_ms: u64,
    pub(crate) suspicion_ttl_ms: u64,
    pub(crate) retry_backoff_ms: u64,
    pub(crate) retry_max_backoff_ms: u64,
    /// Asynchronous offboarding: the master hands jobs to an executor (the harness plays it)
    /// instead of running them in its tick.
    pub(crate) async_mode: bool,
    /// The offboarding start rate limit (sync mode, where the master runs the jobs): jobs per
    /// second and burst; `None` when it cannot bind.
    pub(crate) start_rate: Option<(u64, u64)>,
    /// The monitor tick: a fresh job without a start token waits for the next one.
    pub(crate) tick_ms: u64,
    /// The mass-suspicion brake: (min clients, fraction in quarters); `None`: disabled.
    pub(crate) mass_brake: Option<(usize, usize)>,
    /// The stall brake (bound: half the active TTL in force).
    pub(crate) stall_brake: bool,
}

/// Liveness state of one incarnation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum State {
    Active,
    Suspected,
    Offline,
}

/// Something the master reports on its own.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Ev {
    Transition {
        at: u64,
        client: usize,
        incarnation: u64,
        from: State,
        to: State,
    },
    Retry {
        at: u64,
        client: usize,
        incarnation: u64,
        step: usize,
        attempt: u32,
    },
    Offboarded {
        at: u64,
        client: usize,
        incarnation: u64,
        attempts: u32,
    },
    /// The mass-suspicion brake engaged or released.
    Brake {
        at: u64,
        engaged: bool,
        suspected: usize,
        registered: usize,
    },
}

/// An offboarding job (exists iff the incarnation is Offline).
#[derive(Clone, Debug)]
pub(crate) struct Job {
    /// Attempts made.
    pub(crate) attempts: u32,
    /// Steps completed, by index into [`STEPS`].
    pub(crate) done: [bool; 5],
    /// When the next attempt may run: the committing tick for a fresh job, failure time +
    /// backoff for a retry, the failover time for a restored job.
    pub(crate) due: u64,
    /// The first attempt has not run yet (it runs at the committing tick).
    pub(crate) fresh: bool,
    /// Bytes the `metadata` step released, refunded by the `quota` step.
    pub(crate) refund: u64,
    /// Names of segments the `segments` step unmounted, deleted by `external_metadata`.
    pub(crate) unmounted: Vec<usize>,
    /// Async mode: the executor holds the job (waiting for a retry); otherwise it is parked in
    /// the master (sync mode always; async mode after a failover or a hand-back, until the
    /// next tick hands it on).
    pub(crate) in_executor: bool,
}

/// The current incarnation of one client id.
#[derive(Clone, Debug)]
pub(crate) struct Rec {
    pub(crate) incarnation: u64,
    pub(crate) state: State,
    /// Time of the last accepted liveness signal (or of the restore).
    pub(crate) last_signal: u64,
    /// The tick that committed Suspected (while Suspected).
    pub(crate) suspected_at: u64,
    /// When the current state's window ends (Active: Suspected is due; Suspected: Offline is
    /// due), fixed with the TTL in effect when the window started: a TTL reload applies to
    /// windows started after it (config/handle.rs), and a refresh never shortens a window.
    pub(crate) deadline: u64,
    /// The active TTL of the last signal and the suspicion TTL of the Suspected commit (what
    /// invariants 2 and 3 measure against).
    pub(crate) signal_ttl: u64,
    pub(crate) suspicion_ttl: u64,
    pub(crate) ready: bool,
    /// LocalDisk capacity, if registered.
    pub(crate) local_disk: Option<u64>,
    /// The pending offboarding job (iff Offline).
    pub(crate) job: Option<Job>,
}

/// One client id.
#[derive(Clone, Debug, Default)]
pub(crate) struct Client {
    /// The number of the last incarnation that existed (0: never mounted).
    pub(crate) last_incarnation: u64,
    pub(crate) rec: Option<Rec>,
}

/// One mounted memory segment.
#[derive(Clone, Debug)]
pub(crate) struct Segment {
    pub(crate) owner: usize,
    pub(crate) incarnation: u64,
    pub(crate) size: u64,
    /// Drained: serves reads, takes no allocation, until unmounted (a mount never resets it).
    pub(crate) draining: bool,
}

/// One object.
#[derive(Clone, Debug)]
pub(crate) struct Object {
    pub(crate) size: u64,
    /// Segments holding a replica, in allocation order.
    pub(crate) replicas: Vec<usize>,
    /// PutEnd done.
    pub(crate) complete: bool,
    /// Recency (larger = used more recently).
    pub(crate) touched: u64,
}

/// The answer the model expects to a Put, before the harness knows which segments were chosen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum PutPlan {
    Refused(&'static str),
    /// Any `count` distinct segments of `eligible`.
    Allocate {
        eligible: Vec<usize>,
        count: usize,
    },
}

/// The whole model.
#[derive(Clone, Debug)]
pub(crate) struct Model {
    pub(crate) cfg: Config,
    pub(crate) clients: Vec<Client>,
    pub(crate) segments: BTreeMap<usize, Segment>,
    pub(crate) objects: BTreeMap<usize, Object>,
    /// Injected failures left per step.
    pub(crate) faults: [u32; 5],
    /// The tenant's quota limit (every Put is the default tenant's); kept by snapshots.
    pub(crate) quota_limit: Option<u64>,
    /// The start-token bucket (milli-tokens, last refill), made full at the first take; not
    /// part of a snapshot.
    pub(crate) bucket: Option<(u64, u64)>,
    pub(crate) brake: brake::Brake,
    /// Copy/Move tasks in flight, by id (`tasks.rs`).
    pub(crate) tasks: BTreeMap<u64, Task>,
    /// The last task id handed out (a snapshot keeps it).
    pub(crate) next_task: u64,
    /// Mounted NoF segments: (size, failed probes in a row), by index into [`NOF_NAMES`].
    pub(crate) nof: BTreeMap<usize, (u64, u32)>,
    /// The base time of the last monitor tick (or of the master's start or restore).
    pub(crate) last_tick: u64,
    lru_clock: u64,
}

pub(crate) const INVALID_PARAMS: &str = "INVALID_PARAMS";
pub(crate) const CLIENT_OFFBOARDING: &str = "CLIENT_OFFBOARDING";
pub(crate) const SEGMENT_NOT_FOUND: &str = "SEGMENT_NOT_FOUND";
pub(crate) const OBJECT_NOT_FOUND: &str = "OBJECT_NOT_FOUND";
pub(crate) const OBJECT_ALREADY_EXISTS: &str = "OBJECT_ALREADY_EXISTS";
pub(crate) const NO_AVAILABLE_HANDLE: &str = "NO_AVAILABLE_HANDLE";
pub(crate) const REPLICA_IS_NOT_READY: &str = "REPLICA_IS_NOT_READY";
pub(crate) const TENANT_QUOTA_EXCEEDED: &str = "TENANT_QUOTA_EXCEEDED";

impl Model {
    pub(crate) fn new(cfg: Config) -> Self {
        Self {
            cfg,
            clients: vec![Client::default(); CLIENTS],
            segments: BTreeMap::new(),
            objects: BTreeMap::new(),
            faults: [0; 5],
            quota_limit: None,
            bucket: None,
            brake: brake::Brake {
                config: cfg.mass_brake,
                ..Default::default()
            },
            tasks: BTreeMap::new(),
            next_task: 0,
            nof: BTreeMap::new(),
            last_tick: 0,
            lru_clock: 0,
        }
    }

    /// The state of the incarnation owning segment `s` (or LocalDisk replica index `s`).
    pub(crate) fn owner_state(&self, s: usize) -> Option<State> {
        if let Some(c) = disk_owner(s) {
            return self.clients[c].rec.as_ref().map(|r| r.state);
        }
        let seg = self.segments.get(&s)?;
        let rec = self.clients[seg.owner].rec.as_ref()?;
        (rec.incarnation == seg.incarnation).then_some(rec.state)
    }

    /// Bytes allocated on segment `s`.
    pub(crate) fn used(&self, s: usize) -> u64 {
        self.objects
            .values()
            .map(|o| o.replicas.iter().filter(|r| **r == s).count() as u64 * o.size)
            .sum()
    }

    /// Keys with a replica on `s`.
    pub(crate) fn keys_on(&self, s: usize) -> Vec<usize> {
        self.objects
            .iter()
            .filter(|(_, o)| o.replicas.contains(&s))
            .map(|(k, _)| *k)
            .collect()
    }

    /// Quota charged in total: every replica, plus refunds a pending job has not applied yet.
    pub(crate) fn quota_used(&self) -> u64 {
        let replicas: u64 = self.objects.values().map(|o| o.size * o.replicas.len() as u64).sum();
        let pending: u64 = self
            .clients
            .iter()
            .filter_map(|c| c.rec.as_ref()?.job.as_ref())
            .map(|j| j.refund)
            .sum();
        replicas + pending
    }

    /// External metadata entries: every mounted segment, plus those a pending job unmounted but
    /// has not deleted yet.
    pub(crate) fn external(&self) -> BTreeSet<usize> {
        let mut out: BTreeSet<usize> = self.segments.keys().copied().collect();
        for c in &self.clients {
            if let Some(job) = c.rec.as_ref().and_then(|r| r.job.as_ref()) {
                out.extend(job.unmounted.iter().copied());
            }
        }
        out
    }

    /// The client whose pending offboarding job unmounted segment `s` and has not completed:
    /// the name is still held by that client until the job completes.
    pub(crate) fn held_by_pending_job(&self, s: usize) -> Option<usize> {
        (0..CLIENTS).find(|c| {
            self.clients[*c]
                .rec
                .as_ref()
                .and_then(|r| r.job.as_ref())
                .is_some_and(|j| j.unmounted.contains(&s))
        })
    }

    /// Segments that may take `size` new bytes now: not draining, owner Active, enough free
    /// space.
    pub(crate) fn allocatable(&self, size: u64) -> Vec<usize> {
        self.segments
            .iter()
            .filter(|(s, seg)| {
                !seg.draining && self.owner_state(**s) == Some(State::Active) && seg.size - self.used(**s) >= size
            })
            .map(|(s, _)| *s)
            .collect()
    }

    fn touch(&mut self, key: usize) {
        self.lru_clock += 1;
        if let Some(o) = self.objects.get_mut(&key) {
            o.touched = self.lru_clock;
        }
    }

    /// Cancels the tasks touching `s`, then removes every replica on `s`; objects left without
    /// a replica are removed. Returns the bytes released (cancelled targets included).
    pub(crate) fn drop_replicas_on(&mut self, s: usize) -> u64 {
        let mut released = self.cancel_tasks_touching(s);
        for o in self.objects.values_mut() {
            let before = o.replicas.len();
            o.replicas.retain(|r| *r != s);
            released += (before - o.replicas.len()) as u64 * o.size;
        }
        self.forget_empty_objects();
        released
    }

    // ---- liveness signals -------------------------------------------------------------------

    /// A liveness signal at `now` on client `c`'s live, not Offline record.
    fn signal(&mut self, c: usize, now: u64) -> Option<Ev> {
        let rec = self.clients[c].rec.as_mut().expect("signal on a live record");
        assert_ne!(rec.state, State::Offline, "model: signal on an Offline record");
        rec.last_signal = now;
        rec.signal_ttl = self.cfg.active_ttl_ms;
        let window = now + self.cfg.active_ttl_ms;
        if rec.state == State::Active {
            rec.deadline = rec.deadline.max(window);
        }
        if rec.state == State::Suspected {
            rec.deadline = window;
            rec.state = State::Active;
            return Some(Ev::Transition {
                at: now,
                client: c,
                incarnation: rec.incarnation,
                from: State::Suspected,
                to: State::Active,
            });
        }
        None
    }

    /// Creates client `c`'s next incarnation (Active, not ready, signalled at `now`).
    fn create(&mut self, c: usize, now: u64) {
        let client = &mut self.clients[c];
        assert!(client.rec.is_none());
        client.last_incarnation += 1;
        client.rec = Some(Rec {
            incarnation: client.last_incarnation,
            state: State::Active,
            last_signal: now,
            suspected_at: 0,
            deadline: now + self.cfg.active_ttl_ms,
            signal_ttl: self.cfg.active_ttl_ms,
            suspicion_ttl: 0,
            ready: false,
            local_disk: None,
            job: None,
        });
    }

    /// The incarnation number a successful mount by `c` binds to (current, or the next one).
    fn mount_incarnation(&self, c: usize) -> u64 {
        match &self.clients[c].rec {
            Some(r) => r.incarnation,
            None => self.clients[c].last_incarnation + 1,
        }
    }

    /// A caller's incarnation token (decisions.md question 4) is stale unless it names the
    /// client's live incarnation (whatever its state).
    fn stale(&self, c: usize, token: Option<u64>) -> bool {
        token.is_some_and(|t| self.clients[c].rec.as_ref().is_none_or(|r| r.incarnation != t))
    }

    /// Mount and ReMount. `specs`: (segment, size). A ReMount also checks the list for one
    /// segment named twice with different sizes, and makes the incarnation ready. A stale
    /// `token` is refused before anything else (`INVALID_PARAMS`: the client must mount without
    /// one to start a new incarnation), even by an Offline incarnation's barrier.
    pub(crate) fn mount(
        &mut self,
        c: usize,
        specs: &[(usize, u64)],
        remount: bool,
        token: Option<u64>,
        now: u64,
    ) -> (Result<(), &'static str>, Option<Ev>) {
        if remount {
            for (i, a) in specs.iter().enumerate() {
                if specs[..i].iter().any(|b| b.0 == a.0 && b.1 != a.1) {
                    return (Err(INVALID_PARAMS), None);
                }
            }
        }
        if self.stale(c, token) {
            return (Err(INVALID_PARAMS), None);
        }
        if self.clients[c].rec.as_ref().is_some_and(|r| r.state == State::Offline) {
            return (Err(CLIENT_OFFBOARDING), None);
        }
        // The mount work: every segment is new, or already this very incarnation's with the same size.
        let inc = self.mount_incarnation(c);
        for &(s, size) in specs {
            if size == 0 {
                return (Err(INVALID_PARAMS), None);
            }
            // trace-format.md: a name held by another client — Active, Suspected, or Offline
            // with offboarding pending — is refused; it is free after unmount or offboarding.
            if self.held_by_pending_job(s).is_some() {
                return (Err(INVALID_PARAMS), None);
            }
            if let Some(seg) = self.segments.get(&s) {
                if seg.owner != c || seg.incarnation != inc || seg.size != size {
                    return (Err(INVALID_PARAMS), None);
                }
            }
        }
        // Success: the signal (or a new incarnation), then the segments.
        let ev = if self.clients[c].rec.is_none() {
            self.create(c, now);
            None
        } else {
            self.signal(c, now)
        };
        for &(s, size) in specs {
            self.segments.entry(s).or_insert(Segment {
                owner: c,
                incarnation: inc,
                size,
                draining: false,
            });
        }
        if remount {
            self.clients[c].rec.as_mut().expect("just mounted").ready = true;
        }
        (Ok(()), ev)
    }

    /// MountLocalDiskSegment.
    pub(crate) fn mount_local_disk(
        &mut self,
        c: usize,
        capacity: u64,
        now: u64,
    ) -> (Result<(), &'static str>, Option<Ev>) {
        if capacity == 0 {
            return (Err(INVALID_PARAMS), None);
        }
        if self.clients[c].rec.as_ref().is_some_and(|r| r.state == State::Offline) {
            return (Err(CLIENT_OFFBOARDING), None);
        }
        let ev = if self.clients[c].rec.is_none() {
            self.create(c, now);
            None
        } else {
            self.signal(c, now)
        };
        let rec = self.clients[c].rec.as_mut().expect("just mounted");
        // An existing registration of this incarnation is the idempotent answer (capacity kept).
        rec.local_disk.get_or_insert(capacity);
        (Ok(()), ev)
    }

    /// Ping: `true` for `OK`, `false` for `NEED_REMOUNT` (also for a stale token, with no signal).
    pub(crate) fn ping(&mut self, c: usize, token: Option<u64>, now: u64) -> (bool, Option<Ev>) {
        if self.stale(c, token) {
            return (false, None);
        }
        match &self.clients[c].rec {
            None => (false, None),
            Some(r) if r.state == State::Offline => (false, None),
            Some(_) => {
                let ev = self.signal(c, now);
                (self.clients[c].rec.as_ref().expect("live").ready, ev)
            }
        }
    }

    /// Voluntary unmount (not a liveness signal).
    pub(crate) fn unmount(&mut self, c: usize, s: usize) -> Result<(), &'static str> {
        let seg = self.segments.get(&s).ok_or(SEGMENT_NOT_FOUND)?;
        if seg.owner != c {
            return Err(INVALID_PARAMS);
        }
        if self.owner_state(s) == Some(State::Offline) {
            return Err(CLIENT_OFFBOARDING);
        }
        self.drop_replicas_on(s);
        self.segments.remove(&s);
        Ok(())
    }

    pub(crate) fn fail_step(&mut self, step: usize, times: u32) {
        self.faults[step] += times;
    }
}
