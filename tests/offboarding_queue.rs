//! The offboarding queue through its public API, following crossbeam's ladder:
//! `smoke → capacity → close → spsc → mpsc → pop_batch → drops → shutdown_drains`.
//! Counts shrink under Miri.

use mooncake_liveness::offboarding::queue::{channel, Consumer, Producer, PushError};
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;

/// Items per producer in the threaded tests.
const COUNT: usize = if cfg!(miri) { 100 } else { 100_000 };

/// Pushes `value`, spinning while the queue is full; panics if it is closed.
fn push_spin<T>(producer: &Producer<T>, mut value: T) {
    loop {
        match producer.push(value) {
            Ok(()) => return,
            Err(PushError::Full(back)) => {
                value = back;
                thread::yield_now();
            }
            Err(e) => panic!("unexpected {e}"),
        }
    }
}

#[test]
fn handles_are_send_sync_as_documented() {
    fn producer<T: Clone + Send + Sync>() {}
    fn consumer<T: Send>() {}
    producer::<Producer<String>>();
    consumer::<Consumer<String>>();
}

#[test]
fn smoke() {
    let (producer, mut consumer) = channel::<u32>(4);
    assert!(producer.is_empty() && consumer.is_empty());
    assert_eq!(consumer.pop(), None);
    producer.push(7).unwrap();
    assert_eq!((producer.len(), consumer.len()), (1, 1));
    assert!(!producer.is_empty() && !consumer.is_empty(), "one job queued");
    assert_eq!(consumer.pop(), Some(7));
    assert_eq!(consumer.pop(), None);
    assert_eq!(consumer.pop_wait(|| true), None, "count 0: pop_wait must not wait");
    assert_eq!((producer.capacity(), consumer.capacity()), (4, 4));
    assert_eq!(
        format!("{producer:?}"),
        "Producer { len: 0, capacity: 4, closed: false, .. }"
    );
    producer.push(8).unwrap();
    assert_eq!(consumer.pop_wait(|| true), Some(8), "a queued job is returned at once");
    assert!(consumer.close(), "the consumer's close is the first one");
    assert!(format!("{consumer:?}").starts_with("Consumer {"), "{consumer:?}");
}

#[test]
fn the_consumer_gives_slots_back_in_bulk() {
    // Capacity 1024: slots are owed until 16 are (1/64 of the capacity) or the queue is found
    // empty ("Lazy release"), so a pop per job does not write the word every push CASes.
    let (producer, mut consumer) = channel::<u32>(1024);
    for i in 0..20 {
        producer.push(i).unwrap();
    }
    let mut out = Vec::new();
    assert_eq!(
        consumer.pop_batch(1, &mut out),
        1,
        "a full batch: the queue was not found empty"
    );
    assert_eq!(producer.len(), 20, "the popped slot is still owed");
    assert_eq!(consumer.len(), 19, "the consumer does not count what it owes");
    for _ in 0..15 {
        consumer.pop_batch(1, &mut out);
    }
    assert_eq!((producer.len(), consumer.len()), (4, 4), "16 owed: given back at once");
    assert_eq!(consumer.pop_batch(10, &mut out), 4, "stops at the empty queue");
    assert_eq!(
        (producer.len(), consumer.len()),
        (0, 0),
        "found empty: every owed slot back"
    );
}

#[test]
fn capacity_full_hands_back() {
    let (producer, mut consumer) = channel::<String>(3);
    for i in 0..3 {
        producer.push(i.to_string()).unwrap();
    }
    match producer.push("x".to_string()) {
        Err(PushError::Full(back)) => assert_eq!(back, "x"),
        other => panic!("expected Full, got {other:?}"),
    }
    assert_eq!(producer.len(), 3);
    assert_eq!(consumer.pop().as_deref(), Some("0"));
    producer.push("3".to_string()).unwrap();
    let err = producer.push("y".to_string()).unwrap_err();
    assert!(err.is_full());
    assert_eq!(err.to_string(), "pushing to a full offboarding queue");
    assert_eq!(err.into_inner(), "y");
    let mut out = Vec::new();
    consumer.pop_batch(usize::MAX, &mut out);
    assert_eq!(out, ["1", "2", "3"]);
}

#[test]
fn closed_hands_back() {
    let (producer, mut consumer) = channel::<String>(8);
    producer.push("a".into()).unwrap();
    producer.push("b".into()).unwrap();
    assert!(!producer.is_closed() && !consumer.is_closed(), "open until closed");
    assert!(producer.close(), "first close");
    assert!(!consumer.close(), "second close is a no-op");
    assert!(producer.is_closed() && consumer.is_closed());
    match producer.push("c".into()) {
        Err(PushError::Closed(back)) => assert_eq!(back, "c"),
        other => panic!("expected Closed, got {other:?}"),
    }
    // Pops still return what was queued.
    assert_eq!(consumer.pop().as_deref(), Some("a"));
    assert_eq!(consumer.pop().as_deref(), Some("b"));
    assert_eq!(consumer.pop(), None);

    // Dropping the consumer closes the queue too.
    let (producer, consumer) = channel::<u8>(8);
    drop(consumer);
    assert!(producer.is_closed());
    let refused = producer.push(1).unwrap_err();
    assert!(refused.is_closed() && !refused.is_full(), "{refused:?}");
}

