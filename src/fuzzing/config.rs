//! The `config_parse` fuzz body: the configuration's formats and resolution on arbitrary text.

use crate::config::{resolve, CliOverrides, RawConfig};

/// Arbitrary bytes through the configuration parsers and resolution: bytes → UTF-8 → JSON and
/// YAML → resolve (as the file and as the command line), ignoring every result. Must never panic.
pub fn config_parse(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let parsed = [RawConfig::from_json_str(text), RawConfig::from_yaml_str(text)];
    for raw in parsed.into_iter().flatten() {
        let _ = resolve(Some(&raw), &CliOverrides::default());
        let cli = CliOverrides {
            other: raw,
            ..CliOverrides::default()
        };
        let _ = resolve(None, &cli);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fuzz_body_survives_odd_inputs() {
        let inputs: [&[u8]; 8] = [
            b"",
            b"\xff\xfe",
            b"{\"client_active_ttl_sec\": -1e308}",
            b"client_active_ttl_sec: -.inf\nclient_suspicion_ttl_sec: .nan",
            b"a: &a [*a]",
            b"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[",
            b"{\"offboarding_burst\": 18446744073709551615, \"offboarding_workers\": 1e19}",
            b"? {a: 1}\n: 2\n",
        ];
        for data in inputs {
            config_parse(data);
        }
    }
}
