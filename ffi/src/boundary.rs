//! What every entry point does at the boundary: catch unwinds, check pointers and tags, and
//! remember the last error's message per thread.
//!
//! # Ground rules
//!
//! - No panic crosses the ABI: every `extern "C"` function runs its body inside [`guard`],
//!   which turns a caught panic into `MLV_INTERNAL_ERROR` (or a fail-closed value).
//! - Every object handed out (`MlvCore`, `MlvHandle`, `MlvMount`) starts with a 64-bit tag,
//!   checked on every use and overwritten when the object is freed. A null pointer or a wrong
//!   tag is `MLV_INVALID_PARAMS`. The tag catches foreign pointers and most stale ones; it
//!   cannot make a use after free defined (no check can): the contract still forbids that.
//! - Inputs are bounded: config text ≤ 1 MiB, snapshots ≤ 256 MiB, handle batches ≤ 2^20
//!   entries; an array of pointers must be aligned.

use crate::types::*;
use std::cell::RefCell;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Largest configuration text accepted.
pub(crate) const MAX_CONFIG_TEXT: usize = 1 << 20;
/// Largest snapshot accepted.
pub(crate) const MAX_SNAPSHOT: usize = 256 << 20;
/// Most handles one `mlv_handles_serving` call accepts (a filter over candidates, not a scan).
pub(crate) const MAX_BATCH: usize = 1 << 20;

/// Tags of live objects, and the value written over them when freed.
pub(crate) const TAG_CORE: u64 = 0x4d4c_565f_434f_5245; // "MLV_CORE"
pub(crate) const TAG_HANDLE: u64 = 0x4d4c_565f_484e_444c; // "MLV_HNDL"
pub(crate) const TAG_MOUNT: u64 = 0x4d4c_565f_4d4e_5421; // "MLV_MNT!"
pub(crate) const TAG_DEAD: u64 = 0xdead_dead_dead_dead;

thread_local! {
    static LAST_ERROR: RefCell<String> = const { RefCell::new(String::new()) };
}

/// An error at the boundary: the code and a message for `mlv_last_error_message`.
#[derive(Debug)]
pub(crate) struct Fail(pub(crate) MlvStatus, pub(crate) String);

pub(crate) fn invalid(msg: impl Into<String>) -> Fail {
    Fail(MLV_INVALID_PARAMS, msg.into())
}

fn set_last_error(msg: &str) {
    LAST_ERROR.with(|e| {
        let mut e = e.borrow_mut();
        e.clear();
        e.push_str(msg);
    });
}

/// Runs an entry point's body: `Ok` → `MLV_OK`; `Err` → its code (message kept); a panic →
/// `MLV_INTERNAL_ERROR`.
pub(crate) fn guard(name: &str, f: impl FnOnce() -> Result<(), Fail>) -> MlvStatus {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => MLV_OK,
        Ok(Err(Fail(code, msg))) => {
            set_last_error(&format!("{name}: {msg}"));
            code
        }
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            set_last_error(&format!("{name}: internal error (panic caught): {what}"));
            MLV_INTERNAL_ERROR
        }
    }
}

/// Runs a value-returning entry point; a panic gives `fallback`.
pub(crate) fn guard_value<T>(fallback: T, f: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or(fallback)
}

/// The last error message of this thread, copied NUL-terminated into `buf` (truncated to
/// `cap − 1` bytes); returns the full message length.
pub(crate) fn last_error_into(buf: *mut u8, cap: usize) -> usize {
    LAST_ERROR.with(|e| {
        let e = e.borrow();
        let bytes = e.as_bytes();
        if !buf.is_null() && cap > 0 {
            let n = bytes.len().min(cap - 1);
            // SAFETY: the caller passes a writable buffer of `cap` bytes (the function's
            // contract); we write `n + 1 ≤ cap` bytes.
            unsafe {
                std::ptr::copy_nonoverlapping(bytes.as_ptr(), buf, n);
                *buf.add(n) = 0;
            }
        }
        bytes.len()
    })
}

/// A byte slice from C, checked: null with a non-zero length and oversize inputs are refused.
///
/// # Safety
/// If `ptr` is not null it must point to `len` readable bytes that stay valid and unchanged
/// for `'a`.
pub(crate) unsafe fn bytes<'a>(ptr: *const u8, len: usize, max: usize, what: &str) -> Result<Option<&'a [u8]>, Fail> {
    if ptr.is_null() {
        return if len == 0 {
            Ok(None)
        } else {
            Err(invalid(format!("{what} is null but its length is {len}")))
        };
    }
    if len > max {
        return Err(invalid(format!("{what} is {len} bytes, more than the limit of {max}")));
    }
    // SAFETY: non-null, and the caller guarantees `len` readable bytes for 'a.
    Ok(Some(unsafe { std::slice::from_raw_parts(ptr, len) }))
}

/// Writes `value` through `out` if it is not null.
///
/// # Safety
/// `out` is null or valid for writing a `T`.
pub(crate) unsafe fn put<T>(out: *mut T, value: T) {
    if !out.is_null() {
        // SAFETY: non-null and writable by the caller's contract.
        unsafe { out.write(value) };
    }
}

/// Checks a required out-pointer.
pub(crate) fn required<T>(out: *mut T, what: &str) -> Result<(), Fail> {
    if out.is_null() {
        Err(invalid(format!("{what} is null")))
    } else {
        Ok(())
    }
}
