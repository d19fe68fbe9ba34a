//! Embedding the liveness core in a master: a toy request handler around the reference
//! [`Master`], on a real clock, with the threads a Mooncake master would run.
//!
//! - two request threads serving Put/PutEnd/Get through the master's `&self` paths (every
//!   placement and every Get goes through the eligibility seam);
//! - a Ping thread (Ping never takes a lock: a name lookup and one CAS on the client's word);
//! - the monitor thread, calling `tick()` every `monitor_tick_ms`;
//! - the offboarding worker the master starts itself (`offboarding_mode: async`).
//!
//! Client `c2` stops pinging after a while (its process paused): it goes Suspected after the
//! active TTL, Offline after the suspicion TTL, and its offboarding job removes its segment and
//! replicas while the others keep serving. The example prints the story and asserts it, so CI
//! (`cargo run --example embed`) fails if it stops being true. About a second of wall time.
//!
//! Run: `cargo run --release --example embed`.

use mooncake_liveness::config::OffboardingMode;
use mooncake_liveness::master::{Master, MasterEvent, MasterOptions, SegmentSpec};
use mooncake_liveness::LivenessEvent;
use mooncake_liveness::{ClientId, Clock, LivenessConfig, LivenessState, PingStatus, SystemClock};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

const CLIENTS: [&str; 3] = ["c0", "c1", "c2"];
const SEGMENT_BYTES: u64 = 1 << 20;
/// Hang guard only (not a timing assertion): the story takes about a second.
const DEADLINE: Duration = Duration::from_secs(20);

fn main() {
    let config = LivenessConfig {
        active_ttl_ms: 300,
        suspicion_ttl_ms: 300,
        monitor_tick_ms: 20,
        stall_bound_ms: 150,
        offboarding_mode: OffboardingMode::Async,
        offboarding_workers: 1,
        ..LivenessConfig::default()
    };
    let clock = Arc::new(SystemClock::new());
    let options = MasterOptions::default();
    let master = Arc::new(Master::new(clock.clone() as Arc<dyn Clock>, config, options));
    for c in CLIENTS {
        master.mount(c, &format!("{c}-seg"), SEGMENT_BYTES).expect("mount");
    }
    let stop = Arc::new(AtomicBool::new(false));
    let c2_paused = Arc::new(AtomicBool::new(false));
    let servers: Vec<_> = (0..2)
        .map(|t| {
            let (m, stop) = (master.clone(), stop.clone());
            thread::spawn(move || serve(&m, &stop, t))
        })
        .collect();
    let mut threads = Vec::new();
    let (m, stop2, paused) = (master.clone(), stop.clone(), c2_paused.clone());
    threads.push(thread::spawn(move || ping_loop(&m, &stop2, &paused)));
    let (m, stop2) = (master.clone(), stop.clone());
    // The monitor thread: one tick per `monitor_tick_ms` (offboarding jobs go to the worker).
    threads.push(thread::spawn(move || {
        while !stop2.load(Ordering::Relaxed) {
            m.tick();
            thread::sleep(Duration::from_millis(m.tick_ms()));
        }
    }));

    let start = Instant::now();
    thread::sleep(Duration::from_millis(200));
    let c2 = master.client_id("c2").expect("c2 was mounted");
    let held = replicas_of(&master, c2);
    let now = clock.now_ms();
    println!("{now:>5} ms  c2 holds {held} replicas, then pauses (stops pinging); requests go on");
    assert!(held > 0, "c2 served Puts before it paused");
    c2_paused.store(true, Ordering::Relaxed);
    let mut story = Vec::new();
    while !story.iter().any(|e| matches!(e, MasterEvent::Offboarded { .. })) {
        assert!(
            start.elapsed() < DEADLINE,
            "c2 was not offboarded within {DEADLINE:?}: {story:?}"
        );
        thread::sleep(Duration::from_millis(10));
        story.extend(master.take_events());
    }
    stop.store(true, Ordering::Relaxed);
    threads.into_iter().for_each(|t| t.join().expect("a thread panicked"));
    let puts: u64 = servers
        .into_iter()
        .map(|t| t.join().expect("a request thread panicked"))
        .sum();

    tell_and_check(&master, c2, &story);
    assert!(puts > 0, "the request threads were served");
    let left = master.objects().len();
    println!("{puts} Puts served meanwhile; {left} objects left, all on c0/c1; c2 must remount");
}

