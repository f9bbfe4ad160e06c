//! Parity with real Codex CLI on command lines it answers without running: the same argv
//! goes to real `codex` and to fake-pi (as Codex, with a Codex cassette), and stdout, stderr
//! and the exit status must agree.
//!
//! Runs only when `PI_HARNESS_REAL_CODEX` names a real `codex` (the npm package's
//! `node_modules/.bin/codex`, 0.169.0); otherwise it prints a skip line. Both run with an
//! empty `CODEX_HOME` of the test's own and stdin from /dev/null, and every case fails
//! before Codex would reach a model. Two lines of real Codex's stderr are not imitated and
//! are left out of the comparison: the warning it prints when `CODEX_HOME` is under /tmp
//! (`WARNING: proceeding, even though we could not create PATH aliases: ...`) and the
//! `Stack backtrace:` it prints after an `Error: ...` of its own.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use crate::util::*;

const CASES: &[&[&str]] = &[
    &["--version"],
    &["--help"],
    &["exec", "--version"],
    &["exec", "-V"],
    &["exec", "--help"],
    &["exec", "-h"],
    &["exec", "resume", "--help"],
    &["--bogus"],
    &["--json", "exec", "hi"],
    &["exec", "--bogus", "hi"],
    &["exec", "--modle", "x", "hi"],
    &["exec", "--jsn", "hi"],
    &["exec", "--full-auto", "hi"],
    &["exec", "-x"],
    &["exec", "-m"],
    &["exec", "--model"],
    &["exec", "-m", "--json", "hi"],
    &["exec", "-m", "-x", "hi"],
    &["exec", "-s", "bogus", "hi"],
    &["exec", "--sandbox=bogus", "hi"],
    &["exec", "--color", "bogus", "hi"],
    &["exec", "--json", "--json", "hi"],
    &["exec", "-m", "a", "-m", "b", "hi"],
    &["exec", "--json=1", "hi"],
    &["exec", "hi", "there"],
    &["exec", "resume", "--bogus"],
    &["exec", "resume", "-s", "read-only", "x"],
    &["exec", "-c", "hi"],
    &["exec", "-c"],
    &["exec", "--json"],
    &["exec", "--json", "-"],
    &[
        "exec",
        "--skip-git-repo-check",
        "-c",
        "sandbox_mode=bogus",
        "hi",
    ],
    &[
        "exec",
        "--skip-git-repo-check",
        "-c",
        "model_provider=nope",
        "hi",
    ],
    // The top level's --ask-for-approval names only its shown values (hidden ones refused).
    &["-a", "untrusted", "exec"],
    &["-a", "bogus", "exec"],
    // Outside a Git repository without --skip-git-repo-check (the test's dir is not one).
    &["exec", "--json", "hi"],
    &["e", "-mX", "--sandbox=read-only", "--", "-x"],
    &["exec", "resume", "--last", "--json", "abc"],
    &["exec", "resume", "abc", "def"],
    // Repeatable options, read whole; then no prompt on stdin.
    &["-c", "model=x", "exec", "-c", "a=1", "-c", "b=2"],
    &["exec", "--add-dir", "a", "--add-dir", "b"],
    &["exec", "-i", "a", "b"],
    &["exec", "resume", "--last"],
    &["exec", "-o"],
    &["exec", "--output-schema"],
];

/// stderr as compared: without the lines fake-pi does not imitate (see the module docs).
fn comparable(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    let text = match text.find("\n\nStack backtrace:") {
        Some(at) => format!("{}\n", &text[..at]),
        None => text.into_owned(),
    };
    text.lines()
        .filter(|l| {
            !l.starts_with("WARNING: proceeding, even though we could not create PATH aliases")
        })
        .map(|l| format!("{l}\n"))
        .collect()
}

fn run(mut cmd: Command, home: &Path, args: &[&str]) -> Output {
    cmd.args(args)
        .env("CODEX_HOME", home)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .unwrap()
}

#[test]
fn real_codex_parity() {
    let Some(real) = std::env::var_os("PI_HARNESS_REAL_CODEX").filter(|v| !v.is_empty()) else {
        println!("real_codex_parity: skipped (PI_HARNESS_REAL_CODEX is not set; it names a real `codex`, npm @openai/codex@0.169.0)");
        return;
    };
    let sb = World::new(module_path!());
    let home = sb
        .write("codex-home/.keep", "")
        .parent()
        .unwrap()
        .to_path_buf();
    let c = sb.write(
        "x.cx0169.cassette.jsonl",
        r#"{"format":"pi-cassette","version":1,"codex":{"version":"0.169.0","dialect":"exec-json"},"scenario":{"name":"parity","description":"command-line errors"},"origin":{"kind":"hand-made","timing":"synthetic"}}
{"dt_ms":0,"exit":0}
"#,
    );
    let mut failures = Vec::new();
    for args in CASES {
        let mut r = Command::new(&real);
        r.current_dir(sb.path()).env(MARKER_VAR, sb.marker());
        let want = run(r, &home, args);
        let mut fake = sb.fake_pi(&c);
        // The default: fake-pi's hints go to its report only.
        fake.env_remove("FAKE_PI_HINTS");
        let got = run(fake, &home, args);
        let (ws, gs) = (comparable(&want.stderr), comparable(&got.stderr));
        if want.status.code() != got.status.code() || want.stdout != got.stdout || ws != gs {
            failures.push(format!(
                "codex {args:?}:\n  real: exit {:?}, stdout {:?}, stderr {ws:?}\n  fake: exit {:?}, stdout {:?}, stderr {gs:?}",
                want.status.code(),
                String::from_utf8_lossy(&want.stdout),
                got.status.code(),
                String::from_utf8_lossy(&got.stdout),
            ));
        }
    }
    sb.assert_none_left_within(std::time::Duration::from_secs(5));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    println!(
        "real_codex_parity: {} command lines agree with {}",
        CASES.len(),
        Path::new(&real).display()
    );
}
