//! Lists the Claude Code releases under `data/claude/` (one directory each, written by
//! `scripts/claude-grammar.sh`) for `src/claude/data.rs` to embed, so that a new release is a
//! data change: its directory and its row in the registry (`src/agents/claude.rs`), which
//! orders them.

// A build script talks to cargo on stdout.
#![allow(clippy::print_stdout)]

use std::fmt::Write as _;
use std::path::Path;

fn main() {
    // Read when the script runs, not when it was compiled: cargo may reuse a script compiled
    // for the same package in another checkout (a `cargo install --path` of a clone, say).
    let manifest = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let dir = Path::new(&manifest).join("data/claude");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut versions: Vec<String> = std::fs::read_dir(&dir)
        .expect("data/claude")
        .filter_map(|e| {
            let e = e.ok()?;
            let name = e.file_name().into_string().ok()?;
            e.path().is_dir().then_some(name)
        })
        .collect();
    versions.sort();
    let mut out = String::from("&[\n");
    for v in &versions {
        let d = dir.join(v);
        let file = |f: &str| {
            let p = d.join(f);
            assert!(p.is_file(), "{} is missing", p.display());
            format!("include_str!({:?})", p.display().to_string())
        };
        writeln!(
            out,
            "    ({v:?}, {}, {}, {}),",
            file("version.txt"),
            file("help.txt"),
            file("grammar.tsv")
        )
        .unwrap();
    }
    out.push_str("]\n");
    let dest = Path::new(&std::env::var("OUT_DIR").unwrap()).join("claude_releases.rs");
    std::fs::write(dest, out).unwrap();
}
