//! The `eligibility` group: the serving check against its floor and upstream's designs.

use crate::common::*;
use criterion::{Criterion, Throughput};
use mooncake_liveness::liveness::Word;
use mooncake_liveness::liveness::{ClientLivenessRecord, Owner};
use mooncake_liveness::{ClientId, LivenessConfig, Monitor};
use std::collections::{HashMap, HashSet};
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::thread;
use std::time::Instant;

/// A data-plane resource (a replica / allocation) and the owner it was registered under.
struct Resource<O> {
    owner: O,
    /// Something the router's loop could compare without any liveness check.
    size: u64,
}

/// `owner_of[i]` for resource `i`: every owner gets `RESOURCES / OWNERS` resources, scattered
/// (Fisher-Yates with a fixed seed), as replicas of different objects sharing a client are.
fn owner_assignment() -> Vec<usize> {
    let mut owner_of: Vec<usize> = (0..RESOURCES).map(|i| i % OWNERS).collect();
    for i in (1..RESOURCES).rev() {
        let j = (mix(i as u64 ^ 0xE11) % (i as u64 + 1)) as usize;
        owner_of.swap(i, j);
    }
    owner_of
}

fn resources<O: Clone>(owners: &[O], owner_of: &[usize]) -> Vec<Resource<O>> {
    owner_of
        .iter()
        .enumerate()
        .map(|(i, &o)| Resource {
            owner: owners[o].clone(),
            size: 1 + mix(i as u64) % 4096,
        })
        .collect()
}

// The loops have one shape: iterate the slice, evaluate a predicate, count.
/// Ours: the resource holds an [`Owner`] (as the master's segments, replicas and tasks do) and
/// loads its owner's word from the word slab.
#[inline(never)]
fn count_word(rs: &[Resource<Owner>]) -> usize {
    rs.iter().filter(|r| r.owner.is_serving()).count()
}

/// The same check through the record (`record.is_serving()`: the record's line, then the slot),
/// by a resource holding only the record's `Arc` (`eligibility/word_via_record`).
#[inline(never)]
fn count_word_via_record(rs: &[Resource<Arc<ClientLivenessRecord>>]) -> usize {
    rs.iter().filter(|r| r.owner.is_serving()).count()
}

/// The check on private copies of the words packed eight to a cache line
/// (`eligibility/word_dense`): the placement the word slab should give, as a yardstick for it.
#[inline(never)]
fn count_word_dense(rs: &[Resource<&AtomicU64>]) -> usize {
    rs.iter()
        .filter(|r| Word::raw_is_active(r.owner.load(Ordering::Acquire)))
        .count()
}

/// `eligibility/core_probe`: a yardstick of the core itself, no memory. Per iteration, eight
/// independent register adds and the loop's count and branch: more ALU operations than this
/// machine's Zen 4 has ALUs (4), so the loop is bound by ALU throughput; 1,024 iterations. The
/// code never changes, so it tells a run where the core was slower (its clock, ALUs shared with
/// the host's other hyperthread) from one where only the loops that load were slower: in the
/// runs where `word` fell into its slow mode it stayed at its usual time (BENCHMARKS.md, issue 18).
#[cfg(target_arch = "x86_64")]
#[inline(never)]
fn core_probe(n: u64) -> u64 {
    let mut r = [1u64, 2, 3, 4, 5, 6, 7, 8];
    for _ in 0..n {
        // SAFETY: register arithmetic only (`nomem`, `nostack`); it just cannot be folded away.
        unsafe {
            std::arch::asm!(
                "add {0}, 1", "add {1}, 1", "add {2}, 1", "add {3}, 1",
                "add {4}, 1", "add {5}, 1", "add {6}, 1", "add {7}, 1",
                inout(reg) r[0], inout(reg) r[1], inout(reg) r[2], inout(reg) r[3],
                inout(reg) r[4], inout(reg) r[5], inout(reg) r[6], inout(reg) r[7],
                options(nomem, nostack),
            );
        }
    }
    r.iter().fold(0, |a, x| a ^ x)
}

#[inline(never)]
fn count_no_check(rs: &[Resource<Owner>]) -> usize {
    rs.iter().filter(|r| r.size != 0).count()
}

#[inline(never)]
fn count_mutex(rs: &[Resource<Arc<UpRecord>>]) -> usize {
    rs.iter()
        .filter(|r| r.owner.m.lock().unwrap_or_else(|e| e.into_inner()).state == UpState::Active)
        .count()
}

