//! Reference-master, offboarding and snapshot benchmarks, each against the design it replaces.
//!
//! | group/function | what runs | compared with |
//! |---|---|---|
//! | `master/get_hit` | `Master::get` of a present key (8 segments, 100k objects) | `master/get_hit_noseam`: the same master built with the seam switched off |
//! | `master/put_alloc` | `put` + `remove` of one key (allocation over 8 segments) | `master/put_alloc_noseam` |
//! | `offboard/own_index_1k_of_1m` | offboard a client holding 1k objects in a 1M-object master (per-owner index) | `offboard/full_sweep_1k_of_1m`: upstream's sweep, every object checked |
//! | `ping/idle`, `ping/during_offboarding` | `Liveness::ping` alone, and while another thread builds and offboards a 1M-object client holding the master lock batch by batch | `ping/during_offboarding_locked`: the same ping behind the master's lock, as upstream's heartbeat sits behind `client_mutex_` |
//! | `snapshot/encode_1m`, `snapshot/restore_1m` | snapshot + binary encoding of a 1M-object master; decode + restore | |
//!
//! `cargo bench --bench master` (heavy: builds 1M-object masters, several GiB of RAM).

use criterion::{BatchSize, Criterion};
use mooncake_liveness::master::{Master, MasterOptions};
use mooncake_liveness::snapshot::Snapshot;
use mooncake_liveness::{ClientId, Clock, LivenessConfig, ManualClock};
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn config() -> LivenessConfig {
    LivenessConfig {
        active_ttl_ms: 10_000,
        suspicion_ttl_ms: 20_000,
        stall_brake: false,
        mass_suspicion_brake: false,
        offboarding_rate_per_sec: 1e9,
        offboarding_burst: 1 << 30,
        ..LivenessConfig::default()
    }
}

struct Fixture {
    clock: Arc<ManualClock>,
    master: Master,
}

fn master(seam_disabled: bool, objects: usize) -> Fixture {
    let clock = Arc::new(ManualClock::new(0));
    let options = MasterOptions {
        seam_disabled,
        ..MasterOptions::default()
    };
    let master = Master::new(clock.clone() as Arc<dyn Clock>, config(), options);
    for c in 0..8 {
        master.mount(&format!("c{c}"), &format!("s{c}"), 1 << 50).unwrap();
    }
    for i in 0..objects {
        let key = format!("k{i}");
        master.put(&key, 64, 1).unwrap();
        master.put_end(&key).unwrap();
    }
    Fixture { clock, master }
}

fn bench_master(c: &mut Criterion) {
    let mut g = c.benchmark_group("master");
    for (name, disabled) in [("get_hit", false), ("get_hit_noseam", true)] {
        let f = master(disabled, 100_000);
        let keys: Vec<String> = (0..1024).map(|i| format!("k{}", i * 97)).collect();
        let mut i = 0;
        g.bench_function(name, |b| {
            b.iter(|| {
                i = (i + 1) & 1023;
                black_box(f.master.get(black_box(&keys[i])).unwrap().len())
            })
        });
    }
    for (name, disabled) in [("put_alloc", false), ("put_alloc_noseam", true)] {
        let f = master(disabled, 100_000);
        g.bench_function(name, |b| {
            b.iter(|| {
                let r = f.master.put(black_box("fresh"), 64, 1).unwrap();
                f.master.remove("fresh").unwrap();
                black_box(r.len())
            })
        });
    }
    g.finish();
}

/// Advances the fixture's clock tick by tick to `t`.
fn run_to(f: &mut Fixture, t: u64) {
    let mut next = f.clock.now_ms() / 100 * 100 + 100;
    while next <= t {
        f.clock.set_ms(next);
        f.master.tick();
        next += 100;
    }
}

/// Mounts a fresh client holding 1k objects and keeps the other owners alive up to `t`.
fn add_victim(f: &mut Fixture, round: usize) -> String {
    let name = format!("victim{round}");
    f.master.mount(&name, &format!("vs{round}"), 1 << 50).unwrap();
    // The empty segment has the highest free ratio: every put lands on it.
    for i in 0..1_000 {
        let key = format!("v{round}-{i}");
        f.master.put(&key, 64, 1).unwrap();
        f.master.put_end(&key).unwrap();
    }
    name
}

