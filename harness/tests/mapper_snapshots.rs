//! The mapper over every committed cassette, with its output kept as an insta snapshot
//! (`harness/tests/snapshots/`), plus the invariants on each. The stream end comes from
//! the cassette's final record: exit code or signal after EOF; a hang is cancelled.

mod common;

use pi_harness::cassette::Cassette;
use pi_harness::mapper::{map_all, MapperOptions};

use common::*;

#[test]
fn mapper_output_for_every_cassette() {
    insta::glob!("../../cassettes", "**/*.cassette.jsonl*", |path| {
        let c = Cassette::load(path).unwrap_or_else(|e| panic!("{e}"));
        let stdout = c.stdout_bytes();
        let out = map_all(&stdout, end_of(&c), MapperOptions::default());
        let name = path.display();
        check_structure(&out).unwrap_or_else(|e| panic!("{name}: {e}"));
        check_text_invariant(&stdout, &out).unwrap_or_else(|e| panic!("{name}: {e}"));
        check_thoughts(&stdout, &out).unwrap_or_else(|e| panic!("{name}: {e}"));
        insta::with_settings!({
            description => format!("{} (pi {}, {})", c.header.scenario.description, c.header.pi.version, c.header.pi.dialect),
            omit_expression => true,
        }, {
            insta::assert_yaml_snapshot!(out);
        });
    });
}
