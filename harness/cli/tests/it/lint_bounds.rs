//! `cassette lint` on hostile input keeps its memory bounded: it reads one line at a time, so
//! a gzip bomb, an endless stdin or a file of many records take no more than the line limit
//! and a bounded state, and the problem it reports names the limit that was hit. Before, lint
//! read the whole input first (a 2 MB gzip bomb took 4.2 GB, `/dev/zero` 6.3 GB).

use std::io::Write as _;
use std::process::{Command, Stdio};

use crate::util::{bin, marker, processes_with_marker};

const HEADER: &str = r#"{"format":"pi-cassette","version":1,"pi":{"version":"0.87.1","dialect":"delta-only"},"scenario":{"name":"big","description":"d"},"origin":{"kind":"hand-made","timing":"synthetic"}}"#;

/// The line limit the tests set (1 MiB), so the bound is tight.
const LINE: u64 = 1 << 20;
/// The bound asserted: 64 MiB plus one line.
const BOUND_KIB: u64 = (64 << 10) + (LINE >> 10);

/// One gzip member holding `data`.
fn member(data: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    enc.write_all(data).unwrap();
    enc.finish().unwrap()
}

/// `cassette lint ARG` under the memory probe (address space capped at 1 GiB), with the line
/// limit at [`LINE`]: (exit code, stdout, peak RSS in KiB).
fn lint(test: &str, arg: &std::path::Path, stdin: Stdio) -> (Option<i32>, String, u64) {
    let mut cmd = Command::new(bin());
    cmd.args(["cassette", "lint"])
        .arg(arg)
        .env("PI_HARNESS_TEST_MARKER", marker(test))
        .env("PI_HARNESS_MAX_LINE_BYTES", LINE.to_string())
        .env_remove("RUST_BACKTRACE");
    let m = pi_testkit::process::run_measured(&cmd, stdin, 1 << 30);
    let out = String::from_utf8_lossy(&m.stdout).into_owned();
    let err = String::from_utf8_lossy(&m.stderr).into_owned();
    assert!(
        m.peak_rss_kib < BOUND_KIB,
        "lint {}: peak RSS {} KiB, over {BOUND_KIB} KiB\n{out}{err}",
        arg.display(),
        m.peak_rss_kib
    );
    (m.code, out, m.peak_rss_kib)
}

/// A gzip bomb (200 MiB of one line from 200 KB), the same as zstd, `/dev/zero` as stdin: lint stops at the
/// line limit and says so, in one problem naming the line and the variable that raises it.
#[test]
fn a_gzip_bomb_and_an_endless_stdin_stop_at_the_line_limit() {
    let test = "a_gzip_bomb_and_an_endless_stdin_stop_at_the_line_limit";
    let dir = tempfile::tempdir().unwrap();
    let bomb = dir.path().join("bomb.cassette.jsonl.gz");
    let mut data = member(format!("{HEADER}\n").as_bytes());
    let chunk = member(&vec![b'a'; 1 << 20]);
    for _ in 0..200 {
        data.extend_from_slice(&chunk);
    }
    std::fs::write(&bomb, &data).unwrap();
    // The same as zstd, the recorder's format for a large run.
    let zst = dir.path().join("bomb.cassette.jsonl.zst");
    pi_testkit::hostile::bomb(&zst, format!("{HEADER}\n").as_bytes(), 200 << 20);
    for bomb in [bomb, zst] {
        let (code, out, _) = lint(test, &bomb, Stdio::null());
        assert_eq!(code, Some(1), "{out}");
        assert_eq!(
            out,
            format!(
                "{}:2: line longer than {LINE} bytes (the limit; raise it with PI_HARNESS_MAX_LINE_BYTES=BYTES)\n",
                bomb.display()
            )
        );
    }
    let zero = Stdio::from(std::fs::File::open("/dev/zero").unwrap());
    let (code, out, _) = lint(test, std::path::Path::new("-"), zero);
    assert_eq!(code, Some(1), "{out}");
    assert_eq!(
        out,
        format!("-:1: line longer than {LINE} bytes (the limit; raise it with PI_HARNESS_MAX_LINE_BYTES=BYTES)\n")
    );
    assert!(processes_with_marker(test).is_empty());
}

