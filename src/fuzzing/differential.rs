//! The `differential` fuzz body: random operation sequences with random timing against the
//! reference master and the sequential model of `model.rs`, compared answer by answer and
//! event by event, with the externally checkable invariants asserted after every step.
//!
//! The input decodes (with `arbitrary`) to a small configuration (TTLs of a few hundred ms to a
//! few seconds, a 10–100 ms tick, a retry backoff) and up to [`MAX_OPS`] operations over 4
//! clients, 6 segments and 8 keys, within [`MAX_TIME_MS`] of virtual time. Time advances like
//! `replay` and `tests/common/master.rs`: every tick at a multiple of `monitor_tick_ms` up to the
//! target time runs, then the clock is set to it, then the operation applies.
//!
//! Checked (invariant numbers of `contract/invariants.md`):
//! - every answer (ok / error code, Ping status) equals the model's; a Put's replicas are
//!   validated (distinct segments, each Allocatable in the model — owner Active, room — and as
//!   many as the model says), a Get's replicas equal the model's exactly;
//! - every event equals the model's: transitions with their times (a tick's transitions as a set,
//!   their order within the tick is the monitor's), `offboarding_retry` with step and attempt,
//!   `offboarded` with attempts; jobs due at one tick may run in any order (the model replays the
//!   observed order after checking it is exactly the set of due jobs, retries before fresh jobs);
//! - 1 (only Active→Suspected, Suspected→Active, Suspected→Offline, from the state the model
//!   holds), 2 and 3 (against the model's last signal and committed suspicion), 4 (a transition
//!   the model expects at this tick and the master did not commit is a late commit), 6 (failed
//!   mounts change nothing: full state comparison), 7 (Ping answers), 9/10 (no served or
//!   allocated replica on a non-Active owner's segment), 13 (a client's incarnation only
//!   increases, by one per offboarding), 14 (barrier answers), 15 (one Offline commit and one
//!   `offboarded` per incarnation), 16 (after `offboarded`: none of its segments, replicas or
//!   LocalDisk left; quota total and external metadata equal the model's at every step), 17
//!   (retries on the backoff schedule, resuming at the failed step), 19 (failover keeps every
//!   object, segment and pending job, restores clients Active and not ready), 21 (the input is
//!   run a second time, master only: identical answers and events);
//! - after every operation (and every tick with events) the whole observable state equals the
//!   model's: diagnostic query, segment table (owner incarnation, size, usage, keys), objects
//!   (replicas in order, completion), pending jobs (attempts, steps done, next attempt), stats.
//!
//! The model follows the contract, not the implementation: where they differed, the fuzz
//! target failed and the minimized input became a seed (`bug1_*`: a segment name unmounted by a
//! still-pending offboarding job could be mounted by another client; fixed in the master).
//!
//! A finding reads best through [`differential_explain`], which prints the decoded configuration
//! and operations with their virtual times.

use super::model::{
    Config, Ev, Model, PutPlan, State, CLIENTS, CLIENT_NAMES, KEYS, KEY_NAMES, SEGMENTS, SEGMENT_NAMES, STEPS,
};
use crate::clock::{Clock, ManualClock};
use crate::config::LivenessConfig;
use crate::liveness::{ClientId, LivenessState, PingStatus};
use crate::master::{Lifecycle, Master, MasterError, MasterEvent, MasterOptions, ReplicaDesc, SegmentSpec};
use crate::offboarding::Step;
use crate::snapshot::Snapshot;
use arbitrary::{Arbitrary, Unstructured};
use std::collections::BTreeSet;
use std::sync::Arc;

/// Operations per input, at most.
const MAX_OPS: usize = 96;
/// Virtual time per input, at most (ms).
const MAX_TIME_MS: u64 = 30_000;
/// Failovers per input, at most.
const MAX_FAILOVERS: usize = 2;

/// Natural size of each segment (a ReMount re-announces it; a Mount mostly uses it).
const SEGMENT_SIZE: [u64; SEGMENTS] = [128, 256, 128, 64, 256, 192];
/// Object sizes a Put picks from (0 is invalid, 300 fits no segment).
const OBJECT_SIZE: [u64; 8] = [0, 16, 48, 64, 100, 130, 200, 300];

#[derive(Arbitrary, Debug)]
enum RawOp {
    Advance(u8),
    AdvanceLong(u8),
    Mount { client: u8, segment: u8, variant: u8 },
    Remount { client: u8, mask: u8, variant: u8 },
    Unmount { client: u8, segment: u8 },
    Ping { client: u8 },
    MountLocalDisk { client: u8, capacity: u8 },
    Put { key: u8, size: u8, replicas: u8 },
    PutEnd { key: u8 },
    PutRevoke { key: u8 },
    Get { key: u8 },
    Remove { key: u8 },
    FailStep { step: u8, times: u8 },
    Failover,
}

/// A decoded operation, with names and sizes fixed (independent of any state).
#[derive(Clone, Debug)]
enum Cmd {
    Advance(u64),
    Mount { c: usize, s: usize, size: u64 },
    Remount { c: usize, specs: Vec<(usize, u64)> },
    Unmount { c: usize, s: usize },
    Ping { c: usize },
    MountLocalDisk { c: usize, capacity: u64 },
    Put { k: usize, size: u64, n: usize },
    PutEnd { k: usize },
    PutRevoke { k: usize },
    Get { k: usize },
    Remove { k: usize },
    FailStep { step: usize, times: u32 },
    Failover,
}

