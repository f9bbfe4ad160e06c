//! The commands that used to hold a whole cassette stay under 64 MiB plus the line limit on a
//! bomb of short records (a small zstd that inflates to gigabytes of one-line records), their
//! address space capped at 80 MiB and their peak RSS measured: `cassette relax` copies a
//! record at a time; `cassette review`, `drift` and `record --record-mode all`'s comparison
//! hold a cassette whole only within a budget (`PI_HARNESS_MAX_HELD_BYTES`, 32 MiB) and end
//! past it with one line naming it; `cassette lint` ends the bomb within its budget of bytes
//! (`PI_HARNESS_LINT_MAX_BYTES`, 64 MiB), one problem naming it.
//!
//! Before: a 9.7 KB `.zst` took relax, review, drift and the comparison 646-750 MB, a 28 KB one
//! aborted under a 2 GiB limit; lint spent 842 s of CPU on a 458 KB bomb.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use pi_testkit::hostile::{assert_bounded, compressed_lines};
use pi_testkit::process::{measure, Measure, Measured};

use crate::util::{bin, marker, processes_with_marker};

/// The line limit the runs get (`PI_HARNESS_MAX_LINE_BYTES`): low, so the bound is tight.
const LINE: u64 = 1_000_000;
/// The address space each run gets: about 80 MiB.
const CAP: u64 = 80 << 20;
/// A json-mode cassette's header.
const HEADER: &str = r#"{"format":"pi-cassette","version":1,"pi":{"version":"0.87.1","dialect":"delta-only"},"scenario":{"name":"big","description":"many records"},"origin":{"kind":"hand-made","timing":"synthetic"}}"#;
/// A short record.
const SHORT: &str = "{\"dt_ms\":0,\"stdout_text\":\"a\",\"newline\":true}\n";
/// The end of a cassette.
const END: &str = "{\"dt_ms\":0,\"exit\":0}\n";
/// The held budget's message, after `FILE:LINE: `.
const HELD: &str = "more than 33554432 bytes of records to hold (the limit of a command that holds a whole cassette; raise it with PI_HARNESS_MAX_HELD_BYTES=BYTES)";

/// A zstd of `bytes` of short records, with a header and an end.
fn short_bomb(path: &Path, bytes: u64) -> u64 {
    compressed_lines(path, &format!("{HEADER}\n"), SHORT, bytes, END)
}

fn pih(test: &str, args: &[&str]) -> Command {
    let mut c = Command::new(bin());
    c.args(args)
        .env("PI_HARNESS_TEST_MARKER", marker(test))
        .env("PI_HARNESS_MAX_LINE_BYTES", LINE.to_string())
        .env_remove("PI_HARNESS_MAX_HELD_BYTES")
        .env_remove("PI_HARNESS_LINT_MAX_BYTES")
        .env_remove("RUST_BACKTRACE");
    c
}

