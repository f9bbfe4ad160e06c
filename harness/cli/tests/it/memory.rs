//! `map`, `cassette show` and `cassette import` stay under 64 MiB plus the line limit on any
//! input, measured as the child's peak RSS: a gzip or zstd bomb (one endless line), a gzip of many
//! valid records, `/dev/zero` as the file and as stdin, a FIFO. Each ends by itself with a
//! status of the exit table and one line that names the limit it hit, or what it refused.
//!
//! Before: the mapper kept the whole text of an open assistant message (219 MB for 128 MB of
//! text deltas), and a line of raw output past its own 16 MiB cap was skipped without the
//! summary saying so (`PI_HARNESS_MAX_LINE_BYTES` did not apply to raw output). `show` held
//! every record (424 MB for 128 MiB of records, 536 MB for 66 MB of a client's lines).
//! `import` read its whole input and built the cassette in memory (2.1 GB for 256 MB of pi's
//! stdout; a 2 GB gzip bomb or `--stderr /dev/zero` read until memory ran out). `show` and
//! `import` waited forever on a FIFO with no writer.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use pi_testkit::hostile::{assert_bounded, bomb, compressed_lines, feed_zeros, fifo};
use pi_testkit::process::{measure, Measure, Measured};

use crate::util::{bin, cassettes, marker, processes_with_marker};

/// The line limit the runs get (`PI_HARNESS_MAX_LINE_BYTES`): low, so the bound is tight.
const LINE: u64 = 1_000_000;
/// A json-mode cassette's header.
const HEADER: &str = r#"{"format":"pi-cassette","version":1,"pi":{"version":"0.87.1","dialect":"delta-only"},"scenario":{"name":"big","description":"many records"},"origin":{"kind":"hand-made","timing":"synthetic"}}"#;
/// How much the "many records" inputs hold once decompressed.
const MANY: u64 = 128 << 20;
/// The line limit message.
const LINE_LIMIT: &str =
    "line longer than 1000000 bytes (the limit; raise it with PI_HARNESS_MAX_LINE_BYTES=BYTES)";
/// The total limit message (the runs that need it get 64000000).
const TOTAL_LIMIT: &str =
    "more than 64000000 bytes (the limit; raise it with PI_HARNESS_MAX_INPUT_BYTES=BYTES)";

/// A line of pi's stdout, 400-odd bytes.
fn pi_line() -> String {
    format!(
        "{{\"type\":\"message_update\",\"assistantMessageEvent\":{{\"type\":\"text_delta\",\"delta\":\"{}\"}}}}\n",
        "x".repeat(400)
    )
}

/// `pi-harness ARGS` with the line limit low (and the total limit when `total`), under the
/// test's marker.
fn pih(test: &str, args: &[&str], total: bool) -> Command {
    let mut c = Command::new(bin());
    c.args(args)
        .env("PI_HARNESS_TEST_MARKER", marker(test))
        .env("PI_HARNESS_MAX_LINE_BYTES", LINE.to_string())
        .env_remove("RUST_BACKTRACE");
    if total {
        c.env("PI_HARNESS_MAX_INPUT_BYTES", "64000000");
    }
    c
}

/// Run `cmd` measured: stdin from `stdin` (a path) or none, stdout kept or not, its address
/// space capped at 1 GiB (the unbounded readers failed there instead of taking the machine),
/// killed after 60 s (a FIFO with no writer blocked them forever).
fn run(cmd: &Command, stdin: Option<&Path>, keep_stdout: bool) -> Measured {
    let stdin = match stdin {
        Some(p) => Stdio::from(std::fs::File::open(p).unwrap()),
        None => Stdio::null(),
    };
    measure(
        cmd,
        Measure {
            stdin,
            cap_bytes: 1 << 30,
            timeout: Some(Duration::from_secs(60)),
            discard_stdout: !keep_stdout,
        },
    )
}

fn zero() -> &'static Path {
    Path::new("/dev/zero")
}

/// Open the FIFO's read end and close it: a writer waiting for a reader that never came
/// (the tool refused the FIFO) opens, writes into a closed pipe and ends.
fn release(fifo: &Path) {
    use std::os::unix::fs::OpenOptionsExt as _;
    let _ = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(fifo);
}