fn segment_size(s: usize, variant: u8) -> u64 {
    match variant % 8 {
        6 => SEGMENT_SIZE[s] + 64,
        7 => 0,
        _ => SEGMENT_SIZE[s],
    }
}

fn cmd_of(op: RawOp) -> Cmd {
    let c = |b: u8| usize::from(b) % CLIENTS;
    let s = |b: u8| usize::from(b) % SEGMENTS;
    let k = |b: u8| usize::from(b) % KEYS;
    match op {
        RawOp::Advance(b) => Cmd::Advance(u64::from(b) * 10),
        RawOp::AdvanceLong(b) => Cmd::Advance(u64::from(b) * 50),
        RawOp::Mount {
            client,
            segment,
            variant,
        } => Cmd::Mount {
            c: c(client),
            s: s(segment),
            size: segment_size(s(segment), variant),
        },
        RawOp::Remount { client, mask, variant } => {
            let mut specs: Vec<(usize, u64)> = (0..SEGMENTS)
                .filter(|i| mask & (1 << i) != 0)
                .map(|i| (i, SEGMENT_SIZE[i]))
                .collect();
            // Variants 4..8 perturb the first spec: a duplicate with another size, a duplicate
            // with the same size, another size, size 0.
            if let Some(&(first, size)) = specs.first() {
                match variant % 8 {
                    4 => specs.push((first, size + 64)),
                    5 => specs.push((first, size)),
                    6 => specs[0].1 += 64,
                    7 => specs[0].1 = 0,
                    _ => {}
                }
            }
            Cmd::Remount { c: c(client), specs }
        }
        RawOp::Unmount { client, segment } => Cmd::Unmount {
            c: c(client),
            s: s(segment),
        },
        RawOp::Ping { client } => Cmd::Ping { c: c(client) },
        RawOp::MountLocalDisk { client, capacity } => Cmd::MountLocalDisk {
            c: c(client),
            capacity: u64::from(capacity % 4) * 512,
        },
        RawOp::Put { key, size, replicas } => Cmd::Put {
            k: k(key),
            size: OBJECT_SIZE[usize::from(size) % OBJECT_SIZE.len()],
            n: usize::from(replicas % 4),
        },
        RawOp::PutEnd { key } => Cmd::PutEnd { k: k(key) },
        RawOp::PutRevoke { key } => Cmd::PutRevoke { k: k(key) },
        RawOp::Get { key } => Cmd::Get { k: k(key) },
        RawOp::Remove { key } => Cmd::Remove { k: k(key) },
        RawOp::FailStep { step, times } => Cmd::FailStep {
            step: usize::from(step) % STEPS.len(),
            times: u32::from(times % 3) + 1,
        },
        RawOp::Failover => Cmd::Failover,
    }
}

/// The configuration and operations an input decodes to (`None`: not enough bytes for a config).
fn decode(data: &[u8]) -> Option<(LivenessConfig, Vec<Cmd>)> {
    let mut u = Unstructured::new(data);
    let active = u.int_in_range(200u64..=3_000).ok()?;
    let suspicion = u.int_in_range(200u64..=3_000).ok()?;
    let tick = u.int_in_range(10u64..=100).ok()?;
    let backoff = u.int_in_range(10u64..=1_000).ok()?;
    let max_backoff = backoff * u.int_in_range(1u64..=8).ok()?;
    let config = LivenessConfig {
        active_ttl_ms: active,
        suspicion_ttl_ms: suspicion,
        monitor_tick_ms: tick,
        stall_bound_ms: active / 2,
        stall_brake: false,
        mass_suspicion_brake: false,
        offboarding_retry_backoff_ms: backoff,
        offboarding_retry_max_backoff_ms: max_backoff,
        offboarding_rate_per_sec: 1_000.0,
        offboarding_burst: 1_000,
        ..LivenessConfig::default()
    };
    let mut cmds = Vec::new();
    // `arbitrary` keeps producing defaults from exhausted input: stop when the bytes run out.
    while !u.is_empty() && cmds.len() < MAX_OPS {
        let Ok(op) = RawOp::arbitrary(&mut u) else { break };
        let cmd = cmd_of(op);
        // A failover builds two more masters (this run and the determinism run): keep a few.
        if matches!(cmd, Cmd::Failover) && cmds.iter().filter(|c| matches!(c, Cmd::Failover)).count() >= MAX_FAILOVERS {
            continue;
        }
        cmds.push(cmd);
    }
    Some((config, cmds))
}

/// Random operations on the reference master and the sequential model, compared after every
/// step; then the same input on a second master must produce the same answers and events.
pub fn differential(data: &[u8]) {
    let Some((config, cmds)) = decode(data) else { return };
    let first = run(&config, &cmds, true);
    let second = run(&config, &cmds, false);
    if first != second {
        let at = first
            .iter()
            .zip(&second)
            .position(|(a, b)| a != b)
            .unwrap_or(first.len().min(second.len()));
        panic!(
            "invariant 21: the same input gave a different log at entry {at}: {:?} vs {:?}",
            first.get(at),
            second.get(at)
        );
    }
}

