//! `mooncake-liveness serve` driven over the wire by a client built on the wire crate: the
//! binary is started on loopback with ephemeral ports (`--port=0 --metrics_port=0`), and each
//! test speaks coro_rpc to it as the 0.3.13.post1 client does (the real client's own runs are
//! `scripts/serve_real.sh`, in a network namespace). Covers the mount/ReMount/Ping protocol,
//! placement inside the segment, leases, the batch forms, malformed frames (the server stays
//! up and keeps serving the other connections), concurrent clients, and offboarding of a
//! client that stopped pinging.

use mooncake_liveness_wire::enums::{ClientStatus, ErrorCode, ReplicaStatus, ReplicaType};
use mooncake_liveness_wire::frame::{RequestHeader, ResponseHeader, RESPONSE_HEADER_LEN};
use mooncake_liveness_wire::rpc::{self, Function, Rpc};
use mooncake_liveness_wire::types::{DescriptorVariant, ObjectMeta, ReplicaDescriptor, ReplicateConfig, Segment, Uuid};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A running `serve` and its log.
struct Server {
    child: Child,
    rpc: String,
    log: Arc<Mutex<String>>,
}

impl Server {
    fn start(extra: &[&str]) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_mooncake-liveness"))
            .args([
                "serve",
                "--rpc_address=127.0.0.1",
                "--port=0",
                "--metrics_host=127.0.0.1",
                "--metrics_port=0",
            ])
            .args(extra)
            .stderr(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .expect("start serve");
        let log = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let stderr = child.stderr.take().unwrap();
        let sink = log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(rest) = line.split("action=serve_started, rpc=").nth(1) {
                    let _ = tx.send(rest.split(',').next().unwrap().to_string());
                }
                sink.lock().unwrap().push_str(&(line + "\n"));
            }
        });
        let rpc = rx.recv_timeout(Duration::from_secs(20)).expect("serve did not start");
        Self { child, rpc, log }
    }

    fn connect(&self) -> Conn {
        let s = TcpStream::connect(&self.rpc).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.set_nodelay(true).unwrap();
        Conn { s, seq: 0 }
    }

    fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One coro_rpc connection.
struct Conn {
    s: TcpStream,
    seq: u32,
}

impl Conn {
    /// Sends raw bytes; returns the response (header, body), or `None` if the server closed.
    fn raw(&mut self, frame: &[u8]) -> Option<(ResponseHeader, Vec<u8>)> {
        self.s.write_all(frame).ok()?;
        let mut head = [0u8; RESPONSE_HEADER_LEN];
        self.s.read_exact(&mut head).ok()?;
        let h = ResponseHeader::parse(&head, 1 << 30).unwrap();
        let mut body = vec![0; h.length as usize];
        self.s.read_exact(&mut body).ok()?;
        Some((h, body))
    }

    fn call<R: Rpc>(&mut self, req: &R::Request) -> R::Reply {
        self.seq += 1;
        let body = R::encode_request(req);
        let mut frame = RequestHeader::new(self.seq, R::FUNCTION.id(), body.len() as u32)
            .to_bytes()
            .to_vec();
        frame.extend_from_slice(&body);
        let (h, body) = self.raw(&frame).expect("connection closed");
        assert_eq!((h.err_code, h.seq), (0, self.seq), "{}", R::NAME);
        R::decode_reply(&body).unwrap()
    }
}

fn uuid(n: u64) -> Uuid {
    Uuid {
        first: n,
        second: n * 31 + 7,
    }
}

/// A segment as a client with the P2P handshake mounts it: its name (`ip:port` given to
/// `setup`) and its transfer engine's endpoint differ.
fn segment(n: u64, base: u64, size: u64) -> Segment {
    Segment {
        id: uuid(1000 + n),
        name: format!("127.0.0.1:{}", 20_000 + n),
        base,
        size,
        te_endpoint: format!("127.0.0.1:{}", 30_000 + n),
        protocol: "tcp".into(),
        host_id: "127.0.0.1".into(),
    }
}