#[test]
fn map_stays_bounded() {
    let test = "memory-map";
    let dir = tempfile::tempdir().unwrap();
    let raw_bomb = dir.path().join("bomb.jsonl.gz");
    bomb(&raw_bomb, b"", 2 << 30);
    let m = run(&pih(test, &["map", path(&raw_bomb)], false), None, true);
    // Raw pi output is mapped as `run` maps it: the endless line is an invalid line, skipped.
    assert_bounded(
        "map on a gzip bomb",
        &m,
        0,
        "map: 1 lines, 2147483648 bytes, 1 invalid lines (1 over the line limit of 1000000 bytes; raise it with PI_HARNESS_MAX_LINE_BYTES=BYTES), ",
        LINE,
    );
    assert!(
        String::from_utf8_lossy(&m.stdout).contains("over the line cap of 1000000 bytes"),
        "{}",
        String::from_utf8_lossy(&m.stdout)
    );

    let cbomb = dir.path().join("bomb.cassette.jsonl.gz");
    bomb(&cbomb, format!("{HEADER}\n").as_bytes(), 2 << 30);
    let m = run(&pih(test, &["map", path(&cbomb)], false), None, false);
    assert_bounded(
        "map on a cassette bomb",
        &m,
        2,
        &format!(
            "error: malformed cassette: {}:2: {LINE_LIMIT}",
            cbomb.display()
        ),
        LINE,
    );

    let many = dir.path().join("many.cassette.jsonl.gz");
    let record = format!("{{\"dt_ms\":0,\"stdout\":{}}}\n", pi_line().trim_end());
    let n = compressed_lines(
        &many,
        &format!("{HEADER}\n"),
        &record,
        MANY,
        "{\"dt_ms\":0,\"exit\":0}\n",
    );
    let m = run(
        &pih(test, &["map", "--json", path(&many)], false),
        None,
        false,
    );
    assert_bounded(
        "map on many records",
        &m,
        0,
        &format!("map: {n} lines, "),
        LINE,
    );

    for (name, stdin) in [("/dev/zero", None), ("-", Some(zero()))] {
        let m = run(&pih(test, &["map", name], true), stdin, false);
        let shown = if name == "-" { "<stdin>" } else { name };
        assert_bounded(
            &format!("map {name} (stdin {stdin:?})"),
            &m,
            2,
            &format!("error: {shown}: cannot read: {TOTAL_LIMIT}"),
            LINE,
        );
    }

    // A FIFO is read as it comes (`map <(pi ...)`), within the limits.
    let pipe = dir.path().join("pipe.jsonl");
    fifo(&pipe);
    let writer = feed_zeros(&pipe);
    let m = run(&pih(test, &["map", path(&pipe)], true), None, false);
    release(&pipe);
    assert!(writer.join().unwrap() > 64_000_000);
    assert_bounded(
        "map on a FIFO",
        &m,
        2,
        &format!("error: {}: cannot read: {TOTAL_LIMIT}", pipe.display()),
        LINE,
    );
    assert!(processes_with_marker(test).is_empty());
}