fn run(cmd: &Command, timeout: u64) -> Measured {
    measure(
        cmd,
        Measure {
            stdin: Stdio::null(),
            cap_bytes: CAP,
            timeout: Some(Duration::from_secs(timeout)),
            discard_stdout: false,
        },
    )
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn relax_copies_a_record_at_a_time() {
    let test = "memory-relax";
    let dir = tempfile::tempdir().unwrap();
    // 16 MiB of short records: about 110 MB held whole.
    let many = dir.path().join("many.cassette.jsonl.zst");
    let n = short_bomb(&many, 16 << 20);
    let out = dir.path().join("out.cassette.jsonl.zst");
    let m = run(
        &pih(
            test,
            &[
                "cassette",
                "relax",
                path(&many),
                "--ignore",
                "model",
                "--out",
                path(&out),
            ],
        ),
        120,
    );
    assert_bounded(
        "relax on many short records",
        &m,
        0,
        &format!("{}: a replay no longer compares model", out.display()),
        LINE,
    );
    // Every record came through, under the new header.
    let mut reader = pi_cassette::CassetteReader::open(&out).unwrap();
    assert_eq!(reader.header().expect.irrelevant, ["model"]);
    let mut records = 0;
    while let Some(r) = reader.next_ref() {
        r.unwrap();
        records += 1;
    }
    assert_eq!(records, n + 1);
    assert!(processes_with_marker(test).is_empty());
}

#[test]
fn review_drift_and_the_record_mode_comparison_hold_a_cassette_within_a_budget() {
    let test = "memory-held";
    let dir = tempfile::tempdir().unwrap();
    let small = format!("{HEADER}\n{SHORT}{END}");
    // review: a pending re-recording that is a bomb.
    let rev = dir.path().join("rev");
    std::fs::create_dir_all(&rev).unwrap();
    std::fs::write(rev.join("x.cassette.jsonl"), &small).unwrap();
    let pending = rev.join("x.cassette.jsonl.new");
    short_bomb(&pending, 2 << 30);
    let m = run(
        &pih(test, &["cassette", "review", "--reject-all", path(&rev)]),
        120,
    );
    let first = String::from_utf8_lossy(&m.stderr);
    assert!(first.contains(HELD), "{first}");
    assert_bounded(
        "review of a bomb",
        &m,
        2,
        &format!("error: {}:", pending.display()),
        LINE,
    );
    // drift: a fresh cassette that is a bomb.
    let (committed, fresh) = (dir.path().join("committed"), dir.path().join("fresh"));
    std::fs::create_dir_all(&committed).unwrap();
    std::fs::create_dir_all(&fresh).unwrap();
    std::fs::write(committed.join("x.pi87.cassette.jsonl"), &small).unwrap();
    let bomb = fresh.join("x.pi87.cassette.jsonl.zst");
    short_bomb(&bomb, 2 << 30);
    let m = run(
        &pih(
            test,
            &[
                "drift",
                "--committed",
                path(&committed),
                "--fresh",
                path(&fresh),
            ],
        ),
        120,
    );
    let err = String::from_utf8_lossy(&m.stderr);
    assert!(err.contains(HELD), "{err}");
    assert_bounded(
        "drift of a bomb",
        &m,
        2,
        &format!("error: {}:", bomb.display()),
        LINE,
    );
    // record --record-mode all: the committed cassette it compares with is a bomb.
    let s = crate::cli_record::setup();
    let old = s.path().join("old.cassette.jsonl.zst");
    short_bomb(&old, 2 << 30);
    let mut cmd = pih(test, &["record", "--record-mode", "all", "--script"]);
    cmd.env("FAKE_PI_MODE", "")
        .arg(&s.script)
        .arg("--out")
        .arg(s.path().join("old.cassette.jsonl"))
        .arg("--pi")
        .arg(&s.pi)
        .args([
            "--pi-version",
            "0.87.1",
            "--stdin",
            "say hi",
            "--timeout",
            "60",
        ])
        .args([
            "--",
            "--mode",
            "json",
            "--provider",
            "fake",
            "--model",
            "fake-model",
            "--no-session",
        ])
        .env_remove("CI");
    let m = run(&cmd, 120);
    let err = String::from_utf8_lossy(&m.stderr);
    assert!(err.contains(HELD), "{err}");
    assert_eq!(m.code, Some(2), "{err}");
    let bound_kib = ((64 << 20) + LINE) / 1024;
    assert!(
        m.peak_rss_kib < bound_kib,
        "record: peak RSS {} KiB",
        m.peak_rss_kib
    );
    s.world.assert_none_left_within(Duration::from_secs(5));
    assert!(processes_with_marker(test).is_empty());
}

/// The 458 KB-class bomb: a zstd of gigabytes of short records. lint stops at its budget of
/// bytes, one problem naming it (its CPU time is the report's figure, not asserted here).
#[test]
fn lint_ends_a_bomb_of_short_records_at_its_budget() {
    let test = "memory-lint";
    let dir = tempfile::tempdir().unwrap();
    let bomb = dir.path().join("bomb.cassette.jsonl.zst");
    short_bomb(&bomb, 2 << 30);
    println!(
        "lint bomb: {} bytes of zstd",
        std::fs::metadata(&bomb).unwrap().len()
    );
    let m = run(&pih(test, &["cassette", "lint", path(&bomb)]), 300);
    println!("lint bomb: peak RSS {} KiB", m.peak_rss_kib);
    let out = String::from_utf8_lossy(&m.stdout);
    assert!(!m.timed_out, "{out}");
    assert_eq!(m.code, Some(1), "{out}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 1, "{out}");
    assert!(
        lines[0].starts_with(&format!("{}:", bomb.display()))
            && lines[0].ends_with(": more than 67108864 bytes to check (lint's budget; raise it with PI_HARNESS_LINT_MAX_BYTES=BYTES): the rest is not checked"),
        "{out}"
    );
    let bound_kib = ((64 << 20) + LINE) / 1024;
    assert!(
        m.peak_rss_kib < bound_kib,
        "lint: peak RSS {} KiB",
        m.peak_rss_kib
    );
    assert!(processes_with_marker(test).is_empty());
}
