//! Plain C types of the ABI: status codes, enum values as integers, and `repr(C)` structs.
//!
//! Enumerations cross the boundary as integers (`uint32_t` plus `#define`d values), never as
//! Rust enums: a C caller can pass any integer, and an out-of-range value in a Rust enum is
//! undefined behaviour. Every integer is validated on entry.

use mooncake_liveness_core::liveness::{Cause, LivenessState};
use mooncake_liveness_core::offboarding::{ClientOffboardingJob, Step};
use mooncake_liveness_core::{ClientId, Transition};
use std::os::raw::c_void;

/// A status code. Values are Mooncake's `ErrorCode` numbers (`mooncake-store/include/types.h`),
/// so a C++ master can return them on its RPCs unchanged.
pub type MlvStatus = i32;
/// Success.
pub const MLV_OK: MlvStatus = 0;
/// A panic was caught at the boundary, or a thread could not be started.
pub const MLV_INTERNAL_ERROR: MlvStatus = -1;
/// No current incarnation for this client id.
pub const MLV_CLIENT_NOT_FOUND: MlvStatus = -103;
/// A null or foreign pointer, invalid UTF-8, an out-of-range enum value, an oversize input, an
/// invalid configuration, or a stale incarnation token (upstream's "remount identity mismatch").
pub const MLV_INVALID_PARAMS: MlvStatus = -600;
/// The Offline barrier: the client's previous incarnation is Offline and still being
/// offboarded (mount refused, or the incarnation went Offline while the mount work ran); also a
/// call that the core's current state does not allow (a manual tick while the monitor thread
/// runs, a second monitor start). Retryable.
pub const MLV_UNAVAILABLE_IN_CURRENT_STATUS: MlvStatus = -1010;
/// The call needs another mode of the core (moving the clock of a core on the system clock).
pub const MLV_UNAVAILABLE_IN_CURRENT_MODE: MlvStatus = -1011;
/// A snapshot was refused (truncated, corrupted, future version, inconsistent).
pub const MLV_DESERIALIZE_FAIL: MlvStatus = -1502;

/// A raw liveness word below this is Active: the header-inline serving check is
/// `__atomic_load_n(mlv_handle_word(h), __ATOMIC_ACQUIRE) < MLV_WORD_ACTIVE_BELOW` (the state
/// is the word's top two bits; this header and the library are built from the same source, so
/// the constant always matches the library it is linked with).
pub const MLV_WORD_ACTIVE_BELOW: u64 = 0x4000_0000_0000_0000_u64;
/// A raw liveness word below this is Active or Suspected: resources must be kept.
pub const MLV_WORD_RETAINED_BELOW: u64 = 0x8000_0000_0000_0000_u64;
const _: () = assert!(
    MLV_WORD_ACTIVE_BELOW == mooncake_liveness_core::liveness::word::ACTIVE_BELOW
        && MLV_WORD_RETAINED_BELOW == mooncake_liveness_core::liveness::word::RETAINED_BELOW
);

/// Which clock a core runs on.
pub type MlvClockKind = u32;
/// Monotonic wall time.
pub const MLV_CLOCK_SYSTEM: MlvClockKind = 0;
/// Moved only by `mlv_clock_advance` (tests, simulations).
pub const MLV_CLOCK_MANUAL: MlvClockKind = 1;

/// Ping's wire answer (`ClientStatus`).
pub type MlvPingStatus = u32;
/// Active and ready.
pub const MLV_PING_OK: MlvPingStatus = 1;
/// Unknown, Offline, stale token, or alive but not (re)mounted yet.
pub const MLV_PING_NEED_REMOUNT: MlvPingStatus = 2;

/// A liveness state.
pub type MlvState = u32;
/// Serving.
pub const MLV_STATE_ACTIVE: MlvState = 0;
/// Silent past the active TTL: not serving, resources kept.
pub const MLV_STATE_SUSPECTED: MlvState = 1;
/// Terminal for the incarnation: offboarding.
pub const MLV_STATE_OFFLINE: MlvState = 2;

/// Why a transition happened.
pub type MlvCause = u32;
/// A deadline passed (the monitor committed it).
pub const MLV_CAUSE_TIMEOUT: MlvCause = 0;
/// A Ping recovered a Suspected incarnation.
pub const MLV_CAUSE_RECOVERED_BY_PING: MlvCause = 1;
/// A successful mount recovered a Suspected incarnation.
pub const MLV_CAUSE_RECOVERED_BY_MOUNT: MlvCause = 2;
/// The mass-suspicion brake released and renewed the suspicion window.
pub const MLV_CAUSE_BRAKE_RELEASED: MlvCause = 3;

