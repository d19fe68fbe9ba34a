//! Entry points for a core's lifetime: create (from a configuration, optionally restoring a
//! snapshot), reload, clock, monitor, snapshot, shutdown, stats, free.

use crate::boundary::*;
use crate::shared::{lock, MonitorSlot, Shared};
use crate::types::*;
use mooncake_liveness_core::monitor::{Monitor, MonitorThread};
use mooncake_liveness_core::persist;
use mooncake_liveness_core::snapshot::Snapshot;
use mooncake_liveness_core::LivenessState;
use std::os::raw::c_char;
use std::sync::{Arc, Weak};
use std::time::Duration;

/// A liveness core (opaque). Made by `mlv_core_new`, freed by `mlv_core_free`.
pub struct MlvCore {
    tag: u64,
    pub(crate) shared: Arc<Shared>,
}

/// Checks a core pointer.
///
/// # Safety
/// `core` is null or points to memory readable as an `MlvCore` (a live core, or — caught by
/// the tag only if the memory was not reused — a freed one).
pub(crate) unsafe fn core_ref<'a>(core: *const MlvCore) -> Result<&'a Shared, Fail> {
    if core.is_null() {
        return Err(invalid("core is null"));
    }
    // SAFETY: non-null; the caller's contract makes it readable.
    let c = unsafe { &*core };
    if c.tag != TAG_CORE {
        return Err(invalid(format!("not a live MlvCore (tag {:#x})", c.tag)));
    }
    Ok(&c.shared)
}

/// Fills `*out` with the defaults: no configuration given, system clock, no callbacks, no
/// snapshot. Thread-safe; never blocks.
///
/// # Safety
/// `out` is null (→ `MLV_INVALID_PARAMS`) or writable.
#[no_mangle]
pub unsafe extern "C" fn mlv_core_options_default(out: *mut MlvCoreOptions) -> MlvStatus {
    guard("mlv_core_options_default", || {
        required(out, "out")?;
        let opts = MlvCoreOptions {
            config: MlvConfig::default(),
            config_text: std::ptr::null(),
            config_text_len: 0,
            clock: MLV_CLOCK_SYSTEM,
            callbacks: MlvCallbacks::default(),
            snapshot: std::ptr::null(),
            snapshot_len: 0,
        };
        // SAFETY: checked non-null; writable by contract.
        unsafe { put(out, opts) };
        Ok(())
    })
}

/// Makes a core: resolves the configuration (`options->config` over `options->config_text`,
/// as the binary resolves its command line over its file), starts the offboarding workers,
/// and, if `options->snapshot` is given, restores it (incarnations Active with a fresh TTL and
/// not ready; pending jobs resumed). The monitor is not running: call `mlv_monitor_start`, or
/// drive it with `mlv_tick`. On success `*out` owns the core.
///
/// Errors: `MLV_INVALID_PARAMS` (null pointer, invalid UTF-8 or configuration, bad clock kind,
/// oversize input), `MLV_DESERIALIZE_FAIL` (bad snapshot), `MLV_INTERNAL_ERROR`.
/// Thread-safe. Blocks only to start threads.
///
/// # Safety
/// `options` and `out` are null or valid; the pointers inside `options` are null or valid for
/// their lengths during the call. The callbacks and `user_data` must stay valid, callable from
/// any thread concurrently, and must not unwind, until `mlv_core_free` returns.
#[no_mangle]
pub unsafe extern "C" fn mlv_core_new(options: *const MlvCoreOptions, out: *mut *mut MlvCore) -> MlvStatus {
    guard("mlv_core_new", || {
        required(out, "out")?;
        if options.is_null() {
            return Err(invalid("options is null"));
        }
        // SAFETY: checked non-null; readable by contract.
        let o = unsafe { &*options };
        // SAFETY: the contract makes the text and snapshot pointers valid for their lengths.
        let text = unsafe { bytes(o.config_text, o.config_text_len, MAX_CONFIG_TEXT, "config_text") }?;
        // SAFETY: as above.
        let snap = unsafe { bytes(o.snapshot, o.snapshot_len, MAX_SNAPSHOT, "snapshot") }?;
        let config = crate::shared::resolve_config(&o.config, text)?;
        let decoded = match snap {
            Some(b) => Some(Snapshot::decode(b).map_err(|e| Fail(MLV_DESERIALIZE_FAIL, e.to_string()))?),
            None => None,
        };
        let shared = Shared::new(config, o.clock, o.callbacks)?;
        if let Some(s) = decoded {
            let restored = persist::restore_clients(&shared.liveness, &s.clients, &s.vacant);
            match restored {
                Ok(r) => shared.submit(r.jobs),
                Err(e) => {
                    shutdown_threads(&shared, Duration::ZERO);
                    return Err(Fail(MLV_DESERIALIZE_FAIL, e.to_string()));
                }
            }
        }
        let core = Box::new(MlvCore { tag: TAG_CORE, shared });
        // SAFETY: checked non-null; writable by contract.
        unsafe { put(out, Box::into_raw(core)) };
        Ok(())
    })
}

