//! `pi-harness record --agent codex` refusing what it cannot record, before anything runs
//! (no real Codex needed): a command line that is not `codex exec`, an option Codex does
//! not have, a client script; `--signal-to group` and `--retries` for another agent. Each is
//! one `error:` line and exit 2, and writes nothing. The recordings themselves are
//! `real_codex_record`'s.

use pi_testkit::World;

use crate::util::pih;

#[test]
fn codex_recordings_it_cannot_make_are_refused_in_one_line() {
    let w = World::new("record-codex-refused");
    let script = w.write("s.llm.json", r#"{"turns":[{"text":["hi"]}]}"#);
    let out = w.path().join("x.cassette.jsonl");
    let fake = pi_testkit::fake_pi();
    let cases: [(&[&str], &[&str], &str); 5] = [
        (
            &["--agent", "codex"],
            &["--json", "hi"],
            "records `codex exec`",
        ),
        (
            &["--agent", "codex"],
            &["exec", "--nope", "hi"],
            "unexpected argument '--nope'",
        ),
        (
            &["--agent", "codex", "--client-script", "c.json"],
            &["exec", "hi"],
            "--client-script drives two-way sessions only",
        ),
        (
            &[
                "--signal",
                "SIGTERM",
                "--at",
                "agent_start",
                "--signal-to",
                "group",
            ],
            &["--mode", "json", "hi"],
            "--signal-to group is for --agent codex and --agent gemini",
        ),
        (
            &["--retries", "1"],
            &["--mode", "json", "hi"],
            "--retries is for --agent codex",
        ),
    ];
    for (opts, args, says) in cases {
        let o = pih()
            .args(["record", "--pi-version", "0.169.0", "--script"])
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
