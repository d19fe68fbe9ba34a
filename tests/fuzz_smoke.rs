//! Replays the committed fuzz seeds and random bytes through every fuzz body (always-on smoke).

use mooncake_liveness::fuzzing;
use proptest::prelude::*;
use std::path::Path;

type Target = fn(&[u8]);

const TARGETS: &[(&str, Target)] = &[
    ("word_transitions", fuzzing::word_transitions),
    ("config_parse", fuzzing::config_parse),
    ("snapshot_decode", fuzzing::snapshot_decode),
    ("snapshot_restore", fuzzing::snapshot_restore),
    ("trace_parse", fuzzing::trace_parse),
    ("queue_ops", fuzzing::queue_ops),
    ("differential", fuzzing::differential),
    ("wire_decode", fuzzing::wire_decode),
];

#[test]
fn seeds_replay_cleanly() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds");
    for (name, target) in TARGETS {
        let dir = root.join(name);
        let mut n = 0;
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let data = std::fs::read(entry.unwrap().path()).unwrap();
            target(&data);
            n += 1;
        }
        assert!(n > 0, "no seeds for {name}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(if cfg!(miri) { 10 } else { 2_000 }))]
    #[test]
    fn random_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..512)) {
        for (_, target) in TARGETS {
            target(&data);
        }
    }
}

/// The committed `differential` seeds reach both offboarding modes and, in async mode, a
/// completion on the executor, a retry, a failover while the executor held a job and the
/// shutdown hand-back; in both modes, a window armed on wheel level ≥ 2 expiring, a job
/// whose `metadata` step took several batches, the mass-suspicion brake engaging and
/// releasing, and Copy/Move tasks delivered, held back from an Active executor (their source's
/// owner Suspected) and completed by a Suspected executor, Move tasks started by Drain,
/// offloads done (LocalDisk replicas), promotions done, and NoF segments unmounted by probes
/// while clients changed state beside them, stalls credited by the stall brake, and a
/// task_done from an Offline executor whose job is pending.
#[test]
fn differential_seeds_reach_both_modes() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds/differential");
    let mut total = fuzzing::Counts::default();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let data = std::fs::read(entry.unwrap().path()).unwrap();
        total.add(&fuzzing::differential_counts(&data));
    }
    assert_every_feature(&total);
}

/// Every feature `differential_seeds_reach_both_modes` lists is reached in `total`.
fn assert_every_feature(total: &fuzzing::Counts) {
    assert!(total.inputs[0] > 0 && total.inputs[1] > 0, "{total}");
    assert!(total.offboarded[1] > 0 && total.retries[1] > 0, "{total}");
    assert!(
        total.failovers_with_executor_jobs > 0 && total.handed_back > 0,
        "{total}"
    );
    for mode in 0..2 {
        assert!(total.level2_expiries[mode] > 0, "{total}");
        assert!(total.multi_batch_jobs[mode] > 0, "{total}");
        assert!(
            total.brake_engaged[mode] > 0 && total.brake_released[mode] > 0,
            "{total}"
        );
        assert!(
            total.tasks_delivered[mode] > 0
                && total.fetches_holding_back[mode] > 0
                && total.tasks_done_while_suspected[mode] > 0
                && total.drain_moves[mode] > 0
                && total.offloads_done[mode] > 0
                && total.promotions_done[mode] > 0
                && total.nof_unmounts[mode] > 0
                && total.transitions_beside_nof[mode] > 0
                && total.stalls_credited[mode] > 0
                && total.tasks_done_offline[mode] > 0,
            "{total}"
        );
    }
}

/// The committed minimised `differential` corpus (`fuzz/corpus-min/differential`: the inputs of
/// FUZZING.md's campaigns merged by libFuzzer to the smallest set with the same coverage)
/// replays through the checked harness with no divergence, and reaches every feature the seeds
/// do (`assert_every_feature`). Thousands of inputs: `scripts/test.sh` runs it in release.
#[test]
#[ignore = "thousands of inputs; scripts/test.sh runs it in release"]
fn minimised_corpus_replays_cleanly() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus-min/differential");
    let mut total = fuzzing::Counts::default();
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        let data = std::fs::read(&path).unwrap();
        // The checked run (model comparison), then the full body (determinism: a second run).
        total.add(&fuzzing::differential_counts(&data));
        fuzzing::differential(&data);
        n += 1;
    }
    assert!(n > 1_000, "only {n} inputs in {}", dir.display());
    assert_every_feature(&total);
}
