//! Hot-path benchmarks: the serving check, Ping, and the monitor tick, each against a baseline
//! modelled (in this file) on the design it stands for.
//!
//! | group/function | what runs | baseline for |
//! |---|---|---|
//! | `eligibility/word` | 1024 resources holding an `Owner` (one pointer to the word; 256 shared owners), count `owner.is_serving()`: one load from the word slab | ours |
//! | `eligibility/no_check` | the same loop over the same resources, counting a resource field | the floor |
//! | `eligibility/word_via_record` | resources holding the record's `Arc` instead, count `record.is_serving()` (record line, then slot) | ours, for a resource holding only the record |
//! | `eligibility/core_probe` | 1024 iterations of four independent register adds, no memory (x86-64 only) | the machine: slower than usual means a slower core, not slower loads |
//! | `eligibility/word_dense` | the same check on private copies of the words packed 8 to a cache line | the placement the slab should give |
//! | `eligibility/mutex_record` | owners are `Arc<Mutex<State>>`: lock, read, unlock | upstream's per-record transition mutex |
//! | `eligibility/rwlock_set` | owners are client ids: `RwLock<HashSet<u128>>` read-lock + contains (10k ids) | Mooncake main's `ok_client_` |
//! | `eligibility/*_contended` | `word` / `mutex_record` while a second thread pings and flips the same records | |
//! | `ping/word` | `Liveness::ping` over 10k registered clients, manual clock | ours |
//! | `ping/queue_push` | `ArrayQueue<u128>` (cap 131072) push, drained into a `HashMap` by a second thread | Mooncake main's ping queue |
//! | `monitor/idle_tick_1m` | one `Monitor::tick` with 1M armed clients and nothing due | ours |
//! | `monitor/full_scan_1m` | copy 1M (id, record) pairs under a shared lock, lock each, compare `now - last >= ttl` | upstream's monitor |
//! | `monitor/expire_100k` | the tick that commits 100k Active → Suspected | ours |
//! | `monitor/worst_tick_1m` | the slowest tick of each 64-tick window of a steady 1M fleet pinging every second | ours |
//! | `monitor/mass_expiry_100k` | the tick that commits 100k Active → Suspected in a 1M fleet (a 10 % partition) | ours |
//!
//! Run with `scripts/bench.sh` (quick mode + report) or `cargo bench --bench hot_path`. Lines
//! starting `hot_path-note:` on stdout carry facts the report needs (record size, background
//! thread work, queue-full pushes, and a hand-timed steady-state monitor tick that
//! `HOT_PATH_NO_STEADY=1` skips); `scripts/bench.sh` collects them. `HOT_PATH_NO_MONITOR=1` skips
//! the whole `monitor` group, whose 1M-client setups run even when a filter excludes it.

mod common;
mod eligibility;
mod monitor;
mod ping;
mod steady;

use common::{note, RESOURCES};
use criterion::Criterion;
use mooncake_liveness::ClientLivenessRecord;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    note("record_size_bytes", std::mem::size_of::<ClientLivenessRecord>());
    note("record_align_bytes", std::mem::align_of::<ClientLivenessRecord>());
    note("eligibility_resources", RESOURCES);
    let mut c = Criterion::default().configure_from_args();
    eligibility::eligibility(&mut c);
    ping::ping(&mut c);
    monitor::monitor(&mut c);
    c.final_summary();
}
