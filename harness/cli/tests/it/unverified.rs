//! A release newer than every pinned one, simulated by a stand-in that answers as it: the
//! recorder records it with the newest pinned grammar, marks the header `unverified` naming
//! that grammar and says so in one warning line; `drift` compares it with the committed
//! cassette of the release it borrowed from and says what changed; `conform --cassettes`
//! replays it and says which cases are unverified. Older releases, and ones between pinned
//! releases, are refused before anything runs. (The same with the real CLIs relabelled:
//! `real_unverified`.)

use std::path::{Path, PathBuf};
use std::time::Duration;

use assert_cmd::Command;
use pi_cassette::Cassette;
use pi_testkit::{World, MARKER_VAR};

use crate::util::repo;

/// fake-pi installed as `name` in `dir/bin`, replaying `cassette` (its `fake-pi.conf`).
fn stand_in(w: &World, name: &str, cassette: &Path) -> PathBuf {
    let bin = w.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    pi_testkit::bins::install_exe(&pi_testkit::fake_pi(), &bin.join(name)).unwrap();
    std::fs::write(
        bin.join("fake-pi.conf"),
        format!("FAKE_PI_CASSETTE={}\nFAKE_PI_SPEED=0\n", cassette.display()),
    )
    .unwrap();
    bin.join(name)
}

fn pih(w: &World) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_pi-harness"));
    c.env(MARKER_VAR, w.marker())
        .env_remove("RUST_BACKTRACE")
        .timeout(Duration::from_secs(120));
    c
}