/// The real master's answer to one operation.
#[derive(Clone, Debug, PartialEq)]
enum Answer {
    Done(Result<(), &'static str>),
    Ping(PingStatus),
    Replicas(Result<Vec<ReplicaDesc>, &'static str>),
    Nothing,
}

/// One entry of the log compared by the determinism check.
#[derive(Clone, Debug, PartialEq)]
enum Logged {
    Answer(Answer),
    Events(Vec<MasterEvent>),
    Final(Vec<ClientRow>),
}

/// The master's options: two registry shards, so the model's four clients share shards and
/// building a master per input costs microseconds, not the default 1024 shards' allocations.
fn options() -> MasterOptions {
    MasterOptions {
        registry_shards: 2,
        // One metadata shard: the model evicts in global LRU order.
        metadata_shards: 1,
        ..MasterOptions::default()
    }
}

/// The reference master on its manual clock.
struct Real {
    clock: Arc<ManualClock>,
    config: LivenessConfig,
    m: Master,
    tick_ms: u64,
    next_tick: u64,
}

impl Real {
    fn new(config: &LivenessConfig) -> Self {
        let clock = Arc::new(ManualClock::new(0));
        let m = Master::new(clock.clone() as Arc<dyn Clock>, config.clone(), options());
        let tick_ms = m.monitor().tick_ms();
        Self {
            clock,
            config: config.clone(),
            m,
            tick_ms,
            next_tick: tick_ms,
        }
    }

    fn now(&self) -> u64 {
        self.clock.now_ms()
    }

    fn failover(&mut self) {
        let bytes = self.m.snapshot().encode();
        let snap =
            Snapshot::decode(&bytes).unwrap_or_else(|e| panic!("invariant 19: own snapshot does not decode: {e}"));
        let clock = self.clock.clone() as Arc<dyn Clock>;
        self.m = Master::restore(clock, self.config.clone(), options(), &snap)
            .unwrap_or_else(|e| panic!("invariant 19: own snapshot does not restore: {e}"));
    }

    fn apply(&mut self, cmd: &Cmd) -> Answer {
        let code = |r: Result<(), MasterError>| Answer::Done(r.map_err(MasterError::code));
        let m = &mut self.m;
        match cmd {
            Cmd::Advance(_) => Answer::Nothing,
            Cmd::Mount { c, s, size } => code(m.mount(CLIENT_NAMES[*c], SEGMENT_NAMES[*s], *size)),
            Cmd::Remount { c, specs } => {
                let specs: Vec<SegmentSpec> = specs
                    .iter()
                    .map(|(s, size)| SegmentSpec {
                        segment: SEGMENT_NAMES[*s].to_string(),
                        size: *size,
                    })
                    .collect();
                code(m.remount(CLIENT_NAMES[*c], &specs))
            }
            Cmd::Unmount { c, s } => code(m.unmount(CLIENT_NAMES[*c], SEGMENT_NAMES[*s])),
            Cmd::Ping { c } => Answer::Ping(m.ping(CLIENT_NAMES[*c])),
            Cmd::MountLocalDisk { c, capacity } => code(m.mount_local_disk(CLIENT_NAMES[*c], *capacity)),
            Cmd::Put { k, size, n } => Answer::Replicas(m.put(KEY_NAMES[*k], *size, *n).map_err(MasterError::code)),
            Cmd::PutEnd { k } => code(m.put_end(KEY_NAMES[*k])),
            Cmd::PutRevoke { k } => code(m.put_revoke(KEY_NAMES[*k])),
            Cmd::Get { k } => Answer::Replicas(m.get(KEY_NAMES[*k]).map_err(MasterError::code)),
            Cmd::Remove { k } => code(m.remove(KEY_NAMES[*k])),
            Cmd::FailStep { step, times } => {
                m.fail_step(Step::ALL[*step], *times);
                Answer::Nothing
            }
            Cmd::Failover => {
                self.failover();
                Answer::Nothing
            }
        }
    }
}

/// Runs `cmds` on a fresh master; with `check`, also on the model, comparing everything.
fn run(config: &LivenessConfig, cmds: &[Cmd], check: bool) -> Vec<Logged> {
    let mut real = Real::new(config);
    let mut checker = check.then(|| Checker::new(config));
    let mut log = Vec::new();
    for cmd in cmds {
        if let Cmd::Advance(dt) = cmd {
            let t = real.now() + dt;
            if t > MAX_TIME_MS {
                break;
            }
            while real.next_tick <= t {
                let tau = real.next_tick;
                real.clock.set_ms(tau);
                real.m.tick();
                real.next_tick += real.tick_ms;
                let events = real.m.take_events();
                if let Some(ch) = checker.as_mut() {
                    // Every tick, even a silent one: a transition the model expects here and
                    // the master did not commit is a late commit.
                    ch.tick(&real.m, tau, &events);
                    if !events.is_empty() {
                        ch.compare_state(&real.m, &When::Tick(tau));
                    }
                }
                if !events.is_empty() {
                    log.push(Logged::Events(events));
                }
            }
            real.clock.set_ms(t);
            continue;
        }
        let now = real.now();
        let answer = real.apply(cmd);
        let events = real.m.take_events();
        if let Some(ch) = checker.as_mut() {
            ch.op(&real.m, cmd, now, &answer, &events);
            ch.compare_state(&real.m, &When::Op(cmd, now));
            if matches!(cmd, Cmd::Failover) {
                ch.compare_query(&real.m, &When::Op(cmd, now));
            }
        }
        log.push(Logged::Answer(answer));
        if !events.is_empty() {
            log.push(Logged::Events(events));
        }
    }
    if let Some(ch) = checker.as_ref() {
        ch.compare_query(&real.m, &When::End);
    }
    log.push(Logged::Final(registry_rows(&real.m)));
    log
}

fn client_index(name: &str) -> usize {
    CLIENT_NAMES
        .iter()
        .position(|n| *n == name)
        .unwrap_or_else(|| panic!("unknown client {name}"))
}

fn segment_index(name: &str) -> usize {
    SEGMENT_NAMES
        .iter()
        .position(|n| *n == name)
        .unwrap_or_else(|| panic!("unknown segment {name}"))
}

fn state_of(s: LivenessState) -> State {
    match s {
        LivenessState::Active => State::Active,
        LivenessState::Suspected => State::Suspected,
        LivenessState::Offline => State::Offline,
    }
}

/// A master event as the model writes it.
fn ev_of(m: &Master, e: &MasterEvent) -> Ev {
    let c = |id| client_index(&m.client_name(id));
    match e {
        MasterEvent::Transition(t) => Ev::Transition {
            at: t.at_ms,
            client: c(t.client),
            incarnation: t.incarnation.0,
            from: state_of(t.from),
            to: state_of(t.to),
        },
        MasterEvent::OffboardingRetry {
            client,
            incarnation,
            step,
            attempt,
            at_ms,
        } => Ev::Retry {
            at: *at_ms,
            client: c(*client),
            incarnation: incarnation.0,
            step: *step as usize,
            attempt: *attempt,
        },
        MasterEvent::Offboarded {
            client,
            incarnation,
            attempts,
            at_ms,
        } => Ev::Offboarded {
            at: *at_ms,
            client: c(*client),
            incarnation: incarnation.0,
            attempts: *attempts,
        },
        other => panic!("unexpected event with both brakes disabled and no stall: {other:?}"),
    }
}

/// The model plus what the invariants remember across steps.
struct Checker {
    model: Model,
    /// (client, incarnation) committed Offline.
    offline_commits: BTreeSet<(usize, u64)>,
    /// (client, incarnation) offboarded.
    offboarded: BTreeSet<(usize, u64)>,
    /// Highest incarnation seen per client.
    max_incarnation: [u64; CLIENTS],
}

/// Every live incarnation as the registry holds it, in the diagnostic query's shape.
fn registry_rows(m: &Master) -> Vec<ClientRow> {
    let ids = client_ids(m);
    (0..CLIENTS)
        .filter_map(|c| {
            let id = ids[c]?;
            let rec = m.liveness().registry().get(id)?;
            let disks = m.local_disks();
            let disk = disks.get(&id);
            if let Some(d) = disk {
                assert!(
                    crate::sync::Arc::ptr_eq(&d.owner, &rec),
                    "LocalDisk of {} bound to another incarnation",
                    CLIENT_NAMES[c]
                );
            }
            Some((
                c,
                rec.incarnation().0,
                state_of(rec.state()),
                rec.is_ready(),
                rec.state() == LivenessState::Offline,
                m.segments().owned_by(id).len(),
                0,
                disk.is_some(),
            ))
        })
        .collect()
}

/// When a comparison runs (formatted only if it fails).
enum When<'a> {
    Tick(u64),
    Op(&'a Cmd, u64),
    End,
}

impl std::fmt::Display for When<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            When::Tick(t) => write!(f, "after the tick at {t}"),
            When::Op(cmd, t) => write!(f, "after {cmd:?} at {t}"),
            When::End => write!(f, "at the end"),
        }
    }
}