#[test]
fn show_stays_bounded() {
    let test = "memory-show";
    let dir = tempfile::tempdir().unwrap();
    let cbomb = dir.path().join("bomb.cassette.jsonl.zst");
    bomb(&cbomb, format!("{HEADER}\n").as_bytes(), 2 << 30);
    let m = run(
        &pih(test, &["cassette", "show", path(&cbomb)], false),
        None,
        false,
    );
    assert_bounded(
        "show on a cassette bomb (zstd)",
        &m,
        2,
        &format!("error: {}:2: {LINE_LIMIT}", cbomb.display()),
        LINE,
    );

    let many = dir.path().join("many.cassette.jsonl.gz");
    let record = format!("{{\"dt_ms\":0.5,\"stdout\":{}}}\n", pi_line().trim_end());
    let n = compressed_lines(
        &many,
        &format!("{HEADER}\n"),
        &record,
        MANY,
        "{\"dt_ms\":0,\"exit\":0}\n",
    );
    for json in [false, true] {
        let mut args = vec!["cassette", "show", path(&many)];
        if json {
            args.insert(2, "--json");
        }
        let m = run(&pih(test, &args, false), None, true);
        assert_bounded(&format!("show on many records ({args:?})"), &m, 0, "", LINE);
        let out = String::from_utf8_lossy(&m.stdout);
        let want = if json {
            format!("\"stdout_lines\": {n}")
        } else {
            format!("{n} stdout lines ({} bytes)", n * pi_line().len() as u64)
        };
        assert!(out.contains(&want), "{want} in {out}");
    }

    // A two-way cassette whose client writes 100 MB of lines: the first are listed, the rest
    // counted, and the note says so.
    let rpc_header = std::fs::read_to_string(cassettes().join("rpc/rpc_state.pi87.cassette.jsonl"))
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .to_string();
    let client = dir.path().join("client.cassette.jsonl.gz");
    let step = format!(
        "{{\"dt_ms\":0,\"stdin\":{{\"type\":\"get_state\",\"pad\":\"{}\"}}}}\n",
        "p".repeat(400)
    );
    let steps = compressed_lines(
        &client,
        &format!("{rpc_header}\n"),
        &step,
        100 << 20,
        "{\"dt_ms\":0,\"exit\":0}\n",
    );
    for json in [false, true] {
        let mut args = vec!["cassette", "show", path(&client)];
        if json {
            args.insert(2, "--json");
        }
        let m = run(&pih(test, &args, false), None, true);
        assert_bounded(
            &format!("show on a long client ({args:?})"),
            &m,
            0,
            "",
            LINE,
        );
        let out = String::from_utf8_lossy(&m.stdout);
        let note = format!(
            "the client's {steps} actions are more than show lists (the first 1000, at most 1048576 bytes of lines)"
        );
        assert!(
            out.contains(&note),
            "{note} in {}",
            &out[..out.len().min(4000)]
        );
        assert!(out.len() < 4 << 20, "{} bytes of output", out.len());
    }

    // Not a file: refused at once (a FIFO with no writer blocked show forever); stdin is
    // read within the line limit.
    let pipe = dir.path().join("pipe.cassette.jsonl");
    fifo(&pipe);
    for (name, kind) in [(path(&pipe), "a FIFO"), ("/dev/zero", "a device")] {
        let m = run(&pih(test, &["cassette", "show", name], false), None, false);
        release(&pipe);
        assert_bounded(
            &format!("show {name}"),
            &m,
            2,
            &format!("error: {name}: cannot read cassette: {kind}, not a cassette file (give a file, or `-` to read stdin)"),
            LINE,
        );
    }
    let m = run(
        &pih(test, &["cassette", "show", "-"], false),
        Some(zero()),
        false,
    );
    assert_bounded(
        "show - < /dev/zero",
        &m,
        2,
        &format!("error: <stdin>:1: {LINE_LIMIT}"),
        LINE,
    );
    assert!(processes_with_marker(test).is_empty());
}

/// `cassette show --html`: a bomb is refused at its line and leaves no file; many records
/// draw the first ones, count the rest, and the page stays small.
#[test]
fn show_html_stays_bounded() {
    let test = "memory-show-html";
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("page.html");
    let cbomb = dir.path().join("bomb.cassette.jsonl.zst");
    bomb(&cbomb, format!("{HEADER}\n").as_bytes(), 2 << 30);
    let args = ["cassette", "show", path(&cbomb), "--html", path(&page)];
    let m = run(&pih(test, &args, false), None, false);
    assert_bounded(
        "show --html on a cassette bomb (zstd)",
        &m,
        2,
        &format!("error: {}:2: {LINE_LIMIT}", cbomb.display()),
        LINE,
    );
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(left.len(), 1, "{left:?}");

    let many = dir.path().join("many.cassette.jsonl.gz");
    let record = format!("{{\"dt_ms\":0.5,\"stdout\":{}}}\n", pi_line().trim_end());
    let n = compressed_lines(
        &many,
        &format!("{HEADER}\n"),
        &record,
        MANY,
        "{\"dt_ms\":0,\"exit\":0}\n",
    );
    let args = ["cassette", "show", path(&many), "--html", path(&page)];
    let m = run(&pih(test, &args, false), None, true);
    assert_bounded("show --html on many records", &m, 0, "", LINE);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.len() < 8 << 20, "a page of {} bytes", html.len());
    assert!(
        html.contains(&format!("\"records\":{}", n + 1)),
        "{n} records counted"
    );
    assert!(processes_with_marker(test).is_empty());
}

