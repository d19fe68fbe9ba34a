//! Entry points on the signal and data paths: Ping, the two-phase mount, readiness, and
//! handles — the hot path (`mlv_handle_is_serving` is one tag check and one `Acquire` load).

use crate::boundary::*;
use crate::core_api::{core_ref, MlvCore};
use crate::shared::Shared;
use crate::types::*;
use mooncake_liveness_core::liveness::Owner;
use mooncake_liveness_core::liveness::{LostReason, MountRefused, PendingMount};
use mooncake_liveness_core::{ClientId, ClientLivenessRecord, Incarnation, PingStatus};
use std::sync::Arc;

/// A reference to one client incarnation's liveness record (opaque). Owns the record: valid
/// until `mlv_handle_release`, even after the incarnation is offboarded (it then answers "not
/// serving" forever: a later incarnation is a different record) or the core freed (it then
/// answers the state the incarnation had at the free, which nothing changes any more). A
/// handle never calls back.
pub struct MlvHandle {
    tag: u64,
    /// The record and a direct reference to its word in the word slab, so the hot path loads
    /// the word straight from the handle's line.
    owner: Owner,
}

/// A mount between `mlv_mount_begin` and `mlv_mount_commit` / `mlv_mount_abort` (opaque). It
/// may outlive its core: after `mlv_core_free` both calls are inert (they release the mount
/// and return `MLV_UNAVAILABLE_IN_CURRENT_STATUS`; nothing is committed, no callback runs).
pub struct MlvMount {
    tag: u64,
    shared: Arc<Shared>,
    pending: PendingMount,
}

fn token(t: u64) -> Option<Incarnation> {
    (t != 0).then_some(Incarnation(t))
}

fn new_handle(record: Arc<ClientLivenessRecord>) -> *mut MlvHandle {
    Box::into_raw(Box::new(MlvHandle {
        tag: TAG_HANDLE,
        owner: Owner::new(record),
    }))
}

/// # Safety
/// `h` is null or points to memory readable as an `MlvHandle`.
#[inline(always)]
unsafe fn handle_ref<'a>(h: *const MlvHandle) -> Option<&'a MlvHandle> {
    if h.is_null() {
        return None;
    }
    // SAFETY: non-null; readable by the caller's contract.
    let r = unsafe { &*h };
    (r.tag == TAG_HANDLE).then_some(r)
}

/// Ping: refreshes an Active incarnation or recovers a Suspected one, then answers by
/// readiness (`MLV_PING_OK`) or `MLV_PING_NEED_REMOUNT` (unknown client, Offline, stale token,
/// or alive but not remounted). `token` is the incarnation the client believes in, 0 for none.
/// A recovery is delivered to `on_event` on this thread. Never creates a record.
/// Thread-safe; lock-free (a registry lookup and one CAS loop on the record's word).
///
/// # Safety
/// `core` is null or a live core; `status` null or writable.
#[no_mangle]
pub unsafe extern "C" fn mlv_ping(
    core: *const MlvCore,
    client: MlvClientId,
    token_: u64,
    status: *mut MlvPingStatus,
) -> MlvStatus {
    guard("mlv_ping", || {
        // SAFETY: contract.
        let s = unsafe { core_ref(core) }?;
        let out = s.liveness.ping(client.into(), token(token_));
        if let Some(t) = &out.recovered {
            s.deliver_recovery(t);
        }
        let code = match out.status {
            PingStatus::Ok => MLV_PING_OK,
            PingStatus::NeedRemount => MLV_PING_NEED_REMOUNT,
        };
        // SAFETY: null or writable by contract.
        unsafe { put(status, code) };
        Ok(())
    })
}

