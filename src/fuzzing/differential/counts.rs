//! What an input exercised: operations run per offboarding mode, and the offboarding events
//! they led to (FUZZING.md's per-op coverage comes from these, summed over a corpus by
//! `examples/differential_tool.rs counts`).

use super::decode::Cmd;
use crate::master::{MasterEvent, TaskKind};
use crate::LivenessEvent;
use std::fmt;

/// Operation names, in [`Cmd`]'s order (an `Advance` counts every advance, short or long).
const OPS: [&str; 28] = [
    "advance",
    "mount",
    "mount_with_token",
    "remount",
    "unmount",
    "ping",
    "ping_with_token",
    "mount_local_disk",
    "put",
    "put_end",
    "put_revoke",
    "get",
    "remove",
    "fail_step",
    "failover",
    "hand_back",
    "set_quota",
    "reload_ttls",
    "batch_keys",
    "replicate",
    "fetch_tasks",
    "task_done",
    "drain",
    "offload_heartbeat",
    "promote",
    "nof_mount",
    "nof_probe",
    "stall",
];

/// Counts of one or more inputs; index 0 is sync mode, 1 async.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Inputs decoded, per mode.
    pub inputs: [u64; 2],
    /// Operations run, per mode, by `OPS` index.
    pub ops: [[u64; OPS.len()]; 2],
    /// Liveness transitions, per mode.
    pub transitions: [u64; 2],
    /// Failed offboarding attempts (`offboarding_retry`), per mode.
    pub retries: [u64; 2],
    /// Completed jobs (`offboarded`), per mode.
    pub offboarded: [u64; 2],
    /// Failovers while some incarnation was Offline with its job pending, per mode.
    pub failovers_mid_job: [u64; 2],
    /// Async failovers while the executor held a job waiting for its retry.
    pub failovers_with_executor_jobs: u64,
    /// Jobs handed back by the executor's shutdown (async).
    pub handed_back: u64,
    /// Monitor commits (Active → Suspected, Suspected → Offline) ending a window that was
    /// armed on wheel level 2 or higher, per mode.
    pub level2_expiries: [u64; 2],
    /// Completed jobs of incarnations that held more keys than one `metadata` batch (the step
    /// answered `Progress::More`), per mode.
    pub multi_batch_jobs: [u64; 2],
    /// Mass-suspicion brake engagements and releases, per mode.
    pub brake_engaged: [u64; 2],
    pub brake_released: [u64; 2],
    /// Tasks handed over by FetchTasks.
    pub tasks_delivered: [u64; 2],
    /// FetchTasks answers by an Active executor that left one of its tasks queued (its source
    /// owner not Active: the task is held).
    pub fetches_holding_back: [u64; 2],
    /// task_done callbacks accepted from a Suspected executor (invariant 11).
    pub tasks_done_while_suspected: [u64; 2],
    /// task_done callbacks accepted.
    pub tasks_done: [u64; 2],
    /// task_done callbacks from an Offline executor whose job is pending (refused).
    pub tasks_done_offline: [u64; 2],
    /// Move tasks started by Drain.
    pub drain_moves: [u64; 2],
    /// Offloads handed over by the offload heartbeat.
    pub offloads_handed: [u64; 2],
    /// Offloads done (a LocalDisk replica made).
    pub offloads_done: [u64; 2],
    /// Promotions started.
    pub promotions: [u64; 2],
    /// Promotions done (a memory replica made from LocalDisk).
    pub promotions_done: [u64; 2],
    /// Stalls credited by the stall brake.
    pub stalls_credited: [u64; 2],
    /// NoF segments unmounted by failed probes.
    pub nof_unmounts: [u64; 2],
    /// Client liveness transitions while a NoF segment was mounted (none may touch it).
    pub transitions_beside_nof: [u64; 2],
    mode: usize,
}

impl Counts {
    /// Adds `n` to this mode's entry of the counter `field` picks.
    pub(super) fn bump(&mut self, field: fn(&mut Counts) -> &mut [u64; 2], n: u64) {
        let mode = self.mode;
        field(self)[mode] += n;
    }