/// Many good records (24 MiB, from a small gzip and as a plain file) are linted in bounded
/// memory, every one of them checked: a secret in the last record is still found.
#[test]
fn many_records_are_linted_in_bounded_memory() {
    let test = "many_records_are_linted_in_bounded_memory";
    let dir = tempfile::tempdir().unwrap();
    let record = r#"{"dt_ms":0,"stdout":{"type":"message_update","text":"all work and no play makes a dull cassette"}}"#;
    let block: String =
        std::iter::repeat_n(format!("{record}\n"), (1 << 20) / (record.len() + 1)).collect();
    let last = r#"{"dt_ms":0,"stderr":"key sk-proj-abcdefghijklmnop1234\n"}"#;
    let ending = format!("{last}\n{{\"dt_ms\":0,\"exit\":0}}\n");
    let gz = dir.path().join("many.cassette.jsonl.gz");
    let mut data = member(format!("{HEADER}\n").as_bytes());
    let block_gz = member(block.as_bytes());
    for _ in 0..24 {
        data.extend_from_slice(&block_gz);
    }
    data.extend_from_slice(&member(ending.as_bytes()));
    std::fs::write(&gz, &data).unwrap();
    let plain = dir.path().join("many.cassette.jsonl");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&plain).unwrap());
    f.write_all(format!("{HEADER}\n").as_bytes()).unwrap();
    for _ in 0..24 {
        f.write_all(block.as_bytes()).unwrap();
    }
    f.write_all(ending.as_bytes()).unwrap();
    f.into_inner().unwrap().sync_all().unwrap();
    let records = 24 * ((1 << 20) / (record.len() + 1));
    for path in [&gz, &plain] {
        let (code, out, rss) = lint(test, path, Stdio::null());
        println!("lint {}: peak RSS {rss} KiB", path.display());
        assert_eq!(code, Some(1), "{out}");
        let want = format!(
            "{}:{}: stderr: an API key (sk-...) sk-proj-...",
            path.display(),
            records + 2
        );
        assert!(out.starts_with(&want), "{out}");
        assert_eq!(out.lines().count(), 1, "{out}");
    }
    assert!(processes_with_marker(test).is_empty());
}

/// A damaged compressed cassette is a problem of the file, whatever the damage: a zstd frame
/// or a gzip stream cut short and a bad zstd checksum each give one problem naming the line
/// where reading stopped, and exit 1 (a finding). Before, a cut frame was an input error
/// (exit 2, `error: ...`) while a bad checksum was a problem (exit 1).
#[test]
fn a_cut_stream_and_a_bad_checksum_are_both_problems() {
    let test = "a_cut_stream_and_a_bad_checksum_are_both_problems";
    let dir = tempfile::tempdir().unwrap();
    let text =
        std::fs::read(crate::util::cassettes().join("recorded/text_only.pi152.cassette.jsonl"))
            .unwrap();
    let zst = pi_cassette::output::zstd(&text).unwrap();
    let gz = member(&text);
    let mut bad = zst.clone();
    let last = bad.len() - 1;
    bad[last] ^= 0xff;
    let cases = [
        (
            "cut.cassette.jsonl.zst",
            zst[..zst.len() / 2].to_vec(),
            "incomplete frame",
        ),
        (
            "cut.cassette.jsonl.gz",
            gz[..gz.len() / 2].to_vec(),
            "incomplete deflate stream",
        ),
        ("bad.cassette.jsonl.zst", bad, "checksum"),
    ];
    for (name, bytes, says) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        let (code, out, _) = lint(test, &path, Stdio::null());
        assert_eq!(code, Some(1), "{name}: {out}");
        assert_eq!(out.lines().count(), 1, "{name}: {out}");
        assert!(
            out.starts_with(&format!("{}:", path.display()))
                && out.contains(": cannot be read as a cassette from here: ")
                && out.contains(says),
            "{name}: {out}"
        );
    }
    assert!(processes_with_marker(test).is_empty());
}
