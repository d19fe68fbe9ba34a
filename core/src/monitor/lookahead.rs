//! The order in which a tick visits its due entries, with the records' cache misses overlapped.
//!
//! A tick's due entries are records scattered over the heap, each with its word in the word
//! slab (`liveness/slab.rs`): visited one after another, each costs two dependent cache misses
//! (the record's line, which holds the slot's address, then the word's; ~100 ns each from DRAM)
//! before the next can start, and at a million clients those misses are most of the tick.
//! [`Lookahead`] yields the entries in the order it gets them, but asks the CPU to load each
//! record's line 2 × [`LOOKAHEAD`] entries before the monitor evaluates it and its word
//! [`LOOKAHEAD`] entries before (by then the record's line is in cache, so reading the slot's
//! address does not stall), so several misses of each kind are in flight at once. Nothing else changes: the same entries,
//! the same order (the replay's event order depends on it), the evaluation still loads the word
//! itself; the prefetch is only a hint (`crate::sync::prefetch`).

use crate::liveness::ClientLivenessRecord;
use crate::sync::Arc;
use std::collections::VecDeque;

/// Entries in flight ahead of the one evaluated: enough to cover a DRAM miss with the few tens of
/// nanoseconds an evaluation and re-arm take, few enough to stay in L1.
pub(crate) const LOOKAHEAD: usize = 8;

/// Yields `inner`'s records in order, each record prefetched 2 × [`LOOKAHEAD`] and its word
/// [`LOOKAHEAD`] records before it is yielded.
pub(crate) struct Lookahead<I> {
    inner: I,
    ahead: VecDeque<Arc<ClientLivenessRecord>>,
}

impl<I: Iterator<Item = Arc<ClientLivenessRecord>>> Lookahead<I> {
    pub(crate) fn new(inner: I) -> Self {
        Self {
            inner,
            ahead: VecDeque::with_capacity(2 * LOOKAHEAD + 1),
        }
    }
}

impl<I: Iterator<Item = Arc<ClientLivenessRecord>>> Iterator for Lookahead<I> {
    type Item = Arc<ClientLivenessRecord>;

    fn next(&mut self) -> Option<Self::Item> {
        while self.ahead.len() <= 2 * LOOKAHEAD {
            let Some(rec) = self.inner.next() else { break };
            rec.prefetch_record();
            self.ahead.push_back(rec);
            if let Some(nearer) = self
                .ahead
                .len()
                .checked_sub(LOOKAHEAD + 1)
                .and_then(|i| self.ahead.get(i))
            {
                nearer.prefetch();
            }
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
        for n in [
            0,
            1,
            LOOKAHEAD - 1,
            LOOKAHEAD,
            LOOKAHEAD + 1,
            2 * LOOKAHEAD + 1,
            3 * LOOKAHEAD + 5,
        ] {
            let recs: Vec<_> = (0..n as u128)
                .map(|i| {
                    let w = Word::first(crate::clock::LivenessMs(1_000), 10_000);
                    Arc::new(ClientLivenessRecord::with_word(ClientId(i), Incarnation(1), w))
                })
                .collect();
            let seen: Vec<u128> = Lookahead::new(recs.clone().into_iter()).map(|r| r.client().0).collect();
            assert_eq!(seen, (0..n as u128).collect::<Vec<_>>(), "n = {n}");
        }
    }
}