fn config() -> ReplicateConfig {
    ReplicateConfig::memory(1)
}

const T: &str = "default";

/// Mounts `seg` for `client` the way the client does (Mount, a Ping answered NEED_REMOUNT,
/// ReMount, then Ping OK).
fn join(c: &mut Conn, client: Uuid, seg: &Segment) {
    assert_eq!(c.call::<rpc::MountSegment>(&(seg.clone(), client)), Ok(()));
    let status = |c: &mut Conn| c.call::<rpc::Ping>(&client).unwrap().client_status;
    assert_eq!(
        status(c),
        ClientStatus::NEED_REMOUNT,
        "a mounted, not yet remounted client"
    );
    assert_eq!(c.call::<rpc::ReMountSegment>(&(vec![seg.clone()], client)), Ok(()));
    assert_eq!(status(c), ClientStatus::OK);
}

fn put(c: &mut Conn, client: Uuid, key: &str, size: u64) -> Result<ReplicaDescriptor, ErrorCode> {
    let d = c.call::<rpc::PutStart>(&(client, key.into(), size, config(), T.into()))?;
    assert_eq!(d.len(), 1);
    let end = (
        client,
        ObjectMeta {
            key: key.into(),
            object_checksum: Some(7),
        },
        ReplicaType::ALL,
        T.into(),
    );
    assert_eq!(c.call::<rpc::PutEnd>(&end), Ok(()));
    Ok(d.into_iter().next().unwrap())
}

/// (address, size) of a memory descriptor.
fn place(d: &ReplicaDescriptor) -> (u64, u64) {
    let DescriptorVariant::Memory(m) = &d.descriptor else {
        panic!("{d:?}")
    };
    (m.buffer_descriptor.buffer_address, m.buffer_descriptor.size)
}

#[test]
fn mount_put_get_lease_remove_over_the_wire() {
    let server = Server::start(&["--default_kv_lease_ttl=300", "--vmodule=scoped_vlog_timer=1"]);
    let mut c = server.connect();
    assert_eq!(c.call::<rpc::ServiceReady>(&()), Ok("2.0.0".to_string()));
    let client = uuid(1);
    assert_eq!(
        c.call::<rpc::Ping>(&client).unwrap().client_status,
        ClientStatus::NEED_REMOUNT
    );
    let seg = segment(1, 0x7f00_0000_0000, 1 << 20);
    join(&mut c, client, &seg);

    let d = c
        .call::<rpc::PutStart>(&(client, "k".into(), 1000, config(), T.into()))
        .unwrap();
    let DescriptorVariant::Memory(m) = &d[0].descriptor else {
        panic!()
    };
    let b = &m.buffer_descriptor;
    assert!(b.buffer_address >= seg.base && b.buffer_address + 1000 <= seg.base + seg.size);
    // Where the client's transfer engine takes the write: its te_endpoint, not the segment's
    // name (they differ with the P2P handshake; upstream's allocator is given te_endpoint).
    assert_eq!(
        (b.transport_endpoint.as_str(), b.protocol.as_str()),
        (seg.te_endpoint.as_str(), "tcp")
    );
    assert_eq!(d[0].status, ReplicaStatus::PROCESSING);
    let again = c.call::<rpc::PutStart>(&(client, "k".into(), 1000, config(), T.into()));
    assert_eq!(again, Err(ErrorCode::OBJECT_ALREADY_EXISTS));
    let meta = ObjectMeta {
        key: "k".into(),
        object_checksum: Some(42),
    };
    assert_eq!(
        c.call::<rpc::PutEnd>(&(client, meta, ReplicaType::ALL, T.into())),
        Ok(())
    );

    let got = c.call::<rpc::GetReplicaList>(&("k".into(), T.into())).unwrap();
    assert_eq!((got.lease_ttl_ms, got.object_checksum), (300, Some(42)));
    assert_eq!(
        (got.replicas[0].id, place(&got.replicas[0])),
        (d[0].id, (b.buffer_address, 1000))
    );
    assert_eq!(got.replicas[0].status, ReplicaStatus::COMPLETE);
    assert_eq!(c.call::<rpc::ExistKey>(&("k".into(), T.into())), Ok(true));
    assert_eq!(
        c.call::<rpc::Remove>(&("k".into(), false, T.into())),
        Err(ErrorCode::OBJECT_HAS_LEASE)
    );
    std::thread::sleep(Duration::from_millis(350));
    assert_eq!(c.call::<rpc::Remove>(&("k".into(), false, T.into())), Ok(()));
    assert_eq!(
        c.call::<rpc::GetReplicaList>(&("k".into(), T.into())).map(|_| ()),
        Err(ErrorCode::OBJECT_NOT_FOUND)
    );
    assert_eq!(c.call::<rpc::ExistKey>(&("k".into(), T.into())), Ok(false));

    // A revoked put frees its range: the same size fits again at once.
    let d = c
        .call::<rpc::PutStart>(&(client, "r".into(), 1 << 20, config(), T.into()))
        .unwrap();
    assert_eq!(place(&d[0]), (seg.base, 1 << 20), "the whole segment");
    assert_eq!(
        c.call::<rpc::PutRevoke>(&(client, "r".into(), ReplicaType::ALL, T.into())),
        Ok(())
    );
    put(&mut c, client, "r2", 1 << 20).unwrap();
    assert_eq!(c.call::<rpc::Remove>(&("r2".into(), true, T.into())), Ok(()));
    assert_eq!(c.call::<rpc::UnmountSegment>(&(seg.id, client)), Ok(()));
    // `--vmodule=scoped_vlog_timer=1`: the real master's Ping line, which harnesses read.
    assert!(
        server.log().contains(&format!("] Ping request: client_id={client}\n")),
        "{}",
        server.log()
    );
    assert_eq!(
        c.call::<rpc::PutStart>(&(client, "x".into(), 10, config(), T.into()))
            .map(|_| ()),
        Err(ErrorCode::NO_AVAILABLE_HANDLE)
    );
}

