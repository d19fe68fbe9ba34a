//! When the monitor commits: a first mount's deadline, one wheel entry per retained
//! incarnation, re-arming after the tick being processed, and TTL reloads (a shortening reload
//! pulls entries in; a window keeps the TTL it started with). Regression tests for defects the
//! differential fuzz target and a review against the RFC found (issue 16) and boundary tests
//! that kill mutants (issue 17, MUTANTS.md).

mod common;

use common::{config, master, Harness};
use mooncake_liveness::clock::LivenessMs;
use mooncake_liveness::{ClientId, LivenessConfig, LivenessState};

const A: u64 = 10_000;
const S: u64 = 20_000;

/// The first signal of a new incarnation is the mount's commit, not its begin: a mount whose work
/// took 4 s is due for suspicion one active TTL after the work finished.
#[test]
fn first_mount_deadline_counts_from_the_commit() {
    let mut h = Harness::new(config(A, S));
    let pending = h.live.begin_mount(ClientId(1), None).expect("begin");
    h.run_to(4_000); // the mount work runs
    let done = h.live.commit_mount(pending).expect("commit");
    assert_eq!(done.record.word().deadline(), LivenessMs(4_000 + A));
    h.run_to(13_900);
    assert!(
        h.transitions().is_empty(),
        "suspected before the active TTL since the mount"
    );
    h.run_to(14_000);
    assert_eq!(h.transitions(), vec![(14_000, 1, "Active", "Suspected")]);
}

/// The monitor holds one wheel entry per Active or Suspected incarnation, and none for an
/// Offline one (its entry retires at the Offline commit).
#[test]
fn the_monitor_arms_one_entry_per_retained_incarnation() {
    let mut h = Harness::new(config(A, S));
    h.mount(1);
    h.mount(2);
    h.run_to(100);
    assert_eq!(h.monitor.armed(), 2);
    h.run_to(10_000); // both Suspected
    assert_eq!(h.monitor.armed(), 2);
    for t in (11_000..=30_000).step_by(1_000) {
        h.run_to(t);
        h.ping(2);
    }
    assert_eq!(offline_count(&h), 1);
    assert_eq!(h.monitor.armed(), 1, "client 1 is Offline");
}

/// The monitor's counters (exported as metrics): ticks run, wheel entries examined (only the due
/// ones: O(due), not O(clients)), and the transitions and stalls it committed.
#[test]
fn monitor_stats_count_ticks_examined_entries_and_commits() {
    let mut h = Harness::new(config(A, S));
    h.mount(1);
    h.run_to(10_000); // 100 ticks; the entry is due once, at 10_000, and is suspected
    let s = h.monitor.stats();
    assert_eq!((s.ticks, s.entries_examined, s.suspected, s.offline), (100, 1, 1, 0));
    // Re-armed at min(30_000, 10_000 + A) = 20_000 (a recovery could make it due then), then
    // Offline at 30_000.
    h.run_to(30_000);
    let s = h.monitor.stats();
    assert_eq!((s.ticks, s.entries_examined, s.suspected, s.offline), (300, 3, 1, 1));
    h.stall_to(40_000);
    let s = h.monitor.stats();
    assert_eq!((s.ticks, s.stalls, s.stall_ms), (301, 1, 10_000));
}

/// `Monitor::rearm` files an entry strictly after the tick being processed: an entry that waits
/// (its deadline moved, but still within the current tick) does not come back when the same tick
/// runs again (a repeated tick, e.g. a timer that fires twice at one clock reading), and fires
/// at the next tick.
#[test]
fn a_waiting_entry_is_rearmed_after_the_tick_being_processed() {
    let mut h = Harness::new(config(A, S));
    h.mount(1); // deadline 10_000
    h.run_to(50);
    h.ping(1); // deadline 10_050: still in the tick of 10_000
    h.run_to(10_000);
    assert_eq!(h.monitor.stats().entries_examined, 1, "fired at 10_000 and waits");
    h.stall_to(10_000); // the same tick again
    assert_eq!(
        h.monitor.stats().entries_examined,
        1,
        "not re-armed at the tick being processed"
    );
    h.run_to(10_100);
    assert_eq!(h.monitor.stats().entries_examined, 2);
    assert_eq!(h.transitions(), vec![(10_100, 1, "Active", "Suspected")]);
}

