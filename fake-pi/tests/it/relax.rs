//! Matching loosened at test time and the trace a replay leaves: `FAKE_PI_IGNORE` lets a
//! start pass where only an ignored field differs (the file untouched), a mismatch without
//! it is exit 99 with its line and one line naming the next step, an unknown field is
//! refused; `FAKE_PI_PLAYED` gets one line per start that played its cassette (none for a
//! refused start), naming the cassette of each start of a sequence, and is never written
//! through a link.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::util::*;

/// Codex's recorded call: the model comes from `CODEX_HOME/config.toml`.
const CODEX_ARGS: &[&str] = &["exec", "--json", "--skip-git-repo-check", "Say hello."];

/// fake-pi as Codex on the corpus's `codex_text`, with a config naming `model` and the key.
fn codex(w: &World, model: &str) -> Command {
    let home = w.path().join(format!("codex-home-{model}"));
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(
        home.join("config.toml"),
        format!("model = \"{model}\"\nmodel_provider = \"openai\"\n"),
    )
    .unwrap();
    let mut cmd = w.fake_pi(&repo_cassette("codex/codex_text.cx0169.cassette.jsonl"));
    cmd.args(CODEX_ARGS)
        .env("CODEX_HOME", &home)
        .env("CODEX_API_KEY", "k")
        .env("FAKE_PI_VALUES", "recorded")
        .env_remove("FAKE_PI_IGNORE")
        .env_remove("FAKE_PI_PLAYED")
        .env_remove("FAKE_PI_HINTS");
    cmd
}

