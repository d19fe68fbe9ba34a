//! The offboarding rate limit: a token bucket on the virtual or system clock.
//!
//! Each job *start* (first attempt) takes a token; retries do not (they are already bounded by
//! their backoff). Tokens refill at `rate_per_sec` up to `burst`. A job that finds no token
//! waits, with its barrier in place, until the bucket next holds one ([`TokenBucket::next_token_ms`];
//! the rules are `schedule.rs`'s).

/// A token bucket (tokens kept as `f64`: deterministic for the same inputs, and exact enough
/// that fractional rates do not lose tokens to rounding).
#[derive(Clone, Debug, PartialEq)]
pub struct TokenBucket {
    rate_per_sec: f64,
    burst: f64,
    tokens: f64,
    last_ms: u64,
}

impl TokenBucket {
    /// A full bucket at time `now_ms`.
    pub fn new(rate_per_sec: f64, burst: u64, now_ms: u64) -> Self {
        let burst = burst.max(1) as f64;
        Self {
            rate_per_sec,
            burst,
            tokens: burst,
            last_ms: now_ms,
        }
    }

    fn refill(&mut self, now_ms: u64) {
        let elapsed = now_ms.saturating_sub(self.last_ms);
        self.last_ms = self.last_ms.max(now_ms);
        self.tokens = (self.tokens + elapsed as f64 * self.rate_per_sec / 1_000.0).min(self.burst);
    }

    /// Takes one token if available at `now_ms`.
    pub fn try_take(&mut self, now_ms: u64) -> bool {
        self.refill(now_ms);
        if self.tokens >= 1.0 - TOLERANCE {
            self.tokens = (self.tokens - 1.0).max(0.0);
            true
        } else {
            false
        }
    }

    /// The first millisecond after `now_ms` at which [`try_take`](Self::try_take) finds a token,
    /// if none is taken meanwhile (`now_ms + 1` when one is there already). Saturates at
    /// `u64::MAX` for a rate so low the wait does not fit.
    pub fn next_token_ms(&self, now_ms: u64) -> u64 {
        let since = now_ms.saturating_sub(self.last_ms);
        let tokens = (self.tokens + since as f64 * self.rate_per_sec / 1_000.0).min(self.burst);
        // The token counts once `tokens` reaches `1 - TOLERANCE` (`try_take`).
        let missing = (1.0 - TOLERANCE - tokens).max(0.0);
        let wait_ms = (missing * 1_000.0 / self.rate_per_sec).ceil();
        // `as` saturates: a wait beyond u64 (a tiny rate) is "never", which add saturates to.
        now_ms.saturating_add((wait_ms as u64).max(1))
    }
}

/// A hair of tolerance so that rates like 0.1/s refill to exactly one token.
const TOLERANCE: f64 = 1e-9;

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn burst_then_rate() {
        let mut b = TokenBucket::new(2.0, 3, 0);
        assert!((0..3).all(|_| b.try_take(0)));
        assert!(!b.try_take(0));
        assert!(!b.try_take(499));
        assert!(b.try_take(500), "2 per second: one token per 500 ms");
        assert!(!b.try_take(500));
        assert!(b.try_take(10_000));
        assert!(b.try_take(10_000) && b.try_take(10_000));
        assert!(!b.try_take(10_000), "never more than the burst");
    }

    #[test]
    fn the_next_token_is_when_try_take_finds_it() {
        for (rate, burst) in [(2.0, 3), (3.0, 1), (0.1, 1), (1_000.0, 100), (7.0, 2), (1e-9, 1)] {
            let mut b = TokenBucket::new(rate, burst, 0);
            let mut now = 0;
            for _ in 0..20 {
                while b.try_take(now) {}
                let next = b.next_token_ms(now);
                assert!(next > now, "rate {rate}: {next} after {now}");
                if next == u64::MAX {
                    break;
                }
                let mut probe = b.clone();
                assert!(
                    !probe.try_take(next - 1) || next - 1 == now,
                    "rate {rate}: a token before {next}"
                );
                assert!(b.try_take(next), "rate {rate}: no token at {next}");
                now = next;
            }
        }
        let full = TokenBucket::new(1.0, 1, 5);
        assert_eq!(full.next_token_ms(5), 6, "a token already there: the next millisecond");
    }

    #[test]
    fn fractional_rate() {
        let mut b = TokenBucket::new(0.5, 1, 0);
        assert!(b.try_take(0));
        assert!(!b.try_take(1_999));
        assert!(b.try_take(2_000));
    }
}
