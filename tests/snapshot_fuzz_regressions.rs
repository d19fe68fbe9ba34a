//! Inputs the `snapshot_decode` fuzz target found; each must be refused or restored, never panic.

use std::path::Path;

#[test]
fn fuzz_findings_decode_cleanly() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds/snapshot_decode");
    for entry in std::fs::read_dir(dir).unwrap() {
        let data = std::fs::read(entry.unwrap().path()).unwrap();
        mooncake_liveness::fuzzing::snapshot_decode(&data);
    }
}
