//! One request frame in, one response frame out: the function id picks the RPC, its arguments
//! are decoded, the handler runs, its reply is encoded. An unknown function id is answered as
//! coro_rpc answers it (err_code 11, "the rpc function not registered"), arguments that do not
//! decode as that RPC's (another client version, a corrupt body) with err_code 4 ("invalid rpc
//! arg"): both byte for byte as the real master (the wire crate's golden tests). Neither closes
//! the connection. No input reaches a handler undecoded, and no handler panics on a decoded
//! value.

use super::log::{info, warning};
use super::rpc_line::{self, Outcome};
use super::state::State;
use mooncake_liveness_wire::frame::{error_response, response, Errc, RequestHeader};
use mooncake_liveness_wire::rpc::{self, Function, Rpc};
use std::time::Instant;

/// Answers one request.
pub(crate) fn handle(state: &State, header: &RequestHeader, body: &[u8], peer: &str) -> Vec<u8> {
    let seq = header.seq;
    let Some(f) = Function::from_id(header.function_id) else {
        warning!(
            "peer={peer}, function_id={:#010x}, action=rpc_function_not_registered",
            header.function_id
        );
        metrics::counter!("mooncake_liveness_serve_rpc_errors_total", "kind" => "unknown_function").increment(1);
        return error_response(seq, Errc::FUNCTION_NOT_REGISTERED);
    };
    let started = Instant::now();
    macro_rules! route {
        ($($name:ident => |$req:pat_param| $call:expr),* $(,)?) => {
            match f {
                $(Function::$name => call::<rpc::$name>(seq, body, peer, |$req| $call),)*
            }
        };
    }
    let out = route! {
        ServiceReady => |()| state.service_ready(),
        GetStorageConfig => |()| state.storage_config(),
        MountSegment => |req| state.mount(req),
        ReMountSegment => |req| state.remount(req),
        UnmountSegment => |req| state.unmount(req),
        Ping => |id| state.ping(id),
        FetchTasks => |req| state.fetch_tasks(req),
        PutStart => |req| state.put_start(req),
        PutEnd => |req| state.put_end(req),
        PutRevoke => |req| state.put_revoke(req),
        BatchPutStart => |req| state.batch_put_start(req),
        BatchPutEnd => |req| state.batch_put_end(req),
        BatchPutRevoke => |req| state.batch_put_revoke(req),
        GetReplicaList => |req| state.get_replica_list(req),
        BatchGetReplicaList => |req| state.batch_get_replica_list(req),
        ExistKey => |req| state.exist_key(req),
        BatchExistKey => |req| state.batch_exist_key(req),
        Remove => |req| state.remove(req),
        BatchRemove => |req| state.batch_remove(req),
        RemoveAll => |req| state.remove_all(req),
    };
    let us = started.elapsed().as_micros() as u64;
    metrics::counter!("mooncake_liveness_serve_rpc_total", "function" => f.name()).increment(1);
    metrics::histogram!("mooncake_liveness_serve_rpc_latency_us", "function" => f.name()).record(us as f64);
    out
}

/// Decodes `body` as `R`'s arguments, runs `run`, encodes its reply. With per-RPC lines on,
/// writes upstream's response line with the handler's latency (from after the decode to the
/// reply, as upstream's timer spans the handler only).
fn call<R: Rpc>(seq: u32, body: &[u8], peer: &str, run: impl FnOnce(R::Request) -> R::Reply) -> Vec<u8>
where
    R::Reply: Outcome,
{
    match R::decode_request(body) {
        Ok(req) => {
            let started = Instant::now();
            let reply = run(req);
            if super::log::rpc_lines() {
                let us = started.elapsed().as_micros() as u64;
                info!("{}", rpc_line::response(R::NAME, &reply, us));
            }
            response(seq, &R::encode_reply(&reply))
        }
        Err(e) => {
            warning!(
                "peer={peer}, function={}, error={e}, action=invalid_rpc_arguments",
                R::NAME
            );
            metrics::counter!("mooncake_liveness_serve_rpc_errors_total", "kind" => "invalid_arguments").increment(1);
            error_response(seq, Errc::INVALID_RPC_ARGUMENTS)
        }
    }
}
