//! Reading one source: a JSON or YAML file or string, a replay trace's `config` object, or the
//! command line ([`CliOverrides`]), into a [`RawConfig`] of unvalidated values.
//!
//! What this file owns: the formats. It knows nothing of key meanings; [`resolve`](super::resolve)
//! and the value parsers decide what a value means.

use super::error::ConfigError;
use super::keys;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// One value as read from a source. JSON cannot hold NaN or infinities, YAML can; those are kept
/// aside so that the error says `got inf` rather than `got null`.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum RawValue {
    Json(Value),
    NonFinite(f64),
    /// A duration an embedder gave in whole milliseconds ([`RawConfig::set_ms`]), whatever the
    /// key's unit: no round trip through fractional seconds.
    Millis(u64),
}

/// Raw values as they appear in one source (a file, a trace's `config` object, or the command
/// line), before resolution. Nothing is validated until [`resolve`](super::resolve).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RawConfig {
    pub(super) map: BTreeMap<String, RawValue>,
}

impl RawConfig {
    /// An empty source.
    pub fn new() -> Self {
        Self::default()
    }

    /// Parses a JSON object (`{"client_active_ttl_sec": 30, ...}`).
    pub fn from_json_str(s: &str) -> Result<Self, ConfigError> {
        let v: Value = serde_json::from_str(s).map_err(|e| parse_error("JSON", e.to_string()))?;
        Self::from_json_value(&v)
    }

    /// Parses a YAML mapping (`client_active_ttl_sec: 30`). An empty document is an empty source.
    pub fn from_yaml_str(s: &str) -> Result<Self, ConfigError> {
        let v: serde_yaml::Value = serde_yaml::from_str(s).map_err(|e| parse_error("YAML", e.to_string()))?;
        let map = yaml_top_level(v).map_err(|m| parse_error("YAML", m))?;
        Ok(Self { map })
    }

    /// Takes a JSON object, such as the `config` object of a replay trace's first line.
    pub fn from_json_value(v: &Value) -> Result<Self, ConfigError> {
        match v {
            Value::Object(m) => Ok(Self {
                map: m.iter().map(|(k, v)| (k.clone(), RawValue::Json(v.clone()))).collect(),
            }),
            other => Err(parse_error(
                "JSON",
                format!("expected an object of configuration keys, got {}", json_kind(other)),
            )),
        }
    }

    /// Reads a file: `.json` as JSON, `.yaml` / `.yml` as YAML, anything else as JSON, then YAML.
    pub fn from_path(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let ext = path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase);
        let parsed = match ext.as_deref() {
            Some("json") => Self::from_json_str(&text),
            Some("yaml" | "yml") => Self::from_yaml_str(&text),
            _ => Self::from_json_str(&text).or_else(|json_err| {
                Self::from_yaml_str(&text).map_err(|yaml_err| {
                    parse_error("JSON or YAML", format!("not JSON ({json_err}); not YAML ({yaml_err})"))
                })
            }),
        };
        parsed.map_err(|e| match e {
            ConfigError::Parse { format, message, .. } => ConfigError::Parse {
                path: Some(path.to_path_buf()),
                format,
                message,
            },
            other => other,
        })
    }

    /// Sets `key` (replacing any value): how the command-line layer fills
    /// [`CliOverrides::other`].
    pub fn set(&mut self, key: &str, value: Value) {
        self.map.insert(key.to_owned(), RawValue::Json(value));
    }

    /// Removes `key` and returns its value (a NaN or an infinity as the string naming it): how
    /// a binary reads its own keys out of the file it shares with the liveness keys (`serve`'s
    /// `rpc_port`, ...) before [`resolve`](super::resolve) warns about the keys left unknown.
    pub fn take(&mut self, key: &str) -> Option<Value> {
        self.map.remove(key).map(|raw| match raw {
            RawValue::Json(v) => v,
            RawValue::NonFinite(f) => Value::String(f.to_string()),
            // Set by `set_ms` only (embedders' duration keys): whole milliseconds.
            RawValue::Millis(ms) => Value::from(ms),
        })
    }

    /// Sets a duration key from whole milliseconds, whatever unit the key is written in: a
    /// seconds key (`client_active_ttl_sec`, ...) takes `ms` exactly, with no round trip through
    /// fractional seconds. For embedders whose durations are milliseconds already (the C ABI).
    /// A key that is not a duration refuses the value as the wrong type at resolution.
    pub fn set_ms(&mut self, key: &str, ms: u64) {
        self.map.insert(key.to_owned(), RawValue::Millis(ms));
    }

    /// Whether `key` is present.
    pub fn contains_key(&self, key: &str) -> bool {
        self.map.contains_key(key)
    }

    /// The keys present, in sorted order.
    pub fn keys(&self) -> impl Iterator<Item = &str> + '_ {
        self.map.keys().map(String::as_str)
    }

    /// Number of keys present.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether no key is present.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Sets a number given as `f64` (the command-line TTL flags): integral values are stored
    /// as integers, NaN and infinities kept so validation can name them.
    fn set_number(&mut self, key: &str, v: f64) {
        const EXACT_INT: f64 = 9_007_199_254_740_992.0; // 2^53
        let raw = if !v.is_finite() {
            RawValue::NonFinite(v)
        } else if v.fract() == 0.0 && v.abs() < EXACT_INT {
            RawValue::Json(Value::from(v as i64))
        } else {
            RawValue::Json(Value::from(v))
        };
        self.map.insert(key.to_owned(), raw);
    }
}

