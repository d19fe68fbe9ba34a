//! The background monitor thread drives the same state machine (manual clock, so the outcome
//! does not depend on wall time; the receive timeout only guards against a hang).

use mooncake_liveness::monitor::MonitorThread;
use mooncake_liveness::{
    ClientId, Clock, Liveness, LivenessConfig, LivenessEvent, LivenessState, ManualClock, MountOutcome,
};
use std::sync::{mpsc, Arc};
use std::time::Duration;

#[test]
fn thread_commits_suspicion_offline_and_hands_back_the_job() {
    let clock = Arc::new(ManualClock::new(0));
    let config = LivenessConfig {
        active_ttl_ms: 1_000,
        suspicion_ttl_ms: 1_000,
        monitor_tick_ms: 1,
        stall_brake: false, // the manual clock jumps; that is not a stall here
        ..LivenessConfig::default()
    };
    let live = Arc::new(Liveness::new(clock.clone() as Arc<dyn Clock>, config));
    let out = live.mount(ClientId(1), None, |_| Ok::<(), ()>(()));
    assert!(matches!(out, MountOutcome::Mounted { .. }));
    let (tx, rx) = mpsc::channel();
    let handle = MonitorThread::spawn(live.clone(), move |report| {
        for ev in report.events {
            let _ = tx.send(Ok(ev));
        }
        for job in report.jobs {
            let _ = tx.send(Err(job));
        }
    })
    .unwrap();
    clock.set_ms(1_000);
    let first = rx.recv_timeout(Duration::from_secs(30)).expect("no suspicion");
    assert!(matches!(first, Ok(LivenessEvent::Transition(t)) if t.to == LivenessState::Suspected));
    clock.set_ms(5_000);
    let second = rx.recv_timeout(Duration::from_secs(30)).expect("no offline");
    assert!(matches!(second, Ok(LivenessEvent::Transition(t)) if t.to == LivenessState::Offline));
    let job = rx.recv_timeout(Duration::from_secs(30)).expect("no job").unwrap_err();
    assert_eq!(job.client(), ClientId(1));
    let monitor = handle.stop().expect("monitor returned");
    assert_eq!((monitor.stats().suspected, monitor.stats().offline), (1, 1));
    assert!(mooncake_liveness::complete_client_offboarding(
        &mut mooncake_liveness::offboarding::NoResources,
        live.registry(),
        job
    )
    .is_ok());
}

/// Dropping the handle stops and joins the thread (no detached monitor keeps ticking): once the
/// drop returns, the sink (and the sender it owns) is gone.
#[test]
fn dropping_the_handle_stops_and_joins_the_thread() {
    let clock = Arc::new(ManualClock::new(0));
    let config = LivenessConfig {
        monitor_tick_ms: 1,
        stall_brake: false,
        ..LivenessConfig::default()
    };
    let live = Arc::new(Liveness::new(clock as Arc<dyn Clock>, config));
    let (tx, rx) = mpsc::channel();
    let handle = MonitorThread::spawn(live, move |_report| {
        let _ = tx.send(());
    })
    .unwrap();
    rx.recv_timeout(Duration::from_secs(30)).expect("the thread ticks");
    drop(handle);
    let end = loop {
        match rx.try_recv() {
            Ok(()) => continue,
            Err(e) => break e,
        }
    };
    assert_eq!(
        end,
        mpsc::TryRecvError::Disconnected,
        "the monitor thread outlived its handle"
    );
}
