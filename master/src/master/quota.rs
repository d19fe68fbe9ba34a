//! Per-tenant quotas: the limit an operator sets, the bytes charged by replicas, and the
//! refunds offboarding and removals give back.
//!
//! Owns: [`TenantQuota`], `Quotas` (the quota leaf, held by the data room: every read and
//! write of it is a method here, each taking that leaf alone and briefly, so it may be called
//! under a shard lock), and the [`Refunds`] a path gathers while releasing replicas and
//! applies afterwards.
//! Arithmetic saturates: sizes come from clients, and a sum past `u64::MAX` must neither wrap
//! nor panic. May not touch: any other lock.

use super::lock_order::{lock, Held, Level, Ordered};
use crate::sync::{Mutex, MutexGuard};
use std::collections::BTreeMap;

/// One tenant's quota.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct TenantQuota {
    /// Bytes charged: the sum of the sizes of the tenant's replicas.
    pub used: u64,
    /// Limit, if any.
    pub limit: Option<u64>,
}

/// The tenants' quotas behind their leaf lock.
#[derive(Debug, Default)]
pub(crate) struct Quotas {
    table: Mutex<BTreeMap<String, TenantQuota>>,
}

impl Ordered for BTreeMap<String, TenantQuota> {
    const LEVEL: Level = Level::Leaf;
}

/// Quota refunds gathered while releasing replicas: tenant → bytes.
pub(crate) type Refunds = BTreeMap<String, u64>;

pub(crate) fn add_refund(refunds: &mut Refunds, tenant: &str, bytes: u64) {
    match refunds.get_mut(tenant) {
        Some(v) => *v = v.saturating_add(bytes),
        None => {
            refunds.insert(tenant.to_string(), bytes);
        }
    }
}

impl Quotas {
    /// Bytes charged to all tenants.
    pub(crate) fn used(&self) -> u64 {
        lock(&self.table).values().map(|q| q.used).sum()
    }

    /// The table (the leaf, locked).
    pub(crate) fn table(&self) -> Held<MutexGuard<'_, BTreeMap<String, TenantQuota>>> {
        lock(&self.table)
    }

    /// Sets (or with `None` removes) `tenant`'s limit.
    pub(crate) fn set_limit(&self, tenant: &str, limit: Option<u64>) {
        lock(&self.table).entry(tenant.to_string()).or_default().limit = limit;
    }

    /// Charges `bytes` to `tenant` if its limit allows `bytes` more; `false` (nothing charged)
    /// if it does not.
    pub(crate) fn try_charge(&self, tenant: &str, bytes: u64) -> bool {
        let mut quotas = lock(&self.table);
        let q = match quotas.get_mut(tenant) {
            Some(q) => q,
            None => quotas.entry(tenant.to_string()).or_default(),
        };
        // Saturating: sizes come from clients; a sum past u64::MAX must not wrap or panic.
        let after = q.used.saturating_add(bytes);
        if q.limit.is_some_and(|l| after > l) {
            return false;
        }
        q.used = after;
        true
    }

    /// Charges `bytes` to `tenant` whatever its limit (work admitted earlier, e.g. an offload
    /// whose space was checked at admission).
    pub(crate) fn charge(&self, tenant: &str, bytes: u64) {
        let mut quotas = lock(&self.table);
        let q = match quotas.get_mut(tenant) {
            Some(q) => q,
            None => quotas.entry(tenant.to_string()).or_default(),
        };
        q.used = q.used.saturating_add(bytes);
    }

    /// Would `tenant`'s limit allow `bytes` more now? (A hint: the charge re-checks.)
    pub(crate) fn allows(&self, tenant: &str, bytes: u64) -> bool {
        lock(&self.table)
            .get(tenant)
            .is_none_or(|q| q.limit.is_none_or(|l| q.used.saturating_add(bytes) <= l))
    }

    /// Gives back the bytes `refunds` gathered.
    pub(crate) fn apply_refunds(&self, refunds: Refunds) {
        if refunds.is_empty() {
            return;
        }
        let mut quotas = lock(&self.table);
        for (tenant, bytes) in refunds {
            if let Some(q) = quotas.get_mut(&tenant) {
                q.used = q.used.saturating_sub(bytes);
            }
        }
    }

    /// The table, past the order check (a test holding every lock of the master at once).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn table_raw(&self) -> MutexGuard<'_, BTreeMap<String, TenantQuota>> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }
}
