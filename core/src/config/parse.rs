//! Value parsers: one raw value of one key into its typed value, or a [`ConfigError`] naming the
//! key and the value as written.
//!
//! What this file owns: the value rules of the [module documentation](super#keys) (types,
//! positivity, whole numbers, seconds to milliseconds, the 10-year cap, finite numbers) and how a
//! value is shown in a message (truncated to 64 characters).

use super::error::{invalid, non_positive, not_finite, ConfigError};
use super::source::RawValue;
use super::validate::{check_fraction, check_rate, check_whole, DURATION_BOUND};
use super::{OffboardingMode, MAX_DURATION_MS};
use serde_json::Value;

/// Longest value or key rendering kept in a message, in characters.
const SHOWN_MAX_CHARS: usize = 64;

pub(super) fn truncate(s: &str) -> String {
    if s.chars().count() <= SHOWN_MAX_CHARS {
        s.to_owned()
    } else {
        let mut t: String = s.chars().take(SHOWN_MAX_CHARS).collect();
        t.push('…');
        t
    }
}

/// The value as the user wrote it (JSON rendering; `inf`, `-inf`, `NaN` for YAML specials).
pub(super) fn show_value(v: &RawValue) -> String {
    match v {
        RawValue::Json(j) => truncate(&j.to_string()),
        RawValue::NonFinite(f) => f.to_string(),
        RawValue::Millis(ms) => format!("{ms} ms"),
    }
}

/// A number as read: an exact integer or a float.
enum Num {
    Int(i128),
    Float(f64),
}

fn number(v: &RawValue) -> Option<Num> {
    match v {
        RawValue::NonFinite(f) => Some(Num::Float(*f)),
        RawValue::Json(Value::Number(n)) => {
            if let Some(u) = n.as_u64() {
                Some(Num::Int(u.into()))
            } else if let Some(i) = n.as_i64() {
                Some(Num::Int(i.into()))
            } else {
                n.as_f64().map(Num::Float)
            }
        }
        RawValue::Json(_) | RawValue::Millis(_) => None,
    }
}

/// A duration given in milliseconds ([`RawConfig::set_ms`](super::RawConfig::set_ms)), in
/// [1, MAX_DURATION_MS]; `None` for any other value.
fn given_ms(key: &str, v: &RawValue, shown: &str) -> Option<Result<u64, ConfigError>> {
    match v {
        RawValue::Millis(ms) => {
            Some(check_whole(key, u128::from(*ms), Some(MAX_DURATION_MS), DURATION_BOUND, shown).map(|()| *ms))
        }
        _ => None,
    }
}

fn wrong_type(key: &str, expected: &'static str, shown: &str) -> ConfigError {
    ConfigError::WrongType {
        key: key.to_owned(),
        expected,
        value: shown.to_owned(),
    }
}

/// A TTL in seconds (integer or fractional) → milliseconds, in [1, MAX_DURATION_MS].
pub(super) fn parse_secs(key: &str, v: &RawValue, shown: &str) -> Result<u64, ConfigError> {
    let too_large = || {
        invalid(
            key,
            format!("must be at most {} s (10 years)", MAX_DURATION_MS / 1000),
            shown,
        )
    };
    if let Some(ms) = given_ms(key, v, shown) {
        return ms;
    }
    let ms = match number(v).ok_or_else(|| wrong_type(key, "a number of seconds", shown))? {
        Num::Int(s) if s <= 0 => return Err(non_positive(key, shown)),
        Num::Int(s) => s.checked_mul(1000).ok_or_else(too_large)?,
        Num::Float(f) if !f.is_finite() => return Err(not_finite(key, shown)),
        Num::Float(f) if f <= 0.0 => return Err(non_positive(key, shown)),
        Num::Float(f) => {
            let ms = (f * 1000.0).round();
            if ms < 1.0 {
                let req = "must be at least 0.001 s (1 ms)".to_owned();
                return Err(invalid(key, req, shown));
            }
            if ms > MAX_DURATION_MS as f64 {
                return Err(too_large());
            }
            ms as i128
        }
    };
    u64::try_from(ms)
        .ok()
        .filter(|ms| *ms <= MAX_DURATION_MS)
        .ok_or_else(too_large)
}

