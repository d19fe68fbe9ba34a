//! `offboarding_workers` is bounded through the C ABI as in the library's configuration
//! (issue 29, defect 5): a core asking for more worker threads than
//! `MAX_OFFBOARDING_WORKERS` (256) is refused with `MLV_INVALID_PARAMS` and a message naming
//! the value, before any thread starts; the bound itself is accepted.

use mooncake_liveness_ffi::*;
use std::ptr::{null, null_mut};

fn options() -> MlvCoreOptions {
    let mut o = std::mem::MaybeUninit::<MlvCoreOptions>::uninit();
    // SAFETY (test): valid out-pointer; the struct is initialized by the call.
    unsafe {
        assert_eq!(mlv_core_options_default(o.as_mut_ptr()), MLV_OK);
        o.assume_init()
    }
}

fn last_error() -> String {
    let mut buf = [0u8; 512];
    // SAFETY (test): a writable buffer of that size.
    let n = unsafe { mlv_last_error_message(buf.as_mut_ptr().cast(), buf.len()) };
    String::from_utf8_lossy(&buf[..n.min(buf.len() - 1)]).into_owned()
}

fn new_core(o: &MlvCoreOptions) -> (MlvStatus, *mut MlvCore) {
    let mut core = null_mut();
    // SAFETY (test): valid pointers; the text, if any, outlives the call.
    let st = unsafe { mlv_core_new(o, &mut core) };
    (st, core)
}

#[test]
fn too_many_workers_are_refused_naming_the_value() {
    let mut o = options();
    o.config.offboarding_workers = 257;
    let (st, core) = new_core(&o);
    assert_eq!(st, MLV_INVALID_PARAMS, "a core with 257 workers was made");
    assert!(core.is_null());
    let msg = last_error();
    assert!(msg.contains("offboarding_workers") && msg.contains("257"), "{msg}");

    let text = b"offboarding_workers: 100000\n";
    let mut o = options();
    o.config_text = text.as_ptr();
    o.config_text_len = text.len();
    let (st, _) = new_core(&o);
    assert_eq!(st, MLV_INVALID_PARAMS);
    let msg = last_error();
    assert!(msg.contains("offboarding_workers") && msg.contains("100000"), "{msg}");
}

#[test]
fn the_bound_itself_is_accepted_and_a_reload_above_it_refused() {
    let mut o = options();
    o.config.offboarding_workers = 256;
    let (st, core) = new_core(&o);
    assert_eq!(st, MLV_OK, "{}", last_error());
    let mut c = o.config;
    c.offboarding_workers = 1 << 20;
    // SAFETY (test): a live core; `c` is valid for the call.
    let st = unsafe { mlv_core_reload(core, &c, null(), 0) };
    assert_eq!(st, MLV_INVALID_PARAMS);
    assert!(last_error().contains("1048576"), "{}", last_error());
    // SAFETY (test): a live core, freed once.
    assert_eq!(unsafe { mlv_core_free(core) }, MLV_OK);
}
