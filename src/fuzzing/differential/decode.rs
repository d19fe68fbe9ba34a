//! Decoding an input: a small configuration, a setup byte (bit 0: asynchronous offboarding;
//! bits 1–4: a start rate limit; bits 5–6: the mass-suspicion brake; bit 7: the stall brake),
//! then operations (`RawOp`, as `arbitrary` reads them) turned into commands with names and
//! sizes fixed (`Cmd`, independent of any state).
//!
//! New variants are appended to `RawOp` only, and `scripts/differential_seeds.py` (which
//! writes and converts seeds) lists them in the same order: appending one changes every tag,
//! so the committed seeds are converted to decode to the same operations as before.

use super::super::model::{CLIENTS, KEYS, NOF_NAMES, SEGMENTS, STEPS};
use super::{MAX_FAILOVERS, MAX_OPS};
use crate::config::{LivenessConfig, OffboardingMode};
use arbitrary::{Arbitrary, Unstructured};

/// Natural size of each segment (a ReMount re-announces it; a Mount mostly uses it).
const SEGMENT_SIZE: [u64; SEGMENTS] = [128, 256, 128, 64, 256, 192];
/// Object sizes a Put picks from (0 is invalid, 300 fits no segment).
const OBJECT_SIZE: [u64; 8] = [0, 16, 48, 64, 100, 130, 200, 300];

#[derive(Arbitrary, Debug)]
enum RawOp {
    Advance(u8),
    AdvanceLong(u8),
    Mount { client: u8, segment: u8, variant: u8 },
    Remount { client: u8, mask: u8, variant: u8 },
    Unmount { client: u8, segment: u8 },
    Ping { client: u8 },
    MountLocalDisk { client: u8, capacity: u8 },
    Put { key: u8, size: u8, replicas: u8 },
    PutEnd { key: u8 },
    PutRevoke { key: u8 },
    Get { key: u8 },
    Remove { key: u8 },
    FailStep { step: u8, times: u8 },
    Failover,
    HandBack,
    MountWithToken { client: u8, segment: u8, token: u8 },
    PingWithToken { client: u8, token: u8 },
    SetQuota { limit: u8 },
    ReloadTtls { active: u8, suspicion: u8 },
    BatchKeys(u8),
    ReloadTtlsLong { active: u8, suspicion: u8 },
    AdvanceFar(u8),
    Replicate { key: u8, segment: u8, mv: bool },
    FetchTasks { client: u8 },
    TaskDone { client: u8, task: u8, ok: bool },
    Drain { segment: u8 },
    OffloadHeartbeat { client: u8 },
    Promote { key: u8 },
    NofMount { segment: u8, size: u8 },
    NofProbe { segment: u8, healthy: bool },
    Stall(u8),
}

/// A decoded operation, with names and sizes fixed (independent of any state).
#[derive(Clone, Debug)]
pub(super) enum Cmd {
    Advance(u64),
    /// With an incarnation token (`Some`: `mount_with_token`).
    Mount {
        c: usize,
        s: usize,
        size: u64,
        token: Option<u64>,
    },
    Remount {
        c: usize,
        specs: Vec<(usize, u64)>,
    },
    Unmount {
        c: usize,
        s: usize,
    },
    /// With an incarnation token (`Some`: `ping_with_token`).
    Ping {
        c: usize,
        token: Option<u64>,
    },
    MountLocalDisk {
        c: usize,
        capacity: u64,
    },
    Put {
        k: usize,
        size: u64,
        n: usize,
    },
    PutEnd {
        k: usize,
    },
    PutRevoke {
        k: usize,
    },
    Get {
        k: usize,
    },
    Remove {
        k: usize,
    },
    FailStep {
        step: usize,
        times: u32,
    },
    Failover,
    /// A configuration reload with new (active, suspicion) TTLs, ms (either may shrink).
    ReloadTtls(u64, u64),
    /// The default tenant's quota limit (`None`: no limit), bytes.
    SetQuota(Option<u64>),
    /// Async: the executor shuts down and hands every job it holds back to the master (sync:
    /// nothing to hand back).
    HandBack,
    /// Keys (and tasks) per call of the `metadata` offboarding step
    /// (`Master::set_offboarding_batch_keys`): 1..=3, so an incarnation of a few keys needs
    /// several batches (`Progress::More`).
    BatchKeys(usize),
    /// CopyStart (`mv` false) / MoveStart (true) of `k` to segment `s`.
    Replicate {
        k: usize,
        s: usize,
        mv: bool,
    },
    /// FetchTasks by client `c`.
    FetchTasks {
        c: usize,
    },
    /// task_done of task `id` (1..=12) by client `c`; `None`: by the task's executor, as the
    /// master names it when the operation runs (`run.rs` resolves it before anything applies).
    TaskDone {
        c: Option<usize>,
        id: u64,
        ok: bool,
    },
    /// Drain of segment `s`: it stops taking allocations and its objects get Move tasks.
    Drain {
        s: usize,
    },
    /// The offload heartbeat of client `c` (offloads admitted and handed over).
    OffloadHeartbeat {
        c: usize,
    },
    /// Promotion on hit of `k` (held only on LocalDisk) to a memory replica.
    Promote {
        k: usize,
    },
    /// Mounts NoF segment `n` of `size` bytes (0: refused).
    NofMount {
        n: usize,
        size: u64,
    },
    /// A health probe of NoF segment `n`.
    NofProbe {
        n: usize,
        healthy: bool,
    },
    /// The master does not run for this many ms: the ticks in between are skipped, and the next
    /// one runs late (credited as a stall if it is more than the bound late and the stall brake
    /// is on; `run.rs`).
    Stall(u64),
}

