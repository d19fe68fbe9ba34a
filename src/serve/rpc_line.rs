//! The per-RPC response line (`--vmodule=scoped_vlog_timer=1`), in the shape upstream's
//! `ScopedVLogTimer::LogResponseExpected` writes it (`mooncake-store/include/utils/
//! scoped_vlog_timer.h:81-94`, `utils.h:124-138` `expected_to_str` at 3b5a59413):
//! `<Name> response: status=success, value=<value>, latency=<n>us` or
//! `<Name> response: status=failed, error=<ErrorCode>, latency=<n>us`, so that a harness that
//! reads the real master's log reads ours. The batch forms answer a vector, written as
//! upstream's batch handlers write theirs (`total=<n>, success=<n>, failures=<n>`,
//! `rpc_service.cpp:151-153`); RemoveAll as `items_removed=<n>` (`rpc_service.cpp:892`).
//!
//! Values: `void`, the Ping reply as upstream's JSON (`{"view_version_id":0,"client_status":1}`,
//! which harnesses test for the status), booleans and strings as themselves; other values are
//! summarised (`{...}`, `[<n> items]`): upstream writes them whole, and nothing reads them.
//!
//! Ground rules: formatting only; no shared state.

use mooncake_liveness_wire::rpc::Expected;
use mooncake_liveness_wire::types::{GetReplicaListResponse, GetStorageConfigResponse, PingResponse};
use std::fmt::Write;

/// How a reply reads on the response line.
pub(crate) trait Outcome {
    /// Appends `status=...` (or a batch's counts) to `out`.
    fn outcome(&self, out: &mut String);
    /// Did this reply fail (for a batch's `failures`)?
    fn failed(&self) -> bool;
}

/// How a successful value reads after `value=`.
pub(crate) trait Shown {
    /// Appends the value to `out`.
    fn shown(&self, out: &mut String);
}

impl<T: Shown> Outcome for Expected<T> {
    fn outcome(&self, out: &mut String) {
        match self {
            Ok(v) => {
                out.push_str("status=success, value=");
                v.shown(out);
            }
            Err(e) => {
                let _ = write!(out, "status=failed, error={e}");
            }
        }
    }
    fn failed(&self) -> bool {
        self.is_err()
    }
}

impl<T: Outcome> Outcome for Vec<T> {
    fn outcome(&self, out: &mut String) {
        let failures = self.iter().filter(|r| r.failed()).count();
        let _ = write!(
            out,
            "total={}, success={}, failures={failures}",
            self.len(),
            self.len() - failures
        );
    }
    fn failed(&self) -> bool {
        false
    }
}

impl Outcome for i64 {
    fn outcome(&self, out: &mut String) {
        let _ = write!(out, "items_removed={self}");
    }
    fn failed(&self) -> bool {
        *self < 0
    }
}

impl Shown for () {
    fn shown(&self, out: &mut String) {
        out.push_str("void");
    }
}

impl Shown for PingResponse {
    fn shown(&self, out: &mut String) {
        let _ = write!(
            out,
            r#"{{"view_version_id":{},"client_status":{}}}"#,
            self.view_version_id, self.client_status.0
        );
    }
}

impl Shown for bool {
    fn shown(&self, out: &mut String) {
        out.push_str(if *self { "true" } else { "false" });
    }
}

impl Shown for String {
    fn shown(&self, out: &mut String) {
        out.push_str(self);
    }
}

impl<T> Shown for Vec<T> {
    fn shown(&self, out: &mut String) {
        let _ = write!(out, "[{} items]", self.len());
    }
}

impl Shown for GetStorageConfigResponse {
    fn shown(&self, out: &mut String) {
        out.push_str("{...}");
    }
}

impl Shown for GetReplicaListResponse {
    fn shown(&self, out: &mut String) {
        out.push_str("{...}");
    }
}

/// The whole response line's message (without glog's prefix).
pub(crate) fn response(name: &str, reply: &impl Outcome, latency_us: u64) -> String {
    let mut out = format!("{name} response: ");
    reply.outcome(&mut out);
    let _ = write!(out, ", latency={latency_us}us");
    out
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use mooncake_liveness_wire::enums::{ClientStatus, ErrorCode};

    #[test]
    fn lines_read_as_upstreams() {
        let ping: Expected<PingResponse> = Ok(PingResponse {
            view_version_id: 0,
            client_status: ClientStatus::OK,
        });
        assert_eq!(
            response("Ping", &ping, 25),
            r#"Ping response: status=success, value={"view_version_id":0,"client_status":1}, latency=25us"#
        );
        let remount: Expected<()> = Ok(());
        assert_eq!(
            response("ReMountSegment", &remount, 7),
            "ReMountSegment response: status=success, value=void, latency=7us"
        );
        let refused: Expected<()> = Err(ErrorCode::OBJECT_HAS_LEASE);
        assert_eq!(
            response("Remove", &refused, 3),
            "Remove response: status=failed, error=OBJECT_HAS_LEASE, latency=3us"
        );
        let batch: Vec<Expected<bool>> = vec![Ok(true), Err(ErrorCode::OBJECT_NOT_FOUND), Ok(false)];
        assert_eq!(
            response("BatchExistKey", &batch, 9),
            "BatchExistKey response: total=3, success=2, failures=1, latency=9us"
        );
        assert_eq!(
            response("RemoveAll", &4i64, 1),
            "RemoveAll response: items_removed=4, latency=1us"
        );
    }
}