/// One client as the diagnostic query shows it.
type ClientRow = (usize, u64, State, bool, bool, usize, usize, bool);

/// The master's ids of the harness's clients (`None` until a client is first named).
fn client_ids(m: &Master) -> [Option<ClientId>; CLIENTS] {
    CLIENT_NAMES.map(|n| m.known_client_id(n))
}

impl Checker {
    fn new(config: &LivenessConfig) -> Self {
        Self {
            model: Model::new(Config {
                active_ttl_ms: config.active_ttl_ms,
                suspicion_ttl_ms: config.suspicion_ttl_ms,
                retry_backoff_ms: config.offboarding_retry_backoff_ms,
                retry_max_backoff_ms: config.offboarding_retry_max_backoff_ms,
            }),
            offline_commits: BTreeSet::new(),
            offboarded: BTreeSet::new(),
            max_incarnation: [0; CLIENTS],
        }
    }

    /// Invariants 1–3 for a transition the master committed, against the model's state before it.
    fn check_transition(&self, ev: &Ev) {
        let Ev::Transition {
            at,
            client,
            incarnation,
            from,
            to,
        } = ev
        else {
            return;
        };
        let allowed = matches!(
            (from, to),
            (State::Active, State::Suspected) | (State::Suspected, State::Active) | (State::Suspected, State::Offline)
        );
        assert!(
            allowed,
            "invariant 1: transition {from:?} -> {to:?} is not allowed: {ev:?}"
        );
        let rec = self.model.clients[*client]
            .rec
            .as_ref()
            .unwrap_or_else(|| panic!("invariant 1: transition of a client with no live incarnation: {ev:?}"));
        assert_eq!(
            rec.incarnation, *incarnation,
            "invariant 1: transition of a stale incarnation: {ev:?}"
        );
        assert_eq!(
            rec.state, *from,
            "invariant 1: transition from a state the incarnation is not in: {ev:?}"
        );
        match to {
            State::Suspected => assert!(
                at - rec.last_signal >= self.model.cfg.active_ttl_ms,
                "invariant 2: Suspected at {at}, {} ms after the last signal at {} (active TTL {})",
                at - rec.last_signal,
                rec.last_signal,
                self.model.cfg.active_ttl_ms
            ),
            State::Offline => assert!(
                at - rec.suspected_at >= self.model.cfg.suspicion_ttl_ms,
                "invariant 3: Offline at {at}, {} ms after Suspected was committed at {} (suspicion TTL {})",
                at - rec.suspected_at,
                rec.suspected_at,
                self.model.cfg.suspicion_ttl_ms
            ),
            State::Active => {}
        }
    }

