//! Objects that outlive their core (issue 29, defect 4). A pending mount keeps part of the
//! core alive; once `mlv_core_free` has returned, committing or aborting it must be inert:
//! an error, no state change, and no callback (the caller may have freed `user_data`).
//! A commit racing with the free either completes before the free returns or is inert.

use mooncake_liveness_ffi::*;
use std::ffi::c_void;
use std::ptr::null_mut;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Barrier;

/// What the callbacks see. `freed` is set by the test right after `mlv_core_free` returns:
/// a callback that starts or is still running then is a violation.
#[derive(Default)]
struct Watch {
    freed: AtomicBool,
    events: AtomicUsize,
    after_free: AtomicUsize,
    slow: AtomicBool,
}

unsafe extern "C" fn on_event(user: *mut c_void, _e: *const MlvEvent) {
    // SAFETY (test): `user` is the `Watch` the test keeps alive for the whole test, so a
    // violation is counted instead of crashing.
    let w = unsafe { &*(user as *const Watch) };
    if w.freed.load(Ordering::SeqCst) {
        w.after_free.fetch_add(1, Ordering::SeqCst);
    }
    if w.slow.load(Ordering::Relaxed) {
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    w.events.fetch_add(1, Ordering::SeqCst);
    if w.freed.load(Ordering::SeqCst) {
        w.after_free.fetch_add(1, Ordering::SeqCst);
    }
}

fn id(n: u64) -> MlvClientId {
    MlvClientId { hi: 0, lo: n }
}

fn new_core(w: &Watch) -> *mut MlvCore {
    let mut o = std::mem::MaybeUninit::<MlvCoreOptions>::uninit();
    // SAFETY (test): valid out-pointer; the struct is initialized by the call.
    let mut o = unsafe {
        assert_eq!(mlv_core_options_default(o.as_mut_ptr()), MLV_OK);
        o.assume_init()
    };
    o.clock = MLV_CLOCK_MANUAL;
    o.config.active_ttl_ms = 1_000;
    o.config.suspicion_ttl_ms = 60_000;
    o.config.monitor_tick_ms = 100;
    o.config.shutdown_drain_ms = 10;
    o.callbacks.user_data = w as *const Watch as *mut c_void;
    o.callbacks.on_event = Some(on_event);
    let mut core = null_mut();
    // SAFETY (test): valid pointers for the call.
    assert_eq!(unsafe { mlv_core_new(&o, &mut core) }, MLV_OK);
    core
}

/// Mounts clients `1..=n`, lets them all go Suspected, and begins a remount of each (a commit
/// would recover it, delivering an event). Returns the pending mounts and a handle per client.
///
/// # Safety
/// `core` is a live core.
unsafe fn suspected_remounts(core: *mut MlvCore, n: u64) -> (Vec<*mut MlvMount>, Vec<*mut MlvHandle>) {
    let mut handles = Vec::new();
    let mut incs = Vec::new();
    // SAFETY (test, whole body): `core` is live; every out-pointer is valid.
    unsafe {
        for c in 1..=n {
            let (mut m, mut inc, mut h) = (null_mut(), 0, null_mut());
            assert_eq!(mlv_mount_begin(core, id(c), 0, &mut m, &mut inc), MLV_OK);
            let mut r = MlvMountResult::default();
            assert_eq!(mlv_mount_commit(m, &mut r, &mut h), MLV_OK);
            handles.push(h);
            incs.push(inc);
        }
        for _ in 0..15 {
            assert_eq!(mlv_clock_advance(core, 100), MLV_OK);
            assert_eq!(mlv_tick(core, null_mut()), MLV_OK);
        }
        let mut mounts = Vec::new();
        for (c, inc) in (1..=n).zip(incs) {
            let mut info = MlvHandleInfo::default();
            assert_eq!(mlv_handle_info(handles[c as usize - 1], &mut info), MLV_OK);
            assert_eq!(info.state, MLV_STATE_SUSPECTED, "client {c}");
            let (mut m, mut got) = (null_mut(), 0);
            assert_eq!(mlv_mount_begin(core, id(c), inc, &mut m, &mut got), MLV_OK);
            assert_eq!(got, inc, "a remount of a Suspected incarnation recovers it");
            mounts.push(m);
        }
        (mounts, handles)
    }
}

fn state(h: *mut MlvHandle) -> MlvState {
    let mut info = MlvHandleInfo::default();
    // SAFETY (test): `h` is a live handle.
    assert_eq!(unsafe { mlv_handle_info(h, &mut info) }, MLV_OK);
    info.state
}

#[test]
fn commit_and_abort_after_free_are_inert() {
    let w = Watch::default();
    let core = new_core(&w);
    // SAFETY (test): `core` is live until freed below; mounts and handles are used once each.
    unsafe {
        let (mounts, handles) = suspected_remounts(core, 2);
        let before = w.events.load(Ordering::SeqCst);
        assert_eq!(mlv_core_free(core), MLV_OK);
        w.freed.store(true, Ordering::SeqCst);

        let mut r = MlvMountResult::default();
        let mut h = null_mut();
        let st = mlv_mount_commit(mounts[0], &mut r, &mut h);
        assert_eq!(st, MLV_UNAVAILABLE_IN_CURRENT_STATUS, "a commit after free must fail");
        assert_eq!(r.lost, MLV_LOST_CORE_FREED, "{r:?}");
        assert!(h.is_null(), "no handle from an inert commit");
        assert_eq!(mlv_mount_abort(mounts[1]), MLV_UNAVAILABLE_IN_CURRENT_STATUS);
        let mut buf = [0u8; 256];
        let n = mlv_last_error_message(buf.as_mut_ptr().cast(), buf.len());
        let msg = String::from_utf8_lossy(&buf[..n.min(255)]).into_owned();
        assert!(msg.contains("freed"), "{msg}");

        assert_eq!(w.events.load(Ordering::SeqCst), before, "a callback ran after free");
        assert_eq!(w.after_free.load(Ordering::SeqCst), 0);
        for h in handles {
            assert_eq!(state(h), MLV_STATE_SUSPECTED, "an inert commit changed the record");
            assert_eq!(mlv_handle_release(h), MLV_OK);
        }
    }
}

#[test]
fn a_commit_racing_with_free_completes_before_it_returns_or_is_inert() {
    const THREADS: usize = 4;
    const PER_THREAD: u64 = 64;
    let w = Watch::default();
    let core = new_core(&w);
    // SAFETY (test): `core` is live until freed; each mount is consumed by exactly one thread.
    let (mounts, handles) = unsafe { suspected_remounts(core, THREADS as u64 * PER_THREAD) };
    let before = w.events.load(Ordering::SeqCst);
    w.slow.store(true, Ordering::Relaxed); // callbacks in flight while the core is freed
    let start = Barrier::new(THREADS + 1);
    let mounts: Vec<usize> = mounts.into_iter().map(|m| m as usize).collect();
    let outcomes: Vec<Vec<MlvStatus>> = std::thread::scope(|s| {
        let workers: Vec<_> = mounts
            .chunks(PER_THREAD as usize)
            .map(|chunk| {
                let start = &start;
                s.spawn(move || {
                    start.wait();
                    chunk
                        .iter()
                        .map(|&m| {
                            let mut r = MlvMountResult::default();
                            // SAFETY (test): a pending mount, consumed once, here.
                            let st = unsafe { mlv_mount_commit(m as *mut MlvMount, &mut r, null_mut()) };
                            if st != MLV_OK {
                                assert_eq!(r.lost, MLV_LOST_CORE_FREED, "{r:?}");
                            }
                            st
                        })
                        .collect()
                })
            })
            .collect();
        start.wait();
        std::thread::sleep(std::time::Duration::from_millis(5));
        // SAFETY (test): no call on the core itself runs concurrently; mounts may.
        assert_eq!(unsafe { mlv_core_free(core) }, MLV_OK);
        w.freed.store(true, Ordering::SeqCst);
        workers.into_iter().map(|t| t.join().unwrap()).collect()
    });
    let statuses: Vec<MlvStatus> = outcomes.into_iter().flatten().collect();
    let kept = statuses.iter().filter(|&&s| s == MLV_OK).count();
    assert!(statuses
        .iter()
        .all(|&s| s == MLV_OK || s == MLV_UNAVAILABLE_IN_CURRENT_STATUS));
    assert_eq!(
        w.after_free.load(Ordering::SeqCst),
        0,
        "a callback ran after mlv_core_free returned ({kept} of {} commits kept)",
        statuses.len()
    );
    assert!(
        kept < statuses.len(),
        "every commit finished before the free: the race was not exercised"
    );
    assert_eq!(
        w.events.load(Ordering::SeqCst),
        before + kept,
        "one recovery per kept commit"
    );
    for (h, st) in handles.into_iter().zip(statuses) {
        let want = if st == MLV_OK {
            MLV_STATE_ACTIVE
        } else {
            MLV_STATE_SUSPECTED
        };
        assert_eq!(state(h), want, "status {st}");
        // SAFETY (test): a live handle, released once.
        assert_eq!(unsafe { mlv_handle_release(h) }, MLV_OK);
    }
}
