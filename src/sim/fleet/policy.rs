//! The liveness policies the simulator compares: Mooncake main's monitor ([`LegacyMonitor`],
//! the model `scripts/conformance.sh` checks against the real master) at three TTLs, and the
//! library at its defaults without and with brakes.
//!
//! [`LegacyMonitor`]: crate::sim::legacy::LegacyMonitor

use super::SimOptions;
use crate::config::LivenessConfig;
use crate::sim::legacy::LegacyMonitor;
use std::fmt;
use std::str::FromStr;

/// A liveness policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub enum Policy {
    /// `legacy`: Mooncake main's monitor with the active TTL as `client_ttl` (10 s, main's
    /// default): 1 s tick, deadline anchored at the draining tick, expiry in one batch, no
    /// barrier ([`crate::sim::legacy`]).
    #[serde(rename = "legacy")]
    Legacy,
    /// `legacy@30s`: main's monitor with `client_ttl` = active + suspicion TTL (30 s by
    /// default): the same total silence budget as `rfc`.
    #[serde(rename = "legacy@30s")]
    Legacy30,
    /// `legacy@60s`: main's monitor with `client_ttl = 60` (upstream's sample master.yaml).
    #[serde(rename = "legacy@60s")]
    Legacy60,
    /// `rfc`: active + suspicion TTL, both brakes off.
    #[serde(rename = "rfc")]
    Rfc,
    /// `rfc+brakes`: active + suspicion TTL, stall brake and mass-suspicion brake on.
    #[serde(rename = "rfc+brakes")]
    RfcBrakes,
}

impl Policy {
    /// Every policy, in report order (the default table).
    pub const ALL: [Policy; 5] = [
        Policy::Legacy,
        Policy::Legacy30,
        Policy::Legacy60,
        Policy::Rfc,
        Policy::RfcBrakes,
    ];

    /// The policy's name: `legacy`, `legacy@30s`, `legacy@60s`, `rfc` or `rfc+brakes`.
    pub fn name(self) -> &'static str {
        match self {
            Policy::Legacy => "legacy",
            Policy::Legacy30 => "legacy@30s",
            Policy::Legacy60 => "legacy@60s",
            Policy::Rfc => "rfc",
            Policy::RfcBrakes => "rfc+brakes",
        }
    }

    /// Is this Mooncake main's monitor?
    pub fn is_legacy(self) -> bool {
        matches!(self, Policy::Legacy | Policy::Legacy30 | Policy::Legacy60)
    }

    /// # Panics
    /// If the options' configuration does not resolve ([`SimOptions::validate`] reports it).
    fn base(opts: &SimOptions) -> LivenessConfig {
        match opts.resolved_config() {
            Ok(resolved) => resolved.config,
            Err(e) => panic!("invalid simulation configuration: {e}"),
        }
    }

    /// Main's `client_ttl` for a legacy policy, ms: the active TTL (`legacy`), active +
    /// suspicion TTL (`legacy@30s`), 60 s (`legacy@60s`); `None` for the rfc policies.
    ///
    /// # Panics
    /// If the options' configuration does not resolve ([`SimOptions::validate`] reports it).
    pub fn legacy_ttl_ms(self, opts: &SimOptions) -> Option<u64> {
        let c = Self::base(opts);
        match self {
            Policy::Legacy => Some(c.active_ttl_ms),
            Policy::Legacy30 => Some(c.active_ttl_ms.saturating_add(c.suspicion_ttl_ms)),
            Policy::Legacy60 => Some(60_000),
            Policy::Rfc | Policy::RfcBrakes => None,
        }
    }

    /// The configuration the reference master runs with: the options' configuration sources
    /// resolved by [`config::resolve`](crate::config::resolve) ([`SimOptions::resolved_config`]),
    /// with this policy's brakes.
    ///
    /// For a legacy policy the library's own liveness never acts
    /// ([`LegacyMonitor::master_config`]); main's monitor decides. Offboarding always runs
    /// synchronously in the simulator (the master's own mode), whatever `offboarding_mode`
    /// says; its rate limit and retry settings apply.
    ///
    /// # Panics
    /// If the options' configuration does not resolve ([`SimOptions::validate`] reports it).
    pub fn config(self, opts: &SimOptions) -> LivenessConfig {
        let mut c = Self::base(opts);
        if self.is_legacy() {
            return LegacyMonitor::master_config(&c);
        }
        let brakes = self == Policy::RfcBrakes;
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

    /// `legacy`, `legacy@30s`, `legacy@60s`, `rfc`, `rfc+brakes` (ASCII case ignored;
    /// `rfc-brakes` and `rfc_brakes` too).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "legacy" => Ok(Policy::Legacy),
            "legacy@30s" => Ok(Policy::Legacy30),
            "legacy@60s" => Ok(Policy::Legacy60),
            "rfc" => Ok(Policy::Rfc),
            "rfc+brakes" | "rfc-brakes" | "rfc_brakes" => Ok(Policy::RfcBrakes),
            other => Err(format!(
                "unknown policy `{other}` (expected legacy, legacy@30s, legacy@60s, rfc or rfc+brakes)"
            )),
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
        return Err("no policy given (expected legacy, legacy@30s, legacy@60s, rfc or rfc+brakes)".into());
    }
    Ok(out)
}
