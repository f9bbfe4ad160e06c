//! The next release simulated with the real CLIs (CI's real-CLI lanes): pi's newest pinned
//! package copied and relabelled (its `package.json` version, which is what `pi --version`
//! prints) as the next minor release, and the newest measured Claude Code behind a wrapper
//! whose `--version` names a later release. Each is recorded (`record-corpus`, `record`),
//! marked unverified with one warning line; `drift` against the committed corpus finds
//! nothing changed (the behaviour is the pinned release's); `conform --cassettes` passes.
//! Runs when `PI_HARNESS_REAL_PI152` (the newest pinned pi) and `PI_HARNESS_REAL_CLAUDE`
//! (the newest measured Claude Code) name the real CLIs; says why and returns otherwise.

use std::path::{Path, PathBuf};
use std::time::Duration;

use assert_cmd::Command;
use pi_cassette::Cassette;
use pi_testkit::{World, MARKER_VAR};

use crate::util::repo;

fn pih(w: &World) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_pi-harness"));
    c.env(MARKER_VAR, w.marker())
        .env_remove("RUST_BACKTRACE")
        .timeout(Duration::from_secs(600));
    c
}

fn path_with_fake_pi() -> String {
    let dir = pi_testkit::fake_pi().parent().unwrap().to_path_buf();
    format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// `conform --cassettes dir` passes and names its unverified cases.
fn conform_passes(w: &World, dir: &Path) {
    let o = pih(w)
        .arg("conform")
        .arg("--cassettes")
        .arg(dir)
        .env("PATH", path_with_fake_pi())
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{report}");
    assert!(report.starts_with("warning: unverified: "), "{report}");
    assert!(!report.contains("FAIL"), "{report}");
}

/// A copy of the pi package at `root` (its `node_modules` siblings linked) labelled `version`;
/// the copy's pi.
fn relabelled_pi(w: &World, root: &Path, version: &str) -> PathBuf {
    let modules = root
        .ancestors()
        .find(|d| d.file_name().is_some_and(|n| n == "node_modules"))
        .expect("pi's package lives in a node_modules");
    let rel = root.strip_prefix(modules).unwrap();
    let copy_modules = w.path().join("next/node_modules");
    let copy = copy_modules.join(rel);
    std::fs::create_dir_all(copy.parent().unwrap()).unwrap();
    let status = std::process::Command::new("cp")
        .arg("-r")
        .arg(root)
        .arg(&copy)
        .status()
        .unwrap();
    assert!(status.success());
    let scope = rel.components().next().unwrap().as_os_str();
    for e in std::fs::read_dir(modules).unwrap() {
        let e = e.unwrap();
        if e.file_name() != scope && e.file_name() != ".bin" {
            std::os::unix::fs::symlink(e.path(), copy_modules.join(e.file_name())).unwrap();
        }
    }
    let pj = copy.join("package.json");
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&pj).unwrap()).unwrap();
    v["version"] = version.into();
    std::fs::write(&pj, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    copy.join("bin/pi")
}

