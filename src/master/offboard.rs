//! Completing a `ClientOffboardingJob` synchronously, in the RFC's step order.
//!
//! Cost is proportional to what the incarnation holds: the per-owner segment index, each
//! segment's key set, the LocalDisk key set and the per-executor task index. Nothing sweeps the
//! whole metadata (upstream walks every shard per batch).

use super::Master;
use super::MasterEvent;
use crate::liveness::ClientLivenessRecord;
use crate::offboarding::{complete_client_offboarding, ClientOffboardingJob};
use crate::sync::Arc;

impl Master {
    /// Runs every step of `job` and compare-and-erases its record.
    pub(super) fn offboard(&mut self, job: ClientOffboardingJob) {
        let record = job.record().clone();
        let names = self.offboard_metadata(&record);
        self.offboard_local_disk(&record);
        for name in &names {
            let _ = self.external.delete(name);
        }
        let (client, incarnation, at_ms) = (job.client(), job.incarnation(), self.live.clock().base().now_ms());
        if complete_client_offboarding(self.live.registry(), job) {
            self.events.push(MasterEvent::Offboarded {
                client,
                incarnation,
                attempts: 1,
                at_ms,
            });
        }
    }

    /// `metadata` + `segments`: every replica on the incarnation's segments, every task it
    /// executes, then the segments themselves. Returns the unmounted segment names.
    fn offboard_metadata(&mut self, record: &Arc<ClientLivenessRecord>) -> Vec<String> {
        let client = record.client();
        for task in self.tasks.of_client(client) {
            if self.tasks.get(task).is_some_and(|t| Arc::ptr_eq(&t.executor, record)) {
                self.cancel_task(task);
            }
        }
        let mut names = Vec::new();
        for sid in self.segments.owned_by(client) {
            if self.segments.get(sid).is_some_and(|s| Arc::ptr_eq(&s.owner, record)) {
                names.extend(self.drop_segment(sid));
            }
        }
        names
    }

    /// `local_disk`: the LocalDisk replicas, offload and promotion work, and the registration.
    fn offboard_local_disk(&mut self, record: &Arc<ClientLivenessRecord>) {
        let client = record.client();
        let Some(disk) = self.local_disks.get(&client) else {
            return;
        };
        if !Arc::ptr_eq(&disk.owner, record) {
            return;
        }
        let keys: Vec<String> = disk.keys.iter().cloned().collect();
        for key in keys {
            self.remove_replicas(
                &key,
                |r| matches!(&r.kind, super::ReplicaKind::LocalDisk { owner } if Arc::ptr_eq(owner, record)),
            );
        }
        self.local_disks.remove(&client);
    }
}
