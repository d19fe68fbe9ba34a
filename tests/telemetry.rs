//! Metrics through the `metrics` facade and the `stats()` snapshot agree with what happened, in
//! both offboarding modes: `sync` (jobs run inline at the tick) and `async` (the master's own
//! worker threads run them; the test waits for them with a bounded loop).
//!
//! The workers record metrics on their own threads, so a thread-local recorder would miss them:
//! this binary installs one global `DebuggingRecorder` and runs the scenario once per mode from a
//! single test, reading (and so resetting: the debugging snapshotter swaps values out) the
//! recorder before and after each run.

use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use mooncake_liveness::config::OffboardingMode;
use mooncake_liveness::master::{Master, MasterOptions};
use mooncake_liveness::offboarding::Step;
use mooncake_liveness::telemetry::Stats;
use mooncake_liveness::{Clock, LivenessConfig, ManualClock};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// (metric name, labels, value).
type Sample = (String, Vec<(String, String)>, DebugValue);

/// How long the test waits for the workers, at most (a bound, not a timing assertion).
const WAIT: Duration = Duration::from_secs(30);

fn matching<'a>(
    snapshot: &'a [Sample],
    name: &'a str,
    labels: &'a [(&str, &str)],
) -> impl Iterator<Item = &'a DebugValue> {
    snapshot
        .iter()
        .filter(move |(n, l, _)| n == name && labels.iter().all(|(k, v)| l.iter().any(|(lk, lv)| lk == k && lv == v)))
        .map(|(_, _, v)| v)
}

fn counter(snapshot: &[Sample], name: &str, labels: &[(&str, &str)]) -> u64 {
    matching(snapshot, name, labels)
        .map(|v| match v {
            DebugValue::Counter(c) => *c,
            _ => 0,
        })
        .sum()
}

/// The last value of a gauge (0 if it was never set).
fn gauge(snapshot: &[Sample], name: &str, labels: &[(&str, &str)]) -> f64 {
    matching(snapshot, name, labels)
        .map(|v| match v {
            DebugValue::Gauge(g) => g.into_inner(),
            _ => 0.0,
        })
        .sum()
}

fn read(snapshotter: &Snapshotter) -> Vec<Sample> {
    snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .map(|(k, _, _, v)| {
            let key = k.key();
            let labels = key
                .labels()
                .map(|l| (l.key().to_string(), l.value().to_string()))
                .collect();
            (key.name().to_string(), labels, v)
        })
        .collect()
}

/// Waits (bounded) until `done`, then returns whether it happened.
fn wait_until(mut done: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while !done() {
        if start.elapsed() > WAIT {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    true
}

/// Three clients mount at 0 and go silent: Suspected at 10 s. At 12 s `c2` recovers through the
/// master's Ping and `c3` through the lock-free path (`liveness_handle().ping`); both then ping
/// every second. `c1` goes Offline at 30 s; its `segments` step fails twice before the job
/// completes. Returns the stats at the Offline commit, the final stats and the metrics.
fn scenario(mode: OffboardingMode, snapshotter: &Snapshotter) -> (Stats, Stats, Vec<Sample>) {
    let clock = Arc::new(ManualClock::new(0));
    let config = LivenessConfig {
        active_ttl_ms: 10_000,
        suspicion_ttl_ms: 20_000,
        stall_bound_ms: 5_000,
        offboarding_mode: mode,
        ..LivenessConfig::default()
    };
    let _ = read(snapshotter); // start from zero
    let m = Master::new(clock.clone() as Arc<dyn Clock>, config, MasterOptions::default());
    for (c, s) in [("c1", "s1"), ("c2", "s2"), ("c3", "s3")] {
        m.mount(c, s, 100).unwrap();
    }
    let live = m.liveness_handle();
    let c3 = m.client_id("c3").unwrap();
    m.fail_step(Step::Segments, 2);
    let mut at_commit = None;
    for t in (100..=40_000).step_by(100) {
        clock.set_ms(t);
        m.tick();
        if at_commit.is_none() && m.stats().offline_commits == 1 {
            at_commit = Some(m.stats());
        }
        if t == 12_000 {
            m.ping("c2");
            live.ping(c3, None);
        }
        if t % 1_000 == 0 && t > 12_000 {
            m.ping("c2");
            m.ping("c3");
        }
    }
    // Async: the workers retry on the manual clock and may lag the loop above; keep time
    // moving (one tick per wait) until the job completes, within a bound.
    let mut t = 40_000;
    let completed = wait_until(|| {
        t += 100;
        clock.set_ms(t);
        m.tick();
        m.stats().jobs_completed == 1
    });
    assert!(
        completed,
        "{mode:?}: the job did not complete within {WAIT:?}: {:?}",
        m.stats()
    );
    // One more tick publishes the gauges after the completion.
    clock.set_ms(t + 100);
    m.tick();
    let stats = m.stats();
    drop(m);
    (at_commit.expect("c1 went Offline"), stats, read(snapshotter))
}

#[test]
fn counters_gauges_and_stats_agree_in_both_offboarding_modes() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    metrics::set_global_recorder(recorder).expect("the only recorder of this test binary");
    for mode in [OffboardingMode::Sync, OffboardingMode::Async] {
        let (at_commit, stats, snap) = scenario(mode, &snapshotter);
        let t = "mooncake_liveness_transitions_total";
        let what = format!("{mode:?}");
        // At the Offline commit, the job is pending in either mode (it fails twice first).
        assert_eq!(
            (at_commit.offline, at_commit.jobs_pending, at_commit.jobs_completed),
            (1, 1, 0),
            "{what}: {at_commit:?}"
        );
        assert_eq!(
            counter(&snap, t, &[("to", "suspected"), ("cause", "timeout")]),
            3,
            "{what}"
        );
        assert_eq!(counter(&snap, t, &[("to", "offline")]), 1, "{what}");
        assert_eq!(
            counter(
                &snap,
                "mooncake_liveness_offboarding_step_failures_total",
                &[("step", "segments")]
            ),
            2,
            "{what}"
        );
        assert_eq!(
            counter(&snap, "mooncake_liveness_offboarding_retries_total", &[]),
            2,
            "{what}"
        );
        assert_eq!(
            counter(&snap, "mooncake_liveness_offboarding_jobs_completed_total", &[]),
            1,
            "{what}"
        );
        // Both recoveries, the master's Ping and the lock-free one, are counted.
        assert_eq!(
            (stats.suspicions, stats.recoveries, stats.offline_commits),
            (3, 2, 1),
            "{what}: {stats:?}"
        );
        assert_eq!(
            (stats.jobs_completed, stats.step_failures[Step::Segments as usize]),
            (1, 2),
            "{what}: {stats:?}"
        );
        assert_eq!(
            (stats.active, stats.suspected, stats.offline, stats.jobs_pending),
            (2, 0, 0, 0),
            "{what}: {stats:?}"
        );
        // Gauges after the completion: two Active, nothing pending or queued.
        let clients = "mooncake_liveness_clients";
        assert_eq!(gauge(&snap, clients, &[("state", "active")]), 2.0, "{what}");
        assert_eq!(gauge(&snap, clients, &[("state", "offline")]), 0.0, "{what}");
        assert_eq!(
            gauge(&snap, "mooncake_liveness_offboarding_pending_jobs", &[]),
            0.0,
            "{what}"
        );
        assert_eq!(
            gauge(&snap, "mooncake_liveness_offboarding_queue_depth", &[]),
            0.0,
            "{what}: the queue-depth gauge must not stay at a stale depth"
        );
    }
}
