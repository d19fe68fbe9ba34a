//! The order in which a tick visits its due entries, with the records' cache misses overlapped.
//!
//! A tick's due entries are records scattered over the heap: visited one after another, each
//! costs a cache miss on its word (~100 ns from DRAM) before the next can start, and at a million
//! clients that miss is most of the tick. [`Lookahead`] yields the entries in the order it gets
//! them, but asks the CPU to load each record's word [`LOOKAHEAD`] entries before the monitor
//! evaluates it, so several misses are in flight at once. Nothing else changes: the same entries,
//! the same order (the replay's event order depends on it), the evaluation still loads the word
//! itself; the prefetch is only a hint (`crate::sync::prefetch`).

use crate::liveness::ClientLivenessRecord;
use crate::sync::Arc;
use std::collections::VecDeque;

/// Entries in flight ahead of the one evaluated: enough to cover a DRAM miss with the few tens of
/// nanoseconds an evaluation and re-arm take, few enough to stay in L1.
pub(crate) const LOOKAHEAD: usize = 8;

/// Yields `inner`'s records in order, each prefetched [`LOOKAHEAD`] records before it is yielded.
pub(crate) struct Lookahead<I> {
    inner: I,
    ahead: VecDeque<Arc<ClientLivenessRecord>>,
}

impl<I: Iterator<Item = Arc<ClientLivenessRecord>>> Lookahead<I> {
    pub(crate) fn new(inner: I) -> Self {
        Self {
            inner,
            ahead: VecDeque::with_capacity(LOOKAHEAD + 1),
        }
    }
}

impl<I: Iterator<Item = Arc<ClientLivenessRecord>>> Iterator for Lookahead<I> {
    type Item = Arc<ClientLivenessRecord>;

    fn next(&mut self) -> Option<Self::Item> {
        while self.ahead.len() <= LOOKAHEAD {
            let Some(rec) = self.inner.next() else { break };
            rec.prefetch();
            self.ahead.push_back(rec);
        }
        self.ahead.pop_front()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::liveness::{ClientId, Incarnation, Word};

    #[test]
    fn yields_every_record_once_in_order() {
        for n in [0, 1, LOOKAHEAD - 1, LOOKAHEAD, LOOKAHEAD + 1, 3 * LOOKAHEAD + 5] {
            let recs: Vec<_> = (0..n as u128)
                .map(|i| {
                    let w = Word::first(1_000, 10_000);
                    Arc::new(ClientLivenessRecord::with_word(ClientId(i), Incarnation(1), w))
                })
                .collect();
            let seen: Vec<u128> = Lookahead::new(recs.clone().into_iter()).map(|r| r.client().0).collect();
            assert_eq!(seen, (0..n as u128).collect::<Vec<_>>(), "n = {n}");
        }
    }
}