/// First half of a mount / ReMount: decides the incarnation the mount work binds to and
/// writes it to `*incarnation`; then run the work and call `mlv_mount_commit` (success) or
/// `mlv_mount_abort` (failure). Refusals: `MLV_UNAVAILABLE_IN_CURRENT_STATUS` (the previous
/// incarnation is Offline and still offboarding: the barrier), `MLV_INVALID_PARAMS` (stale
/// `token`; 0 = none). Thread-safe; lock-free; nothing is held until commit or abort.
///
/// # Safety
/// `core` is null or a live core; `out` writable; `incarnation` null or writable.
#[no_mangle]
pub unsafe extern "C" fn mlv_mount_begin(
    core: *const MlvCore,
    client: MlvClientId,
    token_: u64,
    out: *mut *mut MlvMount,
    incarnation: *mut u64,
) -> MlvStatus {
    guard("mlv_mount_begin", || {
        // SAFETY: contract.
        let s = unsafe { core_ref(core) }?;
        required(out, "out")?;
        let id: ClientId = client.into();
        let pending = s.liveness.begin_mount(id, token(token_)).map_err(|r| match r {
            MountRefused::Offboarding(i) => Fail(
                MLV_UNAVAILABLE_IN_CURRENT_STATUS,
                format!("client {id} incarnation {i} is Offline and still being offboarded"),
            ),
            MountRefused::StaleToken => invalid(format!("stale incarnation token {token_} for client {id}")),
        })?;
        // SAFETY: null or writable by contract.
        unsafe { put(incarnation, pending.record().incarnation().0) };
        // SAFETY: `core_ref` succeeded, so `core` points to a live core.
        let shared = unsafe { (*core).shared.clone() };
        let m = Box::new(MlvMount {
            tag: TAG_MOUNT,
            shared,
            pending,
        });
        // SAFETY: checked non-null; writable by contract.
        unsafe { put(out, Box::into_raw(m)) };
        Ok(())
    })
}

/// # Safety
/// `m` is null or a mount from `mlv_mount_begin` not yet committed or aborted.
unsafe fn take_mount(m: *mut MlvMount) -> Result<Box<MlvMount>, Fail> {
    if m.is_null() {
        return Err(invalid("mount is null"));
    }
    // SAFETY: non-null, readable by contract.
    if unsafe { (*m).tag } != TAG_MOUNT {
        return Err(invalid("not a pending MlvMount"));
    }
    // SAFETY: a live mount made by `Box::into_raw`; consumed once (tag overwritten).
    let mut b = unsafe { Box::from_raw(m) };
    b.tag = TAG_DEAD;
    Ok(b)
}

/// Second half of a mount whose work succeeded: commits the liveness signal (publishing a new
/// incarnation). Always consumes `mount`. `MLV_OK`: kept (`*result` says created/recovered;
/// `*handle`, if not null, receives a handle to the incarnation). `MLV_UNAVAILABLE_IN_CURRENT_STATUS`:
/// lost (`result->lost` says why) — the caller must undo the mount work. A recovery is
/// delivered to `on_event` on this thread. Thread-safe; lock-free but for publishing a new
/// incarnation (one registry shard's writer lock, never taken by Ping).
///
/// After the core is freed: inert — nothing is committed, no callback runs, `*handle` is not
/// written, and the result is `MLV_UNAVAILABLE_IN_CURRENT_STATUS` with `lost =
/// MLV_LOST_CORE_FREED`. A commit concurrent with `mlv_core_free` either completes (callback
/// included) before the free returns, or is inert.
///
/// # Safety
/// `mount` is null or a pending mount; `result` and `handle` null or writable.
#[no_mangle]
pub unsafe extern "C" fn mlv_mount_commit(
    mount: *mut MlvMount,
    result: *mut MlvMountResult,
    handle: *mut *mut MlvHandle,
) -> MlvStatus {
    guard("mlv_mount_commit", || {
        // SAFETY: contract.
        let m = unsafe { take_mount(mount) }?;
        let MlvMount { shared, pending, .. } = *m;
        let incarnation = pending.record().incarnation().0;
        // Declared after `shared`, so dropped before it (the pass borrows the gate).
        let Some(_pass) = shared.gate.enter() else {
            let r = MlvMountResult {
                incarnation,
                lost: MLV_LOST_CORE_FREED,
                ..MlvMountResult::default()
            };
            // SAFETY: null or writable by contract.
            unsafe { put(result, r) };
            return Err(core_freed(incarnation));
        };
        match shared.liveness.commit_mount(pending) {
            Ok(c) => {
                if let Some(t) = &c.recovered {
                    shared.deliver_recovery(t);
                }
                let r = MlvMountResult {
                    incarnation,
                    created: c.created,
                    recovered: c.recovered.is_some(),
                    lost: MLV_LOST_NONE,
                };
                // SAFETY: null or writable by contract.
                unsafe { put(result, r) };
                if !handle.is_null() {
                    // SAFETY: non-null, writable by contract.
                    unsafe { put(handle, new_handle(c.record)) };
                }
                Ok(())
            }
            Err(reason) => {
                let lost = match reason {
                    LostReason::WentOffline => MLV_LOST_WENT_OFFLINE,
                    LostReason::Raced => MLV_LOST_RACED,
                };
                let r = MlvMountResult {
                    incarnation,
                    lost,
                    ..MlvMountResult::default()
                };
                // SAFETY: null or writable by contract.
                unsafe { put(result, r) };
                Err(Fail(
                    MLV_UNAVAILABLE_IN_CURRENT_STATUS,
                    format!("mount of incarnation {incarnation} lost ({reason:?}): undo its work"),
                ))
            }
        }
    })
}