fn keep_others_alive(f: &mut Fixture) {
    for c in 0..8 {
        f.master.ping(&format!("c{c}"));
    }
}

fn bench_offboard(c: &mut Criterion) {
    let mut g = c.benchmark_group("offboard");
    g.sample_size(10);
    let mut f = master(false, 1_000_000);
    let mut round = 0;
    g.bench_function("own_index_1k_of_1m", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                round += 1;
                add_victim(&mut f, round);
                let start_t = f.clock.now_ms();
                // Suspected after 10 s; keep the others alive meanwhile (not measured).
                for s in 1..=30 {
                    run_to(&mut f, start_t + s * 1_000 - 100);
                    keep_others_alive(&mut f);
                }
                // The measured tick commits Offline and runs the whole job inline.
                let t = start_t + 30_000;
                f.clock.set_ms(t);
                let start = Instant::now();
                f.master.tick();
                total += start.elapsed();
                assert!(f.master.query(Some(&format!("victim{round}")), None).clients.is_empty());
            }
            total
        })
    });
    g.bench_function("full_sweep_1k_of_1m", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                round += 1;
                let name = add_victim(&mut f, round);
                let segment = format!("vs{round}");
                let start = Instant::now();
                // Upstream's sweep: every object of every shard is checked for a replica on the
                // departed client's segment; the matches are erased, then the segment goes.
                let sid = f.master.segments().id_of(&segment).unwrap();
                let shards = f.master.shards();
                let doomed: Vec<String> = (0..shards.len())
                    .flat_map(|i| {
                        let shard = shards.lock(i);
                        shard
                            .objects
                            .iter()
                            .filter(|(_, o)| o.on_segment(sid))
                            .map(|(k, _)| k.clone())
                            .collect::<Vec<_>>()
                    })
                    .collect();
                for k in &doomed {
                    f.master.remove(k).unwrap();
                }
                f.master.unmount(&name, &segment).unwrap();
                total += start.elapsed();
            }
            total
        })
    });
    g.finish();
}