#[inline(never)]
fn count_rwlock_set(rs: &[Resource<u128>], ok: &RwLock<HashSet<u128>>) -> usize {
    rs.iter()
        .filter(|r| ok.read().unwrap_or_else(|e| e.into_inner()).contains(&r.owner))
        .count()
}

pub(crate) fn eligibility(c: &mut Criterion) {
    let owner_of = owner_assignment();
    let mut g = c.benchmark_group("eligibility");
    g.throughput(Throughput::Elements(RESOURCES as u64));

    // Ours, uncontended: production TTLs, nothing ever expires.
    let (_clock, live) = liveness(LivenessConfig::default(), 1024);
    let ids = client_ids(OWNERS, 1);
    let records: Vec<_> = ids.iter().map(|&id| mount(&live, id)).collect();
    let owners: Vec<Owner> = records.iter().cloned().map(Owner::new).collect();
    let ours = resources(&owners, &owner_of);
    let via_record = resources(&records, &owner_of);
    assert_eq!(count_word(&ours), RESOURCES);
    assert_eq!(count_word_via_record(&via_record), RESOURCES);
    g.bench_function("word", |b| b.iter(|| count_word(black_box(&ours))));
    #[cfg(target_arch = "x86_64")]
    g.bench_function("core_probe", |b| b.iter(|| core_probe(black_box(RESOURCES as u64))));
    g.bench_function("no_check", |b| b.iter(|| count_no_check(black_box(&ours))));
    g.bench_function("word_via_record", |b| {
        b.iter(|| count_word_via_record(black_box(&via_record)))
    });
    let dense: Vec<AtomicU64> = records.iter().map(|r| AtomicU64::new(r.word().raw())).collect();
    let dense_res = resources(&dense.iter().collect::<Vec<_>>(), &owner_of);
    assert_eq!(count_word_dense(&dense_res), RESOURCES);
    g.bench_function("word_dense", |b| b.iter(|| count_word_dense(black_box(&dense_res))));
    drop(dense_res);
    drop((dense, via_record, ours, owners, records, live));

    // Upstream: a transition mutex per record.
    let up: Vec<Arc<UpRecord>> = (0..OWNERS).map(|_| Arc::new(UpRecord::new(START_MS))).collect();
    let up_res = resources(&up, &owner_of);
    assert_eq!(count_mutex(&up_res), RESOURCES);
    g.bench_function("mutex_record", |b| b.iter(|| count_mutex(black_box(&up_res))));
    drop((up_res, up));

    // Mooncake main: resources carry the client id; `ok_client_` is a shared set.
    let mut ok_ids = client_ids(OK_CLIENTS - OWNERS, 2);
    ok_ids.extend_from_slice(&ids);
    let ok: RwLock<HashSet<u128>> = RwLock::new(ok_ids.into_iter().collect());
    let set_res = resources(&ids, &owner_of);
    assert_eq!(count_rwlock_set(&set_res, &ok), RESOURCES);
    g.bench_function("rwlock_set", |b| {
        b.iter(|| count_rwlock_set(black_box(&set_res), black_box(&ok)))
    });
    drop((set_res, ok));

    word_contended(&mut g, &owner_of);
    mutex_record_contended(&mut g, &owner_of);
    g.finish();
}

/// Measures only once the background thread is demonstrably running.
fn wait_for_first_round(progress: &AtomicU64) {
    while progress.load(Ordering::Relaxed) == 0 {
        thread::yield_now();
    }
}

