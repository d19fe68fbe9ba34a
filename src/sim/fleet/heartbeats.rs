//! Recorded heartbeat logs (`--heartbeats`): JSON Lines `{"t_ms": u64, "client": "name"}`.
//!
//! The clients that appear are the fleet. Each client mounts (and ReMounts) at its first line
//! and pings exactly at its later lines; a client absent from the log for a while is silent.
//! Blank lines and lines starting with `#` are skipped; other fields on a line are ignored.
//! Times may be absolute (epoch ms): the run starts at the earliest `t_ms`.

/// One heartbeat of a recorded log.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct HeartbeatEvent {
    /// When the master heard it, ms.
    pub t_ms: u64,
    /// The client's name.
    pub client: String,
}

/// Parses a heartbeat log. Errors name the 1-based line number: `line 7: missing field ...`.
pub fn parse_heartbeats(text: &str) -> Result<Vec<HeartbeatEvent>, String> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let ev: HeartbeatEvent = serde_json::from_str(line).map_err(|e| format!("line {}: {e}", n + 1))?;
        if ev.client.is_empty() {
            return Err(format!("line {}: empty client name", n + 1));
        }
        out.push(ev);
    }
    if out.is_empty() {
        return Err("the heartbeat log has no heartbeats".into());
    }
    Ok(out)
}
