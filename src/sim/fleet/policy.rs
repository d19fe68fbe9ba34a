//! The three liveness policies the simulator compares, as [`LivenessConfig`]s of the one library.

use super::workload::ms;
use super::SimOptions;
use crate::config::LivenessConfig;
use std::fmt;
use std::str::FromStr;

/// A liveness policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub enum Policy {
    /// `legacy`: today's Mooncake. One TTL (the active TTL), immediate offboarding: the
    /// suspicion TTL is one monitor tick (the shortest meaningful window), no stall brake, no
    /// mass-suspicion brake.
    #[serde(rename = "legacy")]
    Legacy,
    /// `rfc`: active + suspicion TTL, both brakes off.
    #[serde(rename = "rfc")]
    Rfc,
    /// `rfc+brakes`: active + suspicion TTL, stall brake and mass-suspicion brake on.
    #[serde(rename = "rfc+brakes")]
    RfcBrakes,
}

impl Policy {
    /// Every policy, in report order.
    pub const ALL: [Policy; 3] = [Policy::Legacy, Policy::Rfc, Policy::RfcBrakes];

    /// The policy's name: `legacy`, `rfc` or `rfc+brakes`.
    pub fn name(self) -> &'static str {
        match self {
            Policy::Legacy => "legacy",
            Policy::Rfc => "rfc",
            Policy::RfcBrakes => "rfc+brakes",
        }
    }

    /// The configuration this policy runs with, from the options' base configuration
    /// (`--config`, else the library defaults) and TTL overrides.
    ///
    /// An active TTL override also resets `stall_bound_ms` to half of it (the library's rule
    /// for an unset bound); the suspicion TTL override applies to `rfc` and `rfc+brakes`.
    /// Offboarding always runs synchronously in the simulator (the master's own mode), whatever
    /// `offboarding_mode` says; its rate limit and retry settings apply.
    pub fn config(self, opts: &SimOptions) -> LivenessConfig {
        let mut c = opts.config.clone().unwrap_or_default();
        if let Some(a) = opts.active_ttl_s {
            c.active_ttl_ms = ms(a).max(1);
            c.stall_bound_ms = (c.active_ttl_ms / 2).max(1);
        }
        if let Some(s) = opts.suspicion_ttl_s {
            c.suspicion_ttl_ms = ms(s).max(1);
        }
        let brakes = self == Policy::RfcBrakes;
        if self == Policy::Legacy {
            c.suspicion_ttl_ms = c.monitor_tick_ms;
        }
        c.stall_brake = brakes;
        c.mass_suspicion_brake = brakes;
        c
    }
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Policy {
    type Err = String;

    /// `legacy`, `rfc`, `rfc+brakes` (ASCII case ignored; `rfc-brakes` and `rfc_brakes` too).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "legacy" => Ok(Policy::Legacy),
            "rfc" => Ok(Policy::Rfc),
            "rfc+brakes" | "rfc-brakes" | "rfc_brakes" => Ok(Policy::RfcBrakes),
            other => Err(format!("unknown policy `{other}` (expected legacy, rfc or rfc+brakes)")),
        }
    }
}

/// Parses a comma-separated list of policies (`legacy,rfc,rfc+brakes`); duplicates are dropped,
/// order is kept.
pub fn parse_policies(s: &str) -> Result<Vec<Policy>, String> {
    let mut out = Vec::new();
    for part in s.split(',').filter(|p| !p.trim().is_empty()) {
        let p: Policy = part.parse()?;
        if !out.contains(&p) {
            out.push(p);
        }
    }
    if out.is_empty() {
        return Err("no policy given (expected legacy, rfc or rfc+brakes)".into());
    }
    Ok(out)
}
