//! `serve`'s log: one line per event on stderr, in glog's layout so that what reads the real
//! master's log reads ours (`I1204 21:04:47.175064  2418 file.rs:42] message`: the time, the
//! id of the thread that wrote it, as glog prints them; glog prints local time, this prints
//! UTC: the same on the hosts this runs on, whose zone is UTC).
//!
//! A line is stamped when it is written, except an event of the master's ([`line_at`]): the
//! monitor thread writes those after its tick, whichever thread produced them (a Ping's
//! recovery, an offboarding worker's completion), so each is stamped with the time the master
//! recorded it (its `at_ms`, to the millisecond, through [`WallClock`]).
//!
//! Liveness lines carry upstream's RFC action names (`client_liveness_suspected`,
//! `client_liveness_recovered`, `client_liveness_offline`, `client_offboarding_retry`,
//! `client_offboarding_complete`) after `client_id=<first-second>`, the form the client logs
//! its own id in.
//!
//! Ground rules: a line is formatted whole, then written with one `write_all` under stderr's
//! lock, so lines from request threads, the monitor and the offboarding workers never
//! interleave. Per-RPC lines (`--vmodule=scoped_vlog_timer=1`, as upstream) are off unless
//! asked for: the switch is read with one relaxed load.

use crate::sync::{AtomicBool, Ordering};
use std::io::Write;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

static RPC_LINES: AtomicBool = AtomicBool::new(false);

/// Turns per-RPC lines on or off.
pub(crate) fn set_rpc_lines(on: bool) {
    RPC_LINES.store(on, Ordering::Relaxed);
}

/// Are per-RPC lines on?
pub(crate) fn rpc_lines() -> bool {
    RPC_LINES.load(Ordering::Relaxed)
}

/// Severity letter of a line.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Level {
    /// `I`.
    Info,
    /// `W`.
    Warn,
    /// `E`.
    Error,
}

/// Writes one line stamped now (use the macros: they add file and line).
pub(crate) fn line(level: Level, file: &str, line: u32, msg: std::fmt::Arguments<'_>) {
    line_at(SystemTime::now(), level, file, line, msg);
}

/// Writes one line stamped `at` (the [`event!`] macro: an event of the master's, written after
/// it happened).
pub(crate) fn line_at(at: SystemTime, level: Level, file: &str, line: u32, msg: std::fmt::Arguments<'_>) {
    let letter = match level {
        Level::Info => 'I',
        Level::Warn => 'W',
        Level::Error => 'E',
    };
    let file = file.rsplit('/').next().unwrap_or(file);
    let text = format!("{letter}{} {:>5} {file}:{line}] {msg}\n", stamp(at), thread_id());
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

/// The master's clock on the wall clock: turns a master event's `at_ms` (milliseconds of the
/// master's [`SystemClock`](crate::clock::SystemClock)) or an [`Instant`] into the time to stamp
/// a line with. One pairing of the monotonic and the wall clock, taken once: two reads a
/// preemption apart would shift every stamp by the preemption, so the pair is read until both
/// reads fall within [`PAIRING`] of each other.
#[derive(Clone, Copy, Debug)]
pub(crate) struct WallClock {
    at: Instant,
    wall: SystemTime,
    epoch: Instant,
}

/// Where in its millisecond of the master clock a monitor tick is due ([`WallClock::on_phase`]).
pub(crate) const PHASE: Duration = Duration::from_micros(300);

/// The widest gap accepted between the monotonic reads around the wall read of a pairing.
const PAIRING: Duration = Duration::from_micros(200);

impl WallClock {
    /// The wall clock of a master clock counting from `epoch` (its millisecond 0).
    pub(crate) fn new(epoch: Instant) -> Self {
        let mut best: Option<(Duration, Instant, SystemTime)> = None;
        for _ in 0..100 {
            let before = Instant::now();
            let wall = SystemTime::now();
            let gap = before.elapsed();
            if best.is_none_or(|(g, _, _)| gap < g) {
                best = Some((gap, before + gap / 2, wall));
            }
            if gap <= PAIRING {
                break;
            }
        }
        let (_, at, wall) = best.unwrap_or_else(|| (Duration::ZERO, Instant::now(), SystemTime::now()));
        Self { at, wall, epoch }
    }

    /// The wall time of `instant`.
    pub(crate) fn of(self, instant: Instant) -> SystemTime {
        match instant.checked_duration_since(self.at) {
            Some(d) => self.wall + d,
            None => self.wall - self.at.duration_since(instant),
        }
    }

    /// The latest instant at or before `t` that lies [`PHASE`] past a whole millisecond of the
    /// master clock. The monitor ticks on such instants: the master reads its clock a few
    /// microseconds after waking, so every tick reads the millisecond it was stamped in, and a
    /// deadline a whole number of ticks after a commit is met by the same tick the log shows
    /// (woken at a random phase, a wake-up jitter of tens of microseconds near a millisecond
    /// boundary moved some commits a tick later than the logged ticks put them).
    pub(crate) fn on_phase(self, t: Instant) -> Instant {
        let since = t.saturating_duration_since(self.epoch);
        let whole = Duration::from_millis(since.as_millis() as u64);
        let at = self.epoch + whole + PHASE;
        if at <= t {
            at
        } else {
            at.checked_sub(Duration::from_millis(1)).unwrap_or(t)
        }
    }

    /// The wall time of the master clock's millisecond `at_ms`.
    pub(crate) fn at(self, at_ms: u64) -> SystemTime {
        self.of(self.epoch + Duration::from_millis(at_ms))
    }
}

thread_local! {
    static THREAD_ID: u64 = os_thread_id();
}

/// The id glog prints: the kernel's id of the calling thread (read once per thread).
fn thread_id() -> u64 {
    THREAD_ID.with(|id| *id)
}

/// The kernel's thread id (`/proc/thread-self` links to `<pid>/task/<tid>`; no `unsafe`
/// `gettid` call); the process id where that link does not exist.
fn os_thread_id() -> u64 {
    std::fs::read_link("/proc/thread-self")
        .ok()
        .and_then(|p| p.file_name()?.to_str()?.parse().ok())
        .unwrap_or_else(|| u64::from(std::process::id()))
}

/// `MMDD HH:MM:SS.ffffff` in UTC.
fn stamp(t: SystemTime) -> String {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = d.as_secs();
    let (_, month, day) = civil_from_days((secs / 86_400) as i64);
    let s = secs % 86_400;
    format!(
        "{month:02}{day:02} {:02}:{:02}:{:02}.{:06}",
        s / 3600,
        s / 60 % 60,
        s % 60,
        d.subsec_micros()
    )
}

/// (year, month, day) of a day count since 1970-01-01 (Howard Hinnant's `civil_from_days`).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(month <= 2), month, day)
}