    /// One monitor tick at `tau` that produced `events`.
    fn tick(&mut self, m: &Master, tau: u64, events: &[MasterEvent]) {
        let evs: Vec<Ev> = events.iter().map(|e| ev_of(m, e)).collect();
        let n_trans = evs.iter().take_while(|e| matches!(e, Ev::Transition { .. })).count();
        let (trans, jobs) = evs.split_at(n_trans);
        assert!(
            jobs.iter().all(|e| !matches!(e, Ev::Transition { .. })),
            "a transition after an offboarding attempt within one tick at {tau}: {evs:?}"
        );
        for e in trans {
            assert!(
                matches!(e, Ev::Transition { at, .. } if *at == tau),
                "transition not stamped with its tick {tau}: {e:?}"
            );
            self.check_transition(e);
        }
        let mut observed: Vec<Ev> = trans.to_vec();
        observed.sort();
        let expected = self.model.tick_transitions(tau);
        for e in &expected {
            assert!(
                observed.contains(e),
                "invariant 4: late commit: the model commits {e:?} at the tick {tau}, the master committed {observed:?}"
            );
        }
        assert_eq!(observed, expected, "transitions of the tick at {tau}");
        for e in &observed {
            if let Ev::Transition {
                client,
                incarnation,
                to: State::Offline,
                ..
            } = e
            {
                assert!(
                    self.offline_commits.insert((*client, *incarnation)),
                    "invariant 15: a second Offline commit for {e:?}"
                );
            }
        }
        self.jobs(m, tau, jobs);
    }

    /// The offboarding attempts of the tick at `tau`, in the order the master ran them.
    fn jobs(&mut self, m: &Master, tau: u64, jobs: &[Ev]) {
        let order: Vec<usize> = jobs
            .iter()
            .map(|e| match e {
                Ev::Retry { client, .. } | Ev::Offboarded { client, .. } => *client,
                Ev::Transition { .. } => unreachable!(),
            })
            .collect();
        let due = self.model.due_jobs(tau);
        let mut sorted = order.clone();
        sorted.sort();
        assert_eq!(
            sorted, due,
            "offboarding attempts at {tau}: the master ran jobs of {order:?}, the model has jobs of {due:?} due (first attempt at the committing tick, retries on the backoff schedule)"
        );
        let fresh: Vec<bool> = order
            .iter()
            .map(|c| {
                self.model.clients[*c]
                    .rec
                    .as_ref()
                    .and_then(|r| r.job.as_ref())
                    .is_some_and(|j| j.fresh)
            })
            .collect();
        assert!(
            fresh.windows(2).all(|w| w[0] <= w[1]),
            "a due retry ran after a fresh job at {tau}: {jobs:?}"
        );
        for (c, got) in order.iter().zip(jobs) {
            let want = self.model.attempt(*c, tau);
            assert_eq!(got, &want, "offboarding attempt at {tau}");
            if let Ev::Offboarded {
                client, incarnation, ..
            } = got
            {
                assert!(
                    self.offboarded.insert((*client, *incarnation)),
                    "invariant 15: offboarded twice: {got:?}"
                );
                self.check_offboarded(m, *client, *incarnation);
            }
        }
    }