/// Stops the monitor thread and the offboarding workers (jobs not completed are dropped with
/// the core: call `mlv_core_shutdown` first to export them) and frees the core. Null is a no-op.
///
/// After it returns no callback of this core runs again, and objects that outlive the core are
/// inert:
/// - a pending `MlvMount`: `mlv_mount_commit` commits nothing, calls nothing and returns
///   `MLV_UNAVAILABLE_IN_CURRENT_STATUS` with `lost = MLV_LOST_CORE_FREED` (undo the mount
///   work); `mlv_mount_abort` returns `MLV_UNAVAILABLE_IN_CURRENT_STATUS`. Both still consume
///   the mount: call one of them to release it.
/// - an `MlvHandle` owns its record: it stays valid until `mlv_handle_release` and answers the
///   state the incarnation had when the core was freed (no monitor changes it any more).
/// - `MlvBytes` are plain memory, freed by `mlv_bytes_free` as before.
///
/// Thread-safety: no other call on this core may run concurrently or afterwards. A commit of a
/// pending mount may run concurrently on another thread: it either completes, its `on_event`
/// callback included, before this function returns, or it is inert as above. Blocks until the
/// core's threads have stopped (a running step callback finishes its batch) and until such a
/// commit in progress has finished. Not from a callback.
///
/// # Safety
/// `core` is null or a core from `mlv_core_new` not yet freed.
#[no_mangle]
pub unsafe extern "C" fn mlv_core_free(core: *mut MlvCore) -> MlvStatus {
    guard("mlv_core_free", || {
        if core.is_null() {
            return Ok(());
        }
        // SAFETY: readable by contract; tag checked before the box is reclaimed.
        unsafe { core_ref(core) }?;
        // SAFETY: a live core made by `Box::into_raw` in `mlv_core_new`, freed only here, once
        // (the tag is overwritten before the box is dropped).
        let mut boxed = unsafe { Box::from_raw(core) };
        boxed.tag = TAG_DEAD;
        // First: from here on a pending mount is inert, and a commit in progress has finished.
        boxed.shared.gate.close();
        shutdown_threads(&boxed.shared, Duration::ZERO);
        drop(boxed);
        Ok(())
    })
}

/// Stops the monitor thread (keeping its wheel) and the executor; returns the jobs it handed
/// back into `held`.
fn shutdown_threads(shared: &Shared, drain: Duration) {
    stop_monitor(shared);
    let exec = shared.executor.write().unwrap_or_else(|e| e.into_inner()).take();
    if let Some(x) = exec {
        let left = x.shutdown(drain);
        lock(&shared.held).extend(left);
    }
}

fn stop_monitor(shared: &Shared) -> bool {
    let slot = lock(&shared.monitor).take();
    let monitor = match slot {
        Some(MonitorSlot::Thread(t)) => t.stop().unwrap_or_else(|| Monitor::new(&shared.liveness)),
        Some(MonitorSlot::Manual(m)) => {
            *lock(&shared.monitor) = Some(MonitorSlot::Manual(m));
            return false;
        }
        None => return false,
    };
    *lock(&shared.monitor) = Some(MonitorSlot::Manual(monitor));
    true
}

