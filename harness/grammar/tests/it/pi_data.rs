//! pi's command line as data per pinned version (`data/pi/VERSION/grammar.tsv`, written by
//! `scripts/pi-grammar.sh` from each package's own parser) against the flag table the grammar
//! runs on: the same flags, spellings, kinds, thinking levels and `--`, for every pinned
//! version, and a data directory for exactly the pinned versions. With the real-pi lane
//! (`real_grammar_scripts`) proving that the script reproduces these files from the packages,
//! the script's output for a new release can be trusted.

use std::path::{Path, PathBuf};

use pi_grammar::{FlagKind, Grammar, KNOWN_VERSIONS};

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("data/pi")
}

/// The rows `scripts/pi-grammar.sh` writes, rendered from the grammar's flag table.
fn rendered(g: &Grammar) -> Vec<String> {
    let mut rows: Vec<String> = g
        .flags()
        .map(|f| {
            let kind = match f.kind {
                FlagKind::Switch => "switch",
                FlagKind::Value => "value",
                FlagKind::Repeated => "repeated",
                FlagKind::OptionalValue => "optional",
            };
            format!("{}\t{}\t{kind}", f.long, f.short.unwrap_or("-"))
        })
        .collect();
    rows.sort();
    rows.push(format!(
        "# thinking levels: {}",
        g.thinking_levels().join(",")
    ));
    rows.push(format!(
        "# -- ends the options: {}",
        if g.has_double_dash() { "yes" } else { "no" }
    ));
    rows
}

/// The data file's rows: every line after the leading comment block (what the file is, the
/// column names).
fn committed(version: &str) -> Vec<String> {
    let path = data_dir().join(version).join("grammar.tsv");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (run scripts/pi-grammar.sh on pi {version} with --write)",
            path.display()
        )
    });
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].starts_with(&format!("# pi {version}'s command line")),
        "{}: {}",
        path.display(),
        lines[0]
    );
    lines
        .iter()
        .skip_while(|l| {
            l.starts_with("# ") && !l.starts_with("# thinking") && !l.starts_with("# --")
        })
        .map(|l| l.to_string())
        .collect()
}

#[test]
fn the_flag_table_is_the_data_of_every_pinned_version() {
    for version in KNOWN_VERSIONS {
        let g = Grammar::for_version(version).unwrap();
        assert_eq!(
            rendered(&g),
            committed(version),
            "pi {version}: harness/grammar/src/flags.rs and version.rs differ from data/pi/{version}/grammar.tsv"
        );
    }
}

#[test]
fn there_is_data_for_exactly_the_pinned_versions() {
    let mut dirs: Vec<String> = std::fs::read_dir(data_dir())
        .unwrap()
        .filter_map(|e| {
            let e = e.unwrap();
            e.path()
                .is_dir()
                .then(|| e.file_name().into_string().unwrap())
        })
        .collect();
    dirs.sort_by_key(|v| pi_grammar::Version::parse(v));
    assert_eq!(dirs, KNOWN_VERSIONS);
}

#[test]
fn a_changed_table_is_caught() {
    // The comparison is not vacuous: 0.87.1's table is not 0.73.1's data.
    let g87 = Grammar::for_version("0.87.1").unwrap();
    assert_ne!(rendered(&g87), committed("0.73.1"));
}