/// What an event reports.
pub type MlvEventKind = u32;
/// A committed transition (`client`, `incarnation`, `from`, `to`, `cause`, `at_ms`).
pub const MLV_EVENT_TRANSITION: MlvEventKind = 0;
/// A master stall was detected (`stall_ms`, `at_ms`); every deadline moved by it.
pub const MLV_EVENT_STALL: MlvEventKind = 1;
/// The mass-suspicion brake engaged or released (`brake_engaged`, `suspected`, `at_ms`).
pub const MLV_EVENT_BRAKE: MlvEventKind = 2;

/// An offboarding step.
pub type MlvStep = u32;
/// Objects, replicas and tasks of the incarnation.
pub const MLV_STEP_METADATA: MlvStep = 0;
/// Its memory segments.
pub const MLV_STEP_SEGMENTS: MlvStep = 1;
/// Its LocalDisk registration.
pub const MLV_STEP_LOCAL_DISK: MlvStep = 2;
/// Tenant quotas.
pub const MLV_STEP_QUOTA: MlvStep = 3;
/// External metadata store entries.
pub const MLV_STEP_EXTERNAL_METADATA: MlvStep = 4;

/// What a step callback answers.
pub type MlvStepResult = i32;
/// The step is complete.
pub const MLV_STEP_DONE: MlvStepResult = 0;
/// A bounded batch was done: call again (locks may be released in between).
pub const MLV_STEP_MORE: MlvStepResult = 1;
/// Not possible now: the job is retried later on the backoff schedule, resuming at this step.
pub const MLV_STEP_RETRY_LATER: MlvStepResult = 2;
/// Failed with `*error_code`: counted, logged, and retried like `MLV_STEP_RETRY_LATER` (no job
/// is ever abandoned: the Offline record is the remount barrier until its job completes).
pub const MLV_STEP_FAILED: MlvStepResult = 3;

/// Why a committed mount could not be kept.
pub type MlvLostReason = u32;
/// Not lost.
pub const MLV_LOST_NONE: MlvLostReason = 0;
/// The incarnation was committed Offline while the mount work ran.
pub const MLV_LOST_WENT_OFFLINE: MlvLostReason = 1;
/// A concurrent first mount of the same client id published first.
pub const MLV_LOST_RACED: MlvLostReason = 2;
/// The core was freed (`mlv_core_free`) before the commit: nothing was committed and no
/// callback ran.
pub const MLV_LOST_CORE_FREED: MlvLostReason = 3;

/// A client id: Mooncake's UUID pair (`first` = `hi`, `second` = `lo`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MlvClientId {
    /// High 64 bits (the UUID's `first`).
    pub hi: u64,
    /// Low 64 bits (the UUID's `second`).
    pub lo: u64,
}

impl From<MlvClientId> for ClientId {
    fn from(c: MlvClientId) -> Self {
        ClientId((u128::from(c.hi) << 64) | u128::from(c.lo))
    }
}

impl From<ClientId> for MlvClientId {
    fn from(c: ClientId) -> Self {
        MlvClientId {
            hi: (c.0 >> 64) as u64,
            lo: c.0 as u64,
        }
    }
}

/// The common configuration keys. A zero field means "not given": the key's default (or the
/// configuration text's value) applies, by the same resolution rules as the binary.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct MlvConfig {
    /// `client_active_ttl_sec`, in ms.
    pub active_ttl_ms: u64,
    /// `client_suspicion_ttl_sec`, in ms.
    pub suspicion_ttl_ms: u64,
    /// `monitor_tick_ms` (fixed when the core is made; a reload does not change it).
    pub monitor_tick_ms: u64,
    /// `offboarding_workers` (fixed when the core is made; at most 256, the library's
    /// `MAX_OFFBOARDING_WORKERS`: more is `MLV_INVALID_PARAMS`).
    pub offboarding_workers: u32,
    /// `offboarding_retry_backoff_ms`.
    pub offboarding_retry_backoff_ms: u64,
    /// `offboarding_retry_max_backoff_ms`.
    pub offboarding_retry_max_backoff_ms: u64,
    /// `shutdown_drain_ms`: bound on draining offboarding at `mlv_core_shutdown`.
    pub shutdown_drain_ms: u64,
}