#[test]
fn spsc() {
    let (producer, mut consumer) = channel::<usize>(64);
    let handle = thread::spawn(move || {
        for i in 0..COUNT {
            push_spin(&producer, i);
        }
    });
    for expected in 0..COUNT {
        let got = loop {
            if let Some(v) = consumer.pop() {
                break v;
            }
            thread::yield_now();
        };
        assert_eq!(got, expected);
    }
    handle.join().unwrap();
    assert_eq!(consumer.pop(), None);
}

/// `producers` threads each push `(id, 0..per_producer)`; the consumer checks that every
/// producer's items arrive in order, none lost and none twice.
fn mpsc_run(producers: usize, per_producer: usize, capacity: usize, batch: usize) {
    let (producer, mut consumer) = channel::<(usize, usize)>(capacity);
    let handles: Vec<_> = (0..producers)
        .map(|id| {
            let producer = producer.clone();
            thread::spawn(move || {
                for seq in 0..per_producer {
                    push_spin(&producer, (id, seq));
                }
            })
        })
        .collect();
    drop(producer);
    let mut next = vec![0usize; producers];
    let mut received = 0;
    let mut buf = Vec::with_capacity(batch);
    while received < producers * per_producer {
        buf.clear();
        if consumer.pop_batch(batch, &mut buf) == 0 {
            thread::yield_now();
            continue;
        }
        for &(id, seq) in &buf {
            assert_eq!(seq, next[id], "producer {id}: FIFO order, no loss, no duplicate");
            next[id] += 1;
        }
        received += buf.len();
    }
    for h in handles {
        h.join().unwrap();
    }
    assert_eq!(consumer.pop(), None);
    assert!(next.iter().all(|&n| n == per_producer));
}

#[test]
fn mpsc() {
    for producers in 2..=4 {
        mpsc_run(producers, COUNT / producers, 1024, 64);
    }
    // A tiny capacity keeps producers hitting `Full`.
    mpsc_run(3, COUNT / 10, 2, 1);
}

#[test]
fn pop_batch_respects_max_and_order() {
    let (producer, mut consumer) = channel::<u32>(16);
    for i in 0..10 {
        producer.push(i).unwrap();
    }
    let mut out = vec![99];
    assert_eq!(consumer.pop_batch(0, &mut out), 0);
    assert_eq!(consumer.pop_batch(4, &mut out), 4);
    assert_eq!(out, [99, 0, 1, 2, 3], "appends, oldest first");
    assert_eq!(consumer.len(), 6);
    out.clear();
    assert_eq!(consumer.pop_batch(100, &mut out), 6);
    assert_eq!(out, [4, 5, 6, 7, 8, 9]);
    assert_eq!(consumer.pop_batch(100, &mut out), 0);
    assert!(consumer.is_empty());
    // The freed slots are usable again.
    for i in 0..16 {
        producer.push(i).unwrap();
    }
    assert!(producer.push(16).unwrap_err().is_full());
}

/// Counts its drops in a shared counter.
#[derive(Debug)]
struct DropCounter(Arc<AtomicUsize>);

