//! `pi-harness conform` end to end, as a user runs it: the bundled reference provider passes
//! every case; the Node example (conformance/examples/node-impl) passes some cases, skips
//! the ones needing capabilities it does not claim and fails others, and the exit code says
//! so; one case reproduces alone; a bad case name is a clear error.

use std::process::Command;

mod support;
use support::*;

struct Table {
    cases: usize,
    passed: usize,
    failed: usize,
    skipped: usize,
}

/// The `| **all** | n | p | f | s |` row of the report.
fn all_row(report: &str) -> Table {
    let row = report
        .lines()
        .find(|l| l.starts_with("| **all** |"))
        .unwrap_or_else(|| panic!("no summary row in:\n{report}"));
    let n: Vec<usize> = row
        .split('|')
        .filter_map(|c| c.trim().parse().ok())
        .collect();
    assert_eq!(n.len(), 4, "{row}");
    Table {
        cases: n[0],
        passed: n[1],
        failed: n[2],
        skipped: n[3],
    }
}

fn conform(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(pi_harness_bin())
        .arg("conform")
        .args(args)
        .current_dir(root())
        .env("PI_HARNESS_FAKE_PI", fake_pi())
        .output()
        .expect("run pi-harness conform");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn node() -> bool {
    Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

const NODE_IMPL: &str = "node conformance/examples/node-impl/impl.js";

#[test]
fn the_bundled_provider_passes_every_case() {
    let cases = conformance::conform::discover(&cassettes_dir())
        .expect("cases")
        .len();
    let (code, out, err) = conform(&[]);
    assert_eq!(code, 0, "{out}{err}");
    let t = all_row(&out);
    assert_eq!(
        (t.cases, t.passed, t.failed, t.skipped),
        (cases, cases, 0, 0),
        "{out}"
    );
    assert_eq!(
        out.lines().filter(|l| l.starts_with("PASS  ")).count(),
        cases
    );
    assert!(
        out.contains("pi-harness conform --case "),
        "no reproduce line:\n{out}"
    );
}

#[test]
fn the_node_example_passes_some_skips_some_fails_some() {
    if !node() {
        eprintln!("node is not on PATH: the Node example is not run");
        return;
    }
    let (code, out, err) = conform(&["--impl", NODE_IMPL]);
    assert_eq!(
        code, 1,
        "a failing case must make the exit code non-zero\n{out}{err}"
    );
    let t = all_row(&out);
    assert!(t.passed > 0 && t.failed > 0 && t.skipped > 0, "{out}");
    assert_eq!(t.passed + t.failed + t.skipped, t.cases);
    // Skips name what is not claimed; failures show per-field differences and a reproduce line.
    assert!(
        out.contains("SKIP  recorded/session_resume.pi87 (not claimed: session)"),
        "{out}"
    );
    assert!(
        out.lines()
            .any(|l| l.starts_with("      [") && l.contains(": expected ")),
        "{out}"
    );
    let repro = out
        .lines()
        .skip_while(|l| !l.starts_with("reproduce one failure:"))
        .nth(1)
        .unwrap_or_else(|| panic!("no reproduce line:\n{out}"))
        .trim()
        .to_string();
    let case = repro.rsplit("--case ").next().unwrap().to_string();
    assert!(out.contains(&format!("FAIL  {case} (")), "{repro}");
    // The reproduce command runs that one case, and it fails again.
    let (code, one, _) = conform(&["--impl", NODE_IMPL, "--case", &case]);
    assert_eq!(code, 1, "{one}");
    assert_eq!(all_row(&one).cases, 1);
}

#[test]
fn a_case_the_node_example_handles_passes_alone() {
    if !node() {
        return;
    }
    let (code, out, err) = conform(&[
        "--impl",
        NODE_IMPL,
        "--case",
        "recorded/text_only.pi87",
        "--json",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    let line: serde_json::Value =
        serde_json::from_str(out.lines().next().expect("a JSON line")).expect("JSON");
    assert_eq!(line["case"], "recorded/text_only.pi87");
    assert_eq!(line["status"], "passed");
}

#[test]
fn an_unknown_case_is_a_clear_error() {
    let (code, out, err) = conform(&["--case", "no/such_case.pi87"]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains("no case \"no/such_case.pi87\""), "{err}");
}

#[test]
fn an_implementation_without_a_handshake_is_a_clear_error() {
    let (code, out, err) = conform(&["--impl", "true"]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains("--capabilities"), "{err}");
}
