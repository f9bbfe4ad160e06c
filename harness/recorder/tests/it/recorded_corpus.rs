//! The committed recorded corpus (`cassettes/recorded/`): complete, small, and byte-stable.

use std::io::Read as _;
use std::path::{Path, PathBuf};

use pi_cassette::{Cassette, OriginKind, TimingKind};
use pi_recorder::corpus::{cassette_name, Manifest};

use crate::util::root;

fn find(dir: &Path, name: &str) -> Option<PathBuf> {
    let found: Vec<PathBuf> = ["", ".gz", ".zst"]
        .iter()
        .map(|s| dir.join(format!("{name}{s}")))
        .filter(|p| p.exists())
        .collect();
    assert!(found.len() < 2, "{name}: committed twice: {found:?}");
    found.into_iter().next()
}

#[test]
fn every_scenario_is_recorded_on_every_pinned_version_and_writes_back_byte_for_byte() {
    let manifest = Manifest::load(&root().join("cassettes/scripts/corpus.json")).unwrap();
    let dir = root().join("cassettes/recorded");
    let mut count = 0;
    for s in &manifest.scenarios {
        for release in pi_grammar::Agent::Pi.spec().releases {
            let (version, tag) = (&release.version, release.tag);
            if !s.applies_to(version) {
                continue;
            }
            let name = cassette_name(&s.name, tag);
            let path = find(&dir, &name).unwrap_or_else(|| panic!("{name} is not recorded"));
            let size = std::fs::metadata(&path).unwrap().len();
            assert!(
                size < 2 * 1024 * 1024,
                "{name}: {size} bytes; compress or shrink it"
            );
            let c = Cassette::load(&path).unwrap();
            assert_eq!(c.header.pi.version, *version, "{name}");
            // Every recording says what pi ran with, and whether it continued a session.
            assert!(
                c.header.expect.effective.is_some(),
                "{name}: no expect.effective"
            );
            assert!(
                c.header.expect.session.is_some(),
                "{name}: no expect.session"
            );
            assert_eq!(c.header.scenario.name, s.name, "{name}");
            assert_eq!(c.header.origin.kind, OriginKind::Recorded, "{name}");
            assert_eq!(c.header.origin.timing, TimingKind::Measured, "{name}");
            // What is stored is exactly what the writer produces (so a replay of the
            // parsed cassette writes the recorded, redacted bytes).
            let mut raw = Vec::new();
            pi_cassette::input::open(&path, &pi_cassette::Limits::default())
                .unwrap()
                .read_to_end(&mut raw)
                .unwrap();
            assert!(
                c.to_jsonl().as_bytes() == raw.as_slice(),
                "{name}: not byte-stable"
            );
            let text = String::from_utf8(raw).unwrap();
            for leak in [
                "pih-key-",
                "pi-harness-rec-",
                "/pi-cache/",
                "127.0.0.1:1",
                "127.0.0.1:2",
                "127.0.0.1:3",
                "127.0.0.1:4",
                "127.0.0.1:5",
                "127.0.0.1:6",
            ] {
                assert!(!text.contains(leak), "{name}: contains {leak:?}");
            }
            count += 1;
        }
    }
    assert!(count >= 60, "{count} cassettes");
}

#[test]
fn the_version_report_is_generated_from_the_committed_corpus() {
    let want = pi_recorder::versions::report(&root().join("cassettes/recorded")).unwrap();
    let have = std::fs::read_to_string(root().join("docs/pi-versions.md")).unwrap_or_default();
    assert!(
        want == have,
        "docs/pi-versions.md is stale: run scripts/pi-versions.sh --committed"
    );
    // It says what matters for an integrator.
    for must in [
        "`--no-mcp`",
        "agent_settled",
        "structuredContent",
        "exit 143",
        "SIGINT: dies",
    ] {
        assert!(want.contains(must), "the report lacks {must}");
    }
}
