//! The real master on its manual clock, and the run loop: time advances like `replay` (every
//! tick up to the target time, then the clock is set to it), each operation applies, and with a
//! checker everything is compared with the model after every step.

use super::super::model::{State, CLIENTS, CLIENT_NAMES, KEY_NAMES, NOF_NAMES, SEGMENT_NAMES};
use super::check::Checker;
use super::counts::Counts;
use super::decode::LEVEL_2_TICKS;
use super::decode::{Cmd, Input};
use super::executor::Executor;
use super::names::{client_ids, state_of};
use super::{time_limit, MAX_TIME_MS};
use crate::clock::{BaseMs, Clock, LivenessMs, ManualClock};
use crate::config::LivenessConfig;
use crate::liveness::{Incarnation, LivenessState, PingStatus};
use crate::master::{Master, MasterError, MasterEvent, MasterOptions, OffboardingDriver, ReplicaDesc, SegmentSpec};
use crate::offboarding::Step;
use crate::snapshot::Snapshot;
use crate::LivenessEvent;
use std::sync::Arc;

/// The real master's answer to one operation.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Answer {
    Done(Result<(), &'static str>),
    Ping(PingStatus),
    Replicas(Result<Vec<ReplicaDesc>, &'static str>),
    /// A yes/no answer (NoF mount: mounted; NoF probe: unmounted by it).
    Flag(bool),
    /// A new task's id (CopyStart/MoveStart).
    Task(Result<u64, &'static str>),
    /// FetchTasks: (id, kind, key) of each task handed over.
    Tasks(Vec<(u64, &'static str, String)>),
    /// Drain: the Move tasks it started; the offload heartbeat: the offloads handed over; as
    /// (id, kind, key).
    Drain(Result<Vec<(u64, &'static str, String)>, &'static str>),
    Nothing,
}

/// One entry of the log compared by the determinism check.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Logged {
    Answer(Answer),
    Events(Vec<MasterEvent>),
    Final(Vec<ClientRow>),
}

/// The master's options: two registry shards, so the model's four clients share shards and
/// building a master per input costs microseconds, not the default 1024 shards' allocations.
fn options(async_mode: bool) -> MasterOptions {
    MasterOptions {
        registry_shards: 2,
        // One metadata shard: the model evicts in global LRU order.
        metadata_shards: 1,
        offboarding: if async_mode {
            OffboardingDriver::Outbox
        } else {
            OffboardingDriver::Inline
        },
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
    /// Async mode's executor (`None`: jobs run inline in the tick).
    exec: Option<Executor>,
    /// The `metadata` step's batch (`Cmd::BatchKeys`; an operator's setting, set again on a
    /// restored master).
    batch_keys: Option<usize>,
    /// Per client: the incarnation whose current window was armed at least
    /// [`LEVEL_2_TICKS`] ahead, and the window's deadline (for the counts).
    long_window: [Option<(u64, LivenessMs)>; CLIENTS],
    /// Per client: the incarnation holding more keys than a `metadata` batch (for the counts).
    many_keys: [Option<u64>; CLIENTS],
    counts: Counts,
}

impl Real {
    fn new(config: &LivenessConfig, async_mode: bool) -> Self {
        let clock = Arc::new(ManualClock::new(0));
        let m = Master::new(clock.clone() as Arc<dyn Clock>, config.clone(), options(async_mode));
        let tick_ms = m.monitor().tick_ms();
        Self {
            clock,
            config: config.clone(),
            m,
            tick_ms,
            next_tick: tick_ms,
            exec: async_mode.then(Executor::default),
            batch_keys: None,
            long_window: [None; CLIENTS],
            many_keys: [None; CLIENTS],
            counts: Counts::default(),
        }
    }

    /// The jobs the executor holds (async), for the state comparison.
    fn held(&self) -> Vec<super::executor::Held> {
        self.exec.as_ref().map_or_else(Vec::new, Executor::held)
    }

    /// One monitor tick at `tau`, then (async) the executor.
    fn tick(&mut self, tau: u64) {
        self.clock.set_ms(tau);
        self.m.tick();
        if let Some(exec) = self.exec.as_mut() {
            exec.after_tick(&mut self.m, tau);
        }
    }

    fn now(&self) -> u64 {
        self.clock.now_ms()
    }

    fn failover(&mut self) {
        let mid_job = self
            .m
            .liveness()
            .registry()
            .records()
            .iter()
            .any(|r| r.state() == LivenessState::Offline);
        self.counts.bump(|c| &mut c.failovers_mid_job, u64::from(mid_job));
        if let Some(exec) = self.exec.as_mut() {
            self.counts.failovers_with_executor_jobs += u64::from(!exec.held().is_empty());
            exec.crash();
        }
        let bytes = self.m.snapshot().encode();
        let snap =
            Snapshot::decode(&bytes).unwrap_or_else(|e| panic!("invariant 19: own snapshot does not decode: {e}"));
        let clock = self.clock.clone() as Arc<dyn Clock>;
        let async_mode = self.exec.is_some();
        self.m = Master::restore(clock, self.config.clone(), options(async_mode), &snap)
            .unwrap_or_else(|e| panic!("invariant 19: own snapshot does not restore: {e}"));
        if let Some(n) = self.batch_keys {
            self.m.set_offboarding_batch_keys(n);
        }
    }

    /// Notes, for the counts, which incarnations hold a window armed on wheel level ≥ 2 and
    /// which hold more keys than one `metadata` batch.
    fn observe(&mut self) {
        let now = self.m.liveness().clock().now(); // deadlines are liveness-clock times
        let far = LEVEL_2_TICKS * self.tick_ms;
        let ids = client_ids(&self.m);
        for (c, id) in ids.into_iter().enumerate() {
            let Some(rec) = id.and_then(|id| self.m.liveness().registry().get(id)) else {
                continue;
            };
            let word = rec.word();
            if word.state() != LivenessState::Offline && word.deadline() >= now.saturating_add(far) {
                self.long_window[c] = Some((rec.incarnation().0, word.deadline()));
            }
            if let Some(batch) = self.batch_keys {
                let keys: usize = self
                    .m
                    .segments()
                    .owned_by(rec.client())
                    .iter()
                    .filter(|s| s.owner.is(&rec))
                    .map(|s| s.key_count())
                    .sum();
                self.many_keys[c] = (keys > batch).then_some(rec.incarnation().0);
            }
        }
    }

    /// Counts a monitor commit that ended a level-2 window, and a completed job of an
    /// incarnation that held more keys than a batch (its `metadata` step answered `More`).
    fn count_reached(&mut self, events: &[MasterEvent]) {
        if self.m.nof().iter().next().is_some() {
            let transitions = events
                .iter()
                .filter(|e| matches!(e, MasterEvent::Liveness(LivenessEvent::Transition(_))));
            self.counts
                .bump(|c| &mut c.transitions_beside_nof, transitions.count() as u64);
        }
        let ids = client_ids(&self.m);
        let index = |id| ids.iter().position(|x| *x == Some(id));
        for e in events {
            match e {
                MasterEvent::Liveness(LivenessEvent::Transition(t))
                    if t.from != LivenessState::Suspected || t.to != LivenessState::Active =>
                {
                    let Some(c) = index(t.client) else { continue };
                    let at = self.m.liveness().clock().to_liveness(BaseMs(t.at_ms));
                    if self.long_window[c].is_some_and(|(inc, d)| inc == t.incarnation.0 && d <= at) {
                        self.counts.bump(|c| &mut c.level2_expiries, 1);
                        self.long_window[c] = None;
                    }
                }
                MasterEvent::Offboarded {
                    client, incarnation, ..
                } => {
                    let Some(c) = index(*client) else { continue };
                    if self.many_keys[c] == Some(incarnation.0) {
                        self.counts.bump(|c| &mut c.multi_batch_jobs, 1);
                        self.many_keys[c] = None;
                    }
                }
                _ => {}
            }
        }
    }

    /// The live incarnation's state of client `c`.
    fn state_of(&self, c: usize) -> Option<LivenessState> {
        let id = client_ids(&self.m)[c]?;
        Some(self.m.liveness().registry().get(id)?.state())
    }

    /// Tasks of client `c` left undelivered (after a FetchTasks: held back).
    fn held_back(&self, c: usize) -> usize {
        let Some(id) = client_ids(&self.m)[c] else { return 0 };
        self.m
            .tasks()
            .iter()
            .filter(|t| t.executor.client() == id && !t.delivered)
            .count()
    }

    /// A `TaskDone` by the task's executor names that client, as the master knows it now (a
    /// task it does not know: `c0`); every other command is as decoded.
    fn resolve(&self, cmd: &Cmd) -> Cmd {
        match cmd {
            Cmd::TaskDone { c: None, id, ok } => {
                let executor = self.m.tasks().get(*id).map(|t| t.executor.client());
                let ids = client_ids(&self.m);
                let c = executor.and_then(|e| ids.iter().position(|x| *x == Some(e)));
                Cmd::TaskDone {
                    c: Some(c.unwrap_or(0)),
                    id: *id,
                    ok: *ok,
                }
            }
            _ => cmd.clone(),
        }
    }

    fn apply(&mut self, cmd: &Cmd) -> Answer {
        let code = |r: Result<(), MasterError>| Answer::Done(r.map_err(MasterError::code));
        let m = &mut self.m;
        match cmd {
            Cmd::Advance(_) | Cmd::Stall(_) => Answer::Nothing,
            Cmd::Mount { c, s, size, token } => {
                code(m.mount_with_token(CLIENT_NAMES[*c], token.map(Incarnation), SEGMENT_NAMES[*s], *size))
            }
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
            Cmd::Ping { c, token } => Answer::Ping(m.ping_with_token(CLIENT_NAMES[*c], token.map(Incarnation))),
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
            Cmd::ReloadTtls(active, suspicion) => {
                // A shorter active TTL too: it once made the monitor commit Suspected late
                // (fixed; `monitor_timing::a_client_recovered_after_the_active_ttl_shrinks_is_suspected_on_time`).
                let active = *active;
                let config = LivenessConfig {
                    active_ttl_ms: active,
                    suspicion_ttl_ms: *suspicion,
                    stall_bound_ms: active / 2,
                    ..self.config.clone()
                };
                m.liveness()
                    .config()
                    .reload(config.clone())
                    .unwrap_or_else(|e| panic!("reload refused: {e}"));
                // A restored master starts from the configuration in force.
                self.config = config;
                Answer::Nothing
            }
            Cmd::SetQuota(limit) => {
                m.set_quota_limit(crate::master::DEFAULT_TENANT, *limit);
                Answer::Nothing
            }
            Cmd::BatchKeys(n) => {
                m.set_offboarding_batch_keys(*n);
                self.batch_keys = Some(*n);
                Answer::Nothing
            }
            Cmd::Replicate { k, s, mv } => Answer::Task(
                self.m
                    .replicate(KEY_NAMES[*k], SEGMENT_NAMES[*s], *mv)
                    .map_err(MasterError::code),
            ),
            Cmd::FetchTasks { c } => {
                let got = task_rows(self.m.fetch_tasks(CLIENT_NAMES[*c]));
                self.counts.tasks_fetched(got.len(), self.held_back(*c));
                Answer::Tasks(got)
            }
            Cmd::Drain { s } => {
                let r = self
                    .m
                    .drain(SEGMENT_NAMES[*s])
                    .map(task_rows)
                    .map_err(MasterError::code);
                self.counts
                    .bump(|c| &mut c.drain_moves, r.as_ref().map_or(0, Vec::len) as u64);
                Answer::Drain(r)
            }
            Cmd::NofMount { n, size } => Answer::Flag(self.m.nof().mount(NOF_NAMES[*n], *size)),
            Cmd::NofProbe { n, healthy } => {
                let unmounted = self.m.nof().probe(NOF_NAMES[*n], *healthy);
                self.counts.bump(|c| &mut c.nof_unmounts, u64::from(unmounted));
                Answer::Flag(unmounted)
            }
            Cmd::OffloadHeartbeat { c } => {
                let r = self.m.offload_heartbeat(CLIENT_NAMES[*c]);
                let r = r.map(task_rows).map_err(MasterError::code);
                self.counts
                    .bump(|c| &mut c.offloads_handed, r.as_ref().map_or(0, Vec::len) as u64);
                Answer::Drain(r)
            }
            Cmd::Promote { k } => {
                let r = self.m.promote(KEY_NAMES[*k]).map_err(MasterError::code);
                self.counts.bump(|c| &mut c.promotions, u64::from(r.is_ok()));
                Answer::Task(r)
            }
            Cmd::TaskDone { c, id, ok } => {
                let c = c.expect("resolved before it applies");
                let kind = self.m.tasks().get(*id).map(|t| t.kind);
                let state = self.state_of(c);
                let suspected = state == Some(LivenessState::Suspected);
                self.counts.bump(
                    |c| &mut c.tasks_done_offline,
                    u64::from(state == Some(LivenessState::Offline)),
                );
                let r = self.m.task_done(CLIENT_NAMES[c], *id, *ok);
                self.counts
                    .task_done(r.is_ok(), suspected, kind.filter(|_| *ok && r.is_ok()));
                code(r)
            }
            Cmd::HandBack => {
                if let Some(exec) = self.exec.as_mut() {
                    self.counts.handed_back += exec.held().len() as u64;
                    exec.hand_back(&self.m);
                }
                Answer::Nothing
            }
        }
    }
}

/// Tasks as the answers compare them: (id, kind, key).
fn task_rows(tasks: Vec<crate::master::TaskDesc>) -> Vec<(u64, &'static str, String)> {
    tasks.into_iter().map(|t| (t.task, t.kind, t.key)).collect()
}

/// Runs `cmds` on a fresh master; with `check`, also on the model, comparing everything.
pub(super) fn run(input: &Input, check: bool) -> (Vec<Logged>, Counts) {
    let Input {
        config,
        async_mode,
        cmds,
    } = input;
    let mut real = Real::new(config, *async_mode);
    let mut checker = check.then(|| Checker::new(config, *async_mode));
    let mut log = Vec::new();
    let mut limit = MAX_TIME_MS;
    for cmd in cmds {
        if let Cmd::Advance(dt) | Cmd::Stall(dt) = cmd {
            let t = real.now() + dt;
            if t > limit {
                break;
            }
            real.counts.op(cmd, *async_mode);
            if matches!(cmd, Cmd::Stall(_)) {
                // The master does not run: every tick before the last one due by `t` is lost.
                while real.next_tick + real.tick_ms <= t {
                    real.next_tick += real.tick_ms;
                }
            }
            while real.next_tick <= t {
                let tau = real.next_tick;
                real.tick(tau);
                real.next_tick += real.tick_ms;
                let events = real.m.take_events();
                real.counts.events(&events);
                if !events.is_empty() {
                    real.count_reached(&events);
                    real.observe();
                }
                if let Some(ch) = checker.as_mut() {
                    // Every tick, even a silent one: a transition the model expects here and
                    // the master did not commit is a late commit.
                    ch.tick(&real.m, tau, &events);
                    if !events.is_empty() {
                        ch.compare_state(&real.m, &real.held(), &When::Tick(tau));
                    }
                }
                if !events.is_empty() {
                    log.push(Logged::Events(events));
                }
            }
            real.clock.set_ms(t);
            continue;
        }
        let cmd = &real.resolve(cmd);
        let now = real.now();
        limit = time_limit(limit, now, cmd, real.tick_ms);
        real.counts.op(cmd, *async_mode);
        // Async: the executor's retries that fell due since the last step run first.
        if let Some(exec) = real.exec.as_mut() {
            exec.poll(&mut real.m, now);
            let events = real.m.take_events();
            real.counts.events(&events);
            real.count_reached(&events);
            if let Some(ch) = checker.as_mut() {
                if !events.is_empty() {
                    ch.executor(&real.m, now, &events);
                    ch.compare_state(&real.m, &real.held(), &When::Executor(now));
                }
            }
            if !events.is_empty() {
                log.push(Logged::Events(events));
            }
        }
        let answer = real.apply(cmd);
        let events = real.m.take_events();
        real.counts.events(&events);
        real.count_reached(&events);
        real.observe();
        if let Some(ch) = checker.as_mut() {
            ch.op(&real.m, cmd, now, &answer, &events);
            ch.compare_state(&real.m, &real.held(), &When::Op(cmd, now));
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
    (log, real.counts)
}

/// Every live incarnation as the registry holds it, in the diagnostic query's shape.
pub(super) fn registry_rows(m: &Master) -> Vec<ClientRow> {
    let ids = client_ids(m);
    (0..CLIENTS)
        .filter_map(|c| {
            let id = ids[c]?;
            let rec = m.liveness().registry().get(id)?;
            // One lock per statement: the master's order never nests two leaves.
            let disk = m.local_disks().get(&id).map(|d| d.owner.is(&rec));
            assert!(
                disk != Some(false),
                "LocalDisk of {} bound to another incarnation",
                CLIENT_NAMES[c]
            );
            let segments = m.segments().owned_by(id).len();
            let tasks = m.tasks().of_client(id).len();
            Some((
                c,
                rec.incarnation().0,
                state_of(rec.state()),
                rec.is_ready(),
                rec.state() == LivenessState::Offline,
                segments,
                tasks,
                disk.is_some(),
            ))
        })
        .collect()
}

/// When a comparison runs (formatted only if it fails).
pub(super) enum When<'a> {
    Tick(u64),
    Executor(u64),
    Op(&'a Cmd, u64),
    End,
}

impl std::fmt::Display for When<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            When::Tick(t) => write!(f, "after the tick at {t}"),
            When::Executor(t) => write!(f, "after the executor's retries at {t}"),
            When::Op(cmd, t) => write!(f, "after {cmd:?} at {t}"),
            When::End => write!(f, "at the end"),
        }
    }
}

/// One client as the diagnostic query shows it.
pub(super) type ClientRow = (usize, u64, State, bool, bool, usize, usize, bool);
