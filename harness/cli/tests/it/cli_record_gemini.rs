//! `pi-harness record --agent gemini` refusing what it cannot record, before anything runs
//! (no real Gemini CLI needed): an option Gemini CLI does not have, an option without its
//! value, a client script, production names (Gemini takes its model from `-m`), a malformed
//! `--setting`, and `--setting`/`--env` for another agent. Each is one `error:` line and exit 2,
//! and writes nothing. The recordings themselves are `real_gemini_record`'s.

use pi_testkit::World;

use crate::util::pih;

#[test]
fn gemini_recordings_it_cannot_make_are_refused_in_one_line() {
    let w = World::new("record-gemini-refused");
    let script = w.write("s.llm.json", r#"{"turns":[{"text":["hi"]}]}"#);
    let out = w.path().join("x.cassette.jsonl");
    let fake = pi_testkit::fake_pi();
    let cases: [(&[&str], &[&str], &str); 7] = [
        (
            &["--agent", "gemini"],
            &["--nope", "-p", "hi"],
            "gemini: unknown argument '--nope'",
        ),
        (
            &["--agent", "gemini"],
            &["-p", "hi", "-m"],
            "gemini: --model needs a value",
        ),
        (
            &["--agent", "gemini", "--client-script", "c.json"],
            &["-p", "hi"],
            "no --client-script, --provider or --model",
        ),
        (
            &["--agent", "gemini", "--provider", "google", "--model", "m"],
            &["-p", "hi"],
            "no --client-script, --provider or --model",
        ),
        (
            &["--agent", "gemini", "--setting", "general.maxAttempts"],
            &["-p", "hi"],
            "expected KEY=VALUE",
        ),
        (
            &["--setting", "general.maxAttempts=2"],
            &["--mode", "json", "hi"],
            "--setting and --env are for --agent gemini",
        ),
        (
            &["--agent", "codex", "--env", "GEMINI_CLI_NO_RELAUNCH=1"],
            &["exec", "hi"],
            "--setting and --env are for --agent gemini",
        ),
    ];
    for (opts, args, says) in cases {
        let o = pih()
            .args(["record", "--pi-version", "0.61.0", "--script"])
            .arg(&script)
            .arg("--out")
            .arg(&out)
            .arg("--pi")
            .arg(&fake)
            .args(opts)
            .arg("--")
            .args(args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{opts:?} {args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.starts_with("error: ") && err.contains(says),
            "{opts:?}: {err}"
        );
        assert!(!out.exists());
    }
    w.assert_none_left();
}