/// `cassette import ARGS INPUT --out OUT` with the options every import here takes.
fn import(test: &str, input: &str, out: &Path, extra: &[&str]) -> Command {
    let mut args = vec!["cassette", "import", input, "--out", path(out)];
    args.extend([
        "--pi-version",
        "0.87.1",
        "--scenario",
        "s",
        "--description",
        "d",
        "--exit",
        "0",
    ]);
    args.extend(extra);
    pih(test, &args, false)
}

/// A long line is held once: it becomes its record's data and is streamed to the file, then
/// read back a line at a time. Before, import held the line, the record's copy and its
/// encoded line: 172 MB for one line of 54 MB, over 64 MiB plus the line.
#[test]
fn import_holds_a_long_line_once() {
    let test = "memory-import-long-line";
    let dir = tempfile::tempdir().unwrap();
    let long = dir.path().join("long.jsonl");
    let delta = "x".repeat(40 << 20);
    std::fs::write(
        &long,
        format!("{{\"type\":\"session\",\"id\":\"s\"}}\n{{\"type\":\"message_update\",\"assistantMessageEvent\":{{\"type\":\"text_delta\",\"delta\":\"{delta}\"}}}}\n"),
    )
    .unwrap();
    let limit: u64 = 48 << 20;
    for name in ["out.cassette.jsonl", "out.cassette.jsonl.zst"] {
        let out = dir.path().join(name);
        let mut cmd = import(test, path(&long), &out, &[]);
        cmd.env("PI_HARNESS_MAX_LINE_BYTES", limit.to_string());
        let m = run(&cmd, None, true);
        assert_bounded(
            &format!("import of a 40 MiB line into {name}"),
            &m,
            0,
            "",
            limit,
        );
        let c = pi_cassette::Cassette::load(&out).unwrap();
        assert_eq!(c.stdout_bytes(), std::fs::read(&long).unwrap());
    }
    assert!(processes_with_marker(test).is_empty());
}

#[test]
fn import_stays_bounded() {
    let test = "memory-import";
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.cassette.jsonl");
    // zstd, the recorder's format for a large run.
    let raw_bomb = dir.path().join("bomb.jsonl.zst");
    bomb(&raw_bomb, b"", 2 << 30);
    let m = run(&import(test, path(&raw_bomb), &out, &[]), None, false);
    assert_bounded(
        "import of a zstd bomb",
        &m,
        2,
        &format!("error: {}:1: {LINE_LIMIT}", raw_bomb.display()),
        LINE,
    );
    assert!(!out.exists());

    // A line within the limit whose record would not be: control characters, escaped
    // six bytes each (before, the written cassette failed to read back, exit 1).
    let wide = dir.path().join("wide.jsonl");
    std::fs::write(&wide, "\u{1}".repeat(600_000) + "\n").unwrap();
    let m = run(&import(test, path(&wide), &out, &[]), None, false);
    assert_bounded(
        "import of a line whose record is too long",
        &m,
        2,
        &format!(
            "error: {}:1: its record would be a line longer than 1000000 bytes (the limit; raise it with PI_HARNESS_MAX_LINE_BYTES=BYTES)",
            wide.display()
        ),
        LINE,
    );

    let many = dir.path().join("many.jsonl.gz");
    let n = compressed_lines(&many, "", &pi_line(), MANY, "");
    let m = run(&import(test, path(&many), &out, &[]), None, true);
    assert_bounded("import of many lines", &m, 0, "", LINE);
    assert_eq!(
        String::from_utf8_lossy(&m.stdout),
        format!(
            "{}: {} records ({} bytes of stdout), ends with exit\n",
            out.display(),
            n + 1,
            n * pi_line().len() as u64
        )
    );
    let written = std::fs::read(&out).unwrap();
    assert_eq!(
        memchr::memchr_iter(b'\n', &written).count() as u64,
        n + 2,
        "header, a record per line, the ending"
    );
    assert!(written.ends_with(b"\n{\"dt_ms\":5,\"exit\":0}\n"));
    drop(written);
    std::fs::remove_file(&out).unwrap();

    // Not a file, as the capture or as --stderr: refused at once (a FIFO with no writer
    // blocked import forever, `--stderr /dev/zero` read until memory ran out).
    let raw = dir.path().join("raw.jsonl");
    std::fs::write(&raw, pi_line()).unwrap();
    let pipe = dir.path().join("pipe.jsonl");
    fifo(&pipe);
    for (name, kind) in [(path(&pipe), "a FIFO"), ("/dev/zero", "a device")] {
        let m = run(&import(test, name, &out, &[]), None, false);
        release(&pipe);
        assert_bounded(
            &format!("import {name}"),
            &m,
            2,
            &format!("error: {name}: cannot read: {kind}, not a file (give a file, or `-` to read stdin)"),
            LINE,
        );
        let m = run(
            &import(test, path(&raw), &out, &["--stderr", name]),
            None,
            false,
        );
        release(&pipe);
        assert_bounded(
            &format!("import --stderr {name}"),
            &m,
            2,
            &format!("error: {name}: cannot read --stderr file: {kind}, not a file"),
            LINE,
        );
    }
    let m = run(&import(test, "-", &out, &[]), Some(zero()), false);
    assert_bounded(
        "import - < /dev/zero",
        &m,
        2,
        &format!("error: <stdin>:1: {LINE_LIMIT}"),
        LINE,
    );
    assert!(!out.exists());
    assert!(processes_with_marker(test).is_empty());
}

