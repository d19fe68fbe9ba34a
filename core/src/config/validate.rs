//! Validation of a whole [`LivenessConfig`] ([`LivenessConfig::validate`]) and the range checks
//! it shares with the value parsers.
//!
//! What this file owns: the invariants of a resolved configuration, including the one
//! cross-field rule (retry backoff ≤ its maximum). Both [`resolve`](super::resolve) and
//! [`ConfigHandle::reload`](super::ConfigHandle::reload) end here.

use super::error::{invalid, non_positive, not_finite, ConfigError};
use super::{LivenessConfig, MAX_DURATION_MS, MAX_OFFBOARDING_WORKERS};

impl LivenessConfig {
    /// Checks every invariant of a resolved configuration. Errors name the field
    /// (e.g. `active_ttl_ms`) and its value. [`resolve`](super::resolve) calls this last; call it
    /// yourself on a configuration built by hand ([`ConfigHandle::reload`](super::ConfigHandle::reload)
    /// does).
    pub fn validate(&self) -> Result<(), ConfigError> {
        let durations = [
            ("active_ttl_ms", self.active_ttl_ms),
            ("suspicion_ttl_ms", self.suspicion_ttl_ms),
            ("monitor_tick_ms", self.monitor_tick_ms),
            ("stall_bound_ms", self.stall_bound_ms),
            ("offboarding_retry_backoff_ms", self.offboarding_retry_backoff_ms),
            (
                "offboarding_retry_max_backoff_ms",
                self.offboarding_retry_max_backoff_ms,
            ),
            ("shutdown_drain_ms", self.shutdown_drain_ms),
        ];
        for (key, ms) in durations {
            check_whole(key, ms as u128, Some(MAX_DURATION_MS), DURATION_BOUND, &ms.to_string())?;
        }
        let workers = self.offboarding_workers;
        let workers_bound = Some(MAX_OFFBOARDING_WORKERS as u64);
        check_whole(
            "offboarding_workers",
            workers as u128,
            workers_bound,
            WORKERS_BOUND,
            &workers.to_string(),
        )?;
        let counts = [
            ("offboarding_batch_size", self.offboarding_batch_size as u128),
            ("offboarding_burst", u128::from(self.offboarding_burst)),
            ("mass_suspicion_min_clients", self.mass_suspicion_min_clients as u128),
        ];
        for (key, n) in counts {
            check_whole(key, n, None, "", &n.to_string())?;
        }
        let rate = self.offboarding_rate_per_sec;
        check_rate("offboarding_rate_per_sec", rate, &rate.to_string())?;
        let fraction = self.mass_suspicion_fraction;
        check_fraction("mass_suspicion_fraction", fraction, &fraction.to_string())?;
        if self.offboarding_retry_max_backoff_ms < self.offboarding_retry_backoff_ms {
            return Err(ConfigError::BackoffOrder {
                backoff_ms: self.offboarding_retry_backoff_ms,
                max_backoff_ms: self.offboarding_retry_max_backoff_ms,
            });
        }
        Ok(())
    }
}

/// What follows the bound of a duration in an error message.
pub(super) const DURATION_BOUND: &str = "ms (10 years)";
/// What follows the bound of `offboarding_workers` in an error message.
pub(super) const WORKERS_BOUND: &str = "(worker threads; MAX_OFFBOARDING_WORKERS)";

/// Checks a whole number is ≥ 1 and at most `max` (`what` follows the bound in the message:
/// its unit and why).
pub(super) fn check_whole(key: &str, n: u128, max: Option<u64>, what: &str, shown: &str) -> Result<(), ConfigError> {
    if n == 0 {
        return Err(non_positive(key, shown));
    }
    if let Some(max) = max {
        if n > u128::from(max) {
            let req = format!("must be at most {max} {what}");
            return Err(invalid(key, req.trim_end().to_owned(), shown));
        }
    }
    Ok(())
}

pub(super) fn check_rate(key: &str, f: f64, shown: &str) -> Result<(), ConfigError> {
    if !f.is_finite() {
        Err(not_finite(key, shown))
    } else if f <= 0.0 {
        Err(non_positive(key, shown))
    } else {
        Ok(())
    }
}

pub(super) fn check_fraction(key: &str, f: f64, shown: &str) -> Result<(), ConfigError> {
    if !f.is_finite() {
        Err(not_finite(key, shown))
    } else if f <= 0.0 || f > 1.0 {
        Err(invalid(key, "must be in (0, 1]".to_owned(), shown))
    } else {
        Ok(())
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn validate_names_fields() {
        let bad = [
            (
                LivenessConfig {
                    active_ttl_ms: 0,
                    ..Default::default()
                },
                "active_ttl_ms must be > 0, got 0",
            ),
            (
                LivenessConfig {
                    monitor_tick_ms: 0,
                    ..Default::default()
                },
                "monitor_tick_ms must be > 0, got 0",
            ),
            (
                LivenessConfig {
                    offboarding_workers: 0,
                    ..Default::default()
                },
                "offboarding_workers must be > 0, got 0",
            ),
            (
                LivenessConfig {
                    offboarding_workers: MAX_OFFBOARDING_WORKERS + 1,
                    ..Default::default()
                },
                "offboarding_workers must be at most 256 (worker threads; MAX_OFFBOARDING_WORKERS), got 257",
            ),
            (
                LivenessConfig {
                    offboarding_rate_per_sec: f64::NAN,
                    ..Default::default()
                },
                "offboarding_rate_per_sec must be a finite number, got NaN",
            ),
            (
                LivenessConfig {
                    mass_suspicion_fraction: 1.5,
                    ..Default::default()
                },
                "mass_suspicion_fraction must be in (0, 1], got 1.5",
            ),
            (
                LivenessConfig {
                    suspicion_ttl_ms: u64::MAX,
                    ..Default::default()
                },
                "suspicion_ttl_ms must be at most 315360000000 ms (10 years)",
            ),
            (
                LivenessConfig {
                    offboarding_retry_max_backoff_ms: 100,
                    ..Default::default()
                },
                "got offboarding_retry_max_backoff_ms 100 < offboarding_retry_backoff_ms 200",
            ),
        ];
        for (c, want) in bad {
            let msg = c.validate().unwrap_err().to_string();
            assert!(msg.contains(want), "{msg}");
        }
        LivenessConfig::default().validate().unwrap();
        let most = LivenessConfig {
            offboarding_workers: MAX_OFFBOARDING_WORKERS,
            ..Default::default()
        };
        most.validate().expect("the bound itself is accepted");
    }
}