fn run(cmd: &mut Command) -> (Option<i32>, String, String) {
    let out = cmd.output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The recording's stdout and stderr.
fn recorded(rel: &str) -> (String, String) {
    let c = pi_cassette::Cassette::load(&repo_cassette(rel)).unwrap();
    (
        String::from_utf8_lossy(&c.stdout_bytes()).into_owned(),
        String::from_utf8_lossy(&c.stderr_bytes()).into_owned(),
    )
}

#[test]
fn an_ignored_field_passes_and_a_mismatch_without_it_names_the_next_step() {
    let w = World::new("relax_ignore_model");
    let (recorded, recorded_err) = recorded("codex/codex_text.cx0169.cassette.jsonl");
    let (code, out, err) = run(&mut codex(&w, "gpt-5.5"));
    assert_eq!(
        (code, out.as_str(), err.as_str()),
        (Some(0), recorded.as_str(), recorded_err.as_str())
    );

    // Another model: the mismatch's line, then one line saying what to do next.
    let (code, out, err) = run(&mut codex(&w, "o3"));
    assert_eq!((code, out.as_str()), (Some(99), ""), "{err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 2, "{err}");
    assert!(
        lines[0].starts_with(
            r#"fake-pi: expectation mismatch: expect.effective.model: expected "gpt-5.5", got "o3""#
        ),
        "{err}"
    );
    let next = lines[1];
    assert!(next.starts_with("fake-pi: next: "), "{next}");
    for part in [
        "record mode all",
        "pi-harness cassette review",
        "FAKE_PI_IGNORE=model",
        "pi-harness cassette relax --ignore model",
    ] {
        assert!(next.contains(part), "{part:?} missing: {next}");
    }

    // The same call with the model ignored at replay: the recording, and the file untouched.
    let file = repo_cassette("codex/codex_text.cx0169.cassette.jsonl");
    let before = std::fs::read(&file).unwrap();
    for value in ["model", "env, model", "tools model"] {
        let (code, out, err) = run(codex(&w, "o3").env("FAKE_PI_IGNORE", value));
        assert_eq!(
            (code, out.as_str(), err.as_str()),
            (Some(0), recorded.as_str(), recorded_err.as_str()),
            "FAKE_PI_IGNORE={value}"
        );
    }
    assert_eq!(std::fs::read(&file).unwrap(), before);

    // An ignored field is only that one: another difference still fails.
    let (code, _, err) = run(codex(&w, "o3").env("FAKE_PI_IGNORE", "env"));
    assert_eq!(code, Some(99), "{err}");
    w.assert_none_left();
}

#[test]
fn an_unset_key_is_passed_when_env_is_ignored() {
    let w = World::new("relax_ignore_env");
    let (code, _, err) = run(codex(&w, "gpt-5.5").env_remove("CODEX_API_KEY"));
    assert_eq!(code, Some(99), "{err}");
    assert!(err.contains("expect.env.CODEX_API_KEY"), "{err}");
    assert!(
        err.lines().last().unwrap().contains("FAKE_PI_IGNORE=env"),
        "{err}"
    );
    let (code, _, err) = run(codex(&w, "gpt-5.5")
        .env_remove("CODEX_API_KEY")
        .env("FAKE_PI_IGNORE", "env"));
    assert_eq!(code, Some(0), "{err}");
    w.assert_none_left();
}

#[test]
fn a_field_no_replay_can_ignore_is_refused_in_one_line() {
    let w = World::new("relax_unknown");
    let (code, out, err) = run(codex(&w, "gpt-5.5").env("FAKE_PI_IGNORE", "model,colour"));
    assert_eq!((code, out.as_str()), (Some(96), ""), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with(
            r#"fake-pi: FAKE_PI_IGNORE: "colour" is not a field a replay can ignore (known: "#
        ),
        "{err}"
    );
    assert!(err.contains("stdin"), "{err}");
    w.assert_none_left();
}

/// Claude Code's stdin: the recording's host had a terminal; a pipe is refused, naming
/// stdin and the ignore option, and passes with `FAKE_PI_IGNORE=stdin`.
#[test]
fn stdin_is_a_field_a_replay_can_ignore() {
    let w = World::new("relax_stdin");
    let rel = "claude/claude_bridge_default.cc21330.cassette.jsonl";
    let c = pi_cassette::Cassette::load(&repo_cassette(rel)).unwrap();
    assert_eq!(
        c.header.expect.stdin,
        Some(pi_cassette::StdinKind::Terminal)
    );
    let claude = || {
        let mut cmd = w.fake_pi(&repo_cassette(rel));
        cmd.args([
            "-p",
            "--output-format",
            "stream-json",
            "--verbose",
            "--allowedTools",
            "Bash,Read,Edit,Write",
            "--",
            "say hi",
        ])
        .env("ANTHROPIC_API_KEY", "k")
        .env("FAKE_PI_VALUES", "recorded")
        .env_remove("FAKE_PI_IGNORE")
        .stdin(Stdio::null());
        cmd
    };
    let (code, out, err) = run(&mut claude());
    assert_eq!((code, out.as_str()), (Some(99), ""), "{err}");
    assert!(
        err.contains("stdin: the recording's was a terminal"),
        "{err}"
    );
    assert!(
        err.lines().last().unwrap().contains("FAKE_PI_IGNORE=stdin"),
        "{err}"
    );
    let (code, out, err) = run(claude().env("FAKE_PI_IGNORE", "stdin"));
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(out, String::from_utf8_lossy(&c.stdout_bytes()), "{err}");
    w.assert_none_left();
}

/// The lines of a `FAKE_PI_PLAYED` trace, as JSON.
fn trace(file: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

#[test]
fn the_played_trace_names_each_start_that_played_and_no_refused_one() {
    let w = World::new("played_trace");
    let played = w.path().join("played.jsonl");
    let (code, _, err) = run(codex(&w, "gpt-5.5").env("FAKE_PI_PLAYED", &played));
    assert_eq!(code, Some(0), "{err}");
    let lines = trace(&played);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0]["fake_pi_played"], 1);
    assert!(lines[0]["pid"].as_u64().is_some(), "{lines:?}");
    let cassette = lines[0]["cassette"].as_str().unwrap();
    assert!(
        cassette.ends_with("codex/codex_text.cx0169.cassette.jsonl"),
        "{cassette}"
    );
    // A refused start played nothing: no line.
    let (code, _, _) = run(codex(&w, "o3").env("FAKE_PI_PLAYED", &played));
    assert_eq!(code, Some(99));
    assert_eq!(trace(&played).len(), 1);
    // Without the variable, nothing is written anywhere in the world.
    run(&mut codex(&w, "gpt-5.5"));
    assert_eq!(trace(&played).len(), 1);
    w.assert_none_left();
}

/// A directory of two cassettes, one per start: after one start the trace names only the
/// first (what a test's teardown calls "played in part"), after two both, in order.
#[test]
fn a_sequence_played_in_part_is_told_from_one_played_whole() {
    let w = World::new("played_sequence");
    let dir = w.path().join("seq");
    std::fs::create_dir_all(&dir).unwrap();
    let src = repo_cassette("recorded/text_only.pi87.cassette.jsonl");
    let names = ["1-first.cassette.jsonl", "2-second.cassette.jsonl"];
    for n in names {
        std::fs::copy(&src, dir.join(n)).unwrap();
    }
    let played = w.path().join("played.jsonl");
    let start = || {
        let mut cmd = w.fake_pi(&dir);
        cmd.args([
            "--mode",
            "json",
            "--provider",
            "fake",
            "--model",
            "fake-model",
        ])
        .arg("Say hello.")
        .env("FAKE_PI_PLAYED", &played)
        .env("FAKE_PI_STATE", w.path().join("seq.state"));
        run(&mut cmd)
    };
    let played_names = || -> Vec<String> {
        trace(&played)
            .iter()
            .map(|l| {
                let p = PathBuf::from(l["cassette"].as_str().unwrap());
                p.file_name().unwrap().to_string_lossy().into_owned()
            })
            .collect()
    };
    let (code, _, err) = start();
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(played_names(), [names[0]]);
    let (code, _, err) = start();
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(played_names(), names);
    w.assert_none_left();
}

#[test]
fn the_played_trace_is_never_written_through_a_link() {
    let w = World::new("played_link");
    let target = w.path().join("elsewhere.txt");
    std::fs::write(&target, "untouched\n").unwrap();
    let link = w.path().join("played.jsonl");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let (code, out, err) = run(codex(&w, "gpt-5.5").env("FAKE_PI_PLAYED", &link));
    assert_eq!(code, Some(0), "the replay goes on: {err}");
    assert!(!out.is_empty());
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "untouched\n");
    // One line of its own, then the recording's stderr.
    let (_, recorded_err) = recorded("codex/codex_text.cx0169.cassette.jsonl");
    let (own, rest) = err.split_once('\n').unwrap();
    assert!(
        own.starts_with(&format!("fake-pi: FAKE_PI_PLAYED {}: ", link.display())),
        "{err}"
    );
    assert_eq!(rest, recorded_err);
    w.assert_none_left();
}
