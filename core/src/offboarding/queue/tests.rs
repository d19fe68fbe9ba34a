//! Unit tests of `queue.rs`, in a file of their own beside it.

use super::*;

/// A drain is complete only when no job accepted before the close is still pending (a
/// public test cannot hold a producer between its reservation and its push).
#[test]
fn a_drain_with_pending_jobs_is_incomplete() {
    assert!(Drain { drained: 2, pending: 0 }.is_complete());
    assert!(!Drain { drained: 2, pending: 1 }.is_complete());
}

#[test]
fn state_word_layout() {
    // (state, count, closed)
    let table = [
        (0, 0, false),
        (CLOSED, 0, true),
        (ONE, 1, false),
        ((3 * ONE) | CLOSED, 3, true),
        (MAX_CAPACITY * ONE, MAX_CAPACITY, false),
        ((MAX_CAPACITY * ONE) | CLOSED, MAX_CAPACITY, true),
    ];
    for (state, count, closed) in table {
        assert_eq!(count_of(state), count, "count of {state:#x}");
        assert_eq!(state & CLOSED != 0, closed, "closed bit of {state:#x}");
    }
    assert_eq!(ONE, 2);
    assert_eq!((MAX_CAPACITY * ONE) | CLOSED, usize::MAX);
}

#[test]
fn push_error_hands_back_and_formats_without_debug() {
    struct Opaque(u8);
    let full = PushError::Full(Opaque(1));
    assert!(full.is_full() && !full.is_closed());
    assert_eq!(
        format!("{full:?} / {full}"),
        "Full(..) / pushing to a full offboarding queue"
    );
    assert_eq!(full.into_inner().0, 1);
    let closed = PushError::Closed(Opaque(2));
    let boxed: Box<dyn Error> = Box::new(PushError::Closed(Opaque(3)));
    assert_eq!(boxed.to_string(), "pushing to a closed offboarding queue");
    assert_eq!(closed.into_inner().0, 2);
}

#[test]
#[should_panic(expected = "capacity 0")]
fn zero_capacity_panics() {
    let _ = channel::<u8>(0);
}