    /// Invariant 16 right after `offboarded` (client, incarnation), on the master itself.
    fn check_offboarded(&self, m: &Master, client: usize, incarnation: u64) {
        let name = CLIENT_NAMES[client];
        for seg in m.segments().iter() {
            assert!(
                !(m.client_name(seg.owner.client()) == name && seg.owner.incarnation().0 == incarnation),
                "invariant 16: segment {} of offboarded {name}#{incarnation} still mounted",
                seg.name
            );
        }
        for (key, obj) in m.objects() {
            for r in &obj.replicas {
                assert!(
                    !(m.client_name(r.owner().client()) == name && r.owner().incarnation().0 == incarnation),
                    "invariant 16: object {key} keeps a replica of offboarded {name}#{incarnation}"
                );
                if let Some(sid) = r.segment() {
                    assert!(
                        m.segments().get(sid).is_some(),
                        "invariant 10/16: object {key} references an unmounted segment"
                    );
                }
            }
        }
        assert!(
            m.local_disks()
                .values()
                .all(|d| !(m.client_name(d.owner.client()) == name && d.owner.incarnation().0 == incarnation)),
            "invariant 16: LocalDisk of offboarded {name}#{incarnation} still registered"
        );
        let id = client_ids(m)[client].expect("an offboarded client has an id");
        assert!(
            m.liveness()
                .registry()
                .get(id)
                .is_none_or(|r| r.incarnation().0 != incarnation),
            "invariant 16: record of offboarded {name}#{incarnation} still registered"
        );
    }

    /// One operation at `now`: the master answered `answer` and reported `events`.
    fn op(&mut self, m: &Master, cmd: &Cmd, now: u64, answer: &Answer, events: &[MasterEvent]) {
        let evs: Vec<Ev> = events.iter().map(|e| ev_of(m, e)).collect();
        for e in &evs {
            self.check_transition(e);
        }
        let md = &mut self.model;
        let specs: &[(usize, u64)] = match cmd {
            Cmd::Mount { s, size, .. } => &[(*s, *size)],
            Cmd::Remount { specs, .. } => specs,
            _ => &[],
        };
        for (s, _) in specs {
            if let Some(holder) = md.held_by_pending_job(*s) {
                assert!(
                    answer != &Answer::Done(Ok(())),
                    "{cmd:?} at {now}: segment {} is still held by {}, whose offboarding is pending (its `segments` step \
                     unmounted it, a later step failed); trace-format.md: a name held by a client Offline with \
                     offboarding pending is refused, free only after offboarding (bug 1)",
                    SEGMENT_NAMES[*s],
                    CLIENT_NAMES[holder]
                );
            }
        }
        let (want, want_ev): (Answer, Option<Ev>) = match cmd {
            Cmd::Advance(_) => unreachable!(),
            Cmd::Mount { c, s, size } => {
                let barrier = md.clients[*c].rec.as_ref().is_some_and(|r| r.state == State::Offline);
                let (r, e) = md.mount(*c, &[(*s, *size)], false, now);
                if barrier {
                    assert_eq!(
                        answer,
                        &Answer::Done(Err("CLIENT_OFFBOARDING")),
                        "invariant 14: mount by {} while its Offline incarnation is being offboarded",
                        CLIENT_NAMES[*c]
                    );
                }
                (Answer::Done(r), e)
            }
            Cmd::Remount { c, specs } => {
                let (r, e) = md.mount(*c, specs, true, now);
                (Answer::Done(r), e)
            }
            Cmd::Unmount { c, s } => (Answer::Done(md.unmount(*c, *s)), None),
            Cmd::Ping { c } => {
                let offline = md.clients[*c].rec.as_ref().is_none_or(|r| r.state == State::Offline);
                let (ok, e) = md.ping(*c, now);
                if offline {
                    assert_eq!(
                        answer,
                        &Answer::Ping(PingStatus::NeedRemount),
                        "invariant 7: ping of {} (unknown or Offline) must answer NEED_REMOUNT",
                        CLIENT_NAMES[*c]
                    );
                }
                let status = if ok { PingStatus::Ok } else { PingStatus::NeedRemount };
                (Answer::Ping(status), e)
            }
            Cmd::MountLocalDisk { c, capacity } => {
                let (r, e) = md.mount_local_disk(*c, *capacity, now);
                (Answer::Done(r), e)
            }
            Cmd::Put { k, size, n } => {
                // Invariant 10 first, on the master's own answer (eviction never changes owners).
                if let Answer::Replicas(Ok(descs)) = answer {
                    for d in descs {
                        assert_eq!(
                            md.owner_state(segment_index(&d.segment)),
                            Some(State::Active),
                            "invariant 10: Put {cmd:?} at {now} allocated on {} whose owner is not Active",
                            d.segment
                        );
                    }
                }
                let plan = md.put_plan(*k, *size, *n);
                match (&plan, answer) {
                    (PutPlan::Refused(code), Answer::Replicas(Err(got))) => {
                        assert_eq!(got, code, "Put {cmd:?}: refused with another code")
                    }
                    (PutPlan::Allocate { eligible, count }, Answer::Replicas(Ok(descs))) => {
                        let chosen: Vec<usize> = descs.iter().map(|d| segment_index(&d.segment)).collect();
                        for (d, s) in descs.iter().zip(&chosen) {
                            let owner = md.segments[s].owner;
                            assert_eq!(
                                d.client, CLIENT_NAMES[owner],
                                "Put {cmd:?}: wrong owner for {}",
                                d.segment
                            );
                            assert!(
                                eligible.contains(s),
                                "Put {cmd:?}: {} has no room (eligible: {eligible:?})",
                                d.segment
                            );
                        }
                        let distinct: BTreeSet<usize> = chosen.iter().copied().collect();
                        assert_eq!(
                            distinct.len(),
                            chosen.len(),
                            "Put {cmd:?}: replicas on one segment twice: {descs:?}"
                        );
                        assert_eq!(
                            chosen.len(),
                            *count,
                            "Put {cmd:?}: {} replicas handed out, the model allows {count} of {eligible:?}",
                            chosen.len()
                        );
                        md.put_commit(*k, *size, &chosen);
                    }
                    _ => panic!("Put {cmd:?} at {now}: the master answered {answer:?}, the model {plan:?}"),
                }
                (answer.clone(), None)
            }
            Cmd::PutEnd { k } => (Answer::Done(md.put_end(*k)), None),
            Cmd::PutRevoke { k } => (Answer::Done(md.put_revoke(*k)), None),
            Cmd::Get { k } => {
                if let Answer::Replicas(Ok(descs)) = answer {
                    for d in descs {
                        let s = segment_index(&d.segment);
                        assert_eq!(
                            md.owner_state(s),
                            Some(State::Active),
                            "invariant 9: Get {cmd:?} served a replica on {} whose owner is not Active",
                            d.segment
                        );
                    }
                }
                let want = md.get(*k).map(|segs| {
                    segs.iter()
                        .map(|s| ReplicaDesc {
                            segment: SEGMENT_NAMES[*s].to_string(),
                            client: CLIENT_NAMES[md.segments[s].owner].to_string(),
                        })
                        .collect()
                });
                (Answer::Replicas(want), None)
            }
            Cmd::Remove { k } => (Answer::Done(md.remove(*k)), None),
            Cmd::FailStep { step, times } => {
                md.fail_step(*step, *times);
                (Answer::Nothing, None)
            }
            Cmd::Failover => {
                md.failover(now);
                (Answer::Nothing, None)
            }
        };
        assert_eq!(answer, &want, "answer to {cmd:?} at {now}");
        // Invariant 6: a refused mount is not a liveness signal and creates no record.
        if let (Cmd::Mount { c, .. } | Cmd::Remount { c, .. } | Cmd::MountLocalDisk { c, .. }, Answer::Done(Err(_))) =
            (cmd, answer)
        {
            let got = registry_rows(m).into_iter().find(|r| r.0 == *c).map(|r| (r.1, r.2));
            let want = self.model.clients[*c].rec.as_ref().map(|r| (r.incarnation, r.state));
            assert_eq!(
                got, want,
                "invariant 6: {cmd:?} at {now} failed but changed {}'s (incarnation, state)",
                CLIENT_NAMES[*c]
            );
        }
        assert_eq!(
            evs,
            want_ev.into_iter().collect::<Vec<_>>(),
            "events of {cmd:?} at {now}"
        );
    }