fn bench_ping_during_offboarding(c: &mut Criterion) {
    let mut g = c.benchmark_group("ping");
    let config = LivenessConfig {
        // The master's own worker threads run the jobs (as `offboarding_mode: async` does).
        offboarding_mode: mooncake_liveness::config::OffboardingMode::Async,
        offboarding_workers: 1,
        ..config()
    };
    let clock = Arc::new(ManualClock::new(0));
    let master = Arc::new(Master::new(
        clock.clone() as Arc<dyn Clock>,
        config,
        MasterOptions::default(),
    ));
    for i in 0..10_000 {
        master.mount(&format!("p{i}"), &format!("ps{i}"), 1 << 20).unwrap();
    }
    let live = master.liveness_handle();
    let mut i = 0u128;
    g.bench_function("idle", |b| {
        b.iter(|| {
            i = (i + 1) % 10_000;
            black_box(live.ping(ClientId(1 + i), None))
        })
    });
    // Background: a client holding 1M objects goes silent, is committed Offline and offboarded
    // by the master's worker (one shard lock at a time, bounded batches) — over and over, while
    // the background thread also keeps the data plane busy. `client_mutex` is upstream's global
    // lock, taken by this data-plane/tick thread around each batch as upstream's paths take it.
    let client_mutex = Arc::new(Mutex::new(()));
    let stop = Arc::new(AtomicBool::new(false));
    let bg = {
        let (master, stop, clock, client_mutex) = (master.clone(), stop.clone(), clock.clone(), client_mutex.clone());
        std::thread::spawn(move || {
            let mut round = 0;
            while !stop.load(Ordering::Relaxed) {
                round += 1;
                let name = format!("big{round}");
                master.mount(&name, &format!("bs{round}"), 1 << 50).unwrap();
                for chunk in 0..1_000 {
                    let _upstream = client_mutex.lock().unwrap();
                    for j in 0..1_000 {
                        let _ = master.put(&format!("b{round}-{chunk}-{j}"), 1, 1);
                    }
                }
                // 30 s of virtual time; the other clients keep pinging every virtual second.
                for tick in 0..300 {
                    clock.advance_ms(100);
                    if tick % 10 == 0 {
                        for id in 0..10_000 {
                            master.ping(&format!("p{id}"));
                        }
                    }
                    let _upstream = client_mutex.lock().unwrap();
                    master.tick();
                }
                while master.stats().offline > 0 && !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
        })
    };
    let mut i = 0u128;
    g.bench_function("during_offboarding", |b| {
        b.iter(|| {
            i = (i + 1) % 10_000;
            black_box(live.ping(ClientId(1 + i), None))
        })
    });
    // Upstream's shape for comparison: the heartbeat reaches its record through a lock that the
    // data plane and offboarding also hold (`client_mutex_`).
    let mut i = 0u128;
    g.bench_function("during_offboarding_locked", |b| {
        b.iter(|| {
            i = (i + 1) % 10_000;
            let _guard = client_mutex.lock().unwrap();
            black_box(live.ping(ClientId(1 + i), None))
        })
    });
    stop.store(true, Ordering::Relaxed);
    bg.join().unwrap();
    g.finish();
}

fn bench_snapshot(c: &mut Criterion) {
    let mut g = c.benchmark_group("snapshot");
    g.sample_size(10);
    let f = master(false, 1_000_000);
    g.bench_function("encode_1m", |b| {
        b.iter(|| black_box(f.master.snapshot().encode().len()))
    });
    let bytes = f.master.snapshot().encode();
    g.bench_function("restore_1m", |b| {
        b.iter_batched(
            || bytes.clone(),
            |bytes| {
                let snap = Snapshot::decode(&bytes).unwrap();
                let m = Master::restore(
                    f.clock.clone() as Arc<dyn Clock>,
                    config(),
                    MasterOptions::default(),
                    &snap,
                )
                .unwrap();
                // Returned, so criterion drops the restored master after the timed section:
                // restore is done when the master serves, and encode_1m does not time the drop
                // of its result either (each times the drop of its intermediate `Snapshot`).
                black_box(m)
            },
            BatchSize::PerIteration,
        )
    });
    g.finish();
    restore_phase_notes(&f, &bytes);
}

/// One more restore of the same snapshot, timed phase by phase (decode, then the phases
/// `Master::restore_timed` reports), printed as `master-note:` lines for `scripts/bench.sh`.
fn restore_phase_notes(f: &Fixture, bytes: &[u8]) {
    // The same two sides once more, timed directly (criterion's quick estimates of a multi-second
    // routine rest on very few samples).
    let t = Instant::now();
    let snap = f.master.snapshot();
    let cut = t.elapsed();
    let encoded = snap.encode();
    let total = t.elapsed();
    drop(snap);
    println!("master-note: encode_1m.snapshot_ms={:.1}", cut.as_secs_f64() * 1e3);
    println!(
        "master-note: encode_1m.encode_ms={:.1}",
        (total - cut).as_secs_f64() * 1e3
    );
    println!("master-note: encode_1m.total_ms={:.1}", total.as_secs_f64() * 1e3);
    black_box(encoded);
    let t = Instant::now();
    let snap = Snapshot::decode(bytes).unwrap();
    println!(
        "master-note: restore_1m.decode_ms={:.1}",
        t.elapsed().as_secs_f64() * 1e3
    );
    let (m, phases) = Master::restore_timed(
        f.clock.clone() as Arc<dyn Clock>,
        config(),
        MasterOptions::default(),
        &snap,
    )
    .unwrap();
    println!(
        "master-note: restore_1m.total_ms={:.1}",
        t.elapsed().as_secs_f64() * 1e3
    );
    for (name, d) in &phases.phases {
        let key = name.replace([' ', ','], "_").replace("__", "_");
        println!("master-note: restore_1m.{key}_ms={:.1}", d.as_secs_f64() * 1e3);
    }
    let t = Instant::now();
    drop(m);
    println!("master-note: restore_1m.drop_ms={:.1}", t.elapsed().as_secs_f64() * 1e3);
}

criterion::criterion_group!(
    benches,
    bench_master,
    bench_offboard,
    bench_ping_during_offboarding,
    bench_snapshot
);
criterion::criterion_main!(benches);
