//! Lint-style check: the reference master reads liveness only through `eligibility`
//! (invariant 9). The diagnostic query is the one exception: it *shows* every state.

use std::path::Path;

const FORBIDDEN: &[&str] = &[
    ".is_serving()",
    ".should_retain()",
    ".state()",
    ".word()",
    "LivenessState::",
    "raw_is_active",
    "raw_is_retained",
];

#[test]
fn master_asks_the_seam() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("master/src/master");
    let mut checked = 0;
    let mut violations = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if name == "query.rs" || path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        checked += 1;
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            for f in FORBIDDEN {
                if code.contains(f) {
                    violations.push(format!("{name}:{}: {f} in `{}`", n + 1, line.trim()));
                }
            }
        }
    }
    assert!(
        checked >= 8,
        "expected the master's modules under master/src/master, found {checked}"
    );
    assert!(
        violations.is_empty(),
        "liveness read outside the seam:\n{}",
        violations.join("\n")
    );
}

#[test]
fn the_lint_catches_a_direct_read() {
    let bad = "if seg.owner.is_serving() { pick(seg) }";
    assert!(FORBIDDEN.iter().any(|f| bad.contains(f)));
}
