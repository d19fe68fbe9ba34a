//! Metrics through the `metrics` facade and the `stats()` snapshot agree with what happened.

use metrics_util::debugging::{DebugValue, DebuggingRecorder};
use mooncake_liveness::master::{Master, MasterOptions};
use mooncake_liveness::offboarding::Step;
use mooncake_liveness::{Clock, LivenessConfig, ManualClock};
use std::sync::Arc;

/// (metric name, labels, value).
type Sample = (String, Vec<(String, String)>, DebugValue);

fn counter(snapshot: &[Sample], name: &str, labels: &[(&str, &str)]) -> u64 {
    snapshot
        .iter()
        .filter(|(n, l, _)| n == name && labels.iter().all(|(k, v)| l.iter().any(|(lk, lv)| lk == k && lv == v)))
        .map(|(_, _, v)| match v {
            DebugValue::Counter(c) => *c,
            _ => 0,
        })
        .sum()
}

#[test]
fn counters_and_stats_follow_transitions_retries_and_completion() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let clock = Arc::new(ManualClock::new(0));
    let config = LivenessConfig {
        active_ttl_ms: 10_000,
        suspicion_ttl_ms: 20_000,
        stall_bound_ms: 5_000,
        ..LivenessConfig::default()
    };
    let stats = metrics::with_local_recorder(&recorder, || {
        let m = Master::new(clock.clone() as Arc<dyn Clock>, config, MasterOptions::default());
        m.mount("c1", "s1", 100).unwrap();
        m.mount("c2", "s2", 100).unwrap();
        m.fail_step(Step::Segments, 2);
        for t in (100..=40_000).step_by(100) {
            clock.set_ms(t);
            m.tick();
            if t == 12_000 {
                m.ping("c2"); // recovers c2 once
            }
            if t % 1_000 == 0 && t > 12_000 {
                m.ping("c2");
            }
        }
        m.stats()
    });
    let snap: Vec<Sample> = snapshotter
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
        .collect();
    let t = "mooncake_liveness_transitions_total";
    assert_eq!(counter(&snap, t, &[("to", "suspected"), ("cause", "timeout")]), 2);
    assert_eq!(
        counter(&snap, t, &[("to", "active"), ("cause", "recovered_by_ping")]),
        1
    );
    assert_eq!(
        counter(&snap, "mooncake_liveness_recovered_false_positives_total", &[]),
        1
    );
    assert_eq!(counter(&snap, t, &[("to", "offline")]), 1);
    assert_eq!(
        counter(
            &snap,
            "mooncake_liveness_offboarding_step_failures_total",
            &[("step", "segments")]
        ),
        2
    );
    assert_eq!(counter(&snap, "mooncake_liveness_offboarding_retries_total", &[]), 2);
    assert_eq!(
        counter(&snap, "mooncake_liveness_offboarding_jobs_completed_total", &[]),
        1
    );
    assert_eq!((stats.suspicions, stats.recoveries, stats.offline_commits), (2, 1, 1));
    assert_eq!(
        (stats.jobs_completed, stats.step_failures[Step::Segments as usize]),
        (1, 2)
    );
    assert_eq!(
        (stats.active, stats.suspected, stats.offline, stats.jobs_pending),
        (1, 0, 0, 0)
    );
}
