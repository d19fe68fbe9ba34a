//! The names of every flag the real `mooncake_master` accepts, so that `serve` accepts each of
//! them and a script written for `mooncake_master` runs unchanged (the ones it does not
//! implement are named in a warning at start-up; a name outside both lists is refused, as
//! gflags refuses it):
//! - the master's own flags, 0.3.13.post1 ∪ 0.3.14: the core's
//!   [`MOONCAKE_MASTER_KEYS`](crate::config::MOONCAKE_MASTER_KEYS), which `config` also reads a
//!   `master.yaml` with (one list, where it comes from said there);
//! - [`OTHER`]: the rest of what the PyPI `mooncake-transfer-engine-non-cuda==0.3.13.post1`
//!   binary lists under `--helpfull`: glog's and gflags' flags and two allocator flags declared
//!   outside `master.cpp`.

use crate::config::MOONCAKE_MASTER_KEYS;

/// The flags `--helpfull` lists outside `master.cpp`, sorted (binary-searched by
/// [`is_upstream`]).
const OTHER: &[&str] = &[
    "alsologtoemail",
    "alsologtostderr",
    "colorlogtostderr",
    "drop_log_memory",
    "flagfile",
    "fromenv",
    "help",
    "helpfull",
    "helpmatch",
    "helpon",
    "helppackage",
    "helpshort",
    "helpxml",
    "log_backtrace_at",
    "log_dir",
    "log_link",
    "log_prefix",
    "logbuflevel",
    "logbufsecs",
    "logemaillevel",
    "logfile_mode",
    "logmailer",
    "logtostderr",
    "max_log_size",
    "minloglevel",
    "mmap_arena_pool_size",
    "stderrthreshold",
    "stop_logging_if_full_disk",
    "symbolize_stacktrace",
    "tab_completion_columns",
    "tab_completion_word",
    "tryfromenv",
    "undefok",
    "use_mmap_arena_allocator",
    "v",
    "version",
    "vmodule",
];

/// Is `name` a flag of the real master?
pub(crate) fn is_upstream(name: &str) -> bool {
    MOONCAKE_MASTER_KEYS.binary_search(&name).is_ok() || OTHER.binary_search(&name).is_ok()
}

#[cfg(all(test, not(loom)))]
mod tests {
    #[test]
    fn the_list_is_sorted_and_holds_the_flags_scripts_pass() {
        assert!(super::OTHER.windows(2).all(|w| w[0] < w[1]));
        for f in [
            "rpc_port",
            "client_ttl",
            "vmodule",
            "default_kv_lease_ttl",
            "client_suspicion_ttl_sec",
            "max_log_size",
            "handler_worker_thread_num", // 0.3.14's
        ] {
            assert!(super::is_upstream(f), "{f}");
        }
        assert!(!super::is_upstream("rpc_prot"));
    }
}
