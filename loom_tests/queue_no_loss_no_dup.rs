//! Race: two producers' pushes (reserve in the state word, `swap` the tail, link `prev.next`)
//! against the consumer's pops, on the offboarding queue (Vyukov's MPSC list).
//!
//! Invariants (module doc of `offboarding::queue`, races 2–5): every accepted job is popped
//! exactly once, no pop invents or repeats a job, the value a pop moves out was written before
//! it (loom checks every access to a node's value cell for causality), and a full queue hands
//! the job back instead of dropping it.
//!
//! Allowed outcomes, per iteration: the consumer popped 0, 1 or 2 jobs while the producers ran,
//! and (in some iterations) saw a job counted but not yet reachable (`pop` = `None` while
//! `len` > 0: the in-flight state between a producer's swap and its link).
//! `pop_wait` additionally reports how many jobs it got and whether it had to snooze for a link.
#![cfg(loom)]

mod common;

use common::{model_covering, race_producers};
use mooncake_liveness::offboarding::queue::{channel, Consumer, PushError};

const IN_FLIGHT: &str = "saw in-flight";
const WAITED_FOR_LINK: &str = "snoozed for a link";

/// Once the producers are joined (every push has linked its node, so plain pops see everything):
/// pops what is left into `got`, which must then hold each of the jobs 1 and 2 exactly once
/// (`what` names the check in the failure message).
fn pop_rest_and_check(consumer: &mut Consumer<u32>, mut got: Vec<u32>, what: &str) {
    while let Some(job) = consumer.pop() {
        got.push(job);
    }
    got.sort_unstable();
    assert_eq!(got, [1, 2], "{what}");
}

/// Two producers push one job each while the consumer pops twice.
#[test]
fn push_push_vs_pop() {
    let expected = ["popped 0", "popped 1", "popped 2", IN_FLIGHT];
    model_covering("push_push_vs_pop", &expected, |seen| {
        let (producer, mut consumer) = channel::<u32>(4);
        let producers = race_producers(producer, [1, 2], |producer, job| producer.push(job).unwrap());

        let mut got = Vec::new();
        for _ in 0..2 {
            match consumer.pop() {
                Some(job) => got.push(job),
                None if consumer.len() > got.len() => seen.saw(IN_FLIGHT),
                None => {}
            }
        }
        seen.saw(format!("popped {}", got.len()));
        producers.join();
        pop_rest_and_check(&mut consumer, got, "no loss, no duplicate");
        assert!(consumer.is_empty(), "len {}", consumer.len());
    });
}

/// Capacity 1: two producers race for the one slot while the consumer pops once; a refused job
/// comes back to its producer, an accepted one is popped exactly once.
#[test]
fn full_vs_pop() {
    let expected = ["refused 0", "refused 1"];
    model_covering("full_vs_pop", &expected, |seen| {
        let (producer, mut consumer) = channel::<u32>(1);
        let producers = race_producers(producer, [1, 2], |producer, job| match producer.push(job) {
            Ok(()) => None,
            Err(PushError::Full(back)) => {
                assert_eq!(back, job, "the refused job itself comes back");
                Some(back)
            }
            Err(e) => panic!("unexpected {e:?}"),
        });
        let mut got: Vec<u32> = consumer.pop().into_iter().collect();
        let refused: Vec<u32> = producers.join().into_iter().flatten().collect();
        seen.saw(format!("refused {}", refused.len()));
        got.extend(&refused);
        pop_rest_and_check(&mut consumer, got, "every job popped or handed back, once");
    });
}

/// `pop_wait` against two pushes: it snoozes (instead of returning `None`) while a reserved job
/// is not linked yet, and returns `None` only when nothing is reserved.
#[test]
fn pop_wait_vs_push() {
    let expected = ["waited 0", "waited 1", "waited 2", WAITED_FOR_LINK];
    model_covering("pop_wait_vs_push", &expected, |seen| {
        let (producer, mut consumer) = channel::<u32>(4);
        let producers = race_producers(producer, [1, 2], |producer, job| producer.push(job).unwrap());

        let mut got = Vec::new();
        for _ in 0..2 {
            let mut snoozes = 0;
            let job = consumer.pop_wait(|| {
                snoozes += 1;
                true
            });
            if snoozes > 0 {
                seen.saw(WAITED_FOR_LINK);
                assert!(
                    job.is_some(),
                    "pop_wait waited, then gave up although told to keep waiting"
                );
            }
            got.extend(job);
        }
        seen.saw(format!("waited {}", got.len()));
        producers.join();
        pop_rest_and_check(&mut consumer, got, "no loss, no duplicate");
    });
}