/// A positive whole number (`100` or `100.0`), as `u128` so every input fits.
fn parse_whole(key: &str, v: &RawValue, shown: &str, expected: &'static str) -> Result<u128, ConfigError> {
    match number(v).ok_or_else(|| wrong_type(key, expected, shown))? {
        Num::Int(n) if n <= 0 => Err(non_positive(key, shown)),
        Num::Int(n) => Ok(n as u128),
        Num::Float(f) if !f.is_finite() => Err(not_finite(key, shown)),
        Num::Float(f) if f <= 0.0 => Err(non_positive(key, shown)),
        Num::Float(f) if f.fract() != 0.0 => Err(invalid(key, "must be a whole number".to_owned(), shown)),
        // Saturating float → int cast; values beyond u128 are rejected by the range check.
        Num::Float(f) => Ok(f as u128),
    }
}

pub(super) fn parse_ms(key: &str, v: &RawValue, shown: &str) -> Result<u64, ConfigError> {
    if let Some(ms) = given_ms(key, v, shown) {
        return ms;
    }
    let n = parse_whole(key, v, shown, "a whole number of milliseconds")?;
    check_whole(key, n, Some(MAX_DURATION_MS), DURATION_BOUND, shown)?;
    Ok(u64::try_from(n).unwrap_or(MAX_DURATION_MS)) // n <= MAX_DURATION_MS: always Ok
}

pub(super) fn parse_count(key: &str, v: &RawValue, shown: &str) -> Result<usize, ConfigError> {
    let n = parse_whole(key, v, shown, "a whole number")?;
    check_whole(key, n, None, "", shown)?;
    usize::try_from(n).map_err(|_| invalid(key, format!("must be at most {}", usize::MAX), shown))
}

pub(super) fn parse_count_u64(key: &str, v: &RawValue, shown: &str) -> Result<u64, ConfigError> {
    let n = parse_whole(key, v, shown, "a whole number")?;
    check_whole(key, n, None, "", shown)?;
    u64::try_from(n).map_err(|_| invalid(key, format!("must be at most {}", u64::MAX), shown))
}

pub(super) fn parse_bool(key: &str, v: &RawValue, shown: &str) -> Result<bool, ConfigError> {
    match v {
        RawValue::Json(Value::Bool(b)) => Ok(*b),
        _ => Err(wrong_type(key, "true or false", shown)),
    }
}

pub(super) fn parse_mode(key: &str, v: &RawValue, shown: &str) -> Result<OffboardingMode, ConfigError> {
    match v {
        RawValue::Json(Value::String(s)) if s.eq_ignore_ascii_case("sync") => Ok(OffboardingMode::Sync),
        RawValue::Json(Value::String(s)) if s.eq_ignore_ascii_case("async") => Ok(OffboardingMode::Async),
        RawValue::Json(Value::String(_)) => Err(invalid(key, "must be \"sync\" or \"async\"".to_owned(), shown)),
        _ => Err(wrong_type(key, "\"sync\" or \"async\"", shown)),
    }
}

fn finite(key: &str, v: &RawValue, shown: &str) -> Result<f64, ConfigError> {
    let f = match number(v).ok_or_else(|| wrong_type(key, "a number", shown))? {
        Num::Int(n) => n as f64,
        Num::Float(f) => f,
    };
    if f.is_finite() {
        Ok(f)
    } else {
        Err(not_finite(key, shown))
    }
}

pub(super) fn parse_rate(key: &str, v: &RawValue, shown: &str) -> Result<f64, ConfigError> {
    let f = finite(key, v, shown)?;
    check_rate(key, f, shown)?;
    Ok(f)
}