/// Prints the story and fails unless it is: c2 (only) Active -> Suspected -> Offline, then
/// offboarded, leaving no segment or replica of c2 while c0 and c1 stay Active.
fn tell_and_check(master: &Master, c2: ClientId, story: &[MasterEvent]) {
    let mut c2_states = vec![LivenessState::Active];
    for e in story {
        match e {
            MasterEvent::Liveness(LivenessEvent::Transition(t)) => {
                let who = master.client_name(t.client);
                println!("{:>5} ms  {who} {:?} -> {:?} ({:?})", t.at_ms, t.from, t.to, t.cause);
                assert_eq!(t.client, c2, "only c2 stopped pinging: {t:?}");
                c2_states.push(t.to);
            }
            MasterEvent::Offboarded { at_ms, attempts, .. } => {
                println!("{at_ms:>5} ms  c2 offboarded by the master's worker (attempts: {attempts})");
            }
            other => println!("          {other:?}"),
        }
    }
    let want = [LivenessState::Active, LivenessState::Suspected, LivenessState::Offline];
    assert_eq!(c2_states, want, "c2: Active -> Suspected -> Offline, nothing else");
    assert!(
        master.segments().iter().all(|s| s.name != "c2-seg"),
        "c2's segment is unmounted"
    );
    assert_eq!(replicas_of(master, c2), 0, "no replica left on c2");
    assert_eq!(
        master.ping("c2"),
        PingStatus::NeedRemount,
        "c2 must remount to serve again"
    );
    for c in ["c0", "c1"] {
        assert_eq!(master.ping(c), PingStatus::Ok, "{c} kept pinging and stays Active");
    }
}

/// One request thread: Put a key, end the write, Get it back, until told to stop. Returns the
/// Puts that found room.
fn serve(m: &Master, stop: &AtomicBool, t: u64) -> u64 {
    let (mut i, mut puts) = (0u64, 0u64);
    while !stop.load(Ordering::Relaxed) {
        let key = format!("t{t}-k{}", i % 64);
        if m.put(&key, 4096, 1).is_ok() {
            puts += 1;
            let _ = m.put_end(&key);
        }
        // A Get never hands out a replica whose owner is not Active (the seam).
        let _ = m.get(&key);
        i += 1;
        thread::sleep(Duration::from_micros(200));
    }
    puts
}

/// The Ping thread: every client pings every 20 ms (`c2` only until it pauses); a client told
/// `NEED_REMOUNT` re-announces its segment, as a Mooncake client does, which makes it ready.
fn ping_loop(m: &Master, stop: &AtomicBool, c2_paused: &AtomicBool) {
    while !stop.load(Ordering::Relaxed) {
        for c in CLIENTS {
            if c == "c2" && c2_paused.load(Ordering::Relaxed) {
                continue;
            }
            if m.ping(c) == PingStatus::NeedRemount {
                let spec = SegmentSpec {
                    segment: format!("{c}-seg"),
                    size: SEGMENT_BYTES,
                };
                m.remount(c, &[spec]).expect("remount");
            }
        }
        thread::sleep(Duration::from_millis(20));
    }
}

/// Replicas whose owner is `client` (any incarnation).
fn replicas_of(m: &Master, client: ClientId) -> usize {
    let objects = m.objects();
    objects
        .values()
        .flat_map(|o| &o.replicas)
        .filter(|r| r.owner().client() == client)
        .count()
}
