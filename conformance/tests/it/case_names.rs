//! `pi-harness conform --case` takes a cassette in every form `pi-harness corpus list`
//! prints it (`cassettes/codex/codex_text.cx0169.cassette.jsonl`) as well as its case name
//! (`codex/codex_text.cx0169`); a mistyped case is one line naming the nearest.

use std::process::Command;

use crate::util::*;

fn pih(cache: &std::path::Path, args: &[&str]) -> (i32, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(pi_harness_bin())
        .args(args)
        .current_dir(dir.path())
        .env("PI_HARNESS_CACHE", cache)
        .output()
        .expect("run pi-harness");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// An implementation that claims no capability: every case is skipped, none run, so that
/// every name can be given at once cheaply.
const NONE_IMPL: &str = r#"if [ "$1" = --capabilities ]; then echo '{"protocol":1,"name":"none","capabilities":[]}'; exit 0; fi; exit 3"#;

#[test]
fn every_cassette_corpus_list_prints_is_a_case_by_that_name() {
    let cache = tempfile::tempdir().unwrap();
    let (code, list, err) = pih(cache.path(), &["corpus", "list"]);
    assert_eq!(code, 0, "{err}");
    let listed: Vec<&str> = list
        .lines()
        .filter(|l| l.starts_with("cassettes/") && !l.starts_with("cassettes/scripts/"))
        .filter(|l| l.contains(".cassette.jsonl"))
        .collect();
    assert!(listed.len() > 100, "{list}");
    let script = cache.path().join("none.sh");
    std::fs::write(&script, NONE_IMPL).unwrap();
    let implementation = format!("sh {}", script.display());
    let mut args = vec!["conform", "--impl", &implementation];
    for l in &listed {
        args.extend(["--case", l]);
    }
    let (code, out, err) = pih(cache.path(), &args);
    assert_eq!(code, 0, "{err}");
    let row = out
        .lines()
        .chain(err.lines())
        .find(|l| l.starts_with("| **all** |"))
        .unwrap_or_else(|| panic!("no summary row:\n{out}{err}"));
    assert_eq!(
        row,
        format!("| **all** | {n} | 0 | 0 | {n} |", n = listed.len()),
        "each listed cassette is one case"
    );
    // A case name, as `conform` names a case.
    let (code, out, err) = pih(
        cache.path(),
        &[
            "conform",
            "--impl",
            &implementation,
            "--case",
            "./cassettes/codex/codex_text.cx0169.cassette.jsonl",
            "--case",
            "gemini/gemini_text.gm061",
        ],
    );
    assert_eq!(code, 0, "{err}");
    for name in ["codex/codex_text.cx0169", "gemini/gemini_text.gm061"] {
        assert!(out.contains(&format!("SKIP  {name} ")), "{name}: {out}");
    }
}

#[test]
fn a_mistyped_case_names_the_nearest() {
    let cache = tempfile::tempdir().unwrap();
    let (code, out, err) = pih(
        cache.path(),
        &[
            "conform",
            "--case",
            "cassettes/codex/codex_txt.cx0169.cassette.jsonl",
        ],
    );
    assert_eq!(code, 2, "{out}{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("no case \"codex/codex_txt.cx0169\""), "{err}");
    assert!(
        err.trim_end()
            .ends_with("did you mean codex/codex_text.cx0169?"),
        "{err}"
    );
}