pub(super) fn parse_fraction(key: &str, v: &RawValue, shown: &str) -> Result<f64, ConfigError> {
    let f = finite(key, v, shown)?;
    check_fraction(key, f, shown)?;
    Ok(f)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use serde_json::json;

    fn secs(v: Value) -> Result<u64, ConfigError> {
        let raw = RawValue::Json(v);
        parse_secs("k", &raw, &show_value(&raw))
    }

    #[test]
    fn seconds_to_ms_table() {
        let ok = [
            (json!(1), 1_000),
            (json!(60), 60_000),
            (json!(0.5), 500),
            (json!(0.1), 100),
            (json!(1.25), 1_250),
            (json!(0.001), 1),
            (json!(0.0005), 1), // rounds to 1 ms
            (json!(60.0), 60_000),
            (json!(315_360_000), MAX_DURATION_MS),
            (json!(315_360_000.0), MAX_DURATION_MS), // the bound itself, as a float
        ];
        for (v, want) in ok {
            assert_eq!(secs(v.clone()).unwrap(), want, "{v}");
        }
        let bad = [
            (json!(0), "k must be > 0, got 0"),
            (json!(-5), "k must be > 0, got -5"),
            (json!(-0.5), "k must be > 0, got -0.5"),
            (json!(0.0), "k must be > 0, got 0.0"),
            (json!(0.0004), "k must be at least 0.001 s (1 ms), got 0.0004"),
            (
                json!(315_360_001),
                "k must be at most 315360000 s (10 years), got 315360001",
            ),
            (json!(315_360_000.000_5), "k must be at most"), // 1 ms over, as a float
            (json!(u64::MAX), "k must be at most"),
            (json!(1e300), "k must be at most"),
            (json!("10"), "k must be a number of seconds, got \"10\""),
            (json!(true), "k must be a number of seconds, got true"),
            (json!(null), "got null"),
            (json!({"a": 1}), "got {\"a\":1}"),
            (json!([1]), "got [1]"),
        ];
        for (v, want) in bad {
            let msg = secs(v.clone()).unwrap_err().to_string();
            assert!(msg.contains(want), "{v}: {msg}");
        }
    }

    #[test]
    fn non_finite_seconds_are_named() {
        for (f, shown) in [(f64::NAN, "NaN"), (f64::INFINITY, "inf"), (f64::NEG_INFINITY, "-inf")] {
            let raw = RawValue::NonFinite(f);
            let err = parse_secs("k", &raw, &show_value(&raw)).unwrap_err();
            assert!(matches!(err, ConfigError::NotFinite { .. }), "{err:?}");
            assert_eq!(err.to_string(), format!("k must be a finite number, got {shown}"));
        }
    }

    #[test]
    fn milliseconds_given_as_such_are_exact_for_either_unit() {
        let parse = |f: fn(&str, &RawValue, &str) -> Result<u64, ConfigError>, ms: u64| {
            let raw = RawValue::Millis(ms);
            f("k", &raw, &show_value(&raw))
        };
        for f in [parse_secs, parse_ms] {
            assert_eq!(parse(f, 1).unwrap(), 1);
            assert_eq!(parse(f, 1_234_567).unwrap(), 1_234_567);
            assert_eq!(parse(f, MAX_DURATION_MS).unwrap(), MAX_DURATION_MS);
            assert_eq!(parse(f, 0).unwrap_err().to_string(), "k must be > 0, got 0 ms");
            let over = parse(f, MAX_DURATION_MS + 1).unwrap_err().to_string();
            assert!(over.starts_with("k must be at most 315360000000 ms"), "{over}");
        }
        let raw = RawValue::Millis(5);
        let err = parse_count("k", &raw, &show_value(&raw)).unwrap_err().to_string();
        assert_eq!(err, "k must be a whole number, got 5 ms", "not a duration key");
    }

    #[test]
    fn whole_numbers_table() {
        let ms = |v: Value| {
            let raw = RawValue::Json(v);
            parse_ms("m", &raw, &show_value(&raw))
        };
        assert_eq!(ms(json!(100)).unwrap(), 100);
        assert_eq!(ms(json!(100.0)).unwrap(), 100);
        assert_eq!(
            ms(json!(100.5)).unwrap_err().to_string(),
            "m must be a whole number, got 100.5"
        );
        assert_eq!(ms(json!(0)).unwrap_err().to_string(), "m must be > 0, got 0");
        assert_eq!(ms(json!(-3)).unwrap_err().to_string(), "m must be > 0, got -3");
        assert!(ms(json!(1e30)).unwrap_err().to_string().contains("at most"));
        assert_eq!(ms(json!(MAX_DURATION_MS)).unwrap(), MAX_DURATION_MS, "the bound itself");
        assert_eq!(
            ms(json!(MAX_DURATION_MS + 1)).unwrap_err().to_string(),
            "m must be at most 315360000000 ms (10 years), got 315360000001"
        );
        assert!(ms(json!(i64::MIN)).is_err());
        assert_eq!(
            ms(json!("100")).unwrap_err().to_string(),
            "m must be a whole number of milliseconds, got \"100\""
        );
    }
}