fn parse_error(format: &'static str, message: String) -> ConfigError {
    ConfigError::Parse {
        path: None,
        format,
        message,
    }
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a bool",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The top level of a YAML document: a mapping of keys, or nothing at all.
fn yaml_top_level(v: serde_yaml::Value) -> Result<BTreeMap<String, RawValue>, String> {
    use serde_yaml::Value as Y;
    match v {
        Y::Null => Ok(BTreeMap::new()),
        Y::Tagged(t) => yaml_top_level(t.value),
        Y::Mapping(m) => {
            let mut map = BTreeMap::new();
            for (k, v) in m {
                let raw = match v {
                    Y::Number(n) if n.is_nan() || n.is_infinite() => {
                        RawValue::NonFinite(n.as_f64().unwrap_or(f64::NAN))
                    }
                    other => RawValue::Json(yaml_to_json(other)),
                };
                map.insert(yaml_key(k)?, raw);
            }
            Ok(map)
        }
        Y::Bool(_) | Y::Number(_) | Y::String(_) | Y::Sequence(_) => {
            Err("expected a mapping of configuration keys".to_owned())
        }
    }
}

fn yaml_key(k: serde_yaml::Value) -> Result<String, String> {
    use serde_yaml::Value as Y;
    match k {
        Y::String(s) => Ok(s),
        Y::Number(n) => Ok(n.to_string()),
        Y::Bool(b) => Ok(b.to_string()),
        Y::Null => Ok("null".to_owned()),
        Y::Tagged(t) => yaml_key(t.value),
        Y::Sequence(_) | Y::Mapping(_) => Err("configuration keys must be scalars".to_owned()),
    }
}

/// Nested YAML values matter only as "the wrong type"; a NaN nested inside becomes null.
fn yaml_to_json(v: serde_yaml::Value) -> Value {
    use serde_yaml::Value as Y;
    match v {
        Y::Null => Value::Null,
        Y::Bool(b) => Value::Bool(b),
        Y::Number(n) => {
            if let Some(u) = n.as_u64() {
                Value::from(u)
            } else if let Some(i) = n.as_i64() {
                Value::from(i)
            } else {
                n.as_f64().map_or(Value::Null, Value::from)
            }
        }
        Y::String(s) => Value::String(s),
        Y::Sequence(s) => Value::Array(s.into_iter().map(yaml_to_json).collect()),
        Y::Mapping(m) => Value::Object(
            m.into_iter()
                .map(|(k, v)| (yaml_key(k).unwrap_or_else(|_| "?".to_owned()), yaml_to_json(v)))
                .collect(),
        ),
        Y::Tagged(t) => yaml_to_json(t.value),
    }
}

/// Command-line overrides. The binary maps `--client_ttl`, `--client_active_ttl_sec` and
/// `--client_suspicion_ttl_sec` onto the typed fields and every other flag (`--monitor_tick_ms`,
/// ...) onto [`other`](Self::other) under its key name. A typed field replaces the same key in
/// `other`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CliOverrides {
    /// `--client_ttl`: legacy active TTL, seconds.
    pub client_ttl: Option<f64>,
    /// `--client_active_ttl_sec`, seconds.
    pub client_active_ttl_sec: Option<f64>,
    /// `--client_suspicion_ttl_sec`, seconds.
    pub client_suspicion_ttl_sec: Option<f64>,
    /// Every other key given on the command line.
    pub other: RawConfig,
}

