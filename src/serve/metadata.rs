//! The transfer-metadata store behind `/metadata?key=`: what upstream's built-in HTTP metadata
//! server keeps (Mooncake 3b5a594, `mooncake-store/src/http_metadata_server.cpp`), with its
//! answers, status for status and text for text:
//!
//! | request | answer |
//! |---|---|
//! | any, no `key` (or an empty one) | 400 `Missing key parameter` |
//! | `GET` a key | 200 with the stored body (`Content-Type: application/json`), or 404 `metadata not found` |
//! | `PUT` a key | 200 `metadata updated`; for a key containing `rpc_meta` that is already stored: 200 `metadata unchanged` for the same body, 400 `Duplicate rpc_meta key not allowed` for another |
//! | `DELETE` a key | 200 `metadata deleted`, or 404 `metadata not found` |
//!
//! The transfer engines of the clients keep their endpoints here (`mooncake/rpc_meta/<host:port>`,
//! `mooncake/ram/<host:port>`). Ground rules: one mutex over the map, held for one lookup or
//! insert; nothing else is locked while it is held.

use crate::sync::Mutex;
use std::collections::HashMap;

/// An answer: status and body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Answer {
    /// HTTP status.
    pub(crate) status: u16,
    /// Body.
    pub(crate) body: Vec<u8>,
    /// The body is a stored JSON document (a GET hit).
    pub(crate) json: bool,
}

fn text(status: u16, body: &str) -> Answer {
    Answer {
        status,
        body: body.as_bytes().to_vec(),
        json: false,
    }
}

/// The store.
#[derive(Debug, Default)]
pub(crate) struct MetadataStore {
    map: Mutex<HashMap<String, Vec<u8>>>,
}

impl MetadataStore {
    fn map(&self) -> crate::sync::MutexGuard<'_, HashMap<String, Vec<u8>>> {
        self.map.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `GET /metadata?key=`.
    pub(crate) fn get(&self, key: &str) -> Answer {
        if key.is_empty() {
            return missing_key();
        }
        match self.map().get(key) {
            Some(v) => Answer {
                status: 200,
                body: v.clone(),
                json: true,
            },
            None => text(404, "metadata not found"),
        }
    }

    /// `PUT /metadata?key=` with `body`.
    pub(crate) fn put(&self, key: &str, body: Vec<u8>) -> Answer {
        if key.is_empty() {
            return missing_key();
        }
        let mut map = self.map();
        if key.contains("rpc_meta") {
            if let Some(old) = map.get(key) {
                return if *old == body {
                    text(200, "metadata unchanged")
                } else {
                    text(400, "Duplicate rpc_meta key not allowed")
                };
            }
        }
        map.insert(key.to_string(), body);
        text(200, "metadata updated")
    }

    /// `DELETE /metadata?key=`.
    pub(crate) fn delete(&self, key: &str) -> Answer {
        if key.is_empty() {
            return missing_key();
        }
        match self.map().remove(key) {
            Some(_) => text(200, "metadata deleted"),
            None => text(404, "metadata not found"),
        }
    }

    /// Keys stored.
    pub(crate) fn len(&self) -> usize {
        self.map().len()
    }
}

fn missing_key() -> Answer {
    text(400, "Missing key parameter")
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn answers_as_upstream() {
        let s = MetadataStore::default();
        assert_eq!(s.get("k").status, 404);
        assert_eq!(s.put("mooncake/ram/h:1", b"{}".to_vec()).body, b"metadata updated");
        assert_eq!(s.put("mooncake/ram/h:1", b"{\"a\":1}".to_vec()).status, 200);
        assert_eq!(s.get("mooncake/ram/h:1").body, b"{\"a\":1}");
        let rpc = "mooncake/rpc_meta/h:1";
        assert_eq!(s.put(rpc, b"x".to_vec()).body, b"metadata updated");
        assert_eq!(s.put(rpc, b"x".to_vec()).body, b"metadata unchanged");
        let dup = s.put(rpc, b"y".to_vec());
        assert_eq!(
            (dup.status, dup.body.as_slice()),
            (400, &b"Duplicate rpc_meta key not allowed"[..])
        );
        assert_eq!(s.delete(rpc).body, b"metadata deleted");
        assert_eq!(s.delete(rpc).status, 404);
        assert_eq!(s.get("").status, 400);
        assert_eq!(s.len(), 1);
    }
}
