//! Mooncake's own master keys: the flags the real `mooncake_master` declares in
//! `mooncake-store/src/master.cpp`. A configuration file is Mooncake's `master.yaml` /
//! `master.json`, so most of its keys are these; resolution recognises them as known and not
//! ours (one summary line, [`Resolved::mooncake_keys`](super::Resolved::mooncake_keys)) instead of
//! warning about each one.
//!
//! Where the list comes from: the union of the flags listed under "Flags from
//! .../mooncake-store/src/master.cpp:" by `mooncake_master --helpfull` of the two PyPI wheels
//! the project runs, `mooncake-transfer-engine-non-cuda==0.3.13.post1` (97 flags) and
//! `mooncake-transfer-engine-cuda13==0.3.14` (95 flags; `mooncake/mooncake_master`), run inside a
//! network namespace of their own. Regenerate it with, for each binary,
//!
//! ```text
//! mooncake_master --helpfull 2>&1 \
//!   | awk '/Flags from .*master\.cpp:/ {on=1; next} /Flags from/ {on=0} on' \
//!   | grep -oE '^    -[a-z0-9_]+' | sed 's/^ *-//'
//! ```
//!
//! then `sort -u` the two outputs together. Three of these flags are also ours
//! (`client_active_ttl_sec` and `client_suspicion_ttl_sec` in 0.3.14, `client_ttl` in both):
//! resolution reads those as our keys, never as Mooncake's.

/// Mooncake's master flags (0.3.13.post1 ∪ 0.3.14), sorted; see the module documentation.
pub const MOONCAKE_MASTER_KEYS: &[&str] = &[
    "allocation_strategy",
    "allow_evict_soft_pinned_objects",
    "batch_oplog_retry_timeout_sec",
    "client_active_ttl_sec",
    "client_suspicion_ttl_sec",
    "client_ttl",
    "cluster_id",
    "config_path",
    "cxl_path",
    "cxl_size",
    "default_kv_lease_ttl",
    "default_kv_soft_pin_ttl",
    "dynamic_replication_admission_qps_threshold",
    "dynamic_replication_heat_window_seconds",
    "dynamic_replication_max_memory_replicas",
    "dynamic_replication_mode",
    "enable_cxl",
    "enable_disk_eviction",
    "enable_ha",
    "enable_http_metadata_server",
    "enable_kv_events",
    "enable_metadata_cleanup_on_timeout",
    "enable_metric_reporting",
    "enable_multi_tenants",
    "enable_offload",
    "enable_oplog",
    "enable_oplog_snapshot",
    "enable_snapshot",
    "enable_snapshot_restore",
    "etcd_endpoints",
    "eviction_high_watermark_ratio",
    "eviction_ratio",
    "global_file_segment_size",
    "ha_backend_connstring",
    "ha_backend_type",
    "ha_leader_lease_ttl_sec",
    "handler_worker_thread_num",
    "http_metadata_server_host",
    "http_metadata_server_port",
    "kv_events_additional_salt",
    "kv_events_backend_id",
    "kv_events_bind_endpoint",
    "kv_events_block_size",
    "kv_events_dp_rank",
    "kv_events_emit_legacy_compat",
    "kv_events_emit_object_key",
    "kv_events_lora_name",
    "kv_events_model_name",
    "kv_events_queue_capacity",
    "kv_events_tenant_id",
    "max_kv_soft_pin_ttl",
    "max_retry_attempts",
    "max_threads",
    "max_total_finished_tasks",
    "max_total_pending_tasks",
    "max_total_processing_tasks",
    "memory_allocator",
    "metrics_host",
    "metrics_port",
    "nof_eviction_high_watermark_ratio",
    "nof_eviction_ratio",
    "nof_heartbeat_failures_threshold",
    "nof_heartbeat_interval_sec",
    "nof_heartbeat_probe_timeout_ms",
    "offload_cap_ratio",
    "offload_force_evict",
    "offload_on_evict",
    "offloading_queue_limit",
    "oplog_batch_max_entries",
    "oplog_poll_interval_ms",
    "pending_task_timeout_sec",
    "pod_name",
    "pod_namespace",
    "port",
    "processing_task_timeout_sec",
    "promotion_admission_threshold",
    "promotion_max_per_heartbeat",
    "promotion_on_hit",
    "promotion_queue_limit",
    "put_start_discard_timeout_sec",
    "put_start_release_timeout_sec",
    "quota_bytes",
    "root_fs_dir",
    "rpc_address",
    "rpc_conn_timeout_seconds",
    "rpc_enable_tcp_no_delay",
    "rpc_interface",
    "rpc_port",
    "rpc_thread_num",
    "snapshot_backup_dir",
    "snapshot_catalog_backend_connstring",
    "snapshot_catalog_backend_type",
    "snapshot_catalog_store_connstring",
    "snapshot_catalog_store_type",
    "snapshot_child_timeout_seconds",
    "snapshot_chunk_object_count",
    "snapshot_interval_seconds",
    "snapshot_object_store_type",
    "snapshot_payload_backend_type",
    "snapshot_payload_store_type",
    "snapshot_retention_count",
    "tenant_eviction_high_watermark_ratio",
    "tenant_quota_connector_type",
    "tenant_quota_connector_uri",
    "weight_import_idle_timeout_ms",
    "weight_management_oplog_capability_confirmed",
];

#[cfg(all(test, not(loom)))]
mod tests {
    use super::super::keys;
    use super::MOONCAKE_MASTER_KEYS;

    #[test]
    fn the_list_is_sorted_unique_and_flag_shaped() {
        assert!(
            MOONCAKE_MASTER_KEYS.windows(2).all(|w| w[0] < w[1]),
            "sorted, no duplicate"
        );
        let flag_shaped = |k: &&str| {
            k.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        };
        assert!(MOONCAKE_MASTER_KEYS.iter().all(flag_shaped));
        // 97 flags in 0.3.13.post1, 95 in 0.3.14, 86 in both.
        assert_eq!(MOONCAKE_MASTER_KEYS.len(), 106);
    }

    #[test]
    fn both_versions_are_in_the_union() {
        // Only in 0.3.13.post1 / only in 0.3.14 / in both.
        for k in [
            "enable_snapshot",
            "snapshot_backup_dir",
            "ha_leader_lease_ttl_sec",
            "handler_worker_thread_num",
            "rpc_port",
            "enable_ha",
            "etcd_endpoints",
        ] {
            assert!(MOONCAKE_MASTER_KEYS.binary_search(&k).is_ok(), "{k}");
        }
    }

    #[test]
    fn the_keys_we_share_with_mooncake_are_exactly_the_ttl_flags() {
        let shared: Vec<&str> = keys::ALL
            .into_iter()
            .filter(|k| MOONCAKE_MASTER_KEYS.binary_search(k).is_ok())
            .collect();
        assert_eq!(
            shared,
            [
                keys::CLIENT_ACTIVE_TTL_SEC,
                keys::CLIENT_TTL,
                keys::CLIENT_SUSPICION_TTL_SEC
            ]
        );
    }
}
