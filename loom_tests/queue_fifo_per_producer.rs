//! Race: two producers pushing two jobs each against the consumer's batched pops, on the
//! offboarding queue (Vyukov's MPSC list).
//!
//! Invariant (module doc of `offboarding::queue`, race 2): the tail `swap` fixes the queue order
//! and one producer's pushes are sequential, so each producer's jobs come out in the order it
//! pushed them, whatever the interleaving with the other producer and with the consumer; and
//! no job is lost or repeated.
//!
//! Allowed outcomes: the consumer's concurrent `pop_batch` took 0 to 4 jobs (at least 0, 1 and
//! a non-trivial interleaving of the two producers are checked to be reached).
#![cfg(loom)]

mod common;

use common::{model_covering, race_producers};
use mooncake_liveness::offboarding::queue::channel;

#[test]
fn fifo_per_producer() {
    let expected = ["batch 0", "batch 1", "batch 2+", "interleaved"];
    model_covering("fifo_per_producer", &expected, |seen| {
        let (producer, mut consumer) = channel::<(u8, u8)>(4);
        let producers = race_producers(producer, [0u8, 1], |producer, id| {
            producer.push((id, 0)).unwrap();
            producer.push((id, 1)).unwrap();
        });

        let mut got = Vec::new();
        let n = consumer.pop_batch(usize::MAX, &mut got);
        seen.saw(match n {
            0 | 1 => format!("batch {n}"),
            _ => "batch 2+".to_string(),
        });
        producers.join();
        consumer.pop_batch(usize::MAX, &mut got);
        assert_eq!(got.len(), 4, "no loss, no duplicate: {got:?}");
        for id in [0, 1] {
            let mine: Vec<u8> = got.iter().filter(|(p, _)| *p == id).map(|&(_, s)| s).collect();
            assert_eq!(mine, [0, 1], "producer {id} out of order: {got:?}");
        }
        let firsts: Vec<u8> = got.iter().map(|&(p, _)| p).collect();
        if firsts[0] != firsts[1] {
            seen.saw("interleaved");
        }
    });
}
