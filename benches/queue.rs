//! Offboarding queue throughput against two unbounded MPSC baselines.
//!
//! | group/function | what runs |
//! |---|---|
//! | `queue/mpsc_ours/pP_bB` | `offboarding::queue` (capacity `P × K`, so never `Full`); the consumer calls `pop_batch(B)` |
//! | `queue/segqueue/pP_bB` | crossbeam `SegQueue`; the consumer loops `pop` up to `B` times per round |
//! | `queue/std_mpsc/p2_b32` | `std::sync::mpsc::channel`; the consumer loops `try_recv` up to 32 times per round |
//!
//! `P` is 2 or 4 producers, `B` 1, 32 or 256. One iteration: `P` scoped threads each push [`K`]
//! items while the bench thread consumes until all `P × K` have arrived; a round that finds
//! nothing yields the thread (same policy for all). Throughput is per item, so criterion reports
//! time per element; the cost of spawning the producer threads is in every iteration (the same
//! for all; a few % at this K). Since the queue is a protocol layer over `SegQueue`, the ratio
//! `mpsc_ours / segqueue` is the price of that layer (the reservation CAS on the state word).
//!
//! `cargo bench --bench queue -- --quick --noplot`

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use crossbeam::queue::SegQueue;
use mooncake_liveness::offboarding::queue::channel;
use std::hint::black_box;
use std::sync::mpsc;
use std::thread;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Items each producer pushes per iteration.
const K: usize = 20_000;
/// Producer counts measured.
const PRODUCERS: [usize; 2] = [2, 4];
/// Consumer batch sizes measured.
const BATCHES: [usize; 3] = [1, 32, 256];

fn ours(producers: usize, batch: usize) -> usize {
    let total = producers * K;
    let (producer, mut consumer) = channel::<usize>(total);
    thread::scope(|s| {
        for _ in 0..producers {
            let producer = producer.clone();
            s.spawn(move || {
                for i in 0..K {
                    producer.push(i).unwrap();
                }
            });
        }
        let mut buf = Vec::with_capacity(batch);
        let (mut got, mut sum) = (0, 0usize);
        while got < total {
            buf.clear();
            let n = consumer.pop_batch(batch, &mut buf);
            if n == 0 {
                thread::yield_now();
            }
            sum = buf.iter().fold(sum, |a, &v| a.wrapping_add(v));
            got += n;
        }
        sum
    })
}

fn segqueue(producers: usize, batch: usize) -> usize {
    let total = producers * K;
    let queue = SegQueue::new();
    thread::scope(|s| {
        for _ in 0..producers {
            let queue = &queue;
            s.spawn(move || {
                for i in 0..K {
                    queue.push(i);
                }
            });
        }
        let (mut got, mut sum) = (0, 0usize);
        while got < total {
            let mut n = 0;
            while n < batch {
                match queue.pop() {
                    Some(v) => {
                        sum = sum.wrapping_add(v);
                        n += 1;
                    }
                    None => break,
                }
            }
            if n == 0 {
                thread::yield_now();
            }
            got += n;
        }
        sum
    })
}

fn std_mpsc(producers: usize, batch: usize) -> usize {
    let total = producers * K;
    let (tx, rx) = mpsc::channel::<usize>();
    thread::scope(|s| {
        for _ in 0..producers {
            let tx = tx.clone();
            s.spawn(move || {
                for i in 0..K {
                    tx.send(i).unwrap();
                }
            });
        }
        drop(tx);
        let (mut got, mut sum) = (0, 0usize);
        while got < total {
            let mut n = 0;
            while n < batch {
                match rx.try_recv() {
                    Ok(v) => {
                        sum = sum.wrapping_add(v);
                        n += 1;
                    }
                    Err(_) => break,
                }
            }
            if n == 0 {
                thread::yield_now();
            }
            got += n;
        }
        sum
    })
}

type Run = fn(usize, usize) -> usize;

fn bench(c: &mut Criterion) {
    let runs: [(&str, Run); 3] = [("mpsc_ours", ours), ("segqueue", segqueue), ("std_mpsc", std_mpsc)];
    for (name, run) in runs {
        for p in PRODUCERS {
            assert_eq!(run(p, 32), p * (K * (K - 1) / 2), "{name}: lost or duplicated items");
        }
    }
    let mut group = c.benchmark_group("queue");
    for p in PRODUCERS {
        group.throughput(Throughput::Elements((p * K) as u64));
        for b in BATCHES {
            let id = format!("p{p}_b{b}");
            for (name, run) in &runs[..2] {
                group.bench_with_input(BenchmarkId::new(*name, &id), &(p, b), |bench, &(p, b)| {
                    bench.iter(|| black_box(run(p, b)))
                });
            }
        }
    }
    group.throughput(Throughput::Elements((2 * K) as u64));
    group.bench_with_input(BenchmarkId::new("std_mpsc", "p2_b32"), &(2, 32), |bench, &(p, b)| {
        bench.iter(|| black_box(std_mpsc(p, b)))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
