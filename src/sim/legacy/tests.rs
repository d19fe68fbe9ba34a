//! Unit tests of `legacy.rs`, in a file of their own beside it.

use super::*;
use crate::clock::{Clock, ManualClock};
use crate::master::MasterOptions;
use std::sync::Arc;

fn master() -> Master {
    let clock = Arc::new(ManualClock::new(0));
    Master::new(
        clock as Arc<dyn Clock>,
        LegacyMonitor::master_config(&LivenessConfig::default()),
        MasterOptions::default(),
    )
}

fn spec(name: &str) -> [SegmentSpec; 1] {
    [SegmentSpec {
        segment: name.into(),
        size: 1 << 20,
    }]
}

#[test]
fn deadline_is_anchored_at_the_draining_tick() {
    let (mut m, mut mon) = (master(), LegacyMonitor::new(3_000));
    mon.mount(&mut m, "c", "s", 1 << 20).unwrap();
    mon.run_ticks_to(&mut m, 500);
    mon.ping(&mut m, "c").unwrap(); // at 500, drained at 1000
    assert!(mon.run_ticks_to(&mut m, 3_000).is_empty());
    assert_eq!(mon.deadline_ms("c"), Some(4_000));
    let e = mon.run_ticks_to(&mut m, 4_000);
    assert_eq!(e.len(), 1);
    assert_eq!(e[0].at_ms, 4_000);
    assert!(!mon.is_tracked("c"));
    assert!(m.segments().is_empty());
}

#[test]
fn a_ping_drained_at_the_expiring_tick_saves_the_client() {
    let (mut m, mut mon) = (master(), LegacyMonitor::new(3_000));
    mon.mount(&mut m, "c", "s", 1 << 20).unwrap();
    mon.run_ticks_to(&mut m, 3_999);
    mon.ping(&mut m, "c").unwrap();
    assert!(mon.run_ticks_to(&mut m, 4_000).is_empty());
    assert_eq!(mon.deadline_ms("c"), Some(7_000));
}

#[test]
fn expiry_is_one_batch_and_erases_complete_and_in_flight_objects() {
    let (mut m, mut mon) = (master(), LegacyMonitor::new(2_000));
    for c in ["a", "b", "c"] {
        mon.mount(&mut m, c, &format!("s{c}"), 1 << 20).unwrap();
        mon.remount(&mut m, c, &spec(&format!("s{c}"))).unwrap();
    }
    for i in 0..6 {
        m.put(&format!("k{i}"), 1024, 1).unwrap();
    }
    for i in 0..5 {
        m.put_end(&format!("k{i}")).unwrap();
    }
    // "c" keeps pinging; "a" and "b" go silent.
    mon.run_ticks_to(&mut m, 1_500);
    mon.ping(&mut m, "c").unwrap();
    mon.run_ticks_to(&mut m, 2_500);
    mon.ping(&mut m, "c").unwrap();
    let e = mon.run_ticks_to(&mut m, 3_000);
    let names: Vec<_> = e.iter().map(|x| x.client.as_str()).collect();
    assert_eq!(names, ["a", "b"]);
    let lost: usize = e.iter().map(|x| x.objects_lost).sum();
    assert_eq!(m.objects().len(), 6 - lost);
    assert!(m.objects().keys().all(|k| m.admin_replicas(k).is_ok() || k == "k5"));
    assert_eq!(mon.ping(&mut m, "a").unwrap(), LegacyPing::NeedRemount);
    assert_eq!(mon.ping(&mut m, "c").unwrap(), LegacyPing::Ok);
}

#[test]
fn a_put_in_flight_on_an_expired_segment_is_erased() {
    let (mut m, mut mon) = (master(), LegacyMonitor::new(1_000));
    mon.mount(&mut m, "c", "s", 1 << 20).unwrap();
    m.put("done", 1024, 1).unwrap();
    m.put_end("done").unwrap();
    m.put("writing", 1024, 1).unwrap();
    let e = mon.run_ticks_to(&mut m, 2_000);
    assert_eq!(e[0].objects_lost, 2);
    assert!(m.objects().is_empty());
    assert_eq!(m.put_end("writing"), Err(MasterError::ObjectNotFound));
}