/// (address, size) of every object the master still has among `keys`.
fn live_places(c: &mut Conn, keys: &[String]) -> Vec<(u64, u64)> {
    let got = c.call::<rpc::BatchGetReplicaList>(&(keys.to_vec(), T.into()));
    got.iter().flatten().map(|r| place(&r.replicas[0])).collect()
}

#[test]
fn placements_never_overlap_and_a_full_segment_evicts_as_mooncake_does() {
    let server = Server::start(&["--default_kv_lease_ttl=1"]);
    let mut c = server.connect();
    let client = uuid(2);
    let seg = segment(2, 1 << 32, 256 << 10);
    join(&mut c, client, &seg);
    // 52 objects of 5000 bytes fill 256 KiB; the next ones evict the least recently used.
    let keys: Vec<String> = (0..150).map(|i| format!("f{i}")).collect();
    for (i, k) in keys.iter().enumerate() {
        let d = put(&mut c, client, k, 5000).unwrap_or_else(|e| panic!("put {i} refused: {e}"));
        let (a, s) = place(&d);
        assert!(a >= seg.base && a + s <= seg.base + seg.size, "{a:#x}+{s} outside");
    }
    std::thread::sleep(Duration::from_millis(5)); // the reads' leases (1 ms) run out
    let mut live = live_places(&mut c, &keys);
    assert!(
        (45..=52).contains(&live.len()),
        "{} objects live in 256 KiB",
        live.len()
    );
    live.sort();
    assert!(live.windows(2).all(|w| w[0].0 + w[0].1 <= w[1].0), "overlap: {live:?}");
    let removed = c.call::<rpc::BatchRemove>(&(keys.clone(), true, T.into()));
    assert_eq!(removed.iter().filter(|r| r.is_ok()).count(), live.len());
    let d = put(&mut c, client, "whole", 256 << 10).expect("every range is free again");
    assert_eq!(place(&d), (seg.base, 256 << 10));
}