/// Abandons a mount whose work failed: nothing is signalled, recovered or created. Consumes
/// `mount`. After the core is freed it still consumes it and returns
/// `MLV_UNAVAILABLE_IN_CURRENT_STATUS` (nothing else happens either way). Thread-safe; never
/// blocks.
///
/// # Safety
/// `mount` is null or a pending mount.
#[no_mangle]
pub unsafe extern "C" fn mlv_mount_abort(mount: *mut MlvMount) -> MlvStatus {
    guard("mlv_mount_abort", || {
        // SAFETY: contract.
        let m = unsafe { take_mount(mount) }?;
        if m.shared.gate.is_closed() {
            return Err(core_freed(m.pending.record().incarnation().0));
        }
        Ok(())
    })
}

fn core_freed(incarnation: u64) -> Fail {
    Fail(
        MLV_UNAVAILABLE_IN_CURRENT_STATUS,
        format!("the core was freed: the mount of incarnation {incarnation} is inert (nothing committed)"),
    )
}

/// Marks the current incarnation of `client` ready (ReMount finished) or not; never changes
/// liveness. `MLV_CLIENT_NOT_FOUND` if it has none. Thread-safe; lock-free.
///
/// # Safety
/// `core` is null or a live core.
#[no_mangle]
pub unsafe extern "C" fn mlv_set_ready(core: *const MlvCore, client: MlvClientId, ready: bool) -> MlvStatus {
    guard("mlv_set_ready", || {
        // SAFETY: contract.
        let s = unsafe { core_ref(core) }?;
        let id: ClientId = client.into();
        if s.liveness.set_ready(id, ready) {
            Ok(())
        } else {
            Err(Fail(MLV_CLIENT_NOT_FOUND, format!("client {id} has no incarnation")))
        }
    })
}

/// A handle to the current incarnation of `client` (Offline ones included, while offboarding
/// is pending). `MLV_CLIENT_NOT_FOUND` if it has none. Thread-safe; lock-free.
///
/// # Safety
/// `core` is null or a live core; `out` writable.
#[no_mangle]
pub unsafe extern "C" fn mlv_handle_get(
    core: *const MlvCore,
    client: MlvClientId,
    out: *mut *mut MlvHandle,
) -> MlvStatus {
    guard("mlv_handle_get", || {
        // SAFETY: contract.
        let s = unsafe { core_ref(core) }?;
        required(out, "out")?;
        let id: ClientId = client.into();
        let rec = s
            .liveness
            .registry()
            .get(id)
            .ok_or_else(|| Fail(MLV_CLIENT_NOT_FOUND, format!("client {id} has no incarnation")))?;
        // SAFETY: checked non-null; writable by contract.
        unsafe { put(out, new_handle(rec)) };
        Ok(())
    })
}

/// The hot path: may this incarnation's resources serve new work? One tag check and one
/// `Acquire` load. A null or foreign handle answers `false` (fail closed). Thread-safe; wait-free.
///
/// # Safety
/// `handle` is null or points to memory readable as an `MlvHandle` (a live handle).
#[no_mangle]
pub unsafe extern "C" fn mlv_handle_is_serving(handle: *const MlvHandle) -> bool {
    guard_value(false, || {
        // SAFETY: contract.
        unsafe { handle_ref(handle) }.is_some_and(|h| h.owner.is_serving())
    })
}

/// The address of this incarnation's liveness word, for a caller that checks it inline with no
/// call at all: `__atomic_load_n(w, __ATOMIC_ACQUIRE) < MLV_WORD_ACTIVE_BELOW` is exactly
/// `mlv_handle_is_serving`, `... < MLV_WORD_RETAINED_BELOW` exactly `mlv_handle_should_retain`
/// (the C++ wrapper's `Handle` does this). Null for a null or foreign handle.
///
/// The word is 8 bytes, 8-aligned, and changes only by the library's atomic read-modify-writes:
/// read it only with an atomic load (acquire, so a reader that sees Active also sees what was
/// published before the recovery), never write it. The pointer is this incarnation's word until
/// `mlv_handle_release(handle)`; after that the memory stays valid but may hold another
/// incarnation's word, so drop the pointer with the handle. Thread-safe; wait-free.
///
/// # Safety
/// As `mlv_handle_is_serving`.
#[no_mangle]
pub unsafe extern "C" fn mlv_handle_word(handle: *const MlvHandle) -> *const u64 {
    guard_value(std::ptr::null(), || {
        // SAFETY: contract.
        unsafe { handle_ref(handle) }.map_or(std::ptr::null(), |h| h.owner.word_ptr())
    })
}

