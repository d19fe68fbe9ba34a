//! Offboarding queue throughput against two unbounded MPSC baselines.
//!
//! | group/function | what runs |
//! |---|---|
//! | `queue/mpsc_ours` | `offboarding::queue` (capacity `2K`, so never `Full`); the consumer calls `pop_batch(64)` |
//! | `queue/segqueue` | crossbeam `SegQueue`; the consumer loops `pop` up to 64 times per round |
//! | `queue/std_mpsc` | `std::sync::mpsc::channel`; the consumer loops `try_recv` up to 64 times per round |
//!
//! One iteration: [`PRODUCERS`] scoped threads each push [`K`] items while the bench thread
//! consumes until all `PRODUCERS × K` have arrived; a round that finds nothing yields the
//! thread (same policy for all three). Throughput is per item, so criterion reports time per
//! element; the cost of spawning the two producer threads is in every iteration (the same for
//! all three; about 2–5 % at this K).
//!
//! `cargo bench --bench queue -- --quick --noplot`

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use crossbeam::queue::SegQueue;
use mooncake_liveness::offboarding::queue::channel;
use std::hint::black_box;
use std::sync::mpsc;
use std::thread;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Producer threads per iteration.
const PRODUCERS: usize = 2;
/// Items each producer pushes per iteration.
const K: usize = 20_000;
/// Most items the consumer takes per round.
const BATCH: usize = 64;
/// Items the consumer waits for.
const TOTAL: usize = PRODUCERS * K;

fn ours() -> usize {
    let (producer, mut consumer) = channel::<usize>(TOTAL);
    thread::scope(|s| {
        for _ in 0..PRODUCERS {
            let producer = producer.clone();
            s.spawn(move || {
                for i in 0..K {
                    producer.push(i).unwrap();
                }
            });
        }
        let mut buf = Vec::with_capacity(BATCH);
        let (mut got, mut sum) = (0, 0usize);
        while got < TOTAL {
            buf.clear();
            let n = consumer.pop_batch(BATCH, &mut buf);
            if n == 0 {
                thread::yield_now();
            }
            sum = buf.iter().fold(sum, |a, &v| a.wrapping_add(v));
            got += n;
        }
        sum
    })
}

fn segqueue() -> usize {
    let queue = SegQueue::new();
    thread::scope(|s| {
        for _ in 0..PRODUCERS {
            let queue = &queue;
            s.spawn(move || {
                for i in 0..K {
                    queue.push(i);
                }
            });
        }
        let (mut got, mut sum) = (0, 0usize);
        while got < TOTAL {
            let mut n = 0;
            while n < BATCH {
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

fn std_mpsc() -> usize {
    let (tx, rx) = mpsc::channel::<usize>();
    thread::scope(|s| {
        for _ in 0..PRODUCERS {
            let tx = tx.clone();
            s.spawn(move || {
                for i in 0..K {
                    tx.send(i).unwrap();
                }
            });
        }
        drop(tx);
        let (mut got, mut sum) = (0, 0usize);
        while got < TOTAL {
            let mut n = 0;
            while n < BATCH {
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

fn bench(c: &mut Criterion) {
    let expected = PRODUCERS * (K * (K - 1) / 2);
    for (name, run) in [
        ("ours", ours as fn() -> usize),
        ("segqueue", segqueue),
        ("std_mpsc", std_mpsc),
    ] {
        assert_eq!(run(), expected, "{name}: lost or duplicated items");
    }
    let mut group = c.benchmark_group("queue");
    group.throughput(Throughput::Elements(TOTAL as u64));
    group.bench_function("mpsc_ours", |b| b.iter(|| black_box(ours())));
    group.bench_function("segqueue", |b| b.iter(|| black_box(segqueue())));
    group.bench_function("std_mpsc", |b| b.iter(|| black_box(std_mpsc())));
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