/// Validates and swaps in a new configuration (`config` over `text`, as at creation); TTLs
/// apply to deadlines computed afterwards. `monitor_tick_ms` and `offboarding_workers` keep
/// their creation values. An invalid configuration leaves the current one in force.
/// Thread-safe (concurrent with every call but `mlv_core_free`); lock-free for signals.
///
/// # Safety
/// `core` as for every call; `config` null (→ nothing given) or valid; `text` null or valid
/// for `text_len` bytes.
#[no_mangle]
pub unsafe extern "C" fn mlv_core_reload(
    core: *const MlvCore,
    config: *const MlvConfig,
    text: *const u8,
    text_len: usize,
) -> MlvStatus {
    guard("mlv_core_reload", || {
        // SAFETY: contract.
        let s = unsafe { core_ref(core) }?;
        // SAFETY: contract.
        let text = unsafe { bytes(text, text_len, MAX_CONFIG_TEXT, "text") }?;
        let given = if config.is_null() {
            MlvConfig::default()
        } else {
            // SAFETY: non-null, readable by contract.
            unsafe { *config }
        };
        let c = crate::shared::resolve_config(&given, text)?;
        s.liveness
            .config()
            .reload(c)
            .map_err(|e| invalid(format!("configuration: {e}")))
    })
}

/// Moves a manual clock forward by `ms` (`MLV_UNAVAILABLE_IN_CURRENT_MODE` on a system-clock
/// core). Thread-safe; lock-free.
///
/// # Safety
/// `core` is null or a live core.
#[no_mangle]
pub unsafe extern "C" fn mlv_clock_advance(core: *const MlvCore, ms: u64) -> MlvStatus {
    guard("mlv_clock_advance", || {
        // SAFETY: contract.
        let s = unsafe { core_ref(core) }?;
        match &s.manual_clock {
            Some(c) => {
                c.advance_ms(ms);
                Ok(())
            }
            None => Err(Fail(
                MLV_UNAVAILABLE_IN_CURRENT_MODE,
                "the core runs on the system clock".into(),
            )),
        }
    })
}

/// The core's base clock now, ms. Thread-safe; lock-free.
///
/// # Safety
/// `core` is null or a live core; `out` null or writable.
#[no_mangle]
pub unsafe extern "C" fn mlv_clock_now(core: *const MlvCore, out: *mut u64) -> MlvStatus {
    guard("mlv_clock_now", || {
        // SAFETY: contract.
        let s = unsafe { core_ref(core) }?;
        required(out, "out")?;
        // SAFETY: checked non-null; writable by contract.
        unsafe { put(out, s.liveness.clock().base().now_ms()) };
        Ok(())
    })
}

/// Runs one monitor tick at the clock's now on the calling thread: events go to `on_event`,
/// Offline commits' jobs to the executor. `MLV_UNAVAILABLE_IN_CURRENT_STATUS` while the
/// monitor thread runs or another tick is in progress. Thread-safe; O(entries due).
///
/// # Safety
/// `core` is null or a live core; `out` null or writable.
#[no_mangle]
pub unsafe extern "C" fn mlv_tick(core: *const MlvCore, out: *mut MlvTickSummary) -> MlvStatus {
    guard("mlv_tick", || {
        // SAFETY: contract.
        let s = unsafe { core_ref(core) }?;
        let mut monitor = {
            let mut slot = lock(&s.monitor);
            match slot.take() {
                Some(MonitorSlot::Manual(m)) => m,
                other => {
                    *slot = other;
                    return Err(Fail(
                        MLV_UNAVAILABLE_IN_CURRENT_STATUS,
                        "the monitor thread is running or a tick is in progress".into(),
                    ));
                }
            }
        };
        let report = monitor.tick(&s.liveness);
        *lock(&s.monitor) = Some(MonitorSlot::Manual(monitor));
        let summary = s.sink(report);
        // SAFETY: null or writable by contract.
        unsafe { put(out, summary) };
        Ok(())
    })
}