impl Drop for DropCounter {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn drops() {
    let runs = if cfg!(miri) { 3 } else { 100 };
    let steps = if cfg!(miri) { 100 } else { 10_000 };
    for run in 0..runs {
        let dropped = Arc::new(AtomicUsize::new(0));
        let (producer, mut consumer) = channel::<DropCounter>(steps);
        let additional = run * 7 % 50;
        let handle = {
            let producer = producer.clone();
            let dropped = dropped.clone();
            thread::spawn(move || {
                for _ in 0..steps {
                    push_spin(&producer, DropCounter(dropped.clone()));
                }
            })
        };
        let mut popped = 0;
        while popped < steps {
            if let Some(v) = consumer.pop() {
                drop(v);
                popped += 1;
            }
        }
        handle.join().unwrap();
        assert_eq!(dropped.load(Ordering::SeqCst), steps);

        for _ in 0..additional {
            producer.push(DropCounter(dropped.clone())).unwrap();
        }
        // A refused value is handed back, not dropped by the queue.
        producer.close();
        let back = producer.push(DropCounter(dropped.clone())).unwrap_err().into_inner();
        assert_eq!(dropped.load(Ordering::SeqCst), steps);
        drop(back);
        assert_eq!(dropped.load(Ordering::SeqCst), steps + 1);

        // Values left in the queue are dropped exactly once with the last handle.
        drop(consumer);
        assert_eq!(
            dropped.load(Ordering::SeqCst),
            steps + 1,
            "the producer still holds the queue"
        );
        drop(producer);
        assert_eq!(dropped.load(Ordering::SeqCst), steps + 1 + additional);
    }
}

/// Producers push until refused while the consumer pops, then closes and drains. Every value
/// is accounted for exactly once: popped, drained, or handed back.
fn shutdown_run(producers: usize, per_producer: usize, capacity: usize, close_after: usize) {
    let (producer, mut consumer) = channel::<(usize, usize)>(capacity);
    let start = Arc::new(Barrier::new(producers + 1));
    let handles: Vec<_> = (0..producers)
        .map(|id| {
            let producer = producer.clone();
            let start = start.clone();
            thread::spawn(move || {
                start.wait();
                let (mut accepted, mut refused) = (Vec::new(), Vec::new());
                for seq in 0..per_producer {
                    let mut value = (id, seq);
                    loop {
                        match producer.push(value) {
                            Ok(()) => {
                                accepted.push(seq);
                                break;
                            }
                            Err(PushError::Full(back)) => {
                                value = back;
                                thread::yield_now();
                            }
                            Err(e) => {
                                let back = e.into_inner();
                                assert_eq!(back, (id, seq), "the refused value itself comes back");
                                refused.push(seq);
                                break;
                            }
                        }
                    }
                }
                (accepted, refused)
            })
        })
        .collect();
    drop(producer);
    start.wait();
    let mut got = Vec::new();
    while got.len() < close_after {
        if consumer.pop_batch(64, &mut got) == 0 {
            thread::yield_now();
        }
    }
    let drain = consumer.drain_after_close(&mut got, || true);
    assert!(drain.is_complete(), "{drain:?}");
    assert!(consumer.is_empty());
    assert_eq!(consumer.pop(), None);

    let mut accepted_total = 0;
    let mut seen = HashSet::new();
    for (id, h) in handles.into_iter().enumerate() {
        let (accepted, refused) = h.join().unwrap();
        assert_eq!(
            accepted.len() + refused.len(),
            per_producer,
            "producer {id}: accepted + refused"
        );
        if let (Some(last_ok), Some(first_refused)) = (accepted.last(), refused.first()) {
            assert!(
                last_ok < first_refused,
                "producer {id}: no push succeeds after a refusal"
            );
        }
        let mine: Vec<usize> = got.iter().filter(|(p, _)| *p == id).map(|&(_, s)| s).collect();
        assert_eq!(
            mine, accepted,
            "producer {id}: everything accepted is drained, in order"
        );
        accepted_total += accepted.len();
    }
    for item in &got {
        assert!(seen.insert(*item), "duplicate {item:?}");
    }
    assert_eq!(got.len(), accepted_total);
    assert!(got.len() >= close_after);
}

#[test]
fn shutdown_drains() {
    let runs = if cfg!(miri) { 2 } else { 50 };
    let per = if cfg!(miri) { 50 } else { 2_000 };
    for run in 0..runs {
        shutdown_run(2 + run % 3, per, 4 + run % 60, run * 37 % per);
    }
}

#[test]
fn shutdown_drains_10k() {
    let total = if cfg!(miri) { 200 } else { 10_000 };
    // Everything accepted before the close: all 10k come out, each producer's in order.
    let (producer, mut consumer) = channel::<(usize, usize)>(total);
    let handles: Vec<_> = (0..2)
        .map(|id| {
            let producer = producer.clone();
            thread::spawn(move || {
                for seq in 0..total / 2 {
                    producer.push((id, seq)).unwrap();
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    assert_eq!(producer.len(), total);
    let mut out = Vec::new();
    let drain = consumer.drain_after_close(&mut out, || true);
    assert_eq!((drain.drained, drain.pending), (total, 0));
    for id in 0..2 {
        let mine: Vec<usize> = out.iter().filter(|(p, _)| *p == id).map(|&(_, s)| s).collect();
        assert_eq!(mine, (0..total / 2).collect::<Vec<_>>());
    }
    // And racing: the close lands in the middle of 10k pushes.
    shutdown_run(2, total / 2, total, total / 4);
}

#[test]
fn drain_gives_up_when_asked_and_resumes() {
    // `keep_waiting` is asked only while a reserved job is missing; with none in flight the
    // drain completes without asking.
    let (producer, mut consumer) = channel::<u8>(4);
    producer.push(1).unwrap();
    let mut asked = 0;
    let mut out = Vec::new();
    let drain = consumer.drain_after_close(&mut out, || {
        asked += 1;
        false
    });
    assert_eq!((drain.drained, drain.pending, asked), (1, 0, 0));
    assert_eq!(out, [1]);
}

#[test]
fn close_from_another_thread_refuses() {
    let (producer, mut consumer) = channel::<u32>(8);
    let stop = Arc::new(AtomicBool::new(false));
    let closer = {
        let producer = producer.clone();
        let stop = stop.clone();
        thread::spawn(move || {
            while !stop.load(Ordering::Acquire) {
                thread::yield_now();
            }
            producer.close()
        })
    };
    producer.push(1).unwrap();
    stop.store(true, Ordering::Release);
    assert!(closer.join().unwrap());
    assert!(producer.push(2).unwrap_err().is_closed());
    assert_eq!(consumer.pop(), Some(1));
}
