//! The grammar scripts reproduce the committed data from the real CLIs (CI's real-CLI lanes):
//! `scripts/pi-grammar.sh` on each pinned pi (`PI_HARNESS_REAL_PI73`, `_PI87`, `_PI152`)
//! prints `data/pi/VERSION/grammar.tsv` byte for byte; `scripts/claude-grammar.sh` on the
//! Claude Code that `PI_HARNESS_REAL_CLAUDE` names writes `data/claude/VERSION/` byte for byte
//! (a few minutes of probes); `scripts/codex-grammar.sh` on the Codex that
//! `PI_HARNESS_REAL_CODEX` names writes `data/codex/VERSION/` byte for byte. So their output
//! for a new release can be trusted. Each skips,
//! saying why, when its variable is not set.

use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("data")
}

#[test]
fn pi_grammar_sh_reproduces_the_data_of_every_pinned_pi() {
    let mut ran = 0;
    for var in [
        "PI_HARNESS_REAL_PI73",
        "PI_HARNESS_REAL_PI87",
        "PI_HARNESS_REAL_PI152",
    ] {
        let Some(pi) = std::env::var_os(var) else {
            println!("note: {var} is not set: scripts/pi-grammar.sh is not checked on it");
            continue;
        };
        let out = Command::new("bash")
            .arg(repo().join("scripts/pi-grammar.sh"))
            .arg(&pi)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "pi-grammar.sh {}: {}",
            Path::new(&pi).display(),
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).unwrap();
        let version = text
            .strip_prefix("# pi ")
            .and_then(|t| t.split('\'').next())
            .expect("the first line names the version")
            .to_string();
        let committed =
            std::fs::read_to_string(data().join("pi").join(&version).join("grammar.tsv"))
                .unwrap_or_else(|e| panic!("pi {version}: no committed data: {e}"));
        assert_eq!(text, committed, "pi {version}: scripts/pi-grammar.sh's output differs from data/pi/{version}/grammar.tsv");
        ran += 1;
    }
    println!("scripts/pi-grammar.sh reproduced the data of {ran} pinned pi versions");
}

#[test]
fn claude_grammar_sh_reproduces_the_data_of_the_real_cli() {
    let Some(bin) = std::env::var_os("PI_HARNESS_REAL_CLAUDE") else {
        println!(
            "note: PI_HARNESS_REAL_CLAUDE is not set: scripts/claude-grammar.sh is not checked"
        );
        return;
    };
    let out_dir =
        std::env::temp_dir().join(format!("pi-grammar-claude-data-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out_dir);
    std::fs::create_dir_all(&out_dir).unwrap();
    let out = Command::new("bash")
        .arg(repo().join("scripts/claude-grammar.sh"))
        .arg(&bin)
        .arg("--out")
        .arg(&out_dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "claude-grammar.sh: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let written: Vec<PathBuf> = std::fs::read_dir(&out_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(written.len(), 1, "one release's directory: {written:?}");
    let version = written[0]
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    for file in ["version.txt", "help.txt", "grammar.tsv"] {
        let fresh = std::fs::read_to_string(written[0].join(file)).unwrap();
        let committed = std::fs::read_to_string(data().join("claude").join(&version).join(file))
            .unwrap_or_else(|e| panic!("Claude Code {version}: no committed {file}: {e}"));
        assert_eq!(fresh, committed, "Claude Code {version}: scripts/claude-grammar.sh's {file} differs from the committed data");
    }
    std::fs::remove_dir_all(&out_dir).unwrap();
    println!("scripts/claude-grammar.sh reproduced data/claude/{version}/");
}

#[test]
fn codex_grammar_sh_reproduces_the_data_of_the_real_cli() {
    let Some(bin) = std::env::var_os("PI_HARNESS_REAL_CODEX").filter(|b| !b.is_empty()) else {
        println!("note: PI_HARNESS_REAL_CODEX is not set: scripts/codex-grammar.sh is not checked");
        return;
    };
    let out_dir =
        std::env::temp_dir().join(format!("pi-grammar-codex-data-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out_dir);
    std::fs::create_dir_all(&out_dir).unwrap();
    let out = Command::new("bash")
        .arg(repo().join("scripts/codex-grammar.sh"))
        .arg(&bin)
        .arg("--out")
        .arg(&out_dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "codex-grammar.sh: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let written: Vec<PathBuf> = std::fs::read_dir(&out_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(written.len(), 1, "one release's directory: {written:?}");
    let version = written[0]
        .file_name()
        .unwrap()
        .to_string_lossy()
        .to_string();
    let committed_dir = data().join("codex").join(&version);
    for file in [
        "version.txt",
        "help.txt",
        "exec-help.txt",
        "exec-short-help.txt",
        "exec-resume-help.txt",
        "exec-version.txt",
    ] {
        let fresh = std::fs::read_to_string(written[0].join(file)).unwrap();
        let committed = std::fs::read_to_string(committed_dir.join(file))
            .unwrap_or_else(|e| panic!("Codex {version}: no committed {file}: {e}"));
        assert_eq!(
            fresh, committed,
            "Codex {version}: scripts/codex-grammar.sh's {file} differs from the committed data"
        );
    }
    std::fs::remove_dir_all(&out_dir).unwrap();
    println!("scripts/codex-grammar.sh reproduced the data of Codex {version}");
}

#[test]
fn gemini_grammar_sh_reproduces_the_data_of_the_real_cli() {
    let Some(bin) = std::env::var_os("PI_HARNESS_REAL_GEMINI").filter(|b| !b.is_empty()) else {
        println!(
            "note: PI_HARNESS_REAL_GEMINI is not set: scripts/gemini-grammar.sh is not checked"
        );
        return;
    };
    let out_dir =
        std::env::temp_dir().join(format!("pi-grammar-gemini-data-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out_dir);
    std::fs::create_dir_all(&out_dir).unwrap();
    let out = Command::new("bash")
        .arg(repo().join("scripts/gemini-grammar.sh"))
        .arg(&bin)
        .arg("--out")
        .arg(&out_dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "gemini-grammar.sh: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let written: Vec<PathBuf> = std::fs::read_dir(&out_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(written.len(), 1, "one release's directory: {written:?}");
    let version = written[0]
        .file_name()
        .unwrap()
        .to_string_lossy()
        .to_string();
    for file in ["version.txt", "help.txt"] {
        let fresh = std::fs::read_to_string(written[0].join(file)).unwrap();
        let committed = std::fs::read_to_string(data().join("gemini").join(&version).join(file))
            .unwrap_or_else(|e| panic!("Gemini CLI {version}: no committed {file}: {e}"));
        assert_eq!(
            fresh, committed,
            "Gemini CLI {version}: scripts/gemini-grammar.sh's {file} differs from the committed data"
        );
    }
    std::fs::remove_dir_all(&out_dir).unwrap();
    println!("scripts/gemini-grammar.sh reproduced the data of Gemini CLI {version}");
}
