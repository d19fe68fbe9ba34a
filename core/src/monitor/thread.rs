//! Running the monitor on a background thread with the system clock.
//!
//! The thread sleeps until the next tick boundary, ticks, and hands each [`TickReport`] to the
//! caller's sink (which completes or enqueues offboarding jobs and records events). Stopping is
//! cooperative: [`MonitorThread::stop`] sets a flag the loop checks every tick, then joins.

use super::{Monitor, TickReport};
use crate::liveness::Liveness;
use crate::sync::{thread, AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A monitor running on its own thread.
#[derive(Debug)]
pub struct MonitorThread {
    stop: Arc<AtomicBool>,
    handle: Option<thread::JoinHandle<Monitor>>,
}

impl MonitorThread {
    /// Spawns the monitor loop for `liveness`; every tick's report goes to `sink`.
    pub fn spawn<F>(liveness: Arc<Liveness>, sink: F) -> std::io::Result<Self>
    where
        F: FnMut(TickReport) + Send + 'static,
    {
        let monitor = Monitor::new(&liveness);
        Self::spawn_monitor(liveness, monitor, sink)
    }

    /// As [`MonitorThread::spawn`], continuing `monitor` (e.g. one stepped by hand so far, or
    /// one a previous [`MonitorThread::stop`] returned): its wheel keeps every armed entry.
    pub fn spawn_monitor<F>(liveness: Arc<Liveness>, mut monitor: Monitor, mut sink: F) -> std::io::Result<Self>
    where
        F: FnMut(TickReport) + Send + 'static,
    {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = thread::Builder::new().name("liveness-monitor".into()).spawn(move || {
            let tick = Duration::from_millis(monitor.tick_ms());
            // Acquire: pairs with the Release store in `stop`.
            while !flag.load(Ordering::Acquire) {
                thread::sleep(tick);
                sink(monitor.tick(&liveness));
            }
            monitor
        })?;
        Ok(Self {
            stop,
            handle: Some(handle),
        })
    }

    /// Stops the loop after its current tick and returns the monitor (for its stats).
    pub fn stop(mut self) -> Option<Monitor> {
        self.stop.store(true, Ordering::Release);
        self.handle.take().and_then(|h| h.join().ok())
    }
}

impl Drop for MonitorThread {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}
