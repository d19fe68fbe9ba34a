//! `serve`'s log: one line per event on stderr, in glog's layout so that what reads the real
//! master's log reads ours (`I1204 21:04:47.175064  2418 file.rs:42] message`, the number being
//! the writing thread's OS id, as glog writes it; glog prints local time, this prints UTC: the
//! same on the hosts this runs on, whose zone is UTC). A per-RPC request line and its response
//! line come from the one thread that ran the handler, as upstream's `ScopedVLogTimer` writes
//! them, so a reader pairs them by thread id.
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
use std::time::{SystemTime, UNIX_EPOCH};

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

/// Writes one line (use the [`glog!`](crate::serve::log) macros: they add file and line).
pub(crate) fn line(level: Level, file: &str, line: u32, msg: std::fmt::Arguments<'_>) {
    let letter = match level {
        Level::Info => 'I',
        Level::Warn => 'W',
        Level::Error => 'E',
    };
    let file = file.rsplit('/').next().unwrap_or(file);
    let text = format!(
        "{letter}{} {:>5} {file}:{line}] {msg}\n",
        stamp(SystemTime::now()),
        THREAD_ID.with(|id| *id)
    );
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

thread_local! {
    /// This thread's OS id (glog's thread field), read once per thread.
    static THREAD_ID: u32 = os_thread_id();
}

/// The calling thread's OS id, from `/proc/thread-self` (`<pid>/task/<tid>`); the process id
/// where that link cannot be read (not Linux).
fn os_thread_id() -> u32 {
    std::fs::read_link("/proc/thread-self")
        .ok()
        .and_then(|p| p.file_name()?.to_str()?.parse().ok())
        .unwrap_or_else(std::process::id)
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

pub(crate) use {error, info, warning};

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::time::Duration;

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
    fn each_thread_logs_its_own_id() {
        let here = THREAD_ID.with(|id| *id);
        let there = std::thread::spawn(|| THREAD_ID.with(|id| *id)).join().expect("thread");
        assert_ne!(here, there);
        if cfg!(target_os = "linux") {
            assert_ne!(there, std::process::id(), "a spawned thread's id is not the process id");
        }
    }
}
