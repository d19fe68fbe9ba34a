//! Property test through the C ABI: random sequences of calls with random and bad arguments
//! (null and foreign pointers, stale tokens, garbage configuration text and snapshots) on a
//! manual-clock core. Properties: no call panics or crashes; every status is one the header
//! documents; a handle that serves is retained; the header-inline check on `mlv_handle_word`
//! answers as the calls; a committed mount's incarnation is the one
//! `begin` announced; a snapshot taken at any point restores.

use mooncake_liveness_ffi::*;
use proptest::prelude::*;
use std::ptr::{null, null_mut};

const KNOWN: [MlvStatus; 7] = [
    MLV_OK,
    MLV_INTERNAL_ERROR,
    MLV_CLIENT_NOT_FOUND,
    MLV_INVALID_PARAMS,
    MLV_UNAVAILABLE_IN_CURRENT_STATUS,
    MLV_UNAVAILABLE_IN_CURRENT_MODE,
    MLV_DESERIALIZE_FAIL,
];

#[derive(Clone, Debug)]
enum Op {
    Ping(u8, u64),
    Mount(u8, u64, bool),
    Ready(u8, bool),
    Handle(u8),
    Release(usize),
    Check(usize),
    Tick(u16),
    Reload(Vec<u8>),
    Snapshot,
    Restore(Vec<u8>),
    Foreign(u8),
    Batch(u8),
    BadBatch(u8),
    Stats,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0u8..6, 0u64..4).prop_map(|(c, t)| Op::Ping(c, t)),
        3 => (0u8..6, 0u64..3, any::<bool>()).prop_map(|(c, t, ok)| Op::Mount(c, t, ok)),
        1 => (0u8..6, any::<bool>()).prop_map(|(c, r)| Op::Ready(c, r)),
        2 => (0u8..6).prop_map(Op::Handle),
        1 => (0usize..8).prop_map(Op::Release),
        2 => (0usize..8).prop_map(Op::Check),
        4 => (0u16..1500).prop_map(Op::Tick),
        1 => prop::collection::vec(any::<u8>(), 0..40).prop_map(Op::Reload),
        1 => Just(Op::Snapshot),
        1 => prop::collection::vec(any::<u8>(), 0..64).prop_map(Op::Restore),
        1 => (0u8..8).prop_map(Op::Foreign),
        2 => any::<u8>().prop_map(Op::Batch),
        1 => (0u8..5).prop_map(Op::BadBatch),
        1 => Just(Op::Stats),
    ]
}

fn id(c: u8) -> MlvClientId {
    MlvClientId {
        hi: 0,
        lo: u64::from(c),
    }
}

fn known(s: MlvStatus) -> MlvStatus {
    assert!(KNOWN.contains(&s), "undocumented status {s}");
    s
}

fn new_core(snapshot: Option<&[u8]>) -> (MlvStatus, *mut MlvCore) {
    let mut o = std::mem::MaybeUninit::<MlvCoreOptions>::uninit();
    // SAFETY (test): valid out-pointer; the struct is initialized by the call.
    let mut o = unsafe {
        assert_eq!(mlv_core_options_default(o.as_mut_ptr()), MLV_OK);
        o.assume_init()
    };
    o.clock = MLV_CLOCK_MANUAL;
    o.config.active_ttl_ms = 1_000;
    o.config.suspicion_ttl_ms = 1_000;
    o.config.monitor_tick_ms = 100;
    o.config.shutdown_drain_ms = 50;
    if let Some(s) = snapshot {
        o.snapshot = s.as_ptr();
        o.snapshot_len = s.len();
    }
    let mut core = null_mut();
    // SAFETY (test): valid pointers for the call.
    let st = unsafe { mlv_core_new(&o, &mut core) };
    (known(st), core)
}