#[test]
fn no_remount_barrier_and_idempotent_remount() {
    let (mut m, mut mon) = (master(), LegacyMonitor::new(1_000));
    mon.mount(&mut m, "c", "s", 1 << 20).unwrap();
    mon.remount(&mut m, "c", &spec("s")).unwrap();
    mon.run_ticks_to(&mut m, 1_000);
    assert_eq!(mon.queued(), 0);
    mon.remount(&mut m, "c", &spec("s")).unwrap();
    assert_eq!(mon.queued(), 0, "a ready client's ReMount pushes nothing");
    assert_eq!(mon.run_ticks_to(&mut m, 2_000).len(), 1);
    mon.remount(&mut m, "c", &spec("s")).unwrap();
    assert!(mon.is_ready("c"));
    assert_eq!(m.segments().len(), 1);
}

#[test]
fn a_full_queue_refuses_pings_and_mounts() {
    let (mut m, mut mon) = (master(), LegacyMonitor::with(3_000, 1_000, 2));
    mon.ping(&mut m, "a").unwrap();
    mon.ping(&mut m, "b").unwrap();
    assert_eq!(mon.ping(&mut m, "c"), Err(LegacyError::QueueFull));
    assert_eq!(mon.mount(&mut m, "c", "s", 1 << 20), Err(LegacyError::QueueFull));
    assert!(m.segments().is_empty(), "a refused push mounts nothing");
    assert_eq!(mon.rejected_pings(), 2);
    mon.run_ticks_to(&mut m, 1_000);
    assert!(mon.is_tracked("a") && !mon.is_tracked("c"));
}

#[test]
fn mains_queue_takes_more_than_its_preallocated_nodes() {
    // `client_ping_queue_.push` allocates past `kClientPingQueueSize`: nothing is refused.
    let (mut m, mut mon) = (master(), LegacyMonitor::new(3_000));
    for _ in 0..=PING_QUEUE_CAPACITY {
        assert_eq!(mon.ping(&mut m, "a"), Ok(LegacyPing::NeedRemount));
    }
    assert_eq!((mon.queued(), mon.rejected_pings()), (PING_QUEUE_CAPACITY + 1, 0));
    mon.run_ticks_to(&mut m, 1_000);
    assert_eq!((mon.queued(), mon.deadline_ms("a")), (0, Some(4_000)));
}

#[test]
fn a_monitor_woken_at_the_resume_ticks_from_there() {
    let (mut m, mut mon) = (master(), LegacyMonitor::new(3_000));
    mon.mount(&mut m, "c", "s", 1 << 20).unwrap();
    mon.run_ticks_to(&mut m, 2_000); // deadline 4000
    mon.wake_at(9_250);
    assert_eq!(mon.next_tick_ms(), 9_250);
    let e = mon.run_ticks_to(&mut m, 9_250);
    assert_eq!((e.len(), e[0].at_ms), (1, 9_250));
    mon.run_ticks_to(&mut m, 10_250);
    assert_eq!(mon.next_tick_ms(), 11_250, "later ticks keep the wake's phase");
    mon.wake_at(5_000);
    assert_eq!(
        mon.next_tick_ms(),
        11_250,
        "a monitor asleep past the wake keeps its own time"
    );
}

#[test]
fn skipped_ticks_let_buffered_pings_win() {
    let (mut m, mut mon) = (master(), LegacyMonitor::new(3_000));
    mon.mount(&mut m, "c", "s", 1 << 20).unwrap();
    mon.run_ticks_to(&mut m, 2_000); // deadline 4000
    mon.skip_ticks(10_500);
    mon.ping(&mut m, "c").unwrap(); // buffered, handled at resume
    assert!(mon.run_ticks_to(&mut m, 11_000).is_empty());
    assert_eq!(mon.deadline_ms("c"), Some(14_000));
}
