//! Each invariant of the contract and what verifies it.
//!
//! Test names are `file::test` (a unit test in module `file` or an integration test in
//! `tests/<file>.rs`; `…::test` repeats the file before it, a trailing `*` is a name prefix, a bare
//! name is a whole test target, `doctest::item` a doctest on that item); loom models are
//! `model::test` in `loom_tests/<model>.rs` (run with `scripts/loom.sh`, `LOOM_MAX_PREEMPTIONS=3`);
//! fuzz targets are `fuzz/fuzz_targets/<name>.rs`, whose bodies live in `src/fuzzing/`
//! (smoke-run by `tests/fuzz_smoke.rs`).
//!
//! **The map is machine-checked**: `scripts/check_invariant_map.py`, run by `scripts/test.sh`,
//! fails when a backticked name in the table is not in `cargo test --features fuzzing -- --list`,
//! is not a `#[test]` of a loom model that Cargo.toml declares, or is not a fuzz target, and
//! when a path named on this page does not exist. Rows whose evidence is partial say so and
//! link to [Gaps](#gaps).
//!
//! | # | invariant | tests | loom models | fuzz |
//! |---|---|---|---|---|
//! | 1 | per-incarnation state machine, Offline terminal | `word::decision_table`, `word::random_events_keep_invariants_1_to_3`, `record::full_lifecycle_and_terminal_offline` | `word_ping_vs_offline::stale_offline_cas_after_recover_and_resuspect`, `word_ping_vs_suspect::ping_vs_suspect_commit` | `word_transitions` |
//! | 2 | no early suspicion | `liveness_transitions::boundaries_are_inclusive_and_never_early`, `…::exact_deadline_on_a_tick_commits_at_that_tick`, `word::random_events_keep_invariants_1_to_3` | `word_ping_vs_suspect::ping_vs_monitor_tick_then_rearm` | `word_transitions` |
//! | 3 | full recovery window from the committed suspicion | `liveness_transitions::suspicion_counts_from_the_commit_not_from_the_deadline`, `…::ping_recovers_then_resuspicion_gets_a_full_window` | — | `word_transitions` |
//! | 4 | prompt detection (≤ 1 tick late) | `liveness_transitions::many_clients_are_detected_within_one_tick`, `…::silent_client_goes_suspected_then_offline_on_the_tick_grid`, `wheel::fires_exactly_at_when*`, `wheel::matches_reference_model`, `wheel::stepping_one_tick_fires_on_time_and_paces_cascades`, `monitor_timing::a_recovery_under_a_briefly_shorter_active_ttl_is_suspected_on_time`, `monitor_brakes::a_client_paused_by_the_mass_suspicion_brake_goes_offline_on_time_after_the_release` | `word_ping_vs_suspect::stale_ping_time_vs_suspect_rearm` (found a late-suspicion bug, fixed), `…::ping_cas_lost_to_suspect_rereads_clock`, `…::ping_cas_lost_to_suspect_then_rearm` (a ping whose CAS lost to the suspect commit re-reads the clock past it: the CAS failure ordering), `wheel_cascade_vs_ping::paced_cascade_fires_on_time_vs_ping` | `differential` (late commits; TTL reloads, wheel level ≥ 2, the mass-suspicion brake) |
//! | 5 | master stalls credited, reported | `liveness_transitions::master_stall_is_credited_not_charged`, `…::stall_extends_suspicion_windows_too`, `…::stall_brake_can_be_disabled` | `stall_credit_vs_ping` | `differential` |
//! | 6 | only real signals count; failed mount creates nothing | `liveness_transitions::failed_first_mount_creates_no_record`, `…::failed_mount_neither_refreshes_nor_recovers`, `master_paths::segment_name_held_by_another_client_is_refused_without_a_record` | `mount_commit_vs_monitor::failed_mount_vs_offline` | — |
//! | 7 | Ping wire-compatible; ping vs Offline: recovered xor offboarded | `liveness_transitions::offline_is_a_barrier_until_the_job_completes_then_next_incarnation`, `…::unknown_client_ping_creates_nothing`, `…::ready_active_client_gets_ok_and_readiness_survives_suspicion` | `word_ping_vs_offline::ping_vs_offline_commit`, `…::ping_vs_offline_tick` | — |
//! | 8 | three independent axes | `record::readiness_is_independent_of_liveness`, `snapshot_restore::failover_with_a_suspected_client_restores_it_active_with_a_fresh_ttl_not_ready` | — | — |
//! | 9 | one serving rule; retain iff Active or Suspected | `eligibility::table`, `master_seam::master_asks_the_seam` (lint), `master_paths::*`, `master_paths::eviction_frees_room_but_never_evicts_a_suspected_owners_replicas` | — | — |
//! | 10 | no new dependency on a non-Active incarnation; allocation vs transition | `master_paths::suspected_owner_is_never_allocated_and_all_suspected_is_no_handle`, `…::copy_move_never_use_a_suspected_source_target_or_executor`, `…::tasks_are_held_while_suspected_and_delivered_after_recovery`, `…::drain_never_selects_a_suspected_owners_segment`, `…::offload_is_held_while_suspected_and_resumes_after_recovery`, `…::promotion_needs_an_active_local_disk_owner` | `alloc_commit_vs_offline::alloc_commit_vs_offline_sweep` (+ the broken variant that must fail), `mount_commit_vs_monitor::mount_vs_offline_sweep` | `differential` |
//! | 11 | work already started converges | `master_paths::end_and_revoke_are_accepted_while_the_owner_is_suspected`, `…::callbacks_from_suspected_accepted_from_offline_or_unknown_refused`, `master_requests::put_callbacks_know_their_writer` | — | `differential` |
//! | 12 | hot-path cost: one load, Ping takes no data-plane lock; the load's `Acquire` publishes what came before the transition | `record::record_in_its_arc_is_one_cache_line`, `owner::an_owner_reads_the_records_own_word`, `slab::consecutive_slots_are_consecutive_words_eight_to_a_line`; benches eligibility/\*, ping/\*, ping/during_offboarding (`BENCHMARKS.md`) | `word_publishes::recovery_publishes_to_owner_is_serving`, `…::recovery_publishes_to_record_is_serving`, `…::recovery_publishes_to_record_word`, `…::offline_commit_publishes_to_should_retain` | — |
//! | 13 | fencing across incarnations | `master_paths::new_incarnation_never_revives_old_resources`, `liveness_transitions::offline_is_a_barrier_until_the_job_completes_then_next_incarnation`, `owner::an_owner_of_a_reused_slot_names_the_new_record`, `slab::each_slot_has_its_own_tag_and_freeing_clears_it` | `registry_barrier_vs_erase::stale_erase_vs_new_incarnation`, `…::stale_token_ping_vs_new_incarnation` | — |
//! | 14 | barrier until the job completes | `offboarding_retry::every_step_with_1_3_and_10_failures_completes_cleanly`, `…::a_job_that_keeps_failing_stays_visible_and_keeps_its_barrier`, `snapshot_restore::failover_with_a_pending_job_resumes_it_and_keeps_the_barrier` | `registry_barrier_vs_erase::mount_vs_complete_offboarding`, `…::two_first_mounts` | — |
//! | 15 | exactly one job per incarnation | `doctest::offboarding` (a compile-fail doctest: it proves only that a job is not Clone, see [Gaps](#gaps)), `liveness_transitions::silent_client_goes_suspected_then_offline_on_the_tick_grid` | `word_ping_vs_offline::*` (at most one job, a job iff Offline) | `differential` |
//! | 16 | complete cleanup | `offboarding_retry::every_step_with_1_3_and_10_failures_completes_cleanly`, `…::a_large_client_is_offboarded_completely_in_bounded_batches`, `master_paths::offline_owner_is_offboarded_completely_and_the_barrier_holds_until_then`, `master_paths::tenant_quotas_limit_puts_and_converge_after_offboarding`, `offboarding_executor::async_mode_offboards_like_sync_mode_with_retries` | `registry_barrier_vs_erase::stale_erase_vs_new_incarnation` (compare-and-erase) | — |
//! | 17 | retry without harm | `offboarding_retry::retries_follow_the_backoff_schedule_and_resume_at_the_failed_step`, `job::backoff_doubles_and_caps` | — | — |
//! | 18 | nothing lost | `offboarding_executor::shutdown_with_10_000_queued_jobs_completes_or_returns_every_one`, `offboarding_queue::*` | `queue_no_loss_no_dup`, `queue_fifo_per_producer`, `queue_close_vs_push`, `queue_drain_on_shutdown` (leak-tracked); the executor: `executor_shutdown_drain::shutdown_completes_or_hands_back_every_job`, `executor_retry::failed_job_is_retried_or_handed_back`, `executor_submit_vs_shutdown::submit_vs_shutdown_through_a_handle` (each job completed, handed back or refused, exactly once) | — |
//! | 19 | snapshots never torn; restore fresh TTLs | `snapshot_restore::*` (round trip at 100k objects, pending job resumed, bad input refused, proptest round trips), `snapshot_restore_errors::*` (the first contradiction in object order is the one reported, on one thread or two) | — (a snapshot is taken under the master's exclusion; progress is a lower bound, see master::snapshot) | `snapshot_decode`, `snapshot_restore::arbitrary_bytes_never_panic_the_decoder` |
//! | 20 | NoF keeps its own health model | `master_paths::nof_segments_follow_their_probes_not_client_liveness` | — | `differential` |
//! | 21 | determinism | `sim_simulate::a_seed_determines_the_run`, `cli_config::simulate_small_fleet_writes_its_report_and_is_deterministic`, `master_paths::with_every_owner_active_liveness_changes_no_result`, `sim_replay::replay_is_deterministic` (byte-identical replays) | — | `differential` |
//!
//! Across the table: the `differential` fuzz target (`src/fuzzing/differential/`) runs the
//! real master against a sequential model of the contract and asserts invariants 1, 2, 3, 4, 5
//! (stalls credited, with the stall brake on), 6, 7, 9, 10 (Copy/Move, Drain, offload and
//! promotion tasks: allocation and delivery only with Active owners), 11 (task callbacks while
//! Suspected accepted, while Offline refused), 13, 14, 15, 16, 17, 20 (NoF segments compared
//! after every step) and 21 after every step, in both offboarding modes (inline, and
//! async: the master's outbox with a deterministic executor in the harness, where it also
//! checks 18 — every job parked in the master or held by the executor, at every step, through
//! failovers and the shutdown hand-back); `tests/differential_threads.rs` checks
//! 1, 7 and 15 under real threads.
//!
//! # Gaps
//!
//! What the table does not yet prove, said plainly so that no row reads stronger than its tests.
//!
//! - **Invariant 15 rests on a type, not on a test.** The compile-fail doctest shows only that a
//!   `ClientOffboardingJob` cannot be cloned. That no second job can be *minted* follows from
//!   `OfflineCommitted` having no public constructor (only the record's winning CAS makes one);
//!   the loom models and the differential fuzzer count jobs in the races and sequences they
//!   reach, which is evidence, not proof.
//! - **Invariant 11 and anonymous writers.** `put_end`/`put_revoke` without a writer (the
//!   trace format's lines, which name only the key) cannot refuse an Offline writer; the
//!   writer-carrying `put_as`/`put_end_as`/`put_revoke_as` do
//!   (`master_requests::put_callbacks_know_their_writer`). The writer is not persisted in
//!   snapshots, so after a failover an object's callbacks are anonymous again.
//! - **The Offline-but-not-yet-erased task_done branch is covered by the fuzz seeds only.**
//!   `task_done` refuses a callback from an executor whose incarnation is Offline but still in
//!   the registry (`UnavailableInCurrentStatus`). The callback test reaches only a Suspected
//!   executor (accepted) and one already offboarded and erased (refused as an unknown client).
//!   The window between the Offline commit and the job's completion is reached by the
//!   `differential` seed `task_done_from_an_offline_executor_with_its_job_pending` (its
//!   `metadata` step fails, so the job stays pending). `tests/fuzz_smoke.rs` asserts the seeds
//!   reach it. No named unit test does.
//!
//! Not model-checked, and why: 2/3/11/17/20 are sequential properties of one pure function or
//! of the single-owner master, fully covered by deterministic tests and the fuzz body; 19's
//! exclusion comes from the master's `&mut self` (a snapshot cannot interleave a step batch),
//! so there is no race to model — the restored-progress argument is tested instead.
