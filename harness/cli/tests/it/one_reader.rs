//! One cassette reader: `cassette lint`, `cassette show`, fake-pi, `map` and `cassette import` give the same
//! verdict on the same file, and a refusal names the same line. Before, they disagreed:
//! lint passed headers the schema rejects (arrays for objects, duplicate keys, an unpinned
//! pi version, CRLF lines, exit codes past 255), `map` read a broken cassette as raw pi
//! output (exit 0), `.gz` with trailing garbage passed some tools, gzip without `.gz` others.
//! zstd (`.zst`, what the recorder writes for a large run) is held to the same verdicts.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use pi_testkit::World;

const HEADER: &str = r#"{"format":"pi-cassette","version":1,"pi":{"version":"0.87.1","dialect":"delta-only"},"scenario":{"name":"t","description":"d"},"origin":{"kind":"hand-made","timing":"synthetic"}}"#;
const BODY: &str =
    "{\"dt_ms\":0,\"stdout\":{\"type\":\"session\",\"id\":\"s\"}}\n{\"dt_ms\":0,\"exit\":0}\n";

fn header_with(extra: &str) -> String {
    format!("{},{extra}}}", HEADER.trim_end_matches('}'))
}

/// (file name, bytes, the line a refusal must name; `None`: the file is fine)
fn cases() -> Vec<(&'static str, Vec<u8>, Option<usize>)> {
    let ok = format!("{HEADER}\n{BODY}");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(ok.as_bytes()).unwrap();
    let gz = gz.finish().unwrap();
    let mut garbage = gz.clone();
    garbage.extend_from_slice(b"trailing garbage");
    let zst = pi_cassette::output::zstd(ok.as_bytes()).unwrap();
    let mut zst_garbage = zst.clone();
    zst_garbage.extend_from_slice(b"trailing garbage");
    // The frame's checksum is its last four bytes.
    let mut zst_bad_sum = zst.clone();
    *zst_bad_sum.last_mut().unwrap() ^= 0xff;
    // A frame that asks for a 1 GiB window: decoding it would need that much memory.
    let mut enc = zstd::stream::write::Encoder::new(Vec::new(), 3).unwrap();
    enc.window_log(30).unwrap();
    enc.write_all(ok.as_bytes()).unwrap();
    let zst_huge_window = enc.finish().unwrap();
    let big = HEADER.replace(
        r#""description":"d""#,
        &format!(r#""description":"{}""#, "x".repeat(1_200_000)),
    );
    vec![
        ("good.cassette.jsonl", ok.clone().into_bytes(), None),
        ("gzip-without-gz-name.cassette.jsonl", gz.clone(), None),
        (
            "header-over-1mib.cassette.jsonl",
            format!("{big}\n{BODY}").into_bytes(),
            None,
        ),
        ("bom.cassette.jsonl", format!("\u{feff}{ok}").into_bytes(), Some(1)),
        (
            "trailing-comma.cassette.jsonl",
            format!("{},}}\n{BODY}", HEADER.trim_end_matches('}')).into_bytes(),
            Some(1),
        ),
        (
            "misspelt-format.cassette.jsonl",
            ok.replace("pi-cassette", "pi-casette").into_bytes(),
            Some(1),
        ),
        (
            "pi-is-an-array.cassette.jsonl",
            ok.replace(r#""pi":{"version":"0.87.1","dialect":"delta-only"}"#, r#""pi":["0.87.1","delta-only"]"#)
                .into_bytes(),
            Some(1),
        ),
        (
            "expect-is-an-array.cassette.jsonl",
            format!("{}\n{BODY}", header_with(r#""expect":[]"#)).into_bytes(),
            Some(1),
        ),
        (
            "duplicate-flag.cassette.jsonl",
            format!(
                "{}\n{BODY}",
                header_with(r#""expect":{"flags":{"model":"a","model":"b"}}"#)
            )
            .into_bytes(),
            Some(1),
        ),
        (
            "unpinned-version.cassette.jsonl",
            ok.replace("0.87.1", "9.9.9").into_bytes(),
            Some(1),
        ),
        (
            "crlf.cassette.jsonl",
            ok.replace('\n', "\r\n").into_bytes(),
            Some(1),
        ),
        (
            "exit-code-in-process.cassette.jsonl",
            format!(
                "{}\n{BODY}",
                header_with(r#""process":{"on_sigterm":{"action":"exit","code":99999}}"#)
            )
            .into_bytes(),
            Some(1),
        ),
        (
            "version-1.0.cassette.jsonl",
            ok.replace(r#""version":1,"#, r#""version":1.0,"#).into_bytes(),
            Some(1),
        ),
        (
            "spawn-is-an-array.cassette.jsonl",
            format!("{HEADER}\n{{\"dt_ms\":0,\"spawn\":[\"x\"]}}\n{{\"dt_ms\":0,\"exit\":0}}\n")
                .into_bytes(),
            Some(2),
        ),
        (
            "spawn-id-with-nul.cassette.jsonl",
            format!("{HEADER}\n{{\"dt_ms\":0,\"spawn\":{{\"id\":\"a\\u0000b\"}}}}\n{{\"dt_ms\":0,\"exit\":0}}\n")
                .into_bytes(),
            Some(2),
        ),
        (
            "exit-256.cassette.jsonl",
            format!("{HEADER}\n{{\"dt_ms\":0,\"exit\":256}}\n").into_bytes(),
            Some(2),
        ),
        (
            "unknown-record-kind.cassette.jsonl",
            format!("{HEADER}\n{{\"dt_ms\":0,\"bogus\":1}}\n{{\"dt_ms\":0,\"exit\":0}}\n").into_bytes(),
            Some(2),
        ),
        (
            "huge-dt.cassette.jsonl",
            format!("{HEADER}\n{{\"dt_ms\":1e308,\"exit\":0}}\n").into_bytes(),
            Some(2),
        ),
        // No line to name: the gzip stream itself is broken.
        ("gz-with-trailing-garbage.cassette.jsonl.gz", garbage, Some(0)),
        ("zstd-without-zst-name.cassette.jsonl", zst.clone(), None),
        ("zstd.cassette.jsonl.zst", zst, None),
        ("zst-with-trailing-garbage.cassette.jsonl.zst", zst_garbage, Some(0)),
        ("zst-with-a-bad-checksum.cassette.jsonl.zst", zst_bad_sum, Some(0)),
        ("zst-asking-a-1gib-window.cassette.jsonl.zst", zst_huge_window, Some(0)),
    ]
}

/// (refused, the line named) for each tool.
fn verdicts(w: &World, path: &Path) -> Vec<(&'static str, bool, Option<usize>)> {
    let name = path.display().to_string();
    let line_of = |text: &str| -> Option<usize> {
        let at = text.find(&format!("{name}:"))? + name.len() + 1;
        let digits: String = text[at..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        digits.parse().ok()
    };
    let harness = env!("CARGO_BIN_EXE_pi-harness");
    let lint = Command::new(harness)
        .args(["cassette", "lint"])
        .arg(path)
        .output()
        .unwrap();
    let lint_text =
        String::from_utf8_lossy(&lint.stdout).into_owned() + &String::from_utf8_lossy(&lint.stderr);
    let fake = w
        .fake_pi(path)
        .args(["--mode", "json", "hi"])
        .output()
        .unwrap();
    let fake_text = String::from_utf8_lossy(&fake.stderr).into_owned();
    let map = Command::new(harness)
        .args(["map", "--json"])
        .arg(path)
        .stdout(Stdio::null())
        .output()
        .unwrap();
    let map_text = String::from_utf8_lossy(&map.stderr).into_owned();
    let show = Command::new(harness)
        .args(["cassette", "show", "--json"])
        .arg(path)
        .stdout(Stdio::null())
        .output()
        .unwrap();
    let show_text = String::from_utf8_lossy(&show.stderr).into_owned();
    vec![
        ("show", show.status.code() == Some(2), line_of(&show_text)),
        ("lint", lint.status.code() != Some(0), line_of(&lint_text)),
        (
            "fake-pi",
            matches!(fake.status.code(), Some(97 | 98)),
            line_of(&fake_text),
        ),
        ("map", map.status.code() == Some(2), line_of(&map_text)),
    ]
}

#[test]
fn every_tool_gives_the_same_verdict_and_names_the_same_line() {
    let w = World::new("one-reader");
    let mut disagreements = Vec::new();
    for (name, bytes, bad_line) in cases() {
        let path: PathBuf = w.write(name, &bytes);
        for (tool, refused, line) in verdicts(&w, &path) {
            let want_refused = bad_line.is_some();
            if refused != want_refused {
                disagreements.push(format!(
                    "{name}: {tool} {} it",
                    if refused { "refused" } else { "accepted" }
                ));
            } else if let Some(l) = bad_line.filter(|l| *l > 0) {
                if line != Some(l) {
                    disagreements.push(format!("{name}: {tool} named line {line:?}, not {l}"));
                }
            }
        }
    }
    w.kill_all();
    w.assert_none_left();
    assert!(disagreements.is_empty(), "{}", disagreements.join("\n"));
}

/// The size limits hold in every tool, name the line and the variable that raises them,
/// and a gzip (or zstd) bomb is cut off while it is inflated (before: a 498 KB `.gz` holding one
/// 500 MB line took lint to 2 GB of memory, fake-pi and map to 1 GB).
#[test]
fn size_limits_hold_everywhere_and_say_how_to_raise_them() {
    let w = World::new("one-reader-limits");
    let big = format!(
        "{}\n{{\"dt_ms\":0,\"stdout\":{{\"type\":\"session\",\"id\":\"s\",\"pad\":\"{}\"}}}}\n{{\"dt_ms\":0,\"exit\":0}}\n",
        HEADER,
        "y".repeat(20_000)
    );
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gz.write_all(big.as_bytes()).unwrap();
    let gz = w.write("big.cassette.jsonl.gz", gz.finish().unwrap());
    let zst = w.write(
        "big.cassette.jsonl.zst",
        pi_cassette::output::zstd(big.as_bytes()).unwrap(),
    );
    for path in [gz, zst] {
        limits_hold_on(&w, &path);
    }
    w.assert_none_left();
}

/// The limits of `size_limits_hold_everywhere_and_say_how_to_raise_them` on one file.
fn limits_hold_on(w: &World, path: &Path) {
    let harness = env!("CARGO_BIN_EXE_pi-harness");
    let tools = |var: &str, limit: &str| -> Vec<(&'static str, Option<i32>, String)> {
        let run = |args: &[&str]| {
            let out = Command::new(harness)
                .args(args)
                .arg(path)
                .env(var, limit)
                .stdout(Stdio::null())
                .output()
                .unwrap();
            (
                out.status.code(),
                String::from_utf8_lossy(&out.stderr).into_owned(),
            )
        };
        let lint = Command::new(harness)
            .args(["cassette", "lint"])
            .arg(path)
            .env(var, limit)
            .output()
            .unwrap();
        let fake = w
            .fake_pi(path)
            .env(var, limit)
            .args(["--mode", "json", "hi"])
            .output()
            .unwrap();
        let (map_code, map_err) = run(&["map", "--json"]);
        let (show_code, show_err) = run(&["cassette", "show"]);
        vec![
            (
                "lint",
                lint.status.code(),
                String::from_utf8_lossy(&lint.stdout).into_owned(),
            ),
            (
                "fake-pi",
                fake.status.code(),
                String::from_utf8_lossy(&fake.stderr).into_owned(),
            ),
            ("map", map_code, map_err),
            ("show", show_code, show_err),
        ]
    };
    for (tool, code, text) in tools("PI_HARNESS_MAX_LINE_BYTES", "10000") {
        assert!(matches!(code, Some(1 | 2 | 98)), "{tool}: {code:?} {text}");
        assert!(
            text.contains(&format!(
                "{}:2: line longer than 10000 bytes",
                path.display()
            )) && text.contains("PI_HARNESS_MAX_LINE_BYTES"),
            "{tool}: {text}"
        );
    }
    for (tool, code, text) in tools("PI_HARNESS_MAX_INPUT_BYTES", "5000") {
        assert!(
            matches!(code, Some(1 | 2 | 97 | 98)),
            "{tool}: {code:?} {text}"
        );
        assert!(
            text.contains("PI_HARNESS_MAX_INPUT_BYTES"),
            "{tool}: {text}"
        );
    }
    // Under the default limits the same file is fine everywhere.
    for (tool, code, text) in tools("PI_HARNESS_UNRELATED", "1") {
        assert!(matches!(code, Some(0)), "{tool}: {code:?} {text}");
    }
}
