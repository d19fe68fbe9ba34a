//! The `differential` fuzz target's companion (feature `fuzzing`):
//!
//! - `cargo run --features fuzzing --example differential_tool -- explain FILE...` prints the
//!   configuration and operations each input decodes to (reading a finding);
//! - `... -- counts DIR_OR_FILE...` runs every input and prints how often each operation ran,
//!   in which offboarding mode, and how many offboarding attempts, retries, completions,
//!   failovers mid-job and hand-backs happened (the per-op coverage FUZZING.md records).

use mooncake_liveness::fuzzing::{differential_counts, differential_explain, Counts};
use std::path::{Path, PathBuf};

fn inputs(args: &[String]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for a in args {
        let p = Path::new(a);
        if p.is_dir() {
            let mut files: Vec<PathBuf> = std::fs::read_dir(p)
                .unwrap_or_else(|e| panic!("{a}: {e}"))
                .map(|e| e.expect("directory entry").path())
                .filter(|p| p.is_file())
                .collect();
            files.sort();
            out.extend(files);
        } else {
            out.push(p.to_path_buf());
        }
    }
    out
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((cmd, rest)) = args.split_first() else {
        eprintln!("usage: differential_tool explain FILE... | counts DIR_OR_FILE...");
        std::process::exit(2);
    };
    match cmd.as_str() {
        "explain" => {
            for f in inputs(rest) {
                let data = std::fs::read(&f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
                println!("== {}", f.display());
                print!(
                    "{}",
                    differential_explain(&data).unwrap_or_else(|| "(too short)\n".into())
                );
            }
        }
        "counts" => {
            let mut total = Counts::default();
            let files = inputs(rest);
            for f in &files {
                let data = std::fs::read(f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
                total.add(&differential_counts(&data));
            }
            println!("{} inputs", files.len());
            print!("{total}");
        }
        other => {
            eprintln!("unknown command {other}: explain | counts");
            std::process::exit(2);
        }
    }
}
