//! Embeds the bundled suite (every cassette under `../cassettes`, the scripts they were
//! recorded from under `../cassettes/scripts` and every expected stream under `expected/`) into the crate, so an installed `pi-harness` carries it and
//! never reads the source tree at run time (`conformance::bundle`).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn files(root: &Path, keep: &dyn Fn(&str) -> bool) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![root.to_path_buf()];
    while let Some(dir) = todo.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                todo.push(path);
            } else if path.file_name().and_then(|n| n.to_str()).is_some_and(keep) {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// Which file names of a directory belong in the bundle.
type Keep = dyn Fn(&str) -> bool;

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let cassettes = manifest.join("../cassettes");
    let expected = manifest.join("expected");
    println!("cargo:rerun-if-changed={}", cassettes.display());
    println!("cargo:rerun-if-changed={}", expected.display());
    let mut code = String::from(
        "/// (path inside the bundle, contents)\npub static FILES: &[(&str, &[u8])] = &[\n",
    );
    let scripts = cassettes.join("scripts");
    let sets: [(&str, &Path, &Keep); 3] = [
        ("cassettes", &cassettes, &|n: &str| {
            n.ends_with(".cassette.jsonl")
                || n.ends_with(".cassette.jsonl.gz")
                || n.ends_with(".cassette.jsonl.zst")
                || n.ends_with(".sequence")
        }),
        // The LLM and client scripts the corpus was recorded from, its manifest and the
        // scripts' format (README.md): a user's own recordings start from them.
        ("cassettes/scripts", &scripts, &|n: &str| {
            n.ends_with(".json") || n == "README.md"
        }),
        ("expected", &expected, &|n: &str| {
            n.ends_with(".json") || n.ends_with(".json.gz")
        }),
    ];
    for (prefix, root, keep) in sets {
        for path in files(root, keep) {
            let rel = path.strip_prefix(root).expect("below its root");
            let rel = rel.to_str().expect("bundle paths are UTF-8");
            let abs = path.canonicalize().expect("a listed file exists");
            writeln!(
                code,
                "    ({:?}, include_bytes!({:?})),",
                format!("{prefix}/{rel}"),
                abs
            )
            .unwrap();
        }
    }
    code.push_str("];\n");
    let out =
        PathBuf::from(std::env::var("OUT_DIR").expect("set by cargo")).join("bundle_files.rs");
    std::fs::write(out, code).expect("OUT_DIR is writable");
}