/// Starts the monitor on its own thread (ticking every `monitor_tick_ms` on the core's clock).
/// `MLV_UNAVAILABLE_IN_CURRENT_STATUS` if it already runs or a tick is in progress.
/// Thread-safe.
///
/// # Safety
/// `core` is null or a live core.
#[no_mangle]
pub unsafe extern "C" fn mlv_monitor_start(core: *const MlvCore) -> MlvStatus {
    guard("mlv_monitor_start", || {
        // SAFETY: contract.
        let s = unsafe { core_ref(core) }?;
        let mut slot = lock(&s.monitor);
        let monitor = match slot.take() {
            Some(MonitorSlot::Manual(m)) => m,
            other => {
                *slot = other;
                return Err(Fail(
                    MLV_UNAVAILABLE_IN_CURRENT_STATUS,
                    "the monitor already runs or a tick is in progress".into(),
                ));
            }
        };
        // The thread holds the core weakly: the core owns the thread, not the reverse.
        let weak: Weak<Shared> = Arc::downgrade(&shared_arc(core));
        let t = MonitorThread::spawn_monitor(s.liveness.clone(), monitor, move |report| {
            if let Some(shared) = weak.upgrade() {
                shared.sink(report);
            }
        });
        match t {
            Ok(t) => {
                *slot = Some(MonitorSlot::Thread(t));
                Ok(())
            }
            Err(e) => {
                *slot = Some(MonitorSlot::Manual(Monitor::new(&s.liveness)));
                Err(Fail(
                    MLV_INTERNAL_ERROR,
                    format!("cannot start the monitor thread: {e}"),
                ))
            }
        }
    })
}

fn shared_arc(core: *const MlvCore) -> Arc<Shared> {
    // SAFETY: only called after `core_ref(core)` succeeded in the same entry point.
    unsafe { (*core).shared.clone() }
}

/// Stops the monitor thread after its current tick (its wheel is kept: `mlv_tick` or a new
/// `mlv_monitor_start` continue it). No-op if it is not running. Thread-safe; blocks for at
/// most one tick plus the callbacks it is running. Not from a callback.
///
/// # Safety
/// `core` is null or a live core.
#[no_mangle]
pub unsafe extern "C" fn mlv_monitor_stop(core: *const MlvCore) -> MlvStatus {
    guard("mlv_monitor_stop", || {
        // SAFETY: contract.
        let s = unsafe { core_ref(core) }?;
        stop_monitor(s);
        Ok(())
    })
}

fn export(s: &Shared, out: *mut MlvBytes) -> usize {
    let held = lock(&s.held);
    let bytes = persist::liveness_snapshot(&s.liveness, &held)
        .encode()
        .into_boxed_slice();
    let pending = held.len();
    let len = bytes.len();
    let data = Box::into_raw(bytes) as *mut u8;
    // SAFETY: null or writable by the calling entry point's contract.
    unsafe { put(out, MlvBytes { data, len }) };
    pending
}

/// A snapshot of the liveness state as bytes (the library's binary snapshot format, liveness
/// sections only): every incarnation, vacant id, and pending job. Jobs inside a running
/// executor are captured as not started (a lower bound; steps are idempotent). Free `*out`
/// with `mlv_bytes_free`. Thread-safe; O(clients); signals are not blocked.
///
/// # Safety
/// `core` is null or a live core; `out` writable.
#[no_mangle]
pub unsafe extern "C" fn mlv_snapshot(core: *const MlvCore, out: *mut MlvBytes) -> MlvStatus {
    guard("mlv_snapshot", || {
        // SAFETY: contract.
        let s = unsafe { core_ref(core) }?;
        required(out, "out")?;
        export(s, out);
        Ok(())
    })
}

/// Shuts down: stops the monitor thread, lets the offboarding workers drain their queue for up
/// to `shutdown_drain_ms`, stops them, and exports every job not completed (queued, waiting for
/// a retry, interrupted) in a snapshot (`*out`, may be null) and their count (`*pending`, may
/// be null). The core stays usable for signals and snapshots; later Offline commits are held
/// and exported too. Idempotent. Thread-safe; blocks for the drain. Not from a callback.
///
/// # Safety
/// `core` is null or a live core; `out` and `pending` null or writable.
#[no_mangle]
pub unsafe extern "C" fn mlv_core_shutdown(core: *const MlvCore, out: *mut MlvBytes, pending: *mut usize) -> MlvStatus {
    guard("mlv_core_shutdown", || {
        // SAFETY: contract.
        let s = unsafe { core_ref(core) }?;
        shutdown_threads(s, Duration::from_millis(s.drain_ms));
        let n = if out.is_null() {
            lock(&s.held).len()
        } else {
            export(s, out)
        };
        // SAFETY: null or writable by contract.
        unsafe { put(pending, n) };
        Ok(())
    })
}

