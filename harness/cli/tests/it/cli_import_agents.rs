//! `cassette import` takes pi's captures (and Claude Code's stream-json transcripts): a
//! capture of Codex CLI's or Gemini CLI's stdout, even given pi's `--pi-version` as an
//! earlier error advised, is refused in one line naming the agent and what import takes, and
//! writes nothing (before: a pi cassette full of their lines, exit 0). The help says which
//! agents import takes.

use crate::util::{pih, repo};

#[test]
fn a_codex_or_gemini_capture_is_refused_by_name_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let data = repo().join("harness/wire/tests/data");
    for (capture, agent) in [
        (
            "codex/text.stdout.jsonl",
            "Codex CLI's `codex exec --json` output",
        ),
        (
            "codex/tool.stdout.jsonl",
            "Codex CLI's `codex exec --json` output",
        ),
        (
            "gemini/FAIL400.stdout.jsonl",
            "Gemini CLI's `--output-format stream-json` output",
        ),
    ] {
        let out = dir.path().join("x.cassette.jsonl");
        let o = pih()
            .args(["cassette", "import"])
            .arg(data.join(capture))
            .arg("--out")
            .arg(&out)
            .args([
                "--pi-version",
                "1.5.2",
                "--scenario",
                "x",
                "--description",
                "d",
                "--exit",
                "0",
            ])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{capture}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.contains(&format!(
                "{capture}:1: is {agent}, not pi's: cassette import takes pi's"
            )),
            "{err}"
        );
        assert!(!out.exists(), "{capture}: a cassette was written");
    }
    let help = pih()
        .args(["cassette", "import", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(
        help.contains("The agents import takes: pi (json, rpc) and Claude Code")
            && help.contains("Codex CLI or Gemini CLI is refused"),
        "{help}"
    );
}