/// An incarnation token: 1..=3 (an input offboards a client at most a few times).
fn incarnation(b: u8) -> u64 {
    u64::from(b % 3) + 1
}

fn segment_size(s: usize, variant: u8) -> u64 {
    match variant % 8 {
        6 => SEGMENT_SIZE[s] + 64,
        7 => 0,
        _ => SEGMENT_SIZE[s],
    }
}

/// Ticks ahead beyond which a deadline is always filed on wheel level 2 or higher: level 1
/// holds the current and the next block of 64 × 64 ticks (`monitor::wheel::level_for`).
pub(super) const LEVEL_2_TICKS: u64 = 2 << (2 * crate::__private::WHEEL_LEVEL_BITS);

fn cmd_of(op: RawOp, tick: u64) -> Cmd {
    let c = |b: u8| usize::from(b) % CLIENTS;
    let s = |b: u8| usize::from(b) % SEGMENTS;
    let k = |b: u8| usize::from(b) % KEYS;
    match op {
        RawOp::Advance(b) => Cmd::Advance(u64::from(b) * 10),
        RawOp::AdvanceLong(b) => Cmd::Advance(u64::from(b) * 50),
        RawOp::Mount {
            client,
            segment,
            variant,
        } => Cmd::Mount {
            c: c(client),
            s: s(segment),
            size: segment_size(s(segment), variant),
            token: None,
        },
        RawOp::Remount { client, mask, variant } => {
            let mut specs: Vec<(usize, u64)> = (0..SEGMENTS)
                .filter(|i| mask & (1 << i) != 0)
                .map(|i| (i, SEGMENT_SIZE[i]))
                .collect();
            // Variants 4..8 perturb the first spec: a duplicate with another size, a duplicate
            // with the same size, another size, size 0.
            if let Some(&(first, size)) = specs.first() {
                match variant % 8 {
                    4 => specs.push((first, size + 64)),
                    5 => specs.push((first, size)),
                    6 => specs[0].1 += 64,
                    7 => specs[0].1 = 0,
                    _ => {}
                }
            }
            Cmd::Remount { c: c(client), specs }
        }
        RawOp::Unmount { client, segment } => Cmd::Unmount {
            c: c(client),
            s: s(segment),
        },
        RawOp::Ping { client } => Cmd::Ping {
            c: c(client),
            token: None,
        },
        RawOp::PingWithToken { client, token } => Cmd::Ping {
            c: c(client),
            token: Some(incarnation(token)),
        },
        RawOp::MountWithToken { client, segment, token } => Cmd::Mount {
            c: c(client),
            s: s(segment),
            size: SEGMENT_SIZE[s(segment)],
            token: Some(incarnation(token)),
        },
        RawOp::MountLocalDisk { client, capacity } => Cmd::MountLocalDisk {
            c: c(client),
            capacity: u64::from(capacity % 4) * 512,
        },
        RawOp::Put { key, size, replicas } => Cmd::Put {
            k: k(key),
            size: OBJECT_SIZE[usize::from(size) % OBJECT_SIZE.len()],
            n: usize::from(replicas % 4),
        },
        RawOp::PutEnd { key } => Cmd::PutEnd { k: k(key) },
        RawOp::PutRevoke { key } => Cmd::PutRevoke { k: k(key) },
        RawOp::Get { key } => Cmd::Get { k: k(key) },
        RawOp::Remove { key } => Cmd::Remove { k: k(key) },
        RawOp::FailStep { step, times } => Cmd::FailStep {
            step: usize::from(step) % STEPS.len(),
            times: u32::from(times % 3) + 1,
        },
        RawOp::Failover => Cmd::Failover,
        RawOp::HandBack => Cmd::HandBack,
        RawOp::ReloadTtls { active, suspicion } => {
            Cmd::ReloadTtls(200 + u64::from(active) * 11, 200 + u64::from(suspicion) * 11)
        }
        // One TTL of 8,192..=8,447 ticks (every window it starts is armed on wheel level 2 or
        // higher and cascades down before it fires), the other short as `reload_ttls` makes
        // it: one long window costs ~8,200 checked ticks, two would cost twice that.
        RawOp::ReloadTtlsLong { active, suspicion } => {
            let long = |b: u8| tick * (LEVEL_2_TICKS + u64::from(b));
            let short = |b: u8| 200 + u64::from(b) * 11;
            if suspicion & 0x80 == 0 {
                Cmd::ReloadTtls(long(active), short(suspicion & 0x7f))
            } else {
                Cmd::ReloadTtls(short(active), long(suspicion & 0x7f))
            }
        }
        // Up to 16,320 ticks in one step (every tick still runs).
        RawOp::AdvanceFar(b) => Cmd::Advance(u64::from(b) * 64 * tick),
        RawOp::BatchKeys(b) => Cmd::BatchKeys(usize::from(b % 3) + 1),
        RawOp::Replicate { key, segment, mv } => Cmd::Replicate {
            k: k(key),
            s: s(segment),
            mv,
        },
        RawOp::FetchTasks { client } => Cmd::FetchTasks { c: c(client) },
        RawOp::TaskDone { client, task, ok } => Cmd::TaskDone {
            c: (client & 4 == 0).then(|| c(client)),
            id: u64::from(task % 12) + 1,
            ok,
        },
        RawOp::Drain { segment } => Cmd::Drain { s: s(segment) },
        RawOp::OffloadHeartbeat { client } => Cmd::OffloadHeartbeat { c: c(client) },
        RawOp::Promote { key } => Cmd::Promote { k: k(key) },
        RawOp::NofMount { segment, size } => Cmd::NofMount {
            n: usize::from(segment) % NOF_NAMES.len(),
            size: u64::from(size % 4) * 64,
        },
        RawOp::NofProbe { segment, healthy } => Cmd::NofProbe {
            n: usize::from(segment) % NOF_NAMES.len(),
            healthy,
        },
        // Up to 12.75 s: below and above any stall bound (half an active TTL of 200..=3,000 ms).
        RawOp::Stall(b) => Cmd::Stall(u64::from(b) * 50),
        RawOp::SetQuota { limit } => Cmd::SetQuota(match limit % 6 {
            0 => None,
            k => Some(32 << k),
        }),
    }
}