/// Must this incarnation's resources be kept (Active or Suspected)? One tag check and one
/// `Acquire` load. A null or foreign handle answers `true` (fail safe: never free on a bad
/// handle). Thread-safe; wait-free.
///
/// # Safety
/// As `mlv_handle_is_serving`.
#[no_mangle]
pub unsafe extern "C" fn mlv_handle_should_retain(handle: *const MlvHandle) -> bool {
    guard_value(true, || {
        // SAFETY: contract.
        unsafe { handle_ref(handle) }.is_none_or(|h| h.owner.should_retain())
    })
}

/// The allocation filter in one call: `out[i]` = `mlv_handle_is_serving(handles[i])` for each
/// of the `n` handles (a null or foreign entry is `false`: fail closed), and `*count` (if
/// `count` is not null) = how many serve. One call for the batch, then per handle one tag check
/// and one `Acquire` load: a filter over candidate segments pays the call once, not per
/// candidate. `n` = 0 writes nothing else and counts 0. Errors (nothing written to `out`):
/// `n` above 2^20, or `handles`/`out` null or `handles` misaligned while `n` > 0 —
/// `MLV_INVALID_PARAMS`. Thread-safe; wait-free.
///
/// # Safety
/// If `n` > 0: `handles` points to `n` readable pointers, each null or readable as an
/// `MlvHandle`; `out` to `n` writable `bool`s not overlapping `handles`. `count` is null or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn mlv_handles_serving(
    handles: *const *const MlvHandle,
    n: usize,
    out: *mut bool,
    count: *mut usize,
) -> MlvStatus {
    guard("mlv_handles_serving", || {
        if n > MAX_BATCH {
            return Err(invalid(format!("n is {n}, more than the limit of {MAX_BATCH}")));
        }
        let mut serving = 0;
        if n > 0 {
            required(handles.cast_mut(), "handles")?;
            required(out, "out")?;
            if !handles.is_aligned() {
                return Err(invalid("handles is not aligned for a pointer array"));
            }
            // SAFETY: non-null, aligned, `n` readable entries by the caller's contract.
            let hs = unsafe { std::slice::from_raw_parts(handles, n) };
            // SAFETY: non-null, `n` writable bools (align 1) not overlapping `hs`, by contract.
            let out = unsafe { std::slice::from_raw_parts_mut(out, n) };
            for (o, &h) in out.iter_mut().zip(hs) {
                // SAFETY: each entry is null or readable as an `MlvHandle`, by contract.
                *o = unsafe { handle_ref(h) }.is_some_and(|h| h.owner.is_serving());
                serving += usize::from(*o);
            }
        }
        // SAFETY: null or writable by contract.
        unsafe { put(count, serving) };
        Ok(())
    })
}

/// The handle's client, incarnation, state and readiness. Thread-safe; wait-free.
///
/// # Safety
/// `handle` is null or a live handle; `out` writable.
#[no_mangle]
pub unsafe extern "C" fn mlv_handle_info(handle: *const MlvHandle, out: *mut MlvHandleInfo) -> MlvStatus {
    guard("mlv_handle_info", || {
        // SAFETY: contract.
        let h = unsafe { handle_ref(handle) }.ok_or_else(|| invalid("not a live MlvHandle"))?;
        required(out, "out")?;
        let r = h.owner.record();
        let info = MlvHandleInfo {
            client: r.client().into(),
            incarnation: r.incarnation().0,
            state: state_code(r.state()),
            ready: r.is_ready(),
        };
        // SAFETY: checked non-null; writable by contract.
        unsafe { put(out, info) };
        Ok(())
    })
}

/// Releases a handle. Null is a no-op. Thread-safe, but no other call may use this handle
/// concurrently or afterwards.
///
/// # Safety
/// `handle` is null or a live handle.
#[no_mangle]
pub unsafe extern "C" fn mlv_handle_release(handle: *mut MlvHandle) -> MlvStatus {
    guard("mlv_handle_release", || {
        if handle.is_null() {
            return Ok(());
        }
        // SAFETY: contract.
        if unsafe { handle_ref(handle) }.is_none() {
            return Err(invalid("not a live MlvHandle"));
        }
        // SAFETY: a live handle made by `Box::into_raw` in `new_handle`; the tag is overwritten
        // before the box is dropped.
        let mut b = unsafe { Box::from_raw(handle) };
        b.tag = TAG_DEAD;
        drop(b);
        Ok(())
    })
}