/// Frees bytes from `mlv_snapshot` / `mlv_core_shutdown` and zeroes `*bytes`. Null, or
/// already-zeroed bytes, are a no-op. Thread-safe.
///
/// # Safety
/// `bytes` is null or points to an `MlvBytes` filled by this library and not freed since.
#[no_mangle]
pub unsafe extern "C" fn mlv_bytes_free(bytes: *mut MlvBytes) -> MlvStatus {
    guard("mlv_bytes_free", || {
        if bytes.is_null() {
            return Ok(());
        }
        // SAFETY: non-null; readable and writable by contract.
        let b = unsafe { &mut *bytes };
        if !b.data.is_null() {
            let slice = std::ptr::slice_from_raw_parts_mut(b.data, b.len);
            // SAFETY: `data`/`len` came from `Box::into_raw` of a boxed slice in `export`
            // and were not freed since (contract); zeroed below so a second free is a no-op.
            drop(unsafe { Box::from_raw(slice) });
        }
        b.data = std::ptr::null_mut();
        b.len = 0;
        Ok(())
    })
}

/// The library's counters. Thread-safe; O(clients) (it counts states); signals not blocked.
///
/// # Safety
/// `core` is null or a live core; `out` writable.
#[no_mangle]
pub unsafe extern "C" fn mlv_stats(core: *const MlvCore, out: *mut MlvStats) -> MlvStatus {
    guard("mlv_stats", || {
        // SAFETY: contract.
        let s = unsafe { core_ref(core) }?;
        required(out, "out")?;
        let mut st = MlvStats::default();
        for rec in s.liveness.registry().records() {
            match rec.state() {
                LivenessState::Active => st.active += 1,
                LivenessState::Suspected => st.suspected += 1,
                LivenessState::Offline => st.offline += 1,
            }
        }
        let c = &s.counters;
        let r = |a: &std::sync::atomic::AtomicU64| a.load(std::sync::atomic::Ordering::Relaxed);
        st.suspicions = r(&c.suspicions);
        st.recoveries = r(&c.recoveries);
        st.offline_commits = r(&c.offline_commits);
        st.stalls = r(&c.stalls);
        st.stall_ms = r(&c.stall_ms);
        st.brake_engagements = r(&c.brake_engagements);
        st.jobs_completed = r(&c.jobs_completed);
        for (i, f) in c.step_failures.iter().enumerate() {
            st.step_failures[i] = r(f);
        }
        if let Some(x) = s.executor.read().unwrap_or_else(|e| e.into_inner()).as_ref() {
            st.jobs_queued = x.queued() as u64;
            st.jobs_retrying = x.retrying() as u64;
        }
        st.jobs_held = lock(&s.held).len() as u64;
        // SAFETY: checked non-null; writable by contract.
        unsafe { put(out, st) };
        Ok(())
    })
}

/// The upper-case name of a status code (`"UNAVAILABLE_IN_CURRENT_STATUS"`), or `"UNKNOWN"`.
/// Static storage. Thread-safe.
#[no_mangle]
pub extern "C" fn mlv_status_name(code: MlvStatus) -> *const c_char {
    let name: &'static [u8] = match code {
        MLV_OK => b"OK\0",
        MLV_INTERNAL_ERROR => b"INTERNAL_ERROR\0",
        MLV_CLIENT_NOT_FOUND => b"CLIENT_NOT_FOUND\0",
        MLV_INVALID_PARAMS => b"INVALID_PARAMS\0",
        MLV_UNAVAILABLE_IN_CURRENT_STATUS => b"UNAVAILABLE_IN_CURRENT_STATUS\0",
        MLV_UNAVAILABLE_IN_CURRENT_MODE => b"UNAVAILABLE_IN_CURRENT_MODE\0",
        MLV_DESERIALIZE_FAIL => b"DESERIALIZE_FAIL\0",
        _ => b"UNKNOWN\0",
    };
    name.as_ptr().cast()
}

/// Copies this thread's last error message (set by the last failing call on this thread)
/// NUL-terminated into `buf` (at most `cap` bytes); returns its full length. Thread-safe.
///
/// # Safety
/// `buf` is null or writable for `cap` bytes.
#[no_mangle]
pub unsafe extern "C" fn mlv_last_error_message(buf: *mut c_char, cap: usize) -> usize {
    guard_value(0, || last_error_into(buf.cast(), cap))
}