#[test]
fn the_next_pi_release_simulated_is_recorded_unverified_and_drift_finds_nothing_changed() {
    let Some(pi) = std::env::var_os("PI_HARNESS_REAL_PI152").map(PathBuf::from) else {
        println!("note: PI_HARNESS_REAL_PI152 is not set: the relabelled-pi test is skipped");
        return;
    };
    let newest = pi_grammar::Grammar::newest_pinned().release();
    let next = format!("{}.{}.0", newest.major, newest.minor + 1);
    let root = pi_recorder::recorder::pi_package_root(&pi).expect("pi's package root");
    let w = World::new("real_unverified_pi");
    let relabelled = relabelled_pi(&w, &root, &next);
    let fresh = w.path().join("fresh");
    let o = pih(&w)
        .arg("record-corpus")
        .arg("--manifest")
        .arg(repo().join("cassettes/scripts/corpus.json"))
        .arg("--pi")
        .arg(&relabelled)
        .arg("--out")
        .arg(&fresh)
        .args(["--only", "text_only", "--only", "tool_bash"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let warning = format!("warning: pi {next} is newer than every pinned release: unverified, read with pi {newest}'s command-line grammar (`pi-harness drift` shows what changed; pinning it: docs/pinning.md)");
    assert_eq!(
        err.lines()
            .filter(|l| l.starts_with("warning:"))
            .collect::<Vec<_>>(),
        [warning.as_str(), warning.as_str()],
        "one warning per recording: {err}"
    );
    let tag = pi_grammar::Agent::Pi.spec().tag_of(&next).unwrap();
    for name in ["text_only", "tool_bash"] {
        let c = Cassette::load(&fresh.join(format!("{name}.{tag}.cassette.jsonl"))).unwrap();
        assert_eq!(c.header.pi.version, next);
        assert_eq!(
            c.header.pi.unverified.map(|u| u.grammar),
            Some(newest.to_string())
        );
    }
    let o = pih(&w)
        .arg("drift")
        .arg("--committed")
        .arg(repo().join("cassettes/recorded"))
        .arg("--fresh")
        .arg(&fresh)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    let newest_tag = pi_grammar::Agent::Pi
        .spec()
        .tag_of(&newest.to_string())
        .unwrap();
    for name in ["text_only", "tool_bash"] {
        let same = format!("same     {name}.{tag}.cassette.jsonl (pi {next}, unverified, grammar of {newest}) vs {name}.{newest_tag}.cassette.jsonl");
        assert!(text.lines().any(|l| l.starts_with(&same)), "{text}");
    }
    conform_passes(&w, &fresh);
    w.assert_none_left_within(Duration::from_secs(10));
}

#[test]
fn the_next_claude_code_release_simulated_is_recorded_unverified() {
    let Some(real) = std::env::var_os("PI_HARNESS_REAL_CLAUDE").map(PathBuf::from) else {
        println!(
            "note: PI_HARNESS_REAL_CLAUDE is not set: the relabelled-Claude Code test is skipped"
        );
        return;
    };
    let newest = pi_grammar::claude::Claude::latest().version().to_string();
    let version =
        pi_recorder::recorder::version_of(pi_grammar::Agent::Claude, &real).unwrap_or_default();
    if version != newest {
        println!("note: PI_HARNESS_REAL_CLAUDE is {version}, not the newest measured {newest}: the relabelled-Claude Code test is skipped");
        return;
    }
    let mut parts: Vec<u32> = newest.split('.').map(|p| p.parse().unwrap()).collect();
    parts[2] += 8;
    let next = format!("{}.{}.{}", parts[0], parts[1], parts[2]);
    let w = World::new("real_unverified_claude");
    let wrapper = w.write(
        "bin/claude",
        format!(
            "#!/bin/sh\n# Claude Code {newest} relabelled {next} (what --version prints).\nif [ \"$#\" = 1 ] && [ \"$1\" = --version ]; then echo \"{next} (Claude Code)\"; exit 0; fi\nexec '{}' \"$@\"\n",
            real.display()
        ),
    );
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    let tag = |v: &str| format!("cc{}", v.replace('.', ""));
    let fresh = w.path().join("fresh");
    std::fs::create_dir_all(&fresh).unwrap();
    let out = fresh.join(format!("claude_text.{}.cassette.jsonl", tag(&next)));
    let scripts = repo().join("cassettes/scripts/claude");
    let o = pih(&w)
        .args([
            "record",
            "--agent",
            "claude",
            "--scenario",
            "claude_text",
            "--timeout",
            "120",
        ])
        .arg("--pi")
        .arg(&wrapper)
        .arg("--script")
        .arg(scripts.join("claude_text.llm.json"))
        .arg("--client-script")
        .arg(scripts.join("claude_text.client.json"))
        .arg("--out")
        .arg(&out)
        .args([
            "--",
            "-p",
            "--input-format",
            "stream-json",
            "--output-format",
            "stream-json",
            "--verbose",
            "--include-partial-messages",
            "--permission-prompt-tool",
            "stdio",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert_eq!(
        err.lines().filter(|l| l.starts_with("warning:")).count(),
        1,
        "{err}"
    );
    let c = Cassette::load(&out).unwrap();
    assert_eq!(c.header.pi.version, next);
    assert_eq!(
        c.header.pi.unverified.map(|u| u.grammar),
        Some(newest.clone())
    );
    let o = pih(&w)
        .arg("drift")
        .arg("--committed")
        .arg(repo().join("cassettes/claude"))
        .arg("--fresh")
        .arg(&fresh)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    let same = format!(
        "same     claude_text.{}.cassette.jsonl (Claude Code {next}, unverified, grammar of {newest}) vs claude_text.{}.cassette.jsonl",
        tag(&next),
        tag(&newest)
    );
    assert!(text.lines().any(|l| l.starts_with(&same)), "{text}");
    conform_passes(&w, &fresh);
    w.assert_none_left_within(Duration::from_secs(10));
}
