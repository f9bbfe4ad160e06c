//! fake-pi stays under 64 MiB plus the line limit on any cassette, measured as its peak RSS:
//! a gzip bomb (one endless line, with a header before it or not), a gzip of many valid
//! records, `/dev/zero` and a FIFO as the cassette; each ends by itself with a status of its
//! exit table and one line naming the limit it hit or what it refused. (Its stdin is bounded
//! the same way: `streaming::endless_stdin_stops_at_the_line_limit`.)

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use pi_testkit::hostile::{assert_bounded, bomb, compressed_lines, fifo};
use pi_testkit::process::{measure, Measure, Measured};

use crate::util::*;

/// The line limit the runs get (`PI_HARNESS_MAX_LINE_BYTES`): low, so the bound is tight.
const LINE: u64 = 1_000_000;
const HEADER: &str = r#"{"format":"pi-cassette","version":1,"pi":{"version":"0.87.1","dialect":"delta-only"},"scenario":{"name":"big","description":"many records"},"origin":{"kind":"hand-made","timing":"synthetic"}}"#;
const LINE_LIMIT: &str =
    "line longer than 1000000 bytes (the limit; raise it with PI_HARNESS_MAX_LINE_BYTES=BYTES)";

/// fake-pi `--mode json hi` on `cassette` with `env` besides, measured: stdout discarded, address space capped at
/// 1 GiB, killed after 60 s.
fn replay(w: &World, cassette: &Path, env: &[(&str, &str)]) -> Measured {
    let mut cmd = w.fake_pi(cassette);
    cmd.args(["--mode", "json", "--no-session", "hi"])
        .env("PI_HARNESS_MAX_LINE_BYTES", LINE.to_string())
        .envs(env.iter().copied());
    measure(
        &cmd,
        Measure {
            stdin: Stdio::null(),
            cap_bytes: 1 << 30,
            timeout: Some(Duration::from_secs(60)),
            discard_stdout: true,
        },
    )
}

#[test]
fn any_cassette_is_replayed_or_refused_within_bounded_memory() {
    let w = World::new("memory-fake-pi");
    // gzip, and zstd: the recorder's format for a large run.
    for name in ["bomb.cassette.jsonl.gz", "bomb.cassette.jsonl.zst"] {
        let file = w.path().join(name);
        bomb(&file, b"", 2 << 30);
        assert_bounded(
            name,
            &replay(&w, &file, &[]),
            98,
            &format!(
                "fake-pi: invalid cassette: {}:1: {LINE_LIMIT}",
                file.display()
            ),
            LINE,
        );
    }
    let after_header = w.path().join("late-bomb.cassette.jsonl.gz");
    bomb(&after_header, format!("{HEADER}\n").as_bytes(), 2 << 30);
    assert_bounded(
        "a gzip bomb after a header",
        &replay(&w, &after_header, &[]),
        98,
        &format!(
            "fake-pi: invalid cassette: {}:2: {LINE_LIMIT}",
            after_header.display()
        ),
        LINE,
    );

    // 128 MiB of records, replayed to the end.
    let many = w.path().join("many.cassette.jsonl.gz");
    let record = format!(
        "{{\"dt_ms\":0,\"stdout\":{{\"type\":\"message_update\",\"pad\":\"{}\"}}}}\n",
        "p".repeat(400)
    );
    compressed_lines(
        &many,
        &format!("{HEADER}\n"),
        &record,
        128 << 20,
        "{\"dt_ms\":0,\"exit\":3}\n",
    );
    assert_bounded("many records", &replay(&w, &many, &[]), 3, "", LINE);
    // The same past the total limit: stopped there, naming it.
    assert_bounded(
        "many records past the total limit",
        &replay(&w, &many, &[("PI_HARNESS_MAX_INPUT_BYTES", "64000000")]),
        97,
        &format!(
            "fake-pi: {}: cannot read cassette: more than 64000000 bytes (the limit; raise it with PI_HARNESS_MAX_INPUT_BYTES=BYTES)",
            many.display()
        ),
        LINE,
    );

    let pipe = w.path().join("pipe.cassette.jsonl");
    fifo(&pipe);
    for (path, kind) in [
        (pipe.as_path(), "a FIFO"),
        (Path::new("/dev/zero"), "a device"),
    ] {
        assert_bounded(
            &format!("{}", path.display()),
            &replay(&w, path, &[]),
            97,
            &format!(
                "fake-pi: {}: cannot read cassette: {kind}, not a cassette file",
                path.display()
            ),
            LINE,
        );
    }
    w.assert_none_left();
}
