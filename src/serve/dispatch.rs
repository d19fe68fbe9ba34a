//! One request frame in, one response frame out: the function id picks the RPC, its arguments
//! are decoded, the handler runs, its reply is encoded. An unknown function id is answered as
//! coro_rpc answers it (err_code 11, "the rpc function not registered"), arguments that do not
//! decode as that RPC's (another client version, a corrupt body) with err_code 4 ("invalid rpc
//! arg"): both byte for byte as the real master (the wire crate's golden tests). Neither closes
//! the connection. No input reaches a handler undecoded, and no handler panics on a decoded
//! value.
//!
//! With `--vmodule=scoped_vlog_timer=1` every RPC logs a `<Name> request: <fields>` line when
//! its handler starts and a `<Name> response: ...` line when it ends (`rpc_line`), on the thread that ran it, with the fields upstream's
//! `ScopedVLogTimer` logs (`rpc_service.cpp`, Mooncake 3b5a594; the same lines in the real
//! 0.3.14 master's log): a reader of the real master's log reads ours.

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
    // Each RPC: its handler, and the fields of its request line.
    macro_rules! route {
        ($($name:ident => |$req:pat_param| $call:expr, |$d:pat_param| $fields:expr),* $(,)?) => {
            match f {
                $(Function::$name => call::<rpc::$name>(
                    seq,
                    body,
                    peer,
                    |$d: &<rpc::$name as Rpc>::Request| $fields,
                    |$req| $call,
                ),)*
            }
        };
    }
    let out = route! {
        ServiceReady => |()| state.service_ready(), |()| "action=service_ready".to_string(),
        GetStorageConfig => |()| state.storage_config(), |()| "action=get_storage_config".to_string(),
        MountSegment => |req| state.mount(req), |(seg, _)| format!(
            "base={}, size={}, segment_name={}, id={}", seg.base, seg.size, seg.name, seg.id
        ),
        ReMountSegment => |req| state.remount(req), |(segs, client)| format!(
            "segments_count={}, client_id={client}", segs.len()
        ),
        UnmountSegment => |req| state.unmount(req), |(seg, client)| format!("segment_id={seg}, client_id={client}"),
        Ping => |id| state.ping(id), |id| format!("client_id={id}"),
        FetchTasks => |req| state.fetch_tasks(req), |(client, n)| format!("client_id={client}, batch_size={n}"),
        PutStart => |req| state.put_start(req), |(client, key, size, _, _)| format!(
            "client_id={client}, key={key}, slice_length={size}"
        ),
        PutEnd => |req| state.put_end(req), |(client, meta, rt, _)| format!(
            "client_id={client}, key={}, replica_type={rt}", meta.key
        ),
        PutRevoke => |req| state.put_revoke(req), |(client, key, rt, _)| format!(
            "client_id={client}, key={key}, replica_type={rt}"
        ),
        BatchPutStart => |req| state.batch_put_start(req), |(client, keys, _, _, _)| format!(
            "client_id={client}, keys_count={}", keys.len()
        ),
        BatchPutEnd => |req| state.batch_put_end(req), |(client, metas, _, _)| format!(
            "client_id={client}, keys_count={}", metas.len()
        ),
        BatchPutRevoke => |req| state.batch_put_revoke(req), |(client, keys, _, _)| format!(
            "client_id={client}, keys_count={}", keys.len()
        ),
        GetReplicaList => |req| state.get_replica_list(req), |(key, _)| format!("key={key}"),
        BatchGetReplicaList => |req| state.batch_get_replica_list(req), |(keys, _)| format!("keys_count={}", keys.len()),
        ExistKey => |req| state.exist_key(req), |(key, _)| format!("key={key}"),
        BatchExistKey => |req| state.batch_exist_key(req), |(keys, _)| format!("keys_count={}", keys.len()),
        Remove => |req| state.remove(req), |(key, force, _)| format!("key={key}, force={force}"),
        BatchRemove => |req| state.batch_remove(req), |(keys, force, _)| format!(
            "keys_count={}, force={force}", keys.len()
        ),
        RemoveAll => |req| state.remove_all(req), |(force, _)| format!("force={force}"),
    };
    let us = started.elapsed().as_micros() as u64;
    metrics::counter!("mooncake_liveness_serve_rpc_total", "function" => f.name()).increment(1);
    metrics::histogram!("mooncake_liveness_serve_rpc_latency_us", "function" => f.name()).record(us as f64);
    out
}

/// Decodes `body` as `R`'s arguments, runs `run`, encodes its reply. With per-RPC lines on,
/// logs the request line (`fields`) before `run` and upstream's response line after it, with
/// the handler's latency (from after the decode to the reply, as upstream's timer spans the
/// handler only).
fn call<R: Rpc>(
    seq: u32,
    body: &[u8],
    peer: &str,
    fields: impl FnOnce(&R::Request) -> String,
    run: impl FnOnce(R::Request) -> R::Reply,
) -> Vec<u8>
where
    R::Reply: Outcome,
{
    match R::decode_request(body) {
        Ok(req) => {
            let lines = super::log::rpc_lines();
            if lines {
                info!("{} request: {}", R::NAME, fields(&req));
            }
            let started = Instant::now();
            let reply = run(req);
            if lines {
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
