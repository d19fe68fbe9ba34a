//! [`ConfigError`]: why a configuration was rejected.

use std::path::PathBuf;

/// Why a configuration was rejected. Every message names the key and the value it got.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// A value that must be positive is zero or negative (e.g. `client_active_ttl_sec: -5`,
    /// `offboarding_workers: 0`). Give a value > 0; for a TTL that would be overridden anyway,
    /// remove the key instead.
    #[error("{key} must be > 0, got {value}")]
    NonPositive {
        /// The key as given (`--key` for the command line).
        key: String,
        /// The value as given.
        value: String,
    },
    /// A number is NaN or infinite (YAML `.nan`, `.inf`, or an out-of-range literal such as
    /// `1e400`). Give a finite number.
    #[error("{key} must be a finite number, got {value}")]
    NotFinite {
        /// The key as given.
        key: String,
        /// The value as given.
        value: String,
    },
    /// The value has the wrong type (a string, bool, object, array or null where a number is
    /// expected; a number where a bool is expected, ...). Write the value unquoted with the
    /// type named in the message.
    #[error("{key} must be {expected}, got {value}")]
    WrongType {
        /// The key as given.
        key: String,
        /// The type the key takes.
        expected: &'static str,
        /// The value as given.
        value: String,
    },
    /// The value has the right type but is out of range: a fraction outside (0, 1], a
    /// fractional number of milliseconds, a TTL below 1 ms or above [`MAX_DURATION_MS`](super::MAX_DURATION_MS), an
    /// unknown `offboarding_mode`. The message says which range applies.
    #[error("{key} {requirement}, got {value}")]
    InvalidValue {
        /// The key as given.
        key: String,
        /// What the key requires, e.g. `must be in (0, 1]`.
        requirement: String,
        /// The value as given.
        value: String,
    },
    /// `offboarding_retry_max_backoff_ms` is smaller than `offboarding_retry_backoff_ms` after
    /// resolution. Raise the maximum or lower the initial backoff.
    #[error(
        "offboarding_retry_max_backoff_ms must be >= offboarding_retry_backoff_ms, \
         got offboarding_retry_max_backoff_ms {max_backoff_ms} < offboarding_retry_backoff_ms {backoff_ms}"
    )]
    BackoffOrder {
        /// Resolved `offboarding_retry_backoff_ms`.
        backoff_ms: u64,
        /// Resolved `offboarding_retry_max_backoff_ms`.
        max_backoff_ms: u64,
    },
    /// The configuration file could not be read (missing, unreadable, not UTF-8). Check the
    /// path and permissions.
    #[error("cannot read configuration file {}: {source}", .path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The text is not valid JSON/YAML, or its top level is not an object of keys. Fix the
    /// syntax at the position the message gives.
    #[error("cannot parse {format} configuration{}: {message}", show_path(.path.as_ref()))]
    Parse {
        /// The file, when parsing one.
        path: Option<PathBuf>,
        /// `"JSON"`, `"YAML"`, or `"JSON or YAML"`.
        format: &'static str,
        /// What the parser said.
        message: String,
    },
}

fn show_path(path: Option<&PathBuf>) -> String {
    match path {
        Some(p) => format!(" {}", p.display()),
        None => String::new(),
    }
}

// Constructors the value parsers (`parse.rs`) and the whole-config checks (`validate.rs`) share:
// here, below both, so neither imports the other for them.

pub(super) fn non_positive(key: &str, shown: &str) -> ConfigError {
    ConfigError::NonPositive {
        key: key.to_owned(),
        value: shown.to_owned(),
    }
}

pub(super) fn not_finite(key: &str, shown: &str) -> ConfigError {
    ConfigError::NotFinite {
        key: key.to_owned(),
        value: shown.to_owned(),
    }
}

pub(super) fn invalid(key: &str, requirement: String, shown: &str) -> ConfigError {
    ConfigError::InvalidValue {
        key: key.to_owned(),
        requirement,
        value: shown.to_owned(),
    }
}