/// One event, delivered to `MlvCallbacks::on_event`. Fields not named by `kind` are zero.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct MlvEvent {
    /// `MLV_EVENT_*`.
    pub kind: MlvEventKind,
    /// The client (transitions).
    pub client: MlvClientId,
    /// The incarnation (transitions).
    pub incarnation: u64,
    /// State before (transitions).
    pub from: MlvState,
    /// State after (transitions).
    pub to: MlvState,
    /// `MLV_CAUSE_*` (transitions).
    pub cause: MlvCause,
    /// Base-clock time, ms.
    pub at_ms: u64,
    /// The stall credited (stalls).
    pub stall_ms: u64,
    /// Engaged (`true`) or released (brake).
    pub brake_engaged: bool,
    /// Suspected incarnations at that moment (brake).
    pub suspected: u64,
}

pub(crate) fn state_code(s: LivenessState) -> MlvState {
    match s {
        LivenessState::Active => MLV_STATE_ACTIVE,
        LivenessState::Suspected => MLV_STATE_SUSPECTED,
        LivenessState::Offline => MLV_STATE_OFFLINE,
    }
}

fn cause_code(c: Cause) -> MlvCause {
    match c {
        Cause::Timeout => MLV_CAUSE_TIMEOUT,
        Cause::RecoveredByPing => MLV_CAUSE_RECOVERED_BY_PING,
        Cause::RecoveredByMount => MLV_CAUSE_RECOVERED_BY_MOUNT,
        Cause::BrakeReleased => MLV_CAUSE_BRAKE_RELEASED,
    }
}

impl From<&Transition> for MlvEvent {
    fn from(t: &Transition) -> Self {
        MlvEvent {
            kind: MLV_EVENT_TRANSITION,
            client: t.client.into(),
            incarnation: t.incarnation.0,
            from: state_code(t.from),
            to: state_code(t.to),
            cause: cause_code(t.cause),
            at_ms: t.at_ms,
            ..MlvEvent::default()
        }
    }
}

/// An offboarding job as a step callback sees it.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct MlvJob {
    /// The client being offboarded.
    pub client: MlvClientId,
    /// The incarnation being offboarded.
    pub incarnation: u64,
    /// This attempt's number (1 = first).
    pub attempt: u32,
    /// Batches of the current step already run in this attempt (`MLV_STEP_MORE` answers).
    pub step_batches: u32,
    /// Base-clock time Offline was committed, ms.
    pub committed_at_ms: u64,
}

impl MlvJob {
    pub(crate) fn of(job: &ClientOffboardingJob) -> Self {
        MlvJob {
            client: job.client().into(),
            incarnation: job.incarnation().0,
            attempt: job.attempts(),
            step_batches: job.step_batches(),
            committed_at_ms: job.committed_at_ms(),
        }
    }
}

pub(crate) fn step_code(s: Step) -> MlvStep {
    match s {
        Step::Metadata => MLV_STEP_METADATA,
        Step::Segments => MLV_STEP_SEGMENTS,
        Step::LocalDisk => MLV_STEP_LOCAL_DISK,
        Step::Quota => MLV_STEP_QUOTA,
        Step::ExternalMetadata => MLV_STEP_EXTERNAL_METADATA,
    }
}

/// An event callback. Called on the monitor's thread (or the thread calling `mlv_tick`) for
/// monitor events, and on the thread calling `mlv_ping` / `mlv_mount_commit` for recoveries.
pub type MlvEventFn = Option<unsafe extern "C" fn(user_data: *mut c_void, event: *const MlvEvent)>;
/// A step callback: runs (a bounded batch of) one step for `job`; on `MLV_STEP_FAILED` it may
/// store a code in `*error_code`. Called on offboarding worker threads, possibly concurrently
/// for different jobs. It must not unwind (a C++ exception must be caught inside).
pub type MlvStepFn =
    Option<unsafe extern "C" fn(user_data: *mut c_void, job: *const MlvJob, error_code: *mut i32) -> MlvStepResult>;
/// Called on an offboarding worker thread when a job completed and its record was erased (the
/// client id may mount a new incarnation from now on).
pub type MlvJobFn = Option<unsafe extern "C" fn(user_data: *mut c_void, job: *const MlvJob)>;

/// The embedder's callbacks, fixed for the core's lifetime. Any may be null (a null step has
/// nothing to clean). `user_data` is passed to each; callbacks may run concurrently on several
/// threads, so whatever it points to must be thread-safe, and must outlive the core.
/// Callbacks must not call `mlv_tick`, `mlv_monitor_stop`, `mlv_core_shutdown` or
/// `mlv_core_free` on the same core (those wait for the threads the callbacks run on).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct MlvCallbacks {
    /// Passed to every callback.
    pub user_data: *mut c_void,
    /// Transitions, stalls, brake changes.
    pub on_event: MlvEventFn,
    /// A job completed.
    pub on_offboarded: MlvJobFn,
    /// Step `metadata`.
    pub metadata: MlvStepFn,
    /// Step `segments`.
    pub segments: MlvStepFn,
    /// Step `local_disk`.
    pub local_disk: MlvStepFn,
    /// Step `quota`.
    pub quota: MlvStepFn,
    /// Step `external_metadata`.
    pub external_metadata: MlvStepFn,
}

