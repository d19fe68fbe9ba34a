//! The two HTTP servers: the transfer-metadata server (`/metadata?key=`, `/health`; upstream's
//! API, see [`metadata`](super::metadata)) when `--enable_http_metadata_server`, and the metrics
//! server (`GET /metrics`, Prometheus text, with the real master's
//! `segment_total_capacity_bytes{segment=...}`; `GET /health`). HTTP/1.1 with keep-alive (hyper);
//! request bodies above [`MAX_BODY`] are answered 413.
//!
//! Ground rules: each connection is its own task; what they share is the metadata store (one
//! mutex, see its rules) and the Prometheus handle (lock-free reads of the recorder).

use super::log::warning;
use super::metadata::{Answer, MetadataStore};
use super::state::State;
use crate::sync::Arc;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use metrics_exporter_prometheus::PrometheusHandle;
use tokio::net::TcpListener;
use tokio::sync::watch;

/// Largest metadata body accepted, bytes.
pub(crate) const MAX_BODY: usize = 16 << 20;

/// What one server answers.
#[derive(Clone, Debug)]
pub(crate) enum Site {
    /// `/metadata` and `/health`.
    Metadata(Arc<MetadataStore>),
    /// `/metrics` and `/health`: the recorder's metrics, then the state's own lines
    /// ([`upstream_lines`]).
    Metrics(PrometheusHandle, Arc<State>),
}

/// Serves `site` on `listener` until `stop` turns true.
pub(crate) async fn serve(listener: TcpListener, site: Site, mut stop: watch::Receiver<bool>) {
    loop {
        tokio::select! {
            _ = stop.changed() => return,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    let site = site.clone();
                    tokio::spawn(async move {
                        let service = hyper::service::service_fn(move |req| {
                            let site = site.clone();
                            async move { Ok::<_, std::convert::Infallible>(answer(&site, req).await) }
                        });
                        let _ = hyper::server::conn::http1::Builder::new()
                            .serve_connection(TokioIo::new(stream), service)
                            .await;
                    });
                }
                Err(e) => {
                    warning!("action=http_accept_failed, error={e}");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                }
            }
        }
    }
}

fn reply(status: u16, body: Vec<u8>, content_type: &str) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from(body)));
    *r.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    if let Ok(v) = content_type.parse() {
        r.headers_mut().insert(hyper::header::CONTENT_TYPE, v);
    }
    r
}

fn text(status: u16, body: &str) -> Response<Full<Bytes>> {
    reply(status, body.as_bytes().to_vec(), "text/plain")
}

async fn answer(site: &Site, req: Request<Incoming>) -> Response<Full<Bytes>> {
    let path = req.uri().path().to_string();
    match (site, req.method(), path.as_str()) {
        (_, &Method::GET, "/health") => text(200, "OK"),
        (Site::Metrics(handle, state), &Method::GET, "/metrics") => {
            let mut text = handle.render();
            upstream_lines(state, &mut text);
            reply(200, text.into_bytes(), "text/plain; version=0.0.4")
        }
        (Site::Metadata(store), _, "/metadata") => metadata(store, req).await,
        _ => text(404, "not found"),
    }
}

/// The real master's per-segment capacity gauge, one line per segment mounted now (written at
/// each scrape, so a segment's line is gone as soon as the segment is: what a harness written
/// for `mooncake_master` reads to see whether a client's segment is mounted).
fn upstream_lines(state: &State, out: &mut String) {
    use std::fmt::Write;
    out.push_str("# TYPE segment_total_capacity_bytes gauge\n");
    for s in state.spaces.all() {
        let _ = writeln!(
            out,
            "segment_total_capacity_bytes{{segment=\"{}\"}} {}",
            s.endpoint, s.size
        );
    }
}

async fn metadata(store: &MetadataStore, req: Request<Incoming>) -> Response<Full<Bytes>> {
    let key = req
        .uri()
        .query()
        .and_then(|q| query_value(q, "key"))
        .unwrap_or_default();
    let answered: Answer = match req.method().clone() {
        Method::GET => store.get(&key),
        Method::DELETE => store.delete(&key),
        Method::PUT => match Limited::new(req.into_body(), MAX_BODY).collect().await {
            Ok(body) => store.put(&key, body.to_bytes().to_vec()),
            Err(_) => return text(413, "metadata body too large"),
        },
        _ => return text(405, "method not allowed"),
    };
    let content_type = if answered.json {
        "application/json"
    } else {
        "text/plain"
    };
    reply(answered.status, answered.body, content_type)
}

/// The percent-decoded value of `name` in a query string.
fn query_value(query: &str, name: &str) -> Option<String> {
    query.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        (percent_decode(k) == name).then(|| percent_decode(v))
    })
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let hex = |c: u8| (c as char).to_digit(16);
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 3 <= b.len() {
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn query_values_are_percent_decoded() {
        assert_eq!(
            query_value("key=mooncake%2Frpc_meta%2F192.0.2.1%3A123", "key").as_deref(),
            Some("mooncake/rpc_meta/192.0.2.1:123")
        );
        assert_eq!(query_value("a=1&key=k", "key").as_deref(), Some("k"));
        assert_eq!(query_value("key=", "key").as_deref(), Some(""));
        assert_eq!(query_value("other=1", "key"), None);
        assert_eq!(percent_decode("50%"), "50%");
        assert_eq!(percent_decode("%4"), "%4");
        assert_eq!(percent_decode("%zz"), "%zz");
    }
}
