#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| mooncake_liveness::fuzzing::wire_decode(data));