impl Default for MlvCallbacks {
    fn default() -> Self {
        MlvCallbacks {
            user_data: std::ptr::null_mut(),
            on_event: None,
            on_offboarded: None,
            metadata: None,
            segments: None,
            local_disk: None,
            quota: None,
            external_metadata: None,
        }
    }
}

// SAFETY: `MlvCallbacks` is plain function pointers and an opaque pointer; `mlv_core_new`'s
// contract makes the caller guarantee that the callbacks and `user_data` may be used from any
// thread, concurrently, for the core's lifetime.
unsafe impl Send for MlvCallbacks {}
// SAFETY: as above.
unsafe impl Sync for MlvCallbacks {}

impl MlvCallbacks {
    pub(crate) fn step(&self, s: Step) -> MlvStepFn {
        match s {
            Step::Metadata => self.metadata,
            Step::Segments => self.segments,
            Step::LocalDisk => self.local_disk,
            Step::Quota => self.quota,
            Step::ExternalMetadata => self.external_metadata,
        }
    }
}

/// Everything `mlv_core_new` needs. Start from `mlv_core_options_default`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct MlvCoreOptions {
    /// The common keys (zero fields: not given). Applied over `config_text`.
    pub config: MlvConfig,
    /// Optional configuration text, YAML or JSON (the binary's keys, legacy aliases included;
    /// unknown keys are ignored), UTF-8, not NUL-terminated; null for none. At most 1 MiB.
    pub config_text: *const u8,
    /// Length of `config_text` in bytes.
    pub config_text_len: usize,
    /// `MLV_CLOCK_SYSTEM` or `MLV_CLOCK_MANUAL`.
    pub clock: MlvClockKind,
    /// The callbacks.
    pub callbacks: MlvCallbacks,
    /// Optional snapshot (from `mlv_snapshot` / `mlv_core_shutdown`) to restore; null for none.
    pub snapshot: *const u8,
    /// Length of `snapshot` in bytes. At most 256 MiB.
    pub snapshot_len: usize,
}

/// Bytes owned by the library (a snapshot). Free with `mlv_bytes_free`.
#[repr(C)]
#[derive(Debug)]
pub struct MlvBytes {
    /// The bytes (null when `len` is 0).
    pub data: *mut u8,
    /// Their count.
    pub len: usize,
}

/// The outcome of a committed (or lost) mount.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct MlvMountResult {
    /// The incarnation the mount work ran for.
    pub incarnation: u64,
    /// This mount created the incarnation.
    pub created: bool,
    /// This mount recovered a Suspected incarnation.
    pub recovered: bool,
    /// `MLV_LOST_*`: why the work must be undone (`MLV_LOST_NONE` on success).
    pub lost: MlvLostReason,
}

/// A handle's identity and current state.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct MlvHandleInfo {
    /// The client.
    pub client: MlvClientId,
    /// The incarnation.
    pub incarnation: u64,
    /// `MLV_STATE_*` now.
    pub state: MlvState,
    /// Remount readiness now.
    pub ready: bool,
}

/// What one `mlv_tick` produced.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct MlvTickSummary {
    /// Events delivered.
    pub events: u32,
    /// Offboarding jobs handed to the executor (one per Offline commit).
    pub jobs: u32,
}

/// The library's counters (the same figures the `metrics` facade exports).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct MlvStats {
    /// Active incarnations now.
    pub active: u64,
    /// Suspected incarnations now.
    pub suspected: u64,
    /// Offline incarnations whose offboarding is pending now.
    pub offline: u64,
    /// Active → Suspected commits so far.
    pub suspicions: u64,
    /// Suspected → Active recoveries so far.
    pub recoveries: u64,
    /// Suspected → Offline commits so far.
    pub offline_commits: u64,
    /// Master stalls detected.
    pub stalls: u64,
    /// Stall time credited, ms.
    pub stall_ms: u64,
    /// Mass-suspicion brake engagements.
    pub brake_engagements: u64,
    /// Offboarding jobs completed.
    pub jobs_completed: u64,
    /// Step answers other than done/more, by step (`MLV_STEP_*` order).
    pub step_failures: [u64; 5],
    /// Jobs queued for the executor.
    pub jobs_queued: u64,
    /// Jobs waiting for a retry.
    pub jobs_retrying: u64,
    /// Jobs held by the core outside the executor (after shutdown, or a full queue).
    pub jobs_held: u64,
}