#[test]
fn batch_forms_answer_per_key() {
    let server = Server::start(&[]);
    let mut c = server.connect();
    let client = uuid(3);
    join(&mut c, client, &segment(3, 1 << 30, 1 << 20));
    let keys: Vec<String> = ["a", "b", "c"].iter().map(|s| s.to_string()).collect();
    let started = c.call::<rpc::BatchPutStart>(&(client, keys.clone(), vec![10, 20, 30], config(), T.into()));
    assert_eq!(
        started
            .iter()
            .map(|r| r.as_ref().map(|d| place(&d[0]).1))
            .collect::<Vec<_>>(),
        [Ok(10), Ok(20), Ok(30)]
    );
    let metas: Vec<ObjectMeta> = keys[..2]
        .iter()
        .map(|k| ObjectMeta {
            key: k.clone(),
            object_checksum: None,
        })
        .collect();
    assert_eq!(
        c.call::<rpc::BatchPutEnd>(&(client, metas, ReplicaType::ALL, T.into())),
        [Ok(()), Ok(())]
    );
    assert_eq!(
        c.call::<rpc::BatchPutRevoke>(&(client, vec!["c".into()], ReplicaType::ALL, T.into())),
        [Ok(())]
    );
    let mut probe = keys.clone();
    probe.push("zz".into());
    assert_eq!(
        c.call::<rpc::BatchExistKey>(&(probe.clone(), T.into())),
        [Ok(true), Ok(true), Ok(false), Ok(false)]
    );
    let got = c.call::<rpc::BatchGetReplicaList>(&(probe, T.into()));
    assert!(got[0].is_ok() && got[1].is_ok());
    assert_eq!(
        (got[2].as_ref().err(), got[3].as_ref().err()),
        (Some(&ErrorCode::OBJECT_NOT_FOUND), Some(&ErrorCode::OBJECT_NOT_FOUND))
    );
    let mismatched = c.call::<rpc::BatchPutStart>(&(client, keys, vec![1], config(), T.into()));
    assert!(mismatched
        .iter()
        .all(|r| r.as_ref().err() == Some(&ErrorCode::INVALID_PARAMS)));
    assert_eq!(c.call::<rpc::RemoveAll>(&(true, T.into())), 2);
}

#[test]
fn malformed_frames_close_one_connection_and_the_server_keeps_serving() {
    let server = Server::start(&["--max_request_bytes=4096"]);
    let mut keeper = server.connect();
    let client = uuid(4);
    join(&mut keeper, client, &segment(4, 1 << 30, 1 << 20));
    let ping = |seq: u32, body: &[u8]| {
        let mut f = RequestHeader::new(seq, Function::Ping.id(), body.len() as u32)
            .to_bytes()
            .to_vec();
        f.extend_from_slice(body);
        f
    };
    // Unknown function and garbage arguments: upstream's error replies, connection kept.
    let mut c = server.connect();
    let (h, _) = c.raw(&RequestHeader::new(1, 0xdead_beef, 0).to_bytes()).unwrap();
    assert_eq!((h.err_code, h.seq), (11, 1));
    let (h, _) = c.raw(&ping(2, &[1, 2, 3])).unwrap();
    assert_eq!(h.err_code, 4);
    let (h, body) = c.raw(&ping(3, &rpc::Ping::encode_request(&client))).unwrap();
    assert_eq!(h.err_code, 0);
    assert!(rpc::Ping::decode_reply(&body).is_ok());
    // Bad magic, a newer version, an oversized body, a frame cut short: that connection closes.
    let mut bad = ping(4, &[]);
    bad[0] = 0x16;
    assert!(server.connect().raw(&bad).is_none());
    let mut newer = ping(5, &[]);
    newer[1] = 1;
    assert!(server.connect().raw(&newer).is_none());
    assert!(server
        .connect()
        .raw(&RequestHeader::new(6, Function::Ping.id(), 1 << 20).to_bytes())
        .is_none());
    {
        let mut cut = server.connect();
        cut.s
            .write_all(&ping(7, &rpc::Ping::encode_request(&client))[..25])
            .unwrap();
    }
    // Every byte string a fuzzer would try first, each on its own connection.
    for junk in [&b""[..], b"\x15", b"GET / HTTP/1.1\r\n\r\n", &[0xff; 64]] {
        let mut j = server.connect();
        let _ = j.s.write_all(junk);
    }
    // Still serving, on the old connection and on new ones.
    assert_eq!(
        keeper.call::<rpc::Ping>(&client).unwrap().client_status,
        ClientStatus::OK
    );
    put(&mut server.connect(), client, "after", 100).unwrap();
    assert!(server.log().contains("action=rpc_connection_closed"));
}