/// An info line: `info!("client_id={id}, action=...")`.
macro_rules! info {
    ($($arg:tt)*) => {
        $crate::serve::log::line($crate::serve::log::Level::Info, file!(), line!(), format_args!($($arg)*))
    };
}

/// A line about a master event, stamped when it happened: `event!(at, Level::Info, "...")`.
macro_rules! event {
    ($at:expr, $level:expr, $($arg:tt)*) => {
        $crate::serve::log::line_at($at, $level, file!(), line!(), format_args!($($arg)*))
    };
}

/// A warning line.
macro_rules! warning {
    ($($arg:tt)*) => {
        $crate::serve::log::line($crate::serve::log::Level::Warn, file!(), line!(), format_args!($($arg)*))
    };
}

/// An error line.
macro_rules! error {
    ($($arg:tt)*) => {
        $crate::serve::log::line($crate::serve::log::Level::Error, file!(), line!(), format_args!($($arg)*))
    };
}

pub(crate) use {error, event, info, warning};

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn stamps_are_glog_shaped_utc() {
        // 2026-12-04 21:04:47.175064 UTC
        let t = UNIX_EPOCH + Duration::from_micros(1_796_418_287_175_064);
        assert_eq!(stamp(t), "1204 21:04:47.175064");
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(59), (1970, 3, 1));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
    }

    #[test]
    fn lines_carry_the_kernel_thread_id_as_glog_does() {
        let main = thread_id();
        let other = std::thread::spawn(thread_id).join().unwrap();
        assert_ne!(main, other, "each thread has its own id");
        assert_ne!(
            other,
            u64::from(std::process::id()),
            "a spawned thread's id is not the process id"
        );
    }

    #[test]
    fn an_event_is_stamped_at_its_own_millisecond() {
        let epoch = Instant::now();
        let w = WallClock::new(epoch);
        let zero = w.at(0);
        assert_eq!(w.at(1500).duration_since(zero).unwrap(), Duration::from_millis(1500));
        assert_eq!(w.of(epoch + Duration::from_millis(7)), w.at(7));
        // The pairing is read now: millisecond 0 of a clock started now is now on the wall.
        let off = SystemTime::now().duration_since(zero).unwrap_or_default();
        assert!(off < Duration::from_secs(1), "{off:?}");
    }
}
