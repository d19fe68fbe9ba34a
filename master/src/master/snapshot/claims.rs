//! Which offboarding progress a restored job may keep.
//!
//! A restored job's "steps done" is trusted only as a prefix of the steps in order, and only
//! where nothing of that step is left: a claim the restored tables contradict (its segments,
//! LocalDisk, replicas, tasks, refunds or segment names still there), and every claim after
//! it, is dropped and those steps run again (steps are idempotent). Trusting it would skip the
//! step and leak what it should remove, with the barrier lifted.
//!
//! Owns: [`check_claims`]. Reads the restored master's segment table, LocalDisks and tasks
//! (the `segments` read lock, the `local_disks` leaf and the `tasks` leaf, one at a time as
//! everywhere: the master is not yet shared, so nothing contends, but the lock-order check
//! holds every path to the same order); writes only the jobs' progress. May not touch: the tables
//! themselves (they were restored and checked before it runs).

use super::super::offboard::Scratch;
use super::super::MasterCore;
use crate::liveness::{ClientId, Incarnation};
use crate::offboarding::{ClientOffboardingJob, Step};
use std::collections::BTreeMap;

/// Resets the progress of every job in `jobs` whose claims the restored tables of `m` (and the
/// restored `scratch`) contradict; see the module doc.
pub(super) fn check_claims(
    m: &MasterCore,
    jobs: &mut [ClientOffboardingJob],
    scratch: &BTreeMap<(ClientId, Incarnation), Scratch>,
) {
    for job in jobs.iter_mut() {
        let rec = job.record().clone();
        // One lock per statement, never two leaves at once (the master's lock order).
        let owned: Vec<_> = m.data.segments().iter().filter(|s| s.owner.is(&rec)).cloned().collect();
        // The LocalDisk, if this incarnation's: whether it still holds anything.
        let disk: Option<bool> = m
            .membership
            .local_disks()
            .get(&rec.client())
            .filter(|d| d.owner.is(&rec))
            .map(|d| !d.keys.is_empty() || d.used > 0);
        let tasks_left = {
            let tasks = m.work.tasks();
            !tasks.of_client(rec.client()).is_empty() || tasks.iter().any(|t| owned.iter().any(|s| t.touches(s.id)))
        };
        let s = scratch.get(&(job.client(), job.incarnation()));
        let left = |step: Step| match step {
            Step::Metadata => owned.iter().any(|s| s.key_count() > 0) || disk == Some(true) || tasks_left,
            Step::Segments => !owned.is_empty(),
            Step::LocalDisk => disk.is_some(),
            Step::Quota => s.is_some_and(|s| !s.refunds.is_empty()),
            Step::ExternalMetadata => s.is_some_and(|s| !s.segment_names.is_empty()),
        };
        // Steps run in order, so real progress is a prefix of `Step::ALL`: a later claim
        // after a step not done would skip that step's output (e.g. refunds the re-run
        // `metadata` records for a `quota` claimed done).
        let claimed = job.steps_done();
        let kept: Vec<Step> = Step::ALL
            .into_iter()
            .take_while(|st| claimed.contains(st) && !left(*st))
            .collect();
        if kept != claimed {
            job.reset_progress(&kept);
        }
    }
}
