//! `simulate --metrics`: every policy runs the real master, which records its metrics through
//! the `metrics` facade; without a label the policies' series would add up into one. Each
//! policy's thread runs under a local recorder that adds `policy="<name>"` to every key and
//! hands it on to the recorder that was current (the Prometheus one the binary installed).

use metrics::{Counter, Gauge, Histogram, Key, KeyName, Label, Metadata, Recorder, SharedString, Unit};

/// Adds the `policy` label and forwards to `inner`.
struct Labelled<'a> {
    inner: &'a dyn Recorder,
    policy: &'static str,
}

impl Labelled<'_> {
    fn key(&self, key: &Key) -> Key {
        key.with_extra_labels(vec![Label::new("policy", self.policy)])
    }
}

impl Recorder for Labelled<'_> {
    fn describe_counter(&self, key: KeyName, unit: Option<Unit>, description: SharedString) {
        self.inner.describe_counter(key, unit, description);
    }

    fn describe_gauge(&self, key: KeyName, unit: Option<Unit>, description: SharedString) {
        self.inner.describe_gauge(key, unit, description);
    }

    fn describe_histogram(&self, key: KeyName, unit: Option<Unit>, description: SharedString) {
        self.inner.describe_histogram(key, unit, description);
    }

    fn register_counter(&self, key: &Key, metadata: &Metadata<'_>) -> Counter {
        self.inner.register_counter(&self.key(key), metadata)
    }

    fn register_gauge(&self, key: &Key, metadata: &Metadata<'_>) -> Gauge {
        self.inner.register_gauge(&self.key(key), metadata)
    }

    fn register_histogram(&self, key: &Key, metadata: &Metadata<'_>) -> Histogram {
        self.inner.register_histogram(&self.key(key), metadata)
    }
}

/// Runs `f` on this thread with every metric it records labelled `policy="<policy>"`.
pub(super) fn with_policy_label<T>(policy: &'static str, f: impl FnOnce() -> T) -> T {
    metrics::with_recorder(|inner| metrics::with_local_recorder(&Labelled { inner, policy }, f))
}
