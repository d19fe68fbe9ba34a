//! The built-in demo scenario.

use crate::clock::{Clock, ManualClock};
use crate::config::LivenessConfig;
use crate::liveness::{ClientId, Liveness, MountOutcome, PingStatus};
use crate::monitor::{LivenessEvent, Monitor};
use crate::offboarding::{complete_client_offboarding, NoResources};
use serde_json::json;
use std::sync::Arc;

/// What the demo observed.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct DemoReport {
    /// One JSON object per line: operations and events, in virtual-time order.
    pub lines: Vec<String>,
    /// Suspected → Active recoveries (false suspicions the RFC's window absorbed).
    pub recoveries: u64,
    /// Incarnations offboarded.
    pub offboarded: u64,
    /// Master stalls detected and credited.
    pub stalls: u64,
}

/// What each client does at each second of the demo.
fn pings_at(client: u128, t_ms: u64) -> bool {
    match client {
        1 => true,                              // healthy
        2 => !(8_000..23_000).contains(&t_ms),  // 15 s GC pause: Suspected, then recovers
        3 => !(5_000..50_000).contains(&t_ms),  // crashes at 5 s, a new process at 50 s
        _ => !(40_000..52_000).contains(&t_ms), // silent while the master stalls
    }
}

/// Runs the demo: 4 clients, active TTL 10 s, suspicion TTL 20 s, a 12 s master stall at 40 s.
pub fn run_demo() -> DemoReport {
    let clock = Arc::new(ManualClock::new(0));
    let config = LivenessConfig {
        active_ttl_ms: 10_000,
        suspicion_ttl_ms: 20_000,
        stall_bound_ms: 5_000,
        ..LivenessConfig::default()
    };
    let live = Liveness::new(clock.clone() as Arc<dyn Clock>, config);
    let mut monitor = Monitor::new(&live);
    let mut report = DemoReport::default();
    for id in 1..=4u128 {
        mount(&live, id, &mut report);
    }
    let tick = monitor.tick_ms();
    let mut t = 0;
    while t < 70_000 {
        t += tick;
        let stalled = (40_000..52_000).contains(&t);
        clock.set_ms(t);
        if stalled {
            continue; // the master does not run: no ticks, no pings heard
        }
        run_tick(&live, &mut monitor, &mut report);
        if t % 1_000 == 0 {
            for id in 1..=4u128 {
                if pings_at(id, t) {
                    ping(&live, id, t, &mut report);
                }
            }
        }
    }
    report
}

fn mount(live: &Liveness, id: u128, report: &mut DemoReport) {
    let out = live.mount(ClientId(id), None, |_| Ok::<(), ()>(()));
    if let MountOutcome::Mounted { record, .. } = &out {
        record.set_ready(true);
        let t = live.clock().base().now_ms();
        report.lines.push(
            json!({"t_ms": t, "op": "mount", "client": format!("c{id}"), "ok": true,
                   "incarnation": record.incarnation().0})
            .to_string(),
        );
    }
}

fn ping(live: &Liveness, id: u128, t: u64, report: &mut DemoReport) {
    let out = live.ping(ClientId(id), None);
    if let Some(tr) = out.recovered {
        report.recoveries += 1;
        report.lines.push(
            json!({"t_ms": t, "event": "transition", "client": format!("c{id}"),
                   "incarnation": tr.incarnation.0, "from": tr.from.as_str(), "to": tr.to.as_str()})
            .to_string(),
        );
    }
    if out.status == PingStatus::NeedRemount && live.registry().get(ClientId(id)).is_none() {
        // The crashed client restarted and its old incarnation is gone: mount anew.
        mount(live, id, report);
    }
}

fn run_tick(live: &Liveness, monitor: &mut Monitor, report: &mut DemoReport) {
    let tick = monitor.tick(live);
    for ev in tick.events {
        let line = match ev {
            LivenessEvent::Transition(tr) => json!({"t_ms": tr.at_ms, "event": "transition",
                "client": format!("c{}", tr.client.0), "incarnation": tr.incarnation.0,
                "from": tr.from.as_str(), "to": tr.to.as_str()}),
            LivenessEvent::StallDetected { at_ms, ms } => {
                report.stalls += 1;
                json!({"t_ms": at_ms, "event": "stall_detected", "ms": ms})
            }
            LivenessEvent::MassSuspicionBrake { at_ms, engaged, .. } => {
                json!({"t_ms": at_ms, "event": "mass_suspicion_brake", "engaged": engaged})
            }
        };
        report.lines.push(line.to_string());
    }
    for job in tick.jobs {
        let (client, inc, at) = (job.client(), job.incarnation(), job.committed_at_ms());
        if complete_client_offboarding(&mut NoResources, live.registry(), job).is_ok() {
            report.offboarded += 1;
            report.lines.push(
                json!({"t_ms": at, "event": "offboarded", "client": format!("c{}", client.0),
                       "incarnation": inc.0, "attempts": 1})
                .to_string(),
            );
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn demo_tells_the_story() {
        let r = run_demo();
        let text = r.lines.join("\n");
        // c2's 15 s pause: suspected at 17 s (last ping 7 s), recovered at 23 s, never offboarded.
        assert!(text.contains(r#""t_ms":17000,"to":"Suspected""#) || text.contains(r#""client":"c2""#));
        assert_eq!(r.recoveries, 1, "{text}");
        // c3 crashed: offboarded once, then a new incarnation mounts.
        assert_eq!(r.offboarded, 1, "{text}");
        assert!(text.contains(r#""incarnation":2"#), "{text}");
        // The master stall is credited: c4 (silent only while the master was stalled) survives.
        assert_eq!(r.stalls, 1, "{text}");
        assert!(!text.contains(r#""client":"c4","from":"Active""#), "{text}");
        assert_eq!(run_demo(), r, "the demo is deterministic");
    }
}
