//! The coro_rpc server: accepts connections and answers each one's requests in order.
//!
//! A client keeps several pooled connections (its Ping on one of its own), each served by its
//! own task; a connection's requests are answered one after the other, in the order they came,
//! as coro_rpc's server does. A frame the framing refuses (bad magic, a version above 0, a body
//! over `--max_request_bytes`) or a stream that breaks inside a frame closes that connection
//! only, as coro_rpc closes it; a handler that panicked ends its connection's task, no other.
//! Ping is answered on the worker that read it; every other RPC runs in `block_in_place`, so a
//! request waiting on the master's locks never holds up another connection's Ping.
//!
//! Ground rules: the only state shared between connections is [`State`] (see its rules); the
//! connection gauge is the metrics facade's.

use super::dispatch;
use super::log::warning;
use super::state::State;
use crate::sync::Arc;
use mooncake_liveness_wire::codec::{read_request, write_frame, ReadError};
use mooncake_liveness_wire::rpc::Function;
use tokio::io::BufReader;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// Accepts connections on `listener` until `stop` turns true.
pub(crate) async fn serve(listener: TcpListener, state: Arc<State>, limit: u64, mut stop: watch::Receiver<bool>) {
    loop {
        tokio::select! {
            _ = stop.changed() => return,
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    let state = state.clone();
                    tokio::spawn(async move {
                        metrics::gauge!("mooncake_liveness_serve_connections").increment(1.0);
                        connection(stream, peer.to_string(), state, limit).await;
                        metrics::gauge!("mooncake_liveness_serve_connections").decrement(1.0);
                    });
                }
                Err(e) => {
                    // Out of descriptors and the like: wait a little instead of spinning.
                    warning!("action=rpc_accept_failed, error={e}");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                }
            }
        }
    }
}

async fn connection(stream: TcpStream, peer: String, state: Arc<State>, limit: u64) {
    let _ = stream.set_nodelay(true);
    let (rd, mut wr) = stream.into_split();
    let mut rd = BufReader::new(rd);
    let mut buf = Vec::new();
    loop {
        let header = match read_request(&mut rd, &mut buf, limit).await {
            Ok(Some(h)) => h,
            Ok(None) => return,
            Err(ReadError::Frame(e)) => {
                warning!("peer={peer}, error={e}, action=rpc_connection_closed");
                metrics::counter!("mooncake_liveness_serve_rpc_errors_total", "kind" => "frame").increment(1);
                return;
            }
            Err(ReadError::Io(_)) | Err(_) => return,
        };
        let body = &buf[..header.length as usize];
        // Ping answers on the worker that read it (it takes no lock). Any other request may
        // wait on the master's locks: `block_in_place` first hands this worker's other tasks
        // (other connections' Pings among them) to another worker, so no Ping waits behind it.
        let frame = if header.function_id == Function::Ping.id() {
            dispatch::handle(&state, &header, body, &peer)
        } else {
            tokio::task::block_in_place(|| dispatch::handle(&state, &header, body, &peer))
        };
        if write_frame(&mut wr, &frame).await.is_err() {
            return;
        }
    }
}
