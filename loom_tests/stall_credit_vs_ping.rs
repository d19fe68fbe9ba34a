//! Race: the monitor detects a master stall and adds it to the liveness clock's credit while a
//! Ping reads the liveness clock to compute its deadline.
//!
//! Invariant 5 (master stalls are not client failures) and the `clock.rs` ground rule: a signal
//! that reads the credit just before the monitor adds a stall stores a deadline later than it
//! needs to be; the error is only ever in the client's favour.
//!
//! Setup: mounted at 0 (deadline 10 on the liveness clock), then the master "stalls" until base
//! time 12, past the deadline. The monitor's tick credits the whole 12 ms gap, so liveness time
//! is 0 again and nothing is due. The ping lands at base time 12.
//!
//! Allowed outcomes: the ping read the credit after it was added (**ping saw the credit**:
//! liveness time 0, the deadline stays 10) or before (**ping missed the credit**: liveness time
//! 12, deadline 22). In both, the stored deadline is at least `ping's liveness time after the
//! credit + active TTL` and at most `base time + active TTL`; the tick reports the stall and
//! commits no transition; and afterwards the on-time monitor suspects the client exactly when
//! liveness time reaches the stored deadline.
#![cfg(loom)]

mod common;

use common::{config, model_covering, transitions, Master, ACTIVE_TTL_MS, CLIENT};
use mooncake_liveness::{LivenessConfig, LivenessEvent, LivenessState};

const STALL_UNTIL_MS: u64 = ACTIVE_TTL_MS + 2;

const PING_SAW_CREDIT: &str = "ping saw the credit";
const PING_MISSED_CREDIT: &str = "ping missed the credit";

#[test]
fn stall_credit_vs_ping() {
    model_covering("stall_credit_vs_ping", &[PING_SAW_CREDIT, PING_MISSED_CREDIT], |seen| {
        let master = Master::with_config(LivenessConfig {
            stall_brake: true,
            stall_bound_ms: 2,
            ..config()
        });
        let rec = master.mount_new(CLIENT);
        master.clock.set_ms(STALL_UNTIL_MS); // no tick ran since 0: a 12 ms master stall
        let (mut master, report, ping) = master.race_tick_vs_ping(None);

        assert!(ping.recovered.is_none());
        let stall = LivenessEvent::StallDetected {
            at_ms: STALL_UNTIL_MS,
            ms: STALL_UNTIL_MS,
        };
        assert_eq!(report.events.first(), Some(&stall));
        assert!(
            transitions(&report).is_empty(),
            "client charged for the stall: {report:?}"
        );
        let credit = master.liveness.clock().credit_ms();
        assert_eq!(credit, STALL_UNTIL_MS);

        let word = rec.word();
        assert_eq!(word.state(), LivenessState::Active);
        let floor = STALL_UNTIL_MS - credit + ACTIVE_TTL_MS; // ping's liveness time after the credit + TTL
        let ceiling = STALL_UNTIL_MS + ACTIVE_TTL_MS; // ping's base time + TTL
        let deadline = word.deadline().0;
        assert!(
            deadline >= floor,
            "deadline {deadline} < {floor}: error against the client"
        );
        assert!(deadline <= ceiling, "deadline {deadline} > {ceiling}");
        seen.saw(if deadline == floor {
            PING_SAW_CREDIT
        } else {
            PING_MISSED_CREDIT
        });

        // Afterwards the monitor runs on time: the client is suspected at the first tick whose
        // liveness time reaches the stored deadline, never before.
        let mut base = STALL_UNTIL_MS;
        loop {
            base += 1;
            let report = master.tick_at(base);
            let now_l = master.liveness.clock().now().0;
            match transitions(&report).as_slice() {
                [] => assert!(now_l < deadline, "not suspected at {now_l} ≥ deadline {deadline}"),
                [(LivenessState::Active, LivenessState::Suspected)] => {
                    assert_eq!(
                        now_l, deadline,
                        "suspected at liveness time {now_l}, deadline {deadline}"
                    );
                    break;
                }
                other => panic!("{other:?}"),
            }
        }
    });
}
