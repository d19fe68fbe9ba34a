//! The `ping` group: `Liveness::ping` against Mooncake main's ping queue.

use crate::common::*;
use criterion::Criterion;
use crossbeam::queue::ArrayQueue;
use mooncake_liveness::{ClientId, LivenessConfig};
use std::collections::HashMap;
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::Instant;

/// Context for `ping/queue_push`: ns per successful push into an empty queue that nobody drains
/// (no cache-line traffic with a consumer; best of three fills).
fn uncontended_push_ns(ids: &[ClientId]) -> String {
    let best = (0..3)
        .map(|_| {
            let queue = ArrayQueue::<u128>::new(PING_QUEUE_CAPACITY);
            let t = Instant::now();
            for i in 0..PING_QUEUE_CAPACITY {
                queue.push(black_box(ids[i % ids.len()].0)).expect("queue has room");
            }
            t.elapsed().as_nanos() as f64 / PING_QUEUE_CAPACITY as f64
        })
        .fold(f64::INFINITY, f64::min);
    format!("{best:.1}")
}

pub(crate) fn ping(c: &mut Criterion) {
    let mut g = c.benchmark_group("ping");

    let (_clock, live) = liveness(LivenessConfig::default(), 1024);
    let ids: Vec<ClientId> = client_ids(PING_CLIENTS, 4).into_iter().map(ClientId).collect();
    for id in &ids {
        mount(&live, id.0);
    }
    let mut i = 0;
    g.bench_function("word", |b| {
        b.iter(|| {
            let id = ids[i];
            i = if i + 1 == ids.len() { 0 } else { i + 1 };
            live.ping(black_box(id), None)
        })
    });
    drop(live);

    // Mooncake main: Ping pushes the id into a bounded lock-free queue; the monitor thread
    // drains it into `client_ttl` (id → deadline). The drainer runs continuously here (Mooncake's
    // sleeps a second between drains, which at these rates would only fill the queue).
    note("queue_push.uncontended_ns", uncontended_push_ns(&ids));
    let queue = ArrayQueue::<u128>::new(PING_QUEUE_CAPACITY);
    let stop = AtomicBool::new(false);
    let ttl_ms = LivenessConfig::default().active_ttl_ms;
    thread::scope(|s| {
        let drainer = s.spawn(|| {
            let start = Instant::now();
            let mut client_ttl: HashMap<u128, u64> = HashMap::new();
            let mut drained = 0u64;
            loop {
                let now_ms = start.elapsed().as_millis() as u64;
                let mut got = false;
                while let Some(id) = queue.pop() {
                    client_ttl.insert(id, now_ms + ttl_ms);
                    drained += 1;
                    got = true;
                }
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                if !got {
                    std::hint::spin_loop();
                }
            }
            (drained, client_ttl.len())
        });
        let (mut attempts, mut full) = (0u64, 0u64);
        let mut i = 0;
        g.bench_function("queue_push", |b| {
            b.iter(|| {
                let id = ids[i].0;
                i = if i + 1 == ids.len() { 0 } else { i + 1 };
                attempts += 1;
                if queue.push(black_box(id)).is_err() {
                    full += 1;
                }
            })
        });
        stop.store(true, Ordering::Relaxed);
        let (drained, clients) = drainer.join().expect("drainer thread");
        note("queue_push.attempts", attempts);
        note("queue_push.failed_full", full);
        note("queue_push.drained", drained);
        note("queue_push.clients_tracked", clients);
    });
    g.finish();
}