    /// Every live incarnation in the model, as the diagnostic query must show it.
    fn client_rows(&self) -> Vec<ClientRow> {
        let md = &self.model;
        (0..CLIENTS)
            .filter_map(|c| {
                let r = md.clients[c].rec.as_ref()?;
                let segments = md.segments.values().filter(|s| s.owner == c).count();
                Some((
                    c,
                    r.incarnation,
                    r.state,
                    r.ready,
                    r.state == State::Offline,
                    segments,
                    0,
                    r.local_disk.is_some(),
                ))
            })
            .collect()
    }

    /// The diagnostic query against the model (it walks every registry shard, so the per-step
    /// comparison reads the registry directly and this runs after failovers and at the end).
    fn compare_query(&self, m: &Master, when: &When<'_>) {
        let got: Vec<ClientRow> = m
            .query(None, None)
            .clients
            .iter()
            .map(|c| {
                (
                    client_index(&c.client),
                    c.incarnation,
                    state_of(c.state),
                    c.ready,
                    c.offboarding,
                    c.segments,
                    c.tasks,
                    c.local_disk,
                )
            })
            .collect();
        assert_eq!(
            got,
            self.client_rows(),
            "query {when}: (client, incarnation, state, ready, offboarding, segments, tasks, local_disk)"
        );
    }

