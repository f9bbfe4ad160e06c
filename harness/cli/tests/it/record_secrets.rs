//! `record --secret-env NAME` for every agent (pi, Claude Code, Codex, Gemini CLI), and
//! `--env NAME=VALUE` for Gemini CLI: a secret's value reaches the recorded CLI and is written
//! nowhere (the cassette, its header's `origin.source`, the recorder's stdout and stderr);
//! the header marks it `never_in_argv`. The CLI here is a bash script that prints every
//! secret it was given on stdout and stderr, as a CLI echoing its environment would.

use std::path::Path;
use std::time::Duration;

use pi_testkit::{World, MARKER_VAR};

use crate::util::pih;

/// The secret given with --secret-env.
const SECRET: &str = "pih-secret-env-value-0123456789";
/// A Gemini key given with --env (Gemini CLI's header marks GEMINI_API_KEY secret).
const ENV_KEY: &str = "pih-gemini-key-value-9876543210";

/// A CLI that answers `--version`, then prints what it was given: the secrets in a stdout
/// line (JSON) and on stderr, and one line the agent's reader takes as its end.
const CLI: &str = r#"#!/usr/bin/env bash
for a in "$@"; do [ "$a" = --version ] && { echo "${PIH_VERSION}"; exit 0; }; done
[ -t 0 ] || cat >/dev/null
printf '{"type":"init","session_id":"0199aaaa-bbbb-7ccc-8ddd-eeeeffff0000","note":"%s %s"}\n' "${PIH_SECRET:-unset}" "${GEMINI_API_KEY:-}"
echo "stderr: ${PIH_SECRET:-unset} ${GEMINI_API_KEY:-}" >&2
printf '{"type":"result","status":"success","subtype":"success"}\n'
"#;

fn cli(w: &World, name: &str, version: &str) -> std::path::PathBuf {
    let p = w.write(
        &format!("bin-{name}/{name}"),
        CLI.replace("${PIH_VERSION}", version),
    );
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

/// Record with `agent_args` and the CLI's `cli_args`; every byte written (the cassette, the
/// recorder's stdout and stderr) is searched for each secret; the header is returned.
fn record(w: &World, what: &str, agent_args: &[&str], cli_args: &[&str]) -> pi_cassette::Header {
    let out = w.path().join(format!("{what}.cassette.jsonl"));
    let o = pih()
        .env(MARKER_VAR, w.marker())
        .env("PIH_SECRET", SECRET)
        .arg("record")
        .arg("--script")
        .arg(w.write("no_model.llm.json", r#"{"turns":[]}"#))
        .arg("--out")
        .arg(&out)
        .args(["--secret-env", "PIH_SECRET", "--timeout", "60"])
        .args(agent_args)
        .arg("--")
        .args(cli_args)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{what}: {stderr}");
    let written = std::fs::read(&out).unwrap();
    for (place, bytes) in [
        ("the cassette", &written),
        ("stdout", &o.stdout),
        ("stderr", &o.stderr),
    ] {
        let text = String::from_utf8_lossy(bytes);
        for secret in [SECRET, ENV_KEY] {
            assert!(
                !text.contains(secret),
                "{what}: a secret in {place}:\n{text}"
            );
        }
    }
    let text = String::from_utf8_lossy(&written);
    assert!(
        text.contains("<PIH_SECRET>"),
        "{what}: the secret's placeholder is not where the CLI printed it:\n{text}"
    );
    let c = pi_cassette::Cassette::load(&out).unwrap();
    assert!(
        c.header
            .expect
            .never_in_argv
            .contains(&pi_cassette::Secret::Env("PIH_SECRET".into())),
        "{what}: {:?}",
        c.header.expect.never_in_argv
    );
    let source = c.header.origin.source.clone().unwrap_or_default();
    assert!(
        source.contains("--secret-env PIH_SECRET"),
        "{what}: {source}"
    );
    c.header
}

#[test]
fn a_secret_env_is_given_to_every_recorded_cli_and_written_nowhere() {
    let w = World::new("record-secrets");
    let pi = cli(&w, "pi", "0.87.1");
    let claude = cli(&w, "claude", "2.1.330");
    let codex = cli(&w, "codex", "0.169.0");
    let gemini = cli(&w, "gemini", "0.61.0");
    let path = |p: &Path| p.display().to_string();
    record(
        &w,
        "pi",
        &["--pi-version", "0.87.1", "--pi", &path(&pi)],
        &[
            "--mode",
            "json",
            "--provider",
            "fake",
            "--model",
            "fake-model",
            "hi",
        ],
    );
    record(
        &w,
        "claude",
        &[
            "--agent",
            "claude",
            "--pi-version",
            "2.1.330",
            "--stdin-terminal",
            "--pi",
            &path(&claude),
        ],
        &["-p", "hi", "--output-format", "stream-json", "--verbose"],
    );
    record(
        &w,
        "codex",
        &[
            "--agent",
            "codex",
            "--pi-version",
            "0.169.0",
            "--pi",
            &path(&codex),
        ],
        &["exec", "--json", "--skip-git-repo-check", "hi"],
    );
    // Gemini CLI: its key given with --env is a secret too (its header marks it), written
    // masked in the origin; a variable that is no secret is written as given.
    let header = record(
        &w,
        "gemini",
        &[
            "--agent",
            "gemini",
            "--pi-version",
            "0.61.0",
            "--env",
            &format!("GEMINI_API_KEY={ENV_KEY}"),
            "--env",
            "GEMINI_CLI_NO_RELAUNCH=1",
            "--pi",
            &path(&gemini),
        ],
        &["-p", "hi", "--output-format", "stream-json"],
    );
    let source = header.origin.source.unwrap_or_default();
    assert!(
        source.contains("--env GEMINI_API_KEY=<GEMINI_API_KEY>")
            && source.contains("--env GEMINI_CLI_NO_RELAUNCH=1"),
        "{source}"
    );
    w.assert_none_left_within(Duration::from_secs(5));
}

/// A secret too short to be told from other text cannot be kept out of a cassette: refused
/// before anything runs, naming the variable and never its value; an unset one is named too.
#[test]
fn a_secret_that_cannot_be_kept_out_is_refused_naming_the_variable() {
    let w = World::new("record-secrets-refused");
    let gemini = cli(&w, "gemini", "0.61.0");
    let out = w.path().join("x.cassette.jsonl");
    for (env, args, says) in [
        (
            ("PIH_SHORT", "abc"),
            vec!["--secret-env", "PIH_SHORT"],
            "$PIH_SHORT is a secret of 3 bytes",
        ),
        (
            ("PIH_OTHER", "x"),
            vec!["--secret-env", "PIH_UNSET_HERE"],
            "$PIH_UNSET_HERE is not set here",
        ),
        (
            ("PIH_OTHER", "x"),
            vec!["--env", "GEMINI_API_KEY=zq"],
            "$GEMINI_API_KEY is a secret of 2 bytes",
        ),
    ] {
        let o = pih()
            .env(MARKER_VAR, w.marker())
            .env(env.0, env.1)
            .env_remove("PIH_UNSET_HERE")
            .arg("record")
            .arg("--script")
            .arg(w.write("no_model.llm.json", r#"{"turns":[]}"#))
            .arg("--out")
            .arg(&out)
            .args(["--agent", "gemini", "--pi-version", "0.61.0", "--pi"])
            .arg(&gemini)
            .args(&args)
            .args(["--", "-p", "hi", "--output-format", "stream-json"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(!err.contains("abc") && !err.contains("zq"), "{err}");
        assert!(!out.exists());
    }
    w.assert_none_left();
}
