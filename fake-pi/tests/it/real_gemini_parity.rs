//! Parity with real Gemini CLI on command lines it answers without running: the same argv
//! goes to real `gemini` and to fake-pi (as Gemini, with a Gemini cassette), and stdout,
//! stderr and the exit status must agree.
//!
//! Runs only when `PI_HARNESS_REAL_GEMINI` names a real `gemini` (the npm package's
//! `node_modules/.bin/gemini`, 0.61.0); otherwise it prints a skip line. Both run with an
//! empty HOME of the test's own, in the test's dir, with stdin from /dev/null; every case
//! stops before Gemini would reach a model.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use crate::util::*;

const CASES: &[&[&str]] = &[
    &["--version"],
    &["-v"],
    &["--help"],
    &["-h"],
    &["--bogus"],
    &["--bogus", "--other"],
    &["--bogus", "--help"],
    &["--bogus", "--version"],
    &["-p"],
    &["--prompt"],
    &["-m"],
    &["--model"],
    &["--bogus", "-m"],
    &["-mfoo", "--bogus"],
    &["-yz"],
    &["--model=x", "--zz=3"],
    &["-o", "xml"],
    &["--output-format", "xml", "-p", "hi"],
    &["-o", "xx", "--bogus"],
    &["--approval-mode", "bad"],
    &["-y", "--approval-mode", "default"],
    &["-y", "--approval-mode", "yolo", "--bogus"],
    &["-p", "hi", "query"],
];

fn run(mut cmd: Command, home: &Path, args: &[&str]) -> Output {
    cmd.args(args)
        .env("HOME", home)
        .env_remove("GEMINI_API_KEY")
        .env_remove("GEMINI_MODEL")
        .env_remove("GEMINI_CLI_NO_RELAUNCH")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .unwrap()
}

#[test]
fn real_gemini_parity() {
    let Some(real) = std::env::var_os("PI_HARNESS_REAL_GEMINI").filter(|v| !v.is_empty()) else {
        println!("real_gemini_parity: skipped (PI_HARNESS_REAL_GEMINI is not set; it names a real `gemini`, npm @google/gemini-cli@0.61.0)");
        return;
    };
    let sb = World::new(module_path!());
    let home = sb.write("home/.keep", "").parent().unwrap().to_path_buf();
    let c = sb.write(
        "x.gm061.cassette.jsonl",
        r#"{"format":"pi-cassette","version":1,"gemini":{"version":"0.61.0","dialect":"gemini-stream-json"},"scenario":{"name":"parity","description":"command-line errors"},"origin":{"kind":"hand-made","timing":"synthetic"}}
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
        fake.current_dir(sb.path()).env_remove("FAKE_PI_HINTS");
        let got = run(fake, &home, args);
        if want.status.code() != got.status.code()
            || want.stdout != got.stdout
            || want.stderr != got.stderr
        {
            failures.push(format!(
                "gemini {args:?}:\n  real: exit {:?}, stdout {:?}, stderr {:?}\n  fake: exit {:?}, stdout {:?}, stderr {:?}",
                want.status.code(),
                String::from_utf8_lossy(&want.stdout),
                String::from_utf8_lossy(&want.stderr),
                got.status.code(),
                String::from_utf8_lossy(&got.stdout),
                String::from_utf8_lossy(&got.stderr),
            ));
        }
    }
    sb.assert_none_left_within(std::time::Duration::from_secs(5));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    println!(
        "real_gemini_parity: {} command lines agree with {}",
        CASES.len(),
        Path::new(&real).display()
    );
}
