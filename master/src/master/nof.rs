//! NoF (NVMe-over-Fabrics) segments: their own probe-driven health model, untouched by client
//! liveness (invariant 20). A NoF segment is unmounted after `failures_threshold` consecutive
//! failed probes; a successful probe resets the count. No client record is involved, so no
//! liveness transition, offboarding job or stall changes a NoF segment.

use std::collections::BTreeMap;

/// Health of one NoF segment.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct NofSegment {
    /// Size, bytes.
    pub size: u64,
    /// Consecutive failed probes.
    pub failures: u32,
}

/// The NoF registry.
#[derive(Debug, Default)]
pub struct NofSegments {
    segments: BTreeMap<String, NofSegment>,
    /// Failed probes in a row that unmount a segment (Mooncake's default is 3).
    pub failures_threshold: u32,
}

impl NofSegments {
    /// Mounts a NoF segment; `false` if the name is taken or the size is 0.
    pub fn mount(&mut self, name: &str, size: u64) -> bool {
        self.restore(name, size, 0)
    }

    /// Records a probe result; returns `true` if the segment was unmounted by it.
    pub fn probe(&mut self, name: &str, healthy: bool) -> bool {
        let threshold = if self.failures_threshold == 0 {
            3
        } else {
            self.failures_threshold
        };
        let Some(seg) = self.segments.get_mut(name) else {
            return false;
        };
        if healthy {
            seg.failures = 0;
            return false;
        }
        // Saturating: a restored count may be anything up to u32::MAX.
        seg.failures = seg.failures.saturating_add(1);
        if seg.failures >= threshold {
            self.segments.remove(name);
            return true;
        }
        false
    }

    /// Restores a segment's health state (snapshot); `false` if the name is taken or the size
    /// is 0.
    pub fn restore(&mut self, name: &str, size: u64, failures: u32) -> bool {
        if size == 0 || self.segments.contains_key(name) {
            return false;
        }
        self.segments.insert(name.to_string(), NofSegment { size, failures });
        true
    }

    /// Is `name` mounted (and so serving)?
    pub fn is_mounted(&self, name: &str) -> bool {
        self.segments.contains_key(name)
    }

    /// Mounted NoF segments by name.
    pub fn iter(&self) -> impl Iterator<Item = (&String, &NofSegment)> {
        self.segments.iter()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// A NoF mount (and a restore) needs a free name and a size (issue 17 round 6: the `||` of
    /// the check turned into `&&` survived in both, letting a second mount overwrite the first
    /// and a 0-byte one in; `mount` now calls `restore`).
    #[test]
    fn a_mount_needs_a_free_name_and_a_size() {
        let mut nof = NofSegments::default();
        assert!(nof.mount("n1", 10));
        assert!(!nof.mount("n1", 20), "a taken name was mounted again");
        assert!(!nof.mount("n2", 0), "a 0-byte segment was mounted");
        assert!(nof.is_mounted("n1") && !nof.is_mounted("n2"));
        assert_eq!(
            nof.iter().map(|(n, s)| (n.as_str(), s.size)).collect::<Vec<_>>(),
            [("n1", 10)]
        );
        // A snapshot's restore follows the same rule and keeps the failure count.
        assert!(!nof.restore("n1", 5, 1) && !nof.restore("n3", 0, 1));
        assert!(nof.restore("n3", 7, 2));
        let restored: Vec<_> = nof.iter().map(|(n, s)| (n.as_str(), s.size, s.failures)).collect();
        assert_eq!(restored, [("n1", 10, 0), ("n3", 7, 2)]);
    }
}
