//! NoF segments in the model: their own probe-driven health, untouched by client liveness
//! (invariant 20). A segment is unmounted by its third failed probe in a row (the master's
//! default threshold); a healthy probe resets the count; a snapshot keeps the count.

use super::Model;

/// Failed probes in a row that unmount a NoF segment (`NofSegments::failures_threshold` 0).
const FAILURES: u32 = 3;

impl Model {
    /// Mounts NoF segment `n`: `false` if it is mounted already or `size` is 0.
    pub(crate) fn nof_mount(&mut self, n: usize, size: u64) -> bool {
        if size == 0 || self.nof.contains_key(&n) {
            return false;
        }
        self.nof.insert(n, (size, 0));
        true
    }

    /// A probe of NoF segment `n`: `true` if it unmounted the segment.
    pub(crate) fn nof_probe(&mut self, n: usize, healthy: bool) -> bool {
        let Some((_, failures)) = self.nof.get_mut(&n) else {
            return false;
        };
        if healthy {
            *failures = 0;
            return false;
        }
        *failures += 1;
        if *failures >= FAILURES {
            self.nof.remove(&n);
            return true;
        }
        false
    }
}