/// `eligibility/word` while a second thread runs the real Ping and the real monitor on the same
/// records with a 1 ms TTL and a 1 ms tick: each round pings every owner (recovering it), moves
/// the clock one tick and ticks the monitor, which commits Active → Suspected for all of them.
fn word_contended(g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>, owner_of: &[usize]) {
    let (clock, live) = liveness(config(1, 1_000_000_000, 1), 1024);
    let ids: Vec<ClientId> = client_ids(OWNERS, 3).into_iter().map(ClientId).collect();
    let records: Vec<_> = ids.iter().map(|id| mount(&live, id.0)).collect();
    let mut monitor = Monitor::new(&live);
    let _ = monitor.tick(&live); // arms the records
    let owners: Vec<Owner> = records.iter().cloned().map(Owner::new).collect();
    let ours = resources(&owners, owner_of);
    let stop = AtomicBool::new(false);
    let progress = AtomicU64::new(0);
    thread::scope(|s| {
        let background = s.spawn(|| {
            let started = Instant::now();
            let (mut rounds, mut recovered) = (0u64, 0u64);
            while !stop.load(Ordering::Relaxed) {
                for &id in &ids {
                    recovered += u64::from(live.ping(id, None).recovered.is_some());
                }
                clock.advance_ms(1);
                let _ = black_box(monitor.tick(&live));
                rounds += 1;
                progress.store(rounds, Ordering::Relaxed);
            }
            let per_sec = rounds as f64 / started.elapsed().as_secs_f64();
            (rounds, recovered, monitor.stats().suspected, per_sec)
        });
        g.bench_function("word_contended", |b| {
            wait_for_first_round(&progress);
            b.iter(|| count_word(black_box(&ours)))
        });
        stop.store(true, Ordering::Relaxed);
        let (rounds, recovered, suspected, per_sec) = background.join().expect("background thread");
        note("word_contended.background_rounds", rounds);
        note("word_contended.background_rounds_per_sec", format!("{per_sec:.0}"));
        note("word_contended.suspected_commits", suspected);
        note("word_contended.recoveries", recovered);
    });
}

/// `eligibility/mutex_record` while a second thread does upstream's equivalent on the same
/// records, round by round like ours: a ping pass (upstream's Ping: shared lock on the client map,
/// find the record, lock it, `last = now`, Suspected → Active) and a monitor pass (upstream's
/// monitor: copy the (id, record) pairs under the shared lock, then lock each record and commit
/// Active → Suspected when `now - last >= ttl`). The lookups and the copy make the writer slower,
/// which is kinder to the baseline than bare lock+write loops.
fn mutex_record_contended(g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>, owner_of: &[usize]) {
    const TTL_MS: u64 = 1;
    let ids = client_ids(OWNERS, 3);
    let up: Vec<Arc<UpRecord>> = (0..OWNERS).map(|_| Arc::new(UpRecord::new(START_MS))).collect();
    let clients: RwLock<HashMap<u128, Arc<UpRecord>>> =
        RwLock::new(ids.iter().copied().zip(up.iter().cloned()).collect());
    let up_res = resources(&up, owner_of);
    let stop = AtomicBool::new(false);
    let progress = AtomicU64::new(0);
    thread::scope(|s| {
        let background = s.spawn(|| {
            let started = Instant::now();
            let (mut rounds, mut suspected, mut recovered) = (0u64, 0u64, 0u64);
            let mut now = START_MS;
            let mut snapshot: Vec<(u128, Arc<UpRecord>)> = Vec::with_capacity(OWNERS);
            while !stop.load(Ordering::Relaxed) {
                for id in &ids {
                    let map = clients.read().unwrap_or_else(|e| e.into_inner());
                    let rec = map.get(id).expect("registered");
                    let mut st = rec.m.lock().unwrap_or_else(|e| e.into_inner());
                    st.last_ping_ms = now;
                    if st.state == UpState::Suspected {
                        st.state = UpState::Active;
                        recovered += 1;
                    }
                }
                now += TTL_MS;
                {
                    let map = clients.read().unwrap_or_else(|e| e.into_inner());
                    snapshot.extend(map.iter().map(|(id, rec)| (*id, Arc::clone(rec))));
                }
                for (_id, rec) in snapshot.drain(..) {
                    let mut st = rec.m.lock().unwrap_or_else(|e| e.into_inner());
                    if st.state == UpState::Active && now - st.last_ping_ms >= TTL_MS {
                        st.state = UpState::Suspected;
                        suspected += 1;
                    }
                }
                rounds += 1;
                progress.store(rounds, Ordering::Relaxed);
            }
            let per_sec = rounds as f64 / started.elapsed().as_secs_f64();
            (rounds, recovered, suspected, per_sec)
        });
        g.bench_function("mutex_record_contended", |b| {
            wait_for_first_round(&progress);
            b.iter(|| count_mutex(black_box(&up_res)))
        });
        stop.store(true, Ordering::Relaxed);
        let (rounds, recovered, suspected, per_sec) = background.join().expect("background thread");
        note("mutex_record_contended.background_rounds", rounds);
        note(
            "mutex_record_contended.background_rounds_per_sec",
            format!("{per_sec:.0}"),
        );
        note("mutex_record_contended.suspected_commits", suspected);
        note("mutex_record_contended.recoveries", recovered);
    });
}
