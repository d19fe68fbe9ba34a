//! The membership RPCs: ServiceReady, GetStorageConfig, MountSegment, ReMountSegment,
//! UnmountSegment, Ping, FetchTasks.
//!
//! Mount and ReMount go through the master's mount protocol (`Master::mount` /
//! `Master::remount`: a liveness signal when they succeed; ReMount makes the incarnation
//! ready, so the next Ping answers OK). A segment's address space is installed before the
//! master publishes the segment (so a Put never finds a serving segment without one) and
//! retired again if the mount fails. Ping is the master's lock-free Ping, nothing else.

use super::log::info;
use super::state::{error_code, name_of, State};
use crate::liveness::PingStatus;
use crate::master::SegmentSpec;
use mooncake_liveness_wire::enums::{ClientStatus, ErrorCode};
use mooncake_liveness_wire::rpc::Expected;
use mooncake_liveness_wire::types::{GetStorageConfigResponse, PingResponse, Segment, TaskAssignment, Uuid};

/// What ServiceReady must answer: the client checks it byte for byte.
pub(crate) const SERVICE_VERSION: &str = "2.0.0";

impl State {
    /// ServiceReady.
    pub(crate) fn service_ready(&self) -> Expected<String> {
        Ok(SERVICE_VERSION.to_string())
    }

    /// GetStorageConfig: no disk tier (what the real master answers without `--root_fs_dir`).
    pub(crate) fn storage_config(&self) -> Expected<GetStorageConfigResponse> {
        Ok(GetStorageConfigResponse {
            fsdir: String::new(),
            enable_disk_eviction: true,
            quota_bytes: 0,
        })
    }

    /// Ping: the master's lock-free Ping. `view_version_id` is 0, as a master without HA answers.
    pub(crate) fn ping(&self, client: Uuid) -> Expected<PingResponse> {
        let name = name_of(&client);
        let client_status = match self.master.ping(&name) {
            PingStatus::Ok => ClientStatus::OK,
            PingStatus::NeedRemount => ClientStatus::NEED_REMOUNT,
        };
        Ok(PingResponse {
            view_version_id: 0,
            client_status,
        })
    }

    /// Installs the spaces of `segments` that are not known yet; returns the names of those it
    /// installed (to retire if the mount fails). A segment known under its id with another
    /// base, size or endpoint is refused.
    fn install_spaces(&self, segments: &[Segment]) -> Result<Vec<String>, ErrorCode> {
        let mut fresh = Vec::new();
        for seg in segments {
            let name = name_of(&seg.id);
            match self.spaces.get(&name) {
                Some(s) if s.matches(seg) => {}
                Some(_) => {
                    self.retire_all(&fresh);
                    return Err(ErrorCode::INVALID_PARAMS);
                }
                None => match self.spaces.install(&name, seg) {
                    Some(_) => fresh.push(name),
                    None => {
                        self.retire_all(&fresh);
                        return Err(ErrorCode::INVALID_PARAMS);
                    }
                },
            }
        }
        Ok(fresh)
    }

    fn retire_all(&self, names: &[String]) {
        for n in names {
            self.spaces.retire(n);
        }
    }

    /// MountSegment.
    pub(crate) fn mount(&self, (seg, client): (Segment, Uuid)) -> Expected<()> {
        let (cname, sname) = (name_of(&client), name_of(&seg.id));
        let fresh = self.install_spaces(std::slice::from_ref(&seg))?;
        if let Err(e) = self.master.mount(&cname, &sname, seg.size) {
            self.retire_all(&fresh);
            info!(
                "client_id={cname}, action=mount_segment_refused, segment_name={}, error={e}",
                seg.name
            );
            return Err(error_code(e));
        }
        info!(
            "client_id={cname}, action=mount_segment, segment_name={}, segment_id={sname}, base={:#x}, size={}",
            seg.name, seg.base, seg.size
        );
        Ok(())
    }

    /// ReMountSegment: all or nothing, as the master's ReMount.
    pub(crate) fn remount(&self, (segments, client): (Vec<Segment>, Uuid)) -> Expected<()> {
        let cname = name_of(&client);
        let fresh = self.install_spaces(&segments)?;
        let specs: Vec<SegmentSpec> = segments
            .iter()
            .map(|s| SegmentSpec {
                segment: name_of(&s.id),
                size: s.size,
            })
            .collect();
        if let Err(e) = self.master.remount(&cname, &specs) {
            self.retire_all(&fresh);
            info!(
                "client_id={cname}, action=remount_refused, segments={}, error={e}",
                segments.len()
            );
            return Err(error_code(e));
        }
        info!("client_id={cname}, action=remount_segment, segments={}", segments.len());
        Ok(())
    }

    /// UnmountSegment: the master drops the segment's replicas; the space goes with it (the
    /// records of its keys are freed by the next reconcile, their placements void already).
    pub(crate) fn unmount(&self, (segment, client): (Uuid, Uuid)) -> Expected<()> {
        let (cname, sname) = (name_of(&client), name_of(&segment));
        self.master.unmount(&cname, &sname).map_err(error_code)?;
        self.note_drops();
        let endpoint = self
            .spaces
            .retire(&sname)
            .map(|s| s.endpoint.clone())
            .unwrap_or_default();
        info!("client_id={cname}, action=unmount_segment, segment_name={endpoint}, segment_id={sname}");
        Ok(())
    }

    /// FetchTasks: `serve` creates no Copy/Move tasks (no RPC to create them is served), so
    /// there are never any to hand out.
    pub(crate) fn fetch_tasks(&self, _: (Uuid, u64)) -> Expected<Vec<TaskAssignment>> {
        Ok(Vec::new())
    }
}
