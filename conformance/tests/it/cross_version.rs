//! For every scenario recorded on more than one pi version (`cassettes/recorded/*.pi73`,
//! `*.pi87`, `*.pi152`), the normalized streams are equal to 0.73.1's once the documented differences
//! (`conformance::cross_version::DIFFERENCES`) are taken out, and every documented
//! difference is actually needed by some scenario (the list stays short and true).

use crate::util::*;
use conformance::conform;
use conformance::cross_version::{normalize, DIFFERENCES};

#[test]
fn both_versions_give_the_same_stream_but_for_the_documented_differences() {
    let cases = conform::discover(&cassettes_dir()).expect("cases");
    let mut pairs = 0;
    let mut differing = Vec::new();
    for c73 in cases
        .iter()
        .filter(|c| c.name.starts_with("recorded/") && c.name.ends_with(".pi73"))
    {
        let scenario = c73.name.trim_end_matches(".pi73");
        for tag in ["pi87", "pi152"] {
            let Some(other) = cases.iter().find(|c| c.name == format!("{scenario}.{tag}")) else {
                continue;
            };
            pairs += 1;
            let a = conform::load_expected(&expected_dir(), &c73.name)
                .expect("expected")
                .messages;
            let b = conform::load_expected(&expected_dir(), &other.name)
                .expect("expected")
                .messages;
            if a != b {
                differing.push(format!("{scenario} ({tag})"));
            }
            let (na, nb) = (normalize(&a), normalize(&b));
            let diffs = conform::compare(&na, &nb);
            assert!(
                diffs.is_empty(),
                "{scenario}: 0.73.1 and {tag} differ beyond the documented list: {diffs:#?}"
            );
        }
    }
    assert!(pairs >= 40, "only {pairs} scenario pairs found");
    eprintln!("{pairs} pairs; differing before normalization: {differing:?}");
    // Each documented difference is needed: drop it and some pair differs.
    assert!(differing.len() >= DIFFERENCES.len(), "{differing:?}");
    for must in [
        "auth_401",
        "retries_exhausted",
        "session_resume",
        "tool_bash",
        "tools_parallel_one_fails",
    ] {
        assert!(
            differing.iter().any(|d| d.contains(must)),
            "recorded/{must} was expected to differ between versions (a documented difference)"
        );
    }
}