/// The monitor's debug form names its tick, its armed entries and its counters.
#[test]
fn monitor_debug_shows_tick_armed_and_stats() {
    let mut h = Harness::new(config(A, S));
    h.mount(1);
    h.run_to(100);
    let s = format!("{:?}", h.monitor);
    assert!(
        s.starts_with("Monitor { tick_ms: 100, armed: 1, stats: MonitorStats { ticks: 1,"),
        "{s}"
    );
}

/// Invariant 4 across a reload that shortens the active TTL (`Monitor::follow_ttl_reload`): the
/// entry of a Suspected incarnation was armed for `min(suspicion deadline, commit + old TTL)`;
/// a recovery after the reload sets the new, earlier Active deadline, so the monitor must pull
/// the entry in or it re-suspects the client late (here at 20_000 instead of 13_000).
#[test]
fn a_recovery_after_the_active_ttl_shrinks_is_resuspected_on_time() {
    let mut h = Harness::new(config(A, S));
    h.mount(1);
    h.run_to(10_000); // Suspected; its entry wakes at min(30_000, 10_000 + A) = 20_000
    let shorter = LivenessConfig {
        active_ttl_ms: 2_000,
        stall_bound_ms: 1_000,
        ..config(A, S)
    };
    h.live.config().reload(shorter).unwrap();
    h.run_to(11_000);
    assert!(
        h.live.ping(ClientId(1), None).recovered.is_some(),
        "Active until 13_000"
    );
    h.run_to(14_000);
    let after: Vec<_> = h.transitions().into_iter().filter(|t| t.0 > 10_000).collect();
    assert_eq!(after, vec![(13_000, 1, "Active", "Suspected")]);
}

/// Only a reload that *shortens* the active TTL pulls the wheel's entries in: on any other tick
/// an entry sleeps to its deadline. Here a client mounts between a tick at 100 and a late tick
/// at 2_000 (late by less than the stall bound), so its deadline (11_900) lies beyond the last
/// tick + the TTL (10_100): pulling in would fire it early, at 10_100, and count it examined.
#[test]
fn only_a_shortening_reload_pulls_entries_in() {
    let mut h = Harness::new(config(A, S));
    h.run_to(100);
    h.clock.set_ms(1_900);
    h.mount(1);
    h.stall_to(2_000);
    assert!(h.stalls().is_empty(), "1_800 ms late is under the bound");
    h.run_to(11_800);
    assert_eq!(
        h.monitor.stats().entries_examined,
        0,
        "nothing fires before the deadline"
    );
    h.run_to(11_900);
    assert_eq!(h.monitor.stats().entries_examined, 1);
    assert_eq!(h.transitions(), vec![(11_900, 1, "Active", "Suspected")]);
}

/// Finding of the `differential` fuzz target (TTL reload): when the active TTL shrinks while an
/// incarnation is Suspected, the monitor's wake-up for it was armed with the old TTL
/// (`min(suspicion deadline, commit + old active TTL)`); a recovery after the reload sets the
/// new, earlier active deadline, and the monitor looked again only at the old wake-up, so the
/// incarnation went Suspected late (invariant 4: no later than one tick after its deadline).
/// Fixed: the monitor pulls every entry in when a reload shortens the active TTL.
#[test]
fn a_client_recovered_after_the_active_ttl_shrinks_is_suspected_on_time() {
    let mut m = master::M::new();
    m.at(0).mount("c1", "s1", 1 << 20).unwrap();
    m.at(10_000);
    assert_eq!(m.m.stats().suspected, 1, "Suspected at its 10 s deadline");
    let shorter = LivenessConfig {
        active_ttl_ms: 2_000,
        stall_bound_ms: 1_000,
        ..master::config()
    };
    m.m.liveness().config().reload(shorter).unwrap();
    m.at(11_000).ping("c1");
    assert_eq!(m.m.stats().suspected, 0, "recovered at 11 s");
    // New active deadline: 11 s + 2 s. Due no later than one tick (100 ms) after it.
    m.at(13_100);
    assert_eq!(
        m.m.stats().suspected,
        1,
        "Suspected by 13.1 s (before the fix: still Active, the monitor woke at 20 s)"
    );
}