/// An LLM script with no turns: the stand-ins replay a cassette and never call the model,
/// which a recording must then say (else it fails as one that never reached the model).
fn no_turns(w: &World) -> PathBuf {
    let p = w.path().join("no-turns.llm.json");
    std::fs::write(&p, r#"{"turns": []}"#).unwrap();
    p
}

/// `pi-harness record` of corpus scenario `text_only` with the stand-in `pi` answering as
/// pi `version`; (exit status, stderr).
fn record_pi(w: &World, version: &str, out: &Path) -> (Option<i32>, String) {
    let pi = stand_in(
        w,
        "pi",
        &repo().join("cassettes/recorded/text_only.pi152.cassette.jsonl"),
    );
    let o = pih(w)
        .args(["record", "--pi-version", version, "--scenario", "text_only"])
        .arg("--pi")
        .arg(&pi)
        .arg("--script")
        .arg(no_turns(w))
        .arg("--out")
        .arg(out)
        .args([
            "--",
            "--mode",
            "json",
            "--session-dir",
            "{TMP}/sessions",
            "Say hello.",
        ])
        .output()
        .unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

const PI_WARNING: &str = "warning: pi 1.6.0 is newer than every pinned release: unverified, read with pi 1.5.2's command-line grammar (`pi-harness drift` shows what changed; pinning it: docs/pinning.md)";

#[test]
fn a_newer_pi_is_recorded_unverified_and_drift_and_conform_say_so() {
    let w = World::new("unverified_pi");
    let fresh = w.path().join("fresh");
    std::fs::create_dir_all(&fresh).unwrap();
    let out = fresh.join("text_only.pi160.cassette.jsonl");
    let (code, err) = record_pi(&w, "1.6.0", &out);
    assert_eq!(code, Some(0), "{err}");
    let warnings: Vec<&str> = err.lines().filter(|l| l.starts_with("warning:")).collect();
    assert_eq!(warnings, [PI_WARNING], "one warning line: {err}");
    let c = Cassette::load(&out).unwrap();
    assert_eq!(c.header.pi.version, "1.6.0");
    assert_eq!(
        c.header.pi.unverified.as_ref().map(|u| u.grammar.as_str()),
        Some("1.5.2")
    );
    assert!(std::fs::read_to_string(&out)
        .unwrap()
        .starts_with(r#"{"format":"pi-cassette","version":1,"pi":{"version":"1.6.0","dialect":"delta-only","unverified":{"grammar":"1.5.2"}}"#));

    // drift: compared with the committed cassette of the release it borrowed from; the
    // committed cassettes of versions not recorded afresh are left out.
    let committed = w.path().join("committed");
    std::fs::create_dir_all(&committed).unwrap();
    for name in ["text_only.pi152", "text_only.pi87"] {
        let file = format!("{name}.cassette.jsonl");
        std::fs::copy(
            repo().join("cassettes/recorded").join(&file),
            committed.join(&file),
        )
        .unwrap();
    }
    let drift = |fresh: &Path| {
        let o = pih(&w)
            .arg("drift")
            .arg("--committed")
            .arg(&committed)
            .arg("--fresh")
            .arg(fresh)
            .output()
            .unwrap();
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stdout).into_owned(),
        )
    };
    let (code, text) = drift(&fresh);
    assert_eq!(code, Some(0), "{text}");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert!(
        lines[0].starts_with("same     text_only.pi160.cassette.jsonl (pi 1.6.0, unverified, grammar of 1.5.2) vs text_only.pi152.cassette.jsonl ("),
        "{text}"
    );
    assert_eq!(
        lines[1],
        "skipped  1 committed cassettes of versions not recorded afresh"
    );
    assert_eq!(lines[2], "no drift: 1 of 1 cassettes unchanged");
    // What the new release changed shows as a diff against the release it borrowed from.
    let changed_dir = w.path().join("changed");
    std::fs::create_dir_all(&changed_dir).unwrap();
    let changed = std::fs::read_to_string(&out)
        .unwrap()
        .replace("Hello", "Howdy");
    assert!(changed.contains("Howdy"));
    std::fs::write(changed_dir.join("text_only.pi160.cassette.jsonl"), changed).unwrap();
    let (code, text) = drift(&changed_dir);
    assert_eq!(code, Some(1), "{text}");
    assert!(text.starts_with("DRIFT    text_only.pi160.cassette.jsonl (pi 1.6.0, unverified, grammar of 1.5.2) vs text_only.pi152.cassette.jsonl: committed "), "{text}");
    assert!(
        text.lines()
            .any(|l| l.trim_start().starts_with('+') && l.contains("Howdy")),
        "{text}"
    );

    // conform --cassettes: replayed with the borrowed grammar, passing; the report says so.
    let o = pih(&w)
        .arg("conform")
        .arg("--cassettes")
        .arg(&fresh)
        .env("PATH", path_with_fake_pi())
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{report}");
    assert_eq!(
        report.lines().next(),
        Some("warning: unverified: 1 case is of releases newer than every pinned one, replayed with the newest pinned grammar: text_only.pi160 (pi 1.6.0, grammar of 1.5.2)")
    );
    assert!(
        report
            .lines()
            .any(|l| l.starts_with("PASS  text_only.pi160")),
        "{report}"
    );
    assert!(report.contains("| pi-1.5 | 1 | 1 | 0 | 0 |"), "{report}");
    w.assert_none_left_within(Duration::from_secs(5));
}

/// `PATH` with fake-pi's directory first (conform finds it there).
fn path_with_fake_pi() -> String {
    let dir = pi_testkit::fake_pi().parent().unwrap().to_path_buf();
    format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

#[test]
fn an_older_pi_or_claude_code_is_refused_before_anything_runs() {
    let w = World::new("unverified_refused");
    let out = w.path().join("old.cassette.jsonl");
    let (code, err) = record_pi(&w, "0.50.0", &out);
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(
        err,
        "error: pi 0.50.0: pi-harness knows pi 0.73.1, 0.87.1, 1.5.2 and reads a newer release with the newest one's grammar (unverified); an older release, or one between pinned releases, is not read\n"
    );
    assert!(!out.exists());
    // Between two pinned releases: refused too.
    let (code, err) = record_pi(&w, "1.0.0", &out);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.starts_with("error: pi 1.0.0: pi-harness knows pi"),
        "{err}"
    );
    w.assert_none_left_within(Duration::from_secs(5));
}

#[test]
fn a_newer_claude_code_is_recorded_unverified_and_conform_says_so() {
    let w = World::new("unverified_claude");
    let newest = pi_grammar::claude::Claude::latest().version().to_string();
    let mut parts: Vec<u32> = newest.split('.').map(|p| p.parse().unwrap()).collect();
    parts[2] += 8;
    let newer = format!("{}.{}.{}", parts[0], parts[1], parts[2]);
    let tag = |v: &str| format!("cc{}", v.replace('.', ""));
    let source = repo().join(format!(
        "cassettes/claude/claude_text.{}.cassette.jsonl",
        tag(&newest)
    ));
    let claude = stand_in(&w, "claude", &source);
    let scripts = repo().join("cassettes/scripts/claude");
    let fresh = w.path().join("fresh");
    std::fs::create_dir_all(&fresh).unwrap();
    let out = fresh.join(format!("claude_text.{}.cassette.jsonl", tag(&newer)));
    let o = pih(&w)
        .args([
            "record",
            "--agent",
            "claude",
            "--pi-version",
            &newer,
            "--scenario",
            "claude_text",
        ])
        .arg("--script")
        .arg(no_turns(&w))
        .arg("--client-script")
        .arg(scripts.join("claude_text.client.json"))
        .arg("--pi")
        .arg(&claude)
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
    let warnings: Vec<&str> = err.lines().filter(|l| l.starts_with("warning:")).collect();
    assert_eq!(
        warnings,
        [format!("warning: Claude Code {newer} is newer than every pinned release: unverified, read with Claude Code {newest}'s command-line grammar (`pi-harness drift` shows what changed; pinning it: docs/pinning.md)")],
        "{err}"
    );
    let c = Cassette::load(&out).unwrap();
    assert_eq!(c.header.agent(), pi_grammar::Agent::Claude);
    assert_eq!(c.header.pi.version, newer);
    assert_eq!(
        c.header.pi.unverified.as_ref().map(|u| u.grammar.as_str()),
        Some(newest.as_str())
    );
    // Older than every measured release: refused.
    let o = pih(&w)
        .args([
            "record",
            "--agent",
            "claude",
            "--pi-version",
            "2.0.1",
            "--stdin-terminal",
        ])
        .arg("--script")
        .arg(scripts.join("claude_text.llm.json"))
        .arg("--pi")
        .arg(&claude)
        .arg("--out")
        .arg(w.path().join("old.cassette.jsonl"))
        .args(["--", "-p", "hi"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.starts_with("error: Claude Code 2.0.1: pi-harness knows Claude Code "),
        "{err}"
    );

    // drift against the committed sessions, and conform on the fresh one.
    let o = pih(&w)
        .arg("drift")
        .arg("--committed")
        .arg(repo().join("cassettes/claude"))
        .arg("--fresh")
        .arg(&fresh)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.lines().any(|l| l.starts_with(&format!(
            "DRIFT    claude_text.{}.cassette.jsonl (Claude Code {newer}, unverified, grammar of {newest}) vs claude_text.{}.cassette.jsonl: ",
            tag(&newer),
            tag(&newest)
        ))),
        "{text}"
    );
    // What differs is what the stand-in did differently: it never called the model.
    let changed: Vec<&str> = text
        .lines()
        .map(str::trim_start)
        .filter(|l| l.starts_with("- ") || l.starts_with("+ "))
        .collect();
    assert_eq!(changed, ["- model request"], "{text}");
    let o = pih(&w)
        .arg("conform")
        .arg("--cassettes")
        .arg(&fresh)
        .env("PATH", path_with_fake_pi())
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{report}");
    assert!(
        report.starts_with(&format!("warning: unverified: 1 case is of releases newer than every pinned one, replayed with the newest pinned grammar: claude_text.{} (claude {newer}, grammar of {newest})\n", tag(&newer))),
        "{report}"
    );
    assert!(
        report.lines().any(|l| l.starts_with("PASS  claude_text.")),
        "{report}"
    );
    w.assert_none_left_within(Duration::from_secs(5));
}

#[test]
fn a_capture_of_a_newer_pi_is_imported_unverified() {
    let w = World::new("unverified_import");
    // pi 1.5.2's stdout, as a capture of 1.6.0.
    let recorded =
        Cassette::load(&repo().join("cassettes/recorded/text_only.pi152.cassette.jsonl")).unwrap();
    let raw = w.write("raw.jsonl", recorded.stdout_bytes());
    let out = w.path().join("imported.cassette.jsonl");
    let import = |version: &str| {
        pih(&w)
            .args(["cassette", "import"])
            .arg(&raw)
            .args([
                "--pi-version",
                version,
                "--scenario",
                "imported",
                "--description",
                "a capture",
                "--exit",
                "0",
            ])
            .arg("--out")
            .arg(&out)
            .output()
            .unwrap()
    };
    let o = import("1.6.0");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert_eq!(err, format!("{PI_WARNING}\n"));
    let c = Cassette::load(&out).unwrap();
    assert_eq!(c.header.pi.borrowed(), Some("1.5.2"));
    assert_eq!(c.stdout_bytes(), recorded.stdout_bytes());
    // Older than every pinned version: refused as before.
    std::fs::remove_file(&out).unwrap();
    let o = import("0.50.0");
    assert_eq!(o.status.code(), Some(2));
    assert!(!out.exists());
}
