//! Every exchange recorded between the real 0.3.13.post1 client and the real master
//! (`tests/data/exchanges.jsonl`, see its README) decodes with this crate and re-encodes to the
//! same bytes: requests (which our server must read) and replies (which it must produce).

use mooncake_liveness_wire::enums::{ClientStatus, ErrorCode};
use mooncake_liveness_wire::frame::{
    error_response, response, split_request, split_response, Errc, FrameError, RequestHeader, REQUEST_HEADER_LEN,
    RESPONSE_HEADER_LEN,
};
use mooncake_liveness_wire::rpc::{self, Function, Rpc};
use mooncake_liveness_wire::types::{DescriptorVariant, Segment};
use std::collections::BTreeSet;

const LIMIT: u64 = 1 << 30;

struct Exchange {
    name: String,
    rpc: String,
    request: Vec<u8>,
    reply: Vec<u8>,
    closed: bool,
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn exchanges() -> Vec<Exchange> {
    let text = include_str!("data/exchanges.jsonl");
    text.lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            Exchange {
                name: v["name"].as_str().unwrap().to_string(),
                rpc: v["rpc"].as_str().unwrap().to_string(),
                request: hex(v["request"].as_str().unwrap()),
                reply: hex(v["reply"].as_str().unwrap()),
                closed: v["closed"].as_bool().unwrap_or(false),
            }
        })
        .collect()
}

/// Decodes `x`'s request and reply as `R`, checks both re-encode to the captured bytes and
/// returns the decoded pair.
fn replay<R: Rpc>(x: &Exchange) -> (R::Request, R::Reply)
where
    R::Request: std::fmt::Debug,
    R::Reply: std::fmt::Debug,
{
    let req = split_request(&x.request, LIMIT).unwrap().unwrap();
    assert_eq!(req.len, x.request.len(), "{}: one whole request frame", x.name);
    let body = &x.request[REQUEST_HEADER_LEN..][..req.header.length as usize];
    let args = R::decode_request(body).unwrap_or_else(|e| panic!("{} {}: request: {e}", x.name, R::NAME));
    assert_eq!(
        R::encode_request(&args),
        body,
        "{} {}: request re-encoded",
        x.name,
        R::NAME
    );

    let rep = split_response(&x.reply, LIMIT).unwrap().unwrap();
    assert_eq!((rep.len, rep.header.err_code), (x.reply.len(), 0), "{}", x.name);
    assert_eq!(rep.header.seq, req.header.seq, "{}: the reply echoes the seq", x.name);
    let body = &x.reply[RESPONSE_HEADER_LEN..];
    let reply = R::decode_reply(body).unwrap_or_else(|e| panic!("{} {}: reply: {e}", x.name, R::NAME));
    let ours = response(rep.header.seq, &R::encode_reply(&reply));
    assert_eq!(
        ours,
        x.reply,
        "{} {}: our reply frame differs from the master's",
        x.name,
        R::NAME
    );
    (args, reply)
}

/// What one exchange decoded to, for the semantic checks below.
#[derive(Debug)]
enum Seen {
    ServiceReady(String),
    Mount(Segment),
    Ping(ClientStatus),
    PutStart(Vec<DescriptorVariant>),
    Remove(Result<(), ErrorCode>),
    Lease(u64),
    Other,
}

fn replay_any(f: Function, x: &Exchange) -> Seen {
    use Function as F;
    match f {
        F::ServiceReady => Seen::ServiceReady(replay::<rpc::ServiceReady>(x).1.unwrap()),
        F::GetStorageConfig => {
            let cfg = replay::<rpc::GetStorageConfig>(x).1.unwrap();
            assert_eq!((cfg.fsdir.as_str(), cfg.quota_bytes), ("", 0));
            Seen::Other
        }
        F::MountSegment => Seen::Mount(replay::<rpc::MountSegment>(x).0 .0),
        F::ReMountSegment => {
            let ((segments, _), reply) = replay::<rpc::ReMountSegment>(x);
            assert_eq!((segments.len(), reply), (1, Ok(())));
            Seen::Other
        }
        F::UnmountSegment => Seen::Remove(replay::<rpc::UnmountSegment>(x).1),
        F::Ping => Seen::Ping(replay::<rpc::Ping>(x).1.unwrap().client_status),
        F::FetchTasks => {
            let ((_, batch), tasks) = replay::<rpc::FetchTasks>(x);
            assert_eq!((batch, tasks), (16, Ok(vec![])));
            Seen::Other
        }
        F::PutStart => {
            let (args, reply) = replay::<rpc::PutStart>(x);
            assert_eq!(args.3.replica_num, 1, "{}", x.name);
            match reply {
                Ok(descs) => Seen::PutStart(descs.into_iter().map(|d| d.descriptor).collect()),
                Err(e) => Seen::Remove(Err(e)),
            }
        }
        F::PutEnd => Seen::Remove(replay::<rpc::PutEnd>(x).1),
        F::PutRevoke => Seen::Remove(replay::<rpc::PutRevoke>(x).1),
        F::BatchPutStart => {
            let (args, reply) = replay::<rpc::BatchPutStart>(x);
            assert_eq!(args.1.len(), reply.len());
            Seen::Other
        }
        F::BatchPutEnd => {
            replay::<rpc::BatchPutEnd>(x);
            Seen::Other
        }
        F::BatchPutRevoke => {
            replay::<rpc::BatchPutRevoke>(x);
            Seen::Other
        }
        F::GetReplicaList => match replay::<rpc::GetReplicaList>(x).1 {
            Ok(r) => Seen::Lease(r.lease_ttl_ms),
            Err(e) => Seen::Remove(Err(e)),
        },
        F::BatchGetReplicaList => {
            let (args, reply) = replay::<rpc::BatchGetReplicaList>(x);
            assert_eq!(args.0.len(), reply.len());
            Seen::Other
        }
        F::ExistKey => {
            let ((key, _), reply) = replay::<rpc::ExistKey>(x);
            assert_eq!(reply, Ok(key != "missing"));
            Seen::Other
        }
        F::BatchExistKey => {
            let (args, reply) = replay::<rpc::BatchExistKey>(x);
            assert_eq!(args.0.len(), reply.len());
            Seen::Other
        }
        F::Remove => Seen::Remove(replay::<rpc::Remove>(x).1),
        F::BatchRemove => {
            replay::<rpc::BatchRemove>(x);
            Seen::Other
        }
        F::RemoveAll => {
            replay::<rpc::RemoveAll>(x);
            Seen::Other
        }
    }
}