/// An Active incarnation's window keeps the TTL it started with (a signal only moves its
/// deadline later): a shortening reload pulls its wheel entry in (it fires early and re-arms),
/// and it is still suspected exactly at its old deadline, not before and not late.
#[test]
fn an_active_window_keeps_its_ttl_across_a_shortening_reload() {
    let mut m = master::M::new();
    m.at(0).mount("c1", "s1", 1 << 20).unwrap();
    m.at(1_000).ping("c1"); // deadline 11 s, under the 10 s TTL
    let shorter = LivenessConfig {
        active_ttl_ms: 2_000,
        stall_bound_ms: 1_000,
        ..master::config()
    };
    m.m.liveness().config().reload(shorter).unwrap();
    m.at(1_500).ping("c1"); // max(11 s, 1.5 s + 2 s): still 11 s
    m.at(10_900);
    assert_eq!(m.m.stats().suspected, 0, "its window runs to 11 s");
    m.at(11_100);
    assert_eq!(m.m.stats().suspected, 1, "Suspected by 11.1 s (one tick after 11 s)");
}

/// The same late commit through a reload that shortens the active TTL and a second reload that
/// lengthens it again before the next tick (found by `tests/fuzz_smoke.rs`'s random bytes, issue
/// 17 §3): the monitor compared only the configurations of consecutive ticks, saw no
/// shortening, and left the Suspected entry asleep at commit + the long TTL, while the recovery
/// between the reloads started a window under the short TTL (invariant 4). Fixed: the
/// configuration handle remembers the shortest active TTL published since the monitor last
/// looked, and the monitor pulls its entries in to that.
#[test]
fn a_recovery_under_a_briefly_shorter_active_ttl_is_suspected_on_time() {
    let mut m = master::M::new();
    m.at(0).mount("c1", "s1", 1 << 20).unwrap();
    m.at(10_000);
    assert_eq!(m.m.stats().suspected, 1, "Suspected at its 10 s deadline");
    let shorter = LivenessConfig {
        active_ttl_ms: 2_000,
        stall_bound_ms: 1_000,
        ..master::config()
    };
    // Between two ticks: shorter, a recovery under it, back to the long TTL.
    m.at(11_000);
    m.m.liveness().config().reload(shorter).unwrap();
    m.m.ping("c1");
    assert_eq!(m.m.stats().suspected, 0, "recovered at 11 s");
    m.m.liveness().config().reload(master::config()).unwrap();
    m.at(13_100);
    assert_eq!(
        m.m.stats().suspected,
        1,
        "Suspected by 13.1 s (before the fix: still Active, the monitor woke at 20 s)"
    );
}

/// The reload pull-in must follow each TTL: an active TTL shrinking (100 s → 2 s) while the
/// shorter TTL grows (1 s → 2 s) left a Suspected entry asleep one long active TTL out past a
/// recovery's 2 s window (found by the libFuzzer campaign of issue 17 §3, a regression of the
/// brake fix; invariant 4).
#[test]
fn an_active_ttl_shrink_is_followed_even_when_the_shorter_ttl_grows() {
    let mut m = master::M::new();
    let ttls = |active_ttl_ms, suspicion_ttl_ms| LivenessConfig {
        active_ttl_ms,
        suspicion_ttl_ms,
        stall_bound_ms: active_ttl_ms / 2,
        ..master::config()
    };
    m.m.liveness().config().reload(ttls(10_000, 100_000)).unwrap();
    m.at(0).mount("c1", "s1", 1 << 20).unwrap();
    m.at(10_000);
    assert_eq!(
        m.state("c1"),
        Some(LivenessState::Suspected),
        "Suspected at 10 s, window to 110 s"
    );
    m.m.liveness().config().reload(ttls(100_000, 1_000)).unwrap();
    m.at(20_000); // the entry re-arms at min(110 s, 20 s + 100 s)
    m.m.liveness().config().reload(ttls(2_000, 3_000)).unwrap();
    m.m.ping("c1"); // recovered: Active until 22 s
    m.at(22_100);
    assert_eq!(
        m.state("c1"),
        Some(LivenessState::Suspected),
        "Suspected by 22.1 s (before the fix: the entry slept until 110 s)"
    );
}

fn offline_count(h: &Harness) -> usize {
    h.transitions().iter().filter(|t| t.3 == "Offline").count()
}