fn run(ops: Vec<Op>) {
    let (st, core) = new_core(None);
    assert_eq!(st, MLV_OK);
    let mut handles: Vec<*mut MlvHandle> = Vec::new();
    let foreign = [0x5au64; 16];
    // SAFETY (test, whole body): every pointer passed is either produced by the library and
    // still live, null, or `foreign` (a readable buffer the tag check must reject).
    unsafe {
        for op in ops {
            match op {
                Op::Ping(c, t) => {
                    let mut s = 0;
                    known(mlv_ping(core, id(c), t, &mut s));
                    assert!(s == MLV_PING_OK || s == MLV_PING_NEED_REMOUNT);
                }
                Op::Mount(c, t, ok) => {
                    let mut m = null_mut();
                    let mut inc = 0;
                    if known(mlv_mount_begin(core, id(c), t, &mut m, &mut inc)) != MLV_OK {
                        continue;
                    }
                    if !ok {
                        assert_eq!(mlv_mount_abort(m), MLV_OK);
                        continue;
                    }
                    let mut r = MlvMountResult::default();
                    let mut h = null_mut();
                    if known(mlv_mount_commit(m, &mut r, &mut h)) == MLV_OK {
                        assert_eq!(r.incarnation, inc);
                        handles.push(h);
                    } else {
                        assert_ne!(r.lost, MLV_LOST_NONE);
                    }
                }
                Op::Ready(c, r) => {
                    known(mlv_set_ready(core, id(c), r));
                }
                Op::Handle(c) => {
                    let mut h = null_mut();
                    if known(mlv_handle_get(core, id(c), &mut h)) == MLV_OK {
                        handles.push(h);
                    }
                }
                Op::Release(i) => {
                    if i < handles.len() {
                        assert_eq!(mlv_handle_release(handles.swap_remove(i)), MLV_OK);
                    }
                }
                Op::Check(i) => {
                    if let Some(&h) = handles.get(i) {
                        assert!(!mlv_handle_is_serving(h) || mlv_handle_should_retain(h));
                        // The header-inline check on the word's address answers as the calls.
                        let w = mlv_handle_word(h);
                        assert!(!w.is_null() && w.is_aligned());
                        let raw = std::sync::atomic::AtomicU64::from_ptr(w.cast_mut())
                            .load(std::sync::atomic::Ordering::Acquire);
                        assert_eq!(raw < MLV_WORD_ACTIVE_BELOW, mlv_handle_is_serving(h), "word {raw:#x}");
                        assert_eq!(
                            raw < MLV_WORD_RETAINED_BELOW,
                            mlv_handle_should_retain(h),
                            "word {raw:#x}"
                        );
                        let mut info = MlvHandleInfo::default();
                        assert_eq!(mlv_handle_info(h, &mut info), MLV_OK);
                        assert!(info.state <= MLV_STATE_OFFLINE);
                    }
                }
                Op::Tick(ms) => {
                    known(mlv_clock_advance(core, u64::from(ms)));
                    known(mlv_tick(core, null_mut()));
                }
                Op::Reload(text) => {
                    known(mlv_core_reload(core, null(), text.as_ptr(), text.len()));
                }
                Op::Snapshot => {
                    let mut b = MlvBytes {
                        data: null_mut(),
                        len: 0,
                    };
                    assert_eq!(mlv_snapshot(core, &mut b), MLV_OK);
                    let bytes = std::slice::from_raw_parts(b.data, b.len).to_vec();
                    assert_eq!(mlv_bytes_free(&mut b), MLV_OK);
                    assert_eq!(mlv_bytes_free(&mut b), MLV_OK, "a second free is a no-op");
                    let (st, back) = new_core(Some(&bytes));
                    assert_eq!(st, MLV_OK, "a snapshot restores");
                    assert_eq!(mlv_core_free(back), MLV_OK);
                }
                Op::Restore(garbage) => {
                    let (st, back) = new_core(Some(&garbage));
                    if st == MLV_OK {
                        assert_eq!(mlv_core_free(back), MLV_OK);
                    } else {
                        assert!(back.is_null());
                    }
                }
                Op::Foreign(which) => {
                    let f = foreign.as_ptr();
                    let st = match which {
                        0 => mlv_ping(f.cast(), id(1), 0, null_mut()),
                        1 => mlv_tick(f.cast(), null_mut()),
                        2 => mlv_handle_release(f.cast_mut().cast()),
                        3 => mlv_mount_commit(f.cast_mut().cast(), null_mut(), null_mut()),
                        4 => mlv_mount_abort(null_mut()),
                        5 => mlv_stats(core, null_mut()),
                        6 => mlv_handle_get(core, id(1), null_mut()),
                        _ => {
                            assert!(!mlv_handle_is_serving(f.cast()));
                            assert!(mlv_handle_word(f.cast()).is_null() && mlv_handle_word(null()).is_null());
                            MLV_INVALID_PARAMS
                        }
                    };
                    assert_eq!(st, MLV_INVALID_PARAMS);
                }
                Op::Batch(mix) => {
                    // The live handles, with a null or a foreign entry slipped in where `mix`
                    // says: each answer is the single call's, and the count is theirs.
                    let mut batch: Vec<*const MlvHandle> = handles.iter().map(|&h| h.cast_const()).collect();
                    let at = usize::from(mix) % (batch.len() + 1);
                    match mix % 3 {
                        0 => batch.insert(at, null()),
                        1 => batch.insert(at, foreign.as_ptr().cast()),
                        _ => {}
                    }
                    let mut out = vec![mix % 2 == 0; batch.len()];
                    let mut count = usize::MAX;
                    assert_eq!(
                        mlv_handles_serving(batch.as_ptr(), batch.len(), out.as_mut_ptr(), &mut count),
                        MLV_OK
                    );
                    let single: Vec<bool> = batch.iter().map(|&h| mlv_handle_is_serving(h)).collect();
                    assert_eq!(out, single);
                    assert_eq!(count, single.iter().filter(|&&s| s).count());
                }
                Op::BadBatch(which) => {
                    let hs: Vec<*const MlvHandle> = handles.iter().map(|&h| h.cast_const()).collect();
                    let mut out = [true; 4];
                    let mut count = usize::MAX;
                    let st = match which {
                        0 => mlv_handles_serving(null(), 1, out.as_mut_ptr(), &mut count),
                        1 => mlv_handles_serving(hs.as_ptr(), 1, null_mut(), &mut count),
                        2 => mlv_handles_serving(hs.as_ptr(), (1 << 20) + 1, out.as_mut_ptr(), &mut count),
                        3 => {
                            let bytes = [0u8; 24];
                            let misaligned = bytes.as_ptr().wrapping_add(1 + bytes.as_ptr().align_offset(8));
                            mlv_handles_serving(misaligned.cast(), 1, out.as_mut_ptr(), &mut count)
                        }
                        _ => {
                            // An empty batch is fine with null arrays and counts 0.
                            assert_eq!(mlv_handles_serving(null(), 0, null_mut(), &mut count), MLV_OK);
                            assert_eq!(count, 0);
                            MLV_INVALID_PARAMS
                        }
                    };
                    assert_eq!(st, MLV_INVALID_PARAMS);
                    if which < 4 {
                        assert_eq!((out, count), ([true; 4], usize::MAX), "an error writes nothing");
                    }
                }
                Op::Stats => {
                    let mut s = MlvStats::default();
                    assert_eq!(mlv_stats(core, &mut s), MLV_OK);
                }
            }
        }
        let mut pending = 0usize;
        assert_eq!(mlv_core_shutdown(core, null_mut(), &mut pending), MLV_OK);
        assert_eq!(mlv_core_free(core), MLV_OK);
        for h in handles {
            // Handles outlive the core.
            assert!(!mlv_handle_is_serving(h) || mlv_handle_should_retain(h));
            assert_eq!(mlv_handle_release(h), MLV_OK);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
    #[test]
    fn random_calls_and_bad_arguments(ops in prop::collection::vec(op(), 1..60)) {
        run(ops);
    }
}