#[test]
fn every_captured_exchange_decodes_and_re_encodes_byte_for_byte() {
    let all = exchanges();
    let mut rpcs = BTreeSet::new();
    let mut statuses = BTreeSet::new();
    let mut segment = None;
    for x in all.iter().filter(|x| x.rpc != "raw") {
        let head = split_request(&x.request, LIMIT).unwrap().unwrap().header;
        let f = Function::from_id(head.function_id).unwrap_or_else(|| panic!("{}: unknown id", x.rpc));
        assert_eq!(f.name(), x.rpc);
        rpcs.insert(f.name());
        match (replay_any(f, x), x.name.as_str()) {
            (Seen::ServiceReady(v), _) => assert_eq!(v, "2.0.0"),
            (Seen::Mount(s), _) => segment = Some(s),
            (Seen::Ping(s), _) => {
                statuses.insert(s.0);
            }
            (Seen::PutStart(descs), "put" | "put_long_key" | "after_restart_put") => {
                let seg = segment.as_ref().expect("MountSegment comes first");
                for d in descs {
                    let DescriptorVariant::Memory(m) = d else {
                        panic!("{d:?}")
                    };
                    let b = m.buffer_descriptor;
                    assert!(
                        b.buffer_address >= seg.base && b.buffer_address + b.size <= seg.base + seg.size,
                        "{b:?} outside {seg:?}"
                    );
                    assert_eq!(b.transport_endpoint, seg.name);
                }
            }
            (Seen::Remove(r), "remove_lease") => assert_eq!(r, Err(ErrorCode::OBJECT_HAS_LEASE)),
            (Seen::Remove(r), "remove_missing") => assert_eq!(r, Err(ErrorCode::OBJECT_NOT_FOUND)),
            (Seen::Remove(r), "put_exists") => assert_eq!(r, Err(ErrorCode::OBJECT_ALREADY_EXISTS)),
            (Seen::Remove(r), "get_missing") => assert_eq!(r, Err(ErrorCode::OBJECT_NOT_FOUND)),
            (Seen::Remove(r), "put" | "remove" | "remove_force" | "close") => assert_eq!(r, Ok(())),
            (Seen::Lease(ms), _) => assert_eq!(ms, 2000, "the capture ran with --default_kv_lease_ttl=2000"),
            _ => {}
        }
    }
    let seg = segment.expect("a MountSegment");
    assert_eq!(seg.size, 64 << 20);
    assert_eq!(
        statuses,
        BTreeSet::from([ClientStatus::OK.0, ClientStatus::NEED_REMOUNT.0])
    );
    let every: BTreeSet<&str> = Function::ALL.iter().map(|f| f.name()).collect();
    assert_eq!(rpcs, every, "every RPC of the table is in the captures");
}

/// The exchanges the driver sent the master itself: our error replies are the master's bytes,
/// our decoders refuse the same bodies, and a bad magic byte is a frame error (the master
/// closed the connection).
#[test]
fn raw_exchanges_match_our_error_handling() {
    let all = exchanges();
    let raw = |name: &str| all.iter().find(|x| x.name == name).unwrap_or_else(|| panic!("{name}"));

    let x = raw("raw_unknown_function");
    let head = split_request(&x.request, LIMIT).unwrap().unwrap().header;
    assert_eq!(Function::from_id(head.function_id), None);
    assert_eq!(error_response(head.seq, Errc::FUNCTION_NOT_REGISTERED), x.reply);

    for name in ["raw_ping_garbage_body", "raw_ping_empty_body"] {
        let x = raw(name);
        let head = split_request(&x.request, LIMIT).unwrap().unwrap().header;
        assert_eq!(Function::from_id(head.function_id), Some(Function::Ping));
        assert!(
            rpc::Ping::decode_request(&x.request[REQUEST_HEADER_LEN..]).is_err(),
            "{name}"
        );
        assert_eq!(error_response(head.seq, Errc::INVALID_RPC_ARGUMENTS), x.reply, "{name}");
    }

    let x = raw("raw_bad_magic");
    assert!(x.closed && x.reply.is_empty());
    let head: [u8; REQUEST_HEADER_LEN] = x.request[..REQUEST_HEADER_LEN].try_into().unwrap();
    assert_eq!(RequestHeader::parse(&head, LIMIT), Err(FrameError::BadMagic(0x16)));
}

/// A 300-byte key widens every length of the message to two bytes (meta 0x0c), as captured.
#[test]
fn a_long_key_is_sent_with_two_byte_lengths() {
    let all = exchanges();
    let x = all
        .iter()
        .find(|x| x.name == "get_long_key" && x.rpc == "GetReplicaList")
        .unwrap();
    assert_eq!(x.request[REQUEST_HEADER_LEN + 4], 0x0c);
    let (args, _) = replay::<rpc::GetReplicaList>(x);
    assert_eq!(args.0, "L".repeat(300));
}
