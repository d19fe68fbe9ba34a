//! Race: `close` against concurrent pushes, on the offboarding queue's state word.
//!
//! Invariant (module doc of `offboarding::queue`, race 1): a push's reserving CAS and the
//! `fetch_or` of the close are read-modify-writes of one atomic, so each push is either before
//! the close (accepted: the consumer gets the job, even though the queue is closed by then) or
//! after it (refused: the producer gets the very job back as `PushError::Closed`). Never both,
//! never neither, and once one of a producer's pushes is refused, its later pushes are too.
//!
//! Allowed outcomes: 0, 1 or 2 of the two producers' pushes accepted.
#![cfg(loom)]

mod common;

use common::{model_covering, race_producers, Gate};
use loom::thread;
use mooncake_liveness::offboarding::queue::{channel, PushError};

/// Pushes `jobs` in order; returns (accepted, refused).
fn push_all(producer: &mooncake_liveness::offboarding::queue::Producer<u32>, jobs: &[u32]) -> (Vec<u32>, Vec<u32>) {
    let (mut accepted, mut refused) = (Vec::new(), Vec::new());
    for &job in jobs {
        match producer.push(job) {
            Ok(()) => accepted.push(job),
            Err(PushError::Closed(back)) => {
                assert_eq!(back, job, "the refused job itself comes back");
                refused.push(back);
            }
            Err(e) => panic!("unexpected {e:?}"),
        }
    }
    if let (Some(ok), Some(no)) = (accepted.last(), refused.first()) {
        assert!(ok < no, "a push succeeded after a refusal: {accepted:?} {refused:?}");
    }
    (accepted, refused)
}

/// Two producers push one job each; the consumer closes and pops while they run.
#[test]
fn consumer_close_vs_push() {
    let expected = ["accepted 0", "accepted 1", "accepted 2"];
    model_covering("consumer_close_vs_push", &expected, |seen| {
        let (producer, mut consumer) = channel::<u32>(4);
        let producers = race_producers(producer, [1u32, 2], |producer, job| push_all(producer, &[job]));
        assert!(consumer.close(), "only the consumer closes here");
        let mut got: Vec<u32> = consumer.pop().into_iter().collect();

        let (mut accepted, mut refused) = (Vec::new(), Vec::new());
        for (a, r) in producers.join() {
            accepted.extend(a);
            refused.extend(r);
        }
        seen.saw(format!("accepted {}", accepted.len()));
        while let Some(job) = consumer.pop() {
            got.push(job);
        }
        got.sort_unstable();
        accepted.sort_unstable();
        assert_eq!(got, accepted, "pops after the close return exactly what was accepted");
        assert_eq!(accepted.len() + refused.len(), 2, "accepted + refused = produced");
    });
}

/// One producer pushes two jobs while another producer handle closes the queue.
#[test]
fn producer_close_vs_push_sequence() {
    let expected = ["accepted 0", "accepted 1", "accepted 2"];
    model_covering("producer_close_vs_push_sequence", &expected, |seen| {
        let (producer, mut consumer) = channel::<u32>(4);
        let gate = Gate::new();
        let pusher = {
            let (producer, gate) = (producer.clone(), gate.clone());
            thread::spawn(move || {
                gate.pass();
                push_all(&producer, &[1, 2])
            })
        };
        gate.pass();
        producer.close();
        assert!(
            producer.push(9).unwrap_err().is_closed(),
            "a push after close is refused"
        );
        let (accepted, refused) = pusher.join().unwrap();
        seen.saw(format!("accepted {}", accepted.len()));
        let mut got = Vec::new();
        consumer.pop_batch(usize::MAX, &mut got);
        assert_eq!(got, accepted, "accepted jobs are popped, in order");
        assert_eq!(accepted.len() + refused.len(), 2);
    });
}
