//! The offboarding rate limit: a token bucket on the virtual or system clock.
//!
//! Each job *start* (first attempt) takes a token; retries do not (they are already bounded by
//! their backoff). Tokens refill at `rate_per_sec` up to `burst`. A job that finds no token
//! waits, with its barrier in place, for the next tick.

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
        // A hair of tolerance so that rates like 0.1/s refill to exactly one token.
        if self.tokens >= 1.0 - 1e-9 {
            self.tokens = (self.tokens - 1.0).max(0.0);
            true
        } else {
            false
        }
    }
}

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
    fn fractional_rate() {
        let mut b = TokenBucket::new(0.5, 1, 0);
        assert!(b.try_take(0));
        assert!(!b.try_take(1_999));
        assert!(b.try_take(2_000));
    }
}