#[test]
fn concurrent_clients_each_see_their_own_objects() {
    let server = Arc::new(Server::start(&[]));
    let mut c = server.connect();
    let owner = uuid(5);
    join(&mut c, owner, &segment(5, 1 << 40, 8 << 20));
    let workers: Vec<_> = (0..6)
        .map(|w| {
            let server = server.clone();
            std::thread::spawn(move || {
                let mut c = server.connect();
                for i in 0..40 {
                    let key = format!("w{w}-{i}");
                    let d = put(&mut c, owner, &key, 1000 + i).unwrap();
                    let got = c.call::<rpc::GetReplicaList>(&(key.clone(), T.into())).unwrap();
                    assert_eq!(place(&got.replicas[0]), place(&d));
                    assert_eq!(c.call::<rpc::Remove>(&(key, true, T.into())), Ok(()));
                }
            })
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(30);
    while workers.iter().any(|w| !w.is_finished()) && Instant::now() < deadline {
        assert_eq!(c.call::<rpc::Ping>(&owner).unwrap().client_status, ClientStatus::OK);
        std::thread::sleep(Duration::from_millis(20));
    }
    for w in workers {
        w.join().expect("a worker failed");
    }
}

#[test]
fn a_client_that_stops_pinging_is_offboarded_and_its_objects_go() {
    let server = Server::start(&["--client_active_ttl_sec=0.5", "--client_suspicion_ttl_sec=0.5"]);
    let mut c = server.connect();
    let (alive, silent) = (uuid(6), uuid(7));
    join(&mut c, alive, &segment(6, 1 << 30, 1 << 20));
    let seg = segment(7, 1 << 31, 4 << 20);
    join(&mut c, silent, &seg);
    let d = put(&mut c, silent, "s", 3 << 20).unwrap();
    assert!(place(&d).0 >= seg.base, "placed on the silent client's larger segment");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !server.log().contains("action=client_offboarding_complete") && Instant::now() < deadline {
        assert_eq!(c.call::<rpc::Ping>(&alive).unwrap().client_status, ClientStatus::OK);
        std::thread::sleep(Duration::from_millis(100));
    }
    let log = server.log();
    let silent_name = silent.to_string();
    for action in [
        "client_liveness_suspected",
        "client_liveness_offline",
        "client_offboarding_complete",
    ] {
        // Upstream's layout: the action right after the client id (what log readers match).
        assert!(
            log.contains(&format!("client_id={silent_name}, action={action}, incarnation=1")),
            "{action}: {log}"
        );
    }
    assert!(
        !log.contains(&format!("client_id={alive}, action=client_liveness_suspected")),
        "{log}"
    );
    assert_eq!(
        c.call::<rpc::GetReplicaList>(&("s".into(), T.into())).map(|_| ()),
        Err(ErrorCode::OBJECT_NOT_FOUND)
    );
    assert_eq!(
        c.call::<rpc::Ping>(&silent).unwrap().client_status,
        ClientStatus::NEED_REMOUNT
    );
    // The offboarded client comes back: a new incarnation mounts the same segment again.
    join(&mut c, silent, &seg);
    put(&mut c, silent, "back", 3 << 20).expect("the segment's whole range is free again");
}