/// What an input decodes to.
pub(super) struct Input {
    pub(super) config: LivenessConfig,
    /// Offboarding through the master's outbox and the harness's executor (else inline).
    pub(super) async_mode: bool,
    pub(super) cmds: Vec<Cmd>,
}

/// The configuration and operations an input decodes to (`None`: not enough bytes for a config).
pub(super) fn decode(data: &[u8]) -> Option<Input> {
    let mut u = Unstructured::new(data);
    let active = u.int_in_range(200u64..=3_000).ok()?;
    let suspicion = u.int_in_range(200u64..=3_000).ok()?;
    let tick = u.int_in_range(10u64..=100).ok()?;
    let backoff = u.int_in_range(10u64..=1_000).ok()?;
    let max_backoff = backoff * u.int_in_range(1u64..=8).ok()?;
    let setup = u8::arbitrary(&mut u).ok()?;
    let async_mode = setup & 1 != 0;
    // Bit 1: a start rate limit that binds (1–4 jobs/s, burst 1–2); else one that never does.
    let (rate, burst) = if setup & 2 != 0 {
        (f64::from(1 + ((setup >> 2) & 3)), u64::from(1 + ((setup >> 4) & 1)))
    } else {
        (1_000.0, 1_000)
    };
    let config = LivenessConfig {
        active_ttl_ms: active,
        suspicion_ttl_ms: suspicion,
        monitor_tick_ms: tick,
        stall_bound_ms: active / 2,
        // Bit 7: the stall brake (a `stall` operation skips ticks; the next one runs late).
        stall_brake: setup & 0x80 != 0,
        // Bit 5: the mass-suspicion brake, bit 6 picks its thresholds (whole quarters, so the
        // model compares exactly): at least 2 Suspected and more than half, or at least 1 and
        // more than a quarter, of the 4 clients' live incarnations.
        mass_suspicion_brake: setup & 0x20 != 0,
        mass_suspicion_min_clients: if setup & 0x40 != 0 { 2 } else { 1 },
        mass_suspicion_fraction: if setup & 0x40 != 0 { 0.5 } else { 0.25 },
        offboarding_retry_backoff_ms: backoff,
        offboarding_retry_max_backoff_ms: max_backoff,
        offboarding_rate_per_sec: rate,
        offboarding_burst: burst,
        offboarding_mode: if async_mode {
            OffboardingMode::Async
        } else {
            OffboardingMode::Sync
        },
        ..LivenessConfig::default()
    };
    let mut cmds = Vec::new();
    // `arbitrary` keeps producing defaults from exhausted input: stop when the bytes run out.
    while !u.is_empty() && cmds.len() < MAX_OPS {
        let Ok(op) = RawOp::arbitrary(&mut u) else { break };
        let cmd = cmd_of(op, tick);
        // A failover builds two more masters (this run and the determinism run): keep a few.
        if matches!(cmd, Cmd::Failover) && cmds.iter().filter(|c| matches!(c, Cmd::Failover)).count() >= MAX_FAILOVERS {
            continue;
        }
        cmds.push(cmd);
    }
    Some(Input {
        config,
        async_mode,
        cmds,
    })
}