    pub(super) fn tasks_fetched(&mut self, delivered: usize, held_back: usize) {
        self.tasks_delivered[self.mode] += delivered as u64;
        self.fetches_holding_back[self.mode] += u64::from(held_back > 0);
    }

    /// A task_done: accepted or not, from a Suspected executor, and the kind of the task it
    /// completed (`None` unless it completed one).
    pub(super) fn task_done(&mut self, accepted: bool, suspected: bool, completed: Option<TaskKind>) {
        self.tasks_done[self.mode] += u64::from(accepted);
        self.tasks_done_while_suspected[self.mode] += u64::from(accepted && suspected);
        self.offloads_done[self.mode] += u64::from(completed == Some(TaskKind::Offload));
        self.promotions_done[self.mode] += u64::from(completed == Some(TaskKind::Promote));
    }

    pub(super) fn op(&mut self, cmd: &Cmd, async_mode: bool) {
        self.mode = usize::from(async_mode);
        let i = match cmd {
            Cmd::Advance(_) => 0,
            Cmd::Mount { token: None, .. } => 1,
            Cmd::Mount { .. } => 2,
            Cmd::Remount { .. } => 3,
            Cmd::Unmount { .. } => 4,
            Cmd::Ping { token: None, .. } => 5,
            Cmd::Ping { .. } => 6,
            Cmd::MountLocalDisk { .. } => 7,
            Cmd::Put { .. } => 8,
            Cmd::PutEnd { .. } => 9,
            Cmd::PutRevoke { .. } => 10,
            Cmd::Get { .. } => 11,
            Cmd::Remove { .. } => 12,
            Cmd::FailStep { .. } => 13,
            Cmd::Failover => 14,
            Cmd::HandBack => 15,
            Cmd::SetQuota(_) => 16,
            Cmd::ReloadTtls(..) => 17,
            Cmd::BatchKeys(_) => 18,
            Cmd::Replicate { .. } => 19,
            Cmd::FetchTasks { .. } => 20,
            Cmd::TaskDone { .. } => 21,
            Cmd::Drain { .. } => 22,
            Cmd::OffloadHeartbeat { .. } => 23,
            Cmd::Promote { .. } => 24,
            Cmd::NofMount { .. } => 25,
            Cmd::NofProbe { .. } => 26,
            Cmd::Stall(_) => 27,
        };
        self.ops[self.mode][i] += 1;
    }

    pub(super) fn events(&mut self, events: &[MasterEvent]) {
        for e in events {
            match e {
                MasterEvent::Liveness(LivenessEvent::Transition(_)) => self.transitions[self.mode] += 1,
                MasterEvent::OffboardingRetry { .. } => self.retries[self.mode] += 1,
                MasterEvent::Offboarded { .. } => self.offboarded[self.mode] += 1,
                MasterEvent::Liveness(LivenessEvent::MassSuspicionBrake { engaged: true, .. }) => {
                    self.brake_engaged[self.mode] += 1
                }
                MasterEvent::Liveness(LivenessEvent::MassSuspicionBrake { engaged: false, .. }) => {
                    self.brake_released[self.mode] += 1
                }
                MasterEvent::Liveness(LivenessEvent::StallDetected { .. }) => self.stalls_credited[self.mode] += 1,
            }
        }
    }

    pub(super) fn input(&mut self, async_mode: bool) {
        self.mode = usize::from(async_mode);
        self.inputs[self.mode] += 1;
    }

