//! Race: the consumer's shutdown drain (`drain_after_close`) against producers still pushing,
//! and the consumer's drop against pushes; jobs are `loom::alloc::Track`ed, so a job the queue
//! leaks (neither handed out, handed back, nor dropped with the queue) fails the model.
//!
//! Invariants (module doc of `offboarding::queue`, races 1 and 3, and "Progress"): the drain
//! closes the queue, then waits for every producer that reserved a slot before the close to
//! link its node, so when it reports completion it has returned every accepted job; pushes
//! after the close hand their job back; nothing is left in the queue afterwards. Jobs still
//! queued when the last handle goes are dropped exactly once.
//!
//! Allowed outcomes: the drain returned 0 to 4 jobs, and (in some iterations) had to wait
//! for a producer between its reservation and its link.
#![cfg(loom)]

mod common;

use common::{model_covering, race_producers};
use loom::alloc::Track;
use mooncake_liveness::offboarding::queue::{channel, PushError};

const WAITED: &str = "waited for a link";

/// Two producers push two jobs each while the consumer closes and drains.
#[test]
fn enqueue_vs_shutdown_drain() {
    let expected = ["drained 0", "drained 1", "drained 2", "drained 3", "drained 4", WAITED];
    model_covering("enqueue_vs_shutdown_drain", &expected, |seen| {
        let (producer, mut consumer) = channel::<Track<u32>>(4);
        let producers = race_producers(producer, [10u32, 20], |producer, base| {
            let mut accepted = Vec::new();
            for job in [base, base + 1] {
                match producer.push(Track::new(job)) {
                    Ok(()) => accepted.push(job),
                    // Dropped here: handed back, not leaked.
                    Err(PushError::Closed(back)) => assert_eq!(*back.get_ref(), job),
                    Err(e) => panic!("unexpected {e:?}"),
                }
            }
            accepted
        });

        let mut out = Vec::new();
        let mut waits = 0;
        let drain = consumer.drain_after_close(&mut out, || {
            waits += 1;
            true
        });
        assert!(drain.is_complete(), "{drain:?}");
        assert_eq!(drain.drained, out.len());
        if waits > 0 {
            seen.saw(WAITED);
        }
        seen.saw(format!("drained {}", out.len()));
        // Complete means complete: nothing more can arrive, even before the producers finish.
        assert!(consumer.pop().is_none() && consumer.is_empty());

        let drained: Vec<u32> = out.iter().map(|t| *t.get_ref()).collect();
        for (accepted, base) in producers.join().into_iter().zip([10u32, 20]) {
            assert!(
                accepted.len() != 1 || accepted == [base],
                "a push succeeded after a refusal"
            );
            let mine: Vec<u32> = drained.iter().copied().filter(|j| j / 10 == base / 10).collect();
            assert_eq!(mine, accepted, "everything accepted is drained, in order");
        }
        assert!(consumer.pop().is_none(), "a job arrived after a complete drain");
    });
}

/// The consumer pops once and is dropped while two producers push: the drop closes the queue,
/// and whatever was accepted but not popped is dropped with the last handle (Track: no leak).
#[test]
fn consumer_drop_vs_push() {
    let expected = ["accepted 0", "accepted 1", "accepted 2"];
    model_covering("consumer_drop_vs_push", &expected, |seen| {
        let (producer, mut consumer) = channel::<Track<u32>>(4);
        let producers = race_producers(producer, [1u32, 2], |producer, job| {
            match producer.push(Track::new(job)) {
                Ok(()) => 1,
                Err(e) => {
                    assert!(e.is_closed(), "{e:?}");
                    0
                }
            }
        });
        let popped = consumer.pop();
        drop(consumer);
        drop(popped);
        let accepted: usize = producers.join().into_iter().sum();
        seen.saw(format!("accepted {accepted}"));
    });
}
