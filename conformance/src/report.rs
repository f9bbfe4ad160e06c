//! The report, as text: one block per case ([`case_text`], written as soon as the case
//! finishes: `PASS`, `FAIL` with its problems and per-field differences, `SKIP` with the
//! capabilities not claimed), then a table per capability and the command that reproduces one
//! failing case ([`summary`]). Pure: the caller decides where the text goes.

use crate::capability::CAPABILITIES;
use crate::shown::{diff_lines, shell_quote};
use crate::verdict::{CaseResult, Verdict};

/// The report: one line per case (with diffs on failure), a summary table per capability,
/// and the command that reproduces one failing case.
pub fn report(name: &str, reproduce_base: &str, results: &[CaseResult]) -> String {
    let mut s: String = results.iter().map(case_text).collect();
    s.push_str(&summary(name, reproduce_base, results));
    s
}

/// One case's lines of the report (printed as soon as the case finishes).
pub fn case_text(r: &CaseResult) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    {
        match &r.verdict {
            Verdict::Passed => writeln!(s, "PASS  {} ({} ms)", r.case, r.ms).unwrap(),
            Verdict::Skipped { missing } => {
                writeln!(s, "SKIP  {} (not claimed: {})", r.case, missing.join(", ")).unwrap()
            }
            Verdict::Failed {
                problems,
                diffs,
                unlisted_diffs,
            } => {
                writeln!(s, "FAIL  {} ({} ms)", r.case, r.ms).unwrap();
                for p in problems {
                    writeln!(s, "      {p}").unwrap();
                }
                s.push_str(&diff_lines(diffs, *unlisted_diffs));
            }
        }
    }
    s
}

/// The end of the report: the table per capability and the reproduce line.
pub fn summary(name: &str, reproduce_base: &str, results: &[CaseResult]) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let count = |f: &dyn Fn(&CaseResult) -> bool| results.iter().filter(|r| f(r)).count();
    let passed = |r: &CaseResult| matches!(r.verdict, Verdict::Passed);
    let failed = |r: &CaseResult| matches!(r.verdict, Verdict::Failed { .. });
    let skipped = |r: &CaseResult| matches!(r.verdict, Verdict::Skipped { .. });
    writeln!(s).unwrap();
    writeln!(s, "implementation: {name}").unwrap();
    writeln!(s, "| capability | cases | passed | failed | skipped |").unwrap();
    writeln!(s, "|---|---:|---:|---:|---:|").unwrap();
    for cap in CAPABILITIES {
        let has = |r: &CaseResult| r.capabilities.iter().any(|c| c == cap);
        let n = count(&|r| has(r));
        if n == 0 {
            continue;
        }
        writeln!(
            s,
            "| {cap} | {n} | {} | {} | {} |",
            count(&|r| has(r) && passed(r)),
            count(&|r| has(r) && failed(r)),
            count(&|r| has(r) && skipped(r))
        )
        .unwrap();
    }
    writeln!(
        s,
        "| **all** | {} | {} | {} | {} |",
        results.len(),
        count(&passed),
        count(&failed),
        count(&skipped)
    )
    .unwrap();
    if let Some(r) = results.iter().find(|r| failed(r)) {
        writeln!(
            s,
            "\nreproduce one failure:\n  {reproduce_base} --case {}",
            shell_quote(&r.case)
        )
        .unwrap();
    } else if let Some(r) = results.first() {
        writeln!(
            s,
            "\nreproduce one case:\n  {reproduce_base} --case {}",
            shell_quote(&r.case)
        )
        .unwrap();
    }
    s
}