impl CliOverrides {
    pub(super) fn to_raw(&self) -> RawConfig {
        let mut raw = self.other.clone();
        let typed = [
            (keys::CLIENT_TTL, self.client_ttl),
            (keys::CLIENT_ACTIVE_TTL_SEC, self.client_active_ttl_sec),
            (keys::CLIENT_SUSPICION_TTL_SEC, self.client_suspicion_ttl_sec),
        ];
        for (key, v) in typed {
            if let Some(v) = v {
                raw.set_number(key, v);
            }
        }
        raw
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_top_level_must_be_an_object() {
        let kinds = [
            ("[]", "an array"),
            ("1", "a number"),
            ("null", "null"),
            ("\"x\"", "a string"),
            ("true", "a bool"),
        ];
        for (bad, kind) in kinds {
            let err = RawConfig::from_json_str(bad).unwrap_err();
            assert!(matches!(err, ConfigError::Parse { format: "JSON", .. }), "{bad}");
            let want = format!("expected an object of configuration keys, got {kind}");
            assert!(err.to_string().ends_with(&want), "{err}");
        }
        let err = RawConfig::from_json_str("{").unwrap_err().to_string();
        assert!(err.starts_with("cannot parse JSON configuration: "), "{err}");
        // serde_json refuses out-of-range literals instead of producing inf.
        assert!(RawConfig::from_json_str(r#"{"client_active_ttl_sec": 1e400}"#).is_err());
    }

    #[test]
    fn cli_numbers_keep_their_shape() {
        let mut raw = RawConfig::new();
        raw.set_number("a", 60.0);
        raw.set_number("b", 0.5);
        raw.set_number("c", f64::NAN);
        raw.set_number("d", -0.0);
        assert_eq!(raw.map["a"], RawValue::Json(json!(60)));
        assert_eq!(raw.map["b"], RawValue::Json(json!(0.5)));
        assert!(matches!(raw.map["c"], RawValue::NonFinite(f) if f.is_nan()));
        assert_eq!(raw.map["d"], RawValue::Json(json!(0)));
        // From 2^53 on a float may not be the integer typed: it stays a float.
        raw.set_number("e", 9_007_199_254_740_991.0);
        raw.set_number("f", 9_007_199_254_740_992.0);
        assert_eq!(raw.map["e"], RawValue::Json(json!(9_007_199_254_740_991_i64)));
        assert_eq!(raw.map["f"], RawValue::Json(json!(9_007_199_254_740_992.0)));
    }

    #[test]
    fn the_keys_present_are_listed_counted_and_found() {
        assert!(RawConfig::new().is_empty());
        let raw = RawConfig::from_json_str(r#"{"b": 1, "a": 2}"#).unwrap();
        assert_eq!(raw.keys().collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(raw.len(), 2);
        assert!(!raw.is_empty());
        assert!(raw.contains_key("a") && !raw.contains_key("c"));
    }

    #[test]
    fn yaml_keeps_finite_numbers_and_names_the_others() {
        let raw = RawConfig::from_yaml_str("client_ttl: 5\nx: 2.5\ny: .inf\n").unwrap();
        assert_eq!(raw.map["client_ttl"], RawValue::Json(json!(5)));
        assert_eq!(raw.map["x"], RawValue::Json(json!(2.5)));
        assert!(matches!(raw.map["y"], RawValue::NonFinite(f) if f == f64::INFINITY));
    }
}