/// A two-way import (`--mode rpc`) holds its inputs whole, so it reads at most 1 MiB of them
/// (`PI_HARNESS_MAX_TWO_WAY_BYTES`): the worst it holds, a transcript of that many tiny
/// entries, stays under the bound; past it, the budget is named (before: read whole).
#[test]
fn a_two_way_import_stays_bounded() {
    let test = "memory-import-rpc";
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.cassette.jsonl");
    let rpc = ["--mode", "rpc"];
    let budget = "more than 1048576 bytes in all: a two-way import holds its inputs whole (the limit; raise it with PI_HARNESS_MAX_TWO_WAY_BYTES=BYTES)";
    let tiny = dir.path().join("tiny.jsonl");
    let entries = (1 << 20) / 13 - 1;
    std::fs::write(&tiny, "{\"stdin\":{}}\n".repeat(entries) + "{\"exit\":0}\n").unwrap();
    let m = run(&import(test, path(&tiny), &out, &rpc), None, true);
    assert_bounded("a two-way import of 80000 entries", &m, 0, "", LINE);
    assert!(
        String::from_utf8_lossy(&m.stdout).contains(&format!("{} records", entries + 1)),
        "{}",
        String::from_utf8_lossy(&m.stdout)
    );
    std::fs::remove_file(&out).unwrap();
    let raw_bomb = dir.path().join("bomb.jsonl.gz");
    bomb(&raw_bomb, b"", 2 << 30);
    let many = dir.path().join("many.jsonl.gz");
    compressed_lines(&many, "", "{\"stdin\":{}}\n", MANY, "");
    for (name, input) in [("a gzip bomb", &raw_bomb), ("many entries", &many)] {
        let m = run(&import(test, path(input), &out, &rpc), None, false);
        assert_bounded(
            &format!("a two-way import of {name}"),
            &m,
            2,
            &format!("error: {}: cannot read: {budget}", input.display()),
            LINE,
        );
    }
    let m = run(&import(test, "-", &out, &rpc), Some(zero()), false);
    assert_bounded(
        "a two-way import - < /dev/zero",
        &m,
        2,
        &format!("error: -: cannot read: {budget}"),
        LINE,
    );
    let pipe = dir.path().join("pipe.jsonl");
    fifo(&pipe);
    for (name, kind) in [(path(&pipe), "a FIFO"), ("/dev/zero", "a device")] {
        let m = run(&import(test, name, &out, &rpc), None, false);
        release(&pipe);
        assert_bounded(
            &format!("a two-way import of {name}"),
            &m,
            2,
            &format!("error: {name}: cannot read: {kind}, not a file (give a file, or `-` to read stdin)"),
            LINE,
        );
    }
    assert!(!out.exists());
    assert!(processes_with_marker(test).is_empty());
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}