    /// The whole observable state of the master against the model (and invariant 13).
    fn compare_state(&mut self, m: &Master, when: &When<'_>) {
        let md = &self.model;
        let want = self.client_rows();
        // The same rows straight from the registry (cheap: the query walks every registry shard).
        let got = registry_rows(m);
        assert_eq!(
            got, want,
            "registry {when}: (client, incarnation, state, ready, offboarding, segments, tasks, local_disk)"
        );
        for (c, inc, ..) in &got {
            assert!(
                *inc >= self.max_incarnation[*c],
                "invariant 13: {} went from incarnation {} back to {inc} {when}",
                CLIENT_NAMES[*c],
                self.max_incarnation[*c]
            );
            self.max_incarnation[*c] = *inc;
        }
        // Segments: owner incarnation, size, usage, lifecycle, keys.
        let got: Vec<(usize, usize, u64, u64, u64, BTreeSet<usize>)> = m
            .segments()
            .iter()
            .map(|s| {
                assert_eq!(s.lifecycle(), Lifecycle::Ok, "segment {} not Ok {when}", s.name);
                (
                    segment_index(&s.name),
                    client_index(&m.client_name(s.owner.client())),
                    s.owner.incarnation().0,
                    s.size,
                    s.used(),
                    s.alloc().keys.iter().map(|k| key_index(k)).collect(),
                )
            })
            .collect();
        let want: Vec<(usize, usize, u64, u64, u64, BTreeSet<usize>)> = md
            .segments
            .iter()
            .map(|(s, seg)| {
                (
                    *s,
                    seg.owner,
                    seg.incarnation,
                    seg.size,
                    md.used(*s),
                    md.keys_on(*s).into_iter().collect(),
                )
            })
            .collect();
        assert_eq!(
            got, want,
            "segments {when}: (segment, owner, incarnation, size, used, keys)"
        );
        // Objects: size, replicas in order, completion.
        let mut got: Vec<(usize, u64, Vec<usize>, bool)> = m
            .objects()
            .iter()
            .map(|(k, o)| {
                let replicas = o
                    .replicas
                    .iter()
                    .map(|r| {
                        let sid = r
                            .segment()
                            .unwrap_or_else(|| panic!("object {k} has a LocalDisk replica {when}"));
                        let seg = m.segments().get(sid).cloned().unwrap_or_else(|| {
                            panic!("invariant 10/16: object {k} references an unmounted segment {when}")
                        });
                        assert!(
                            crate::sync::Arc::ptr_eq(r.owner(), &seg.owner),
                            "object {k}: replica owner differs from its segment's owner {when}"
                        );
                        segment_index(&seg.name)
                    })
                    .collect();
                (key_index(k), o.size, replicas, o.is_complete())
            })
            .collect();
        got.sort(); // the object table is a hash map
        let want: Vec<(usize, u64, Vec<usize>, bool)> = md
            .objects
            .iter()
            .map(|(k, o)| (*k, o.size, o.replicas.clone(), o.complete))
            .collect();
        assert_eq!(got, want, "objects {when}: (key, size, replicas, complete)");
        // Quota and external metadata (invariant 16's convergence, at every step).
        assert_eq!(
            m.quota_used(),
            md.quota_used(),
            "invariant 16: quota used {when} is not the sum of remaining usage plus pending refunds"
        );
        let got: BTreeSet<usize> = m
            .external_metadata()
            .entries()
            .iter()
            .map(|n| segment_index(n))
            .collect();
        assert_eq!(got, md.external(), "external metadata entries {when}");
        // Pending jobs (invariant 17: attempts, steps done, next attempt on the backoff schedule).
        let mut got: Vec<(usize, u32, Vec<usize>, u64)> = m
            .pending_jobs()
            .into_iter()
            .map(|(id, j)| {
                (
                    client_index(&m.client_name(id)),
                    j.attempts,
                    j.steps_done.iter().map(|s| *s as usize).collect(),
                    j.next_attempt_ms,
                )
            })
            .collect();
        got.sort();
        let want: Vec<(usize, u32, Vec<usize>, u64)> = (0..CLIENTS)
            .filter_map(|c| {
                let j = md.clients[c].rec.as_ref()?.job.as_ref()?;
                let done = (0..5).filter(|s| j.done[*s]).collect();
                Some((c, j.attempts, done, j.due))
            })
            .collect();
        assert_eq!(
            got, want,
            "pending jobs {when}: (client, attempts, steps done, next attempt)"
        );
        // Stats derived from the states.
        let s = m.stats();
        let count = |st: State| {
            md.clients
                .iter()
                .filter(|c| c.rec.as_ref().is_some_and(|r| r.state == st))
                .count()
        };
        assert_eq!(
            (s.active, s.suspected, s.offline, s.jobs_pending),
            (
                count(State::Active),
                count(State::Suspected),
                count(State::Offline),
                count(State::Offline)
            ),
            "stats {when}: (active, suspected, offline, jobs pending)"
        );
    }
}

fn key_index(name: &str) -> usize {
    KEY_NAMES
        .iter()
        .position(|n| *n == name)
        .unwrap_or_else(|| panic!("unknown key {name}"))
}

/// The configuration and operations `data` decodes to, for reading a finding (`None` if it
/// decodes to nothing).
pub fn differential_explain(data: &[u8]) -> Option<String> {
    let (config, cmds) = decode(data)?;
    let mut out = format!(
        "active {} ms, suspicion {} ms, tick {} ms, retry backoff {}..{} ms\n",
        config.active_ttl_ms,
        config.suspicion_ttl_ms,
        config.monitor_tick_ms,
        config.offboarding_retry_backoff_ms,
        config.offboarding_retry_max_backoff_ms
    );
    let mut now = 0;
    for cmd in &cmds {
        if let Cmd::Advance(dt) = cmd {
            now += dt;
            if now > MAX_TIME_MS {
                break;
            }
        }
        out.push_str(&format!("t={now:>6} {cmd:?}\n"));
    }
    Some(out)
}
