//! Writes small snapshots (binary and JSON) as fuzz seeds: `cargo run --example make_snapshot_seeds -- DIR`.

use mooncake_liveness::master::{Master, MasterOptions};
use mooncake_liveness::{Clock, LivenessConfig, ManualClock};
use std::sync::Arc;

fn main() -> std::io::Result<()> {
    let dir = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "fuzz/seeds/snapshot_decode".into());
    std::fs::create_dir_all(&dir)?;
    let clock = Arc::new(ManualClock::new(0));
    let m = Master::new(
        clock.clone() as Arc<dyn Clock>,
        LivenessConfig::default(),
        MasterOptions::default(),
    );
    m.mount("c1", "s1", 1 << 20).unwrap();
    m.mount("c2", "s2", 1 << 20).unwrap();
    m.mount_local_disk("c1", 1 << 20).unwrap();
    for i in 0..5 {
        m.put(&format!("k{i}"), 100, 2).unwrap();
        m.put_end(&format!("k{i}")).unwrap();
    }
    m.replicate("k0", "s2", false).ok();
    let snap = m.snapshot();
    std::fs::write(format!("{dir}/small.bin"), snap.encode())?;
    std::fs::write(format!("{dir}/small.json"), snap.to_json())?;
    let empty = Master::new(
        clock as Arc<dyn Clock>,
        LivenessConfig::default(),
        MasterOptions::default(),
    )
    .snapshot();
    std::fs::write(format!("{dir}/empty.bin"), empty.encode())?;
    Ok(())
}