    /// Adds `other` (summing a corpus).
    pub fn add(&mut self, other: &Counts) {
        for m in 0..2 {
            self.inputs[m] += other.inputs[m];
            for (a, b) in self.ops[m].iter_mut().zip(&other.ops[m]) {
                *a += b;
            }
            self.transitions[m] += other.transitions[m];
            self.retries[m] += other.retries[m];
            self.offboarded[m] += other.offboarded[m];
            self.failovers_mid_job[m] += other.failovers_mid_job[m];
            self.level2_expiries[m] += other.level2_expiries[m];
            self.multi_batch_jobs[m] += other.multi_batch_jobs[m];
            self.brake_engaged[m] += other.brake_engaged[m];
            self.brake_released[m] += other.brake_released[m];
            self.tasks_delivered[m] += other.tasks_delivered[m];
            self.fetches_holding_back[m] += other.fetches_holding_back[m];
            self.tasks_done_while_suspected[m] += other.tasks_done_while_suspected[m];
            self.tasks_done[m] += other.tasks_done[m];
            self.tasks_done_offline[m] += other.tasks_done_offline[m];
            self.drain_moves[m] += other.drain_moves[m];
            self.offloads_handed[m] += other.offloads_handed[m];
            self.offloads_done[m] += other.offloads_done[m];
            self.promotions[m] += other.promotions[m];
            self.promotions_done[m] += other.promotions_done[m];
            self.nof_unmounts[m] += other.nof_unmounts[m];
            self.stalls_credited[m] += other.stalls_credited[m];
            self.transitions_beside_nof[m] += other.transitions_beside_nof[m];
        }

        self.failovers_with_executor_jobs += other.failovers_with_executor_jobs;
        self.handed_back += other.handed_back;
    }
}

impl fmt::Display for Counts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pair =
            |f: &mut fmt::Formatter<'_>, name: &str, v: &[u64; 2]| writeln!(f, "| {name} | {} | {} |", v[0], v[1]);
        writeln!(f, "| | sync | async |")?;
        writeln!(f, "|---|---:|---:|")?;
        pair(f, "inputs", &self.inputs)?;
        for (i, name) in OPS.iter().enumerate() {
            writeln!(f, "| `{name}` | {} | {} |", self.ops[0][i], self.ops[1][i])?;
        }
        pair(f, "transitions", &self.transitions)?;
        pair(f, "`offboarding_retry`", &self.retries)?;
        pair(f, "`offboarded`", &self.offboarded)?;
        pair(f, "failovers with a job pending", &self.failovers_mid_job)?;
        pair(f, "expiries of windows armed on wheel level ≥ 2", &self.level2_expiries)?;
        pair(
            f,
            "jobs whose `metadata` step took several batches",
            &self.multi_batch_jobs,
        )?;
        writeln!(
            f,
            "| mass-suspicion brake engaged / released | {} / {} | {} / {} |",
            self.brake_engaged[0], self.brake_released[0], self.brake_engaged[1], self.brake_released[1]
        )?;
        pair(f, "tasks delivered", &self.tasks_delivered)?;
        pair(f, "FetchTasks holding a task back", &self.fetches_holding_back)?;
        pair(f, "`task_done` accepted", &self.tasks_done)?;
        pair(
            f,
            "`task_done` accepted from a Suspected executor",
            &self.tasks_done_while_suspected,
        )?;
        pair(
            f,
            "`task_done` from an Offline executor, job pending",
            &self.tasks_done_offline,
        )?;
        pair(f, "Move tasks started by `drain`", &self.drain_moves)?;
        pair(f, "offloads handed over", &self.offloads_handed)?;
        pair(f, "offloads done (LocalDisk replicas made)", &self.offloads_done)?;
        pair(f, "promotions started", &self.promotions)?;
        pair(f, "promotions done", &self.promotions_done)?;
        pair(f, "NoF segments unmounted by failed probes", &self.nof_unmounts)?;
        pair(f, "stalls credited (stall brake)", &self.stalls_credited)?;
        pair(
            f,
            "client transitions while a NoF segment was mounted",
            &self.transitions_beside_nof,
        )?;
        writeln!(
            f,
            "| failovers with a job in the executor's retry table | | {} |",
            self.failovers_with_executor_jobs
        )?;
        writeln!(
            f,
            "| jobs handed back by the executor's shutdown | | {} |",
            self.handed_back
        )
    }
}
