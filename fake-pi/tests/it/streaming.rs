//! fake-pi streams its cassette, reading it once: `--version` reads only the header, a
//! broken record late in a long cassette stops the replay at that line (exit 98, file:line,
//! children taken along), and batched stdout keeps its order with stderr.

use std::process::Stdio;

use crate::util::*;

/// Enough stdout records to fill several read buffers and several write batches.
fn many_lines(n: usize) -> Vec<String> {
    (0..n)
        .map(|i| format!(r#"{{"dt_ms":0,"stdout":{}}}"#, payload(i)))
        .collect()
}

/// The stdout line of record `i` of [`many_lines`].
fn payload(i: usize) -> String {
    format!(
        r#"{{"type":"message_update","n":{i},"pad":"{}"}}"#,
        "p".repeat(40)
    )
}

/// What a record line writes to stdout and to stderr.
fn written(line: &str) -> (String, String) {
    #[derive(serde::Deserialize)]
    struct R<'a> {
        #[serde(borrow)]
        stdout: Option<&'a serde_json::value::RawValue>,
        stdout_text: Option<String>,
        stderr: Option<String>,
    }
    let r: R = serde_json::from_str(line).unwrap();
    match (r.stdout, r.stdout_text, r.stderr) {
        (Some(j), _, _) => (format!("{}\n", j.get()), String::new()),
        (_, Some(t), _) => (format!("{t}\n"), String::new()),
        (_, _, Some(e)) => (String::new(), e),
        _ => (String::new(), String::new()),
    }
}

#[test]
fn version_reads_only_the_header() {
    let sb = World::new(module_path!());
    // A valid header, then garbage and a line far past the line limit set below.
    let c = sb
        .cassette("v")
        .version("0.87.1")
        .members("")
        .records(["not json at all".to_string(), "x".repeat(200_000)])
        .write();
    cmd(&sb, &c)
        .arg("--version")
        .env("PI_HARNESS_MAX_LINE_BYTES", "4096")
        .assert()
        .code(0)
        .stdout("0.87.1\n")
        .stderr("");
    // --help and pi's own argument errors are answered from argv alone too.
    cmd(&sb, &c)
        .arg("--help")
        .env("PI_HARNESS_MAX_LINE_BYTES", "4096")
        .assert()
        .code(0)
        .stdout(predicates::str::contains("--exclude-tools"));
    cmd(&sb, &c)
        .arg("-x")
        .assert()
        .code(1)
        .stdout("")
        .stderr("Error: Unknown option: -x\n");
    // A replay reads the records, and refuses them.
    cmd(&sb, &c)
        .env("PI_HARNESS_MAX_LINE_BYTES", "4096")
        .assert()
        .code(98)
        .stdout("")
        .stderr(predicates::str::starts_with(format!(
            "fake-pi: invalid cassette: {}:2: record: ",
            c.display()
        )));
    sb.assert_none_left();
}

#[test]
fn a_late_bad_record_stops_the_replay_at_its_line() {
    let sb = World::new(module_path!());
    let n = 5000;
    let mut lines = many_lines(n);
    lines.push(r#"{"dt_ms":0,"stdout":{"type":"agent_end"},"colour":1}"#.into());
    lines.push(r#"{"dt_ms":0,"exit":0}"#.into());
    let bad = sb
        .cassette("late")
        .version("0.87.1")
        .members("")
        .records(&lines)
        .write();
    // Everything before the bad line, in order, and nothing of it or after it.
    let before: String = (0..n).map(|i| format!("{}\n", payload(i))).collect();
    let out = cmd(&sb, &bad).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(98), "{err}");
    let got = String::from_utf8(out.stdout).unwrap();
    assert!(
        got == before,
        "{} bytes of {}; stderr: {err}",
        got.len(),
        before.len()
    );
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(
        err,
        format!(
            "fake-pi: invalid cassette: {}:{}: record: unknown field `colour`, expected one of `dt_ms`, `stdout`, `stdout_text`, `stdout_b64`, `newline`, `stderr`, `stderr_b64`, `exit`, `signal`, `hang`, `spawn`, `stdin`, `match`, `stdin_text`, `stdin_close`, `client_signal`, `request`, `reap`, `reply` at line 1 column 49 (the replay stopped there)\n",
            bad.display(),
            n + 2
        )
    );
    // A cassette that stops without its ending, the same.
    let cut = sb
        .cassette("cut")
        .version("0.87.1")
        .members("")
        .records(many_lines(n))
        .write();
    let out = cmd(&sb, &cut).output().unwrap();
    assert_eq!(out.status.code(), Some(98));
    assert!(String::from_utf8(out.stdout).unwrap() == before);
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.starts_with(&format!(
            "fake-pi: invalid cassette: {}:{}: the last record must be",
            cut.display(),
            n + 1
        )),
        "{err}"
    );
    // And the good one replays every line.
    let good = sb
        .cassette("good")
        .version("0.87.1")
        .members("")
        .records(
            many_lines(n)
                .into_iter()
                .chain([r#"{"dt_ms":0,"exit":5}"#.into()]),
        )
        .write();
    let out = cmd(&sb, &good).output().unwrap();
    assert_eq!(out.status.code(), Some(5));
    let expected: String = (0..n).map(|i| format!("{}\n", payload(i))).collect();
    assert_eq!(String::from_utf8(out.stdout).unwrap(), expected);
    sb.assert_none_left();
}

#[test]
fn batched_stdout_keeps_its_order_with_stderr() {
    let sb = World::new(module_path!());
    let mut lines = many_lines(3000);
    lines.insert(1500, r#"{"dt_ms":0,"stderr":"middle\n"}"#.into());
    lines.insert(1, r#"{"dt_ms":0,"stderr":"early\n"}"#.into());
    lines.push(r#"{"dt_ms":0,"stdout_text":"last"}"#.into());
    lines.push(r#"{"dt_ms":0,"stderr":"end\n"}"#.into());
    lines.push(r#"{"dt_ms":0,"exit":0}"#.into());
    let c = sb
        .cassette("both")
        .version("0.87.1")
        .members("")
        .records(&lines)
        .write();
    // stdout and stderr on one file, as `2>&1` does.
    let both = sb.path().join("both.out");
    let f = std::fs::File::create(&both).unwrap();
    let status = sb
        .fake_pi(&c)
        .stdout(Stdio::from(f.try_clone().unwrap()))
        .stderr(Stdio::from(f))
        .status()
        .unwrap();
    assert!(status.success());
    let got = std::fs::read_to_string(&both).unwrap();
    let mut expected = String::new();
    for l in &lines {
        let (out, err) = written(l);
        expected.push_str(&out);
        expected.push_str(&err);
    }
    assert_eq!(got, expected);
    sb.assert_none_left();
}

/// A child started before the bad line is not left behind when the replay stops there.
#[test]
fn a_bad_record_after_a_spawn_leaves_no_child() {
    let sb = World::new(module_path!());
    let c = sb
        .cassette("spawn-then-bad")
        .version("0.87.1")
        .members("")
        .records([
            r#"{"dt_ms":0,"stdout":{"type":"session","id":"s"}}"#,
            r#"{"dt_ms":0,"spawn":{"id":"tool","own_session":true}}"#,
            r#"{"dt_ms":50,"stdout":{"type":"x"},"bogus":1}"#,
            r#"{"dt_ms":0,"exit":0}"#,
        ])
        .write();
    let out = cmd(&sb, &c).output().unwrap();
    assert_eq!(out.status.code(), Some(98));
    assert!(String::from_utf8_lossy(&out.stderr).contains(":4: record: unknown field `bogus`"));
    sb.assert_none_left();
}

/// Run `cmd` with `/dev/zero` as its stdin to its end: its exit code, stderr and peak RSS
/// (KiB). Its address space is capped at 1 GiB: without a bound it read gigabytes in seconds.
fn on_endless_stdin(cmd: std::process::Command) -> (i32, String, u64) {
    let m = pi_testkit::process::run_measured(
        &cmd,
        Stdio::from(std::fs::File::open("/dev/zero").unwrap()),
        1 << 30,
    );
    (
        m.code.unwrap_or(-1),
        String::from_utf8_lossy(&m.stderr).into_owned(),
        m.peak_rss_kib,
    )
}

/// Piped stdin (json mode) and a client line (RPC mode) are read up to the line limit, which
/// the error names with the variable that raises it (fake-pi read `/dev/zero` without end
/// before: 7-8 GB in seconds).
#[test]
fn endless_stdin_stops_at_the_line_limit() {
    let w = World::new("streaming-endless-stdin");
    let json = repo_cassette("recorded/text_only.pi87.cassette.jsonl");
    let mut cmd = w.fake_pi(&json);
    cmd.args(["--mode", "json", "--no-session"])
        .env("PI_HARNESS_MAX_LINE_BYTES", "1000000");
    let (code, err, rss) = on_endless_stdin(cmd);
    assert_eq!(code, 96, "{err}");
    assert_eq!(
        err,
        "fake-pi: stdin: more than 1000000 bytes piped (the limit; raise it with PI_HARNESS_MAX_LINE_BYTES=BYTES)\n"
    );
    assert!(rss < 64 * 1024, "peak RSS {rss} KiB");
    // The recording's agent dir: the scripted model is the default in settings.json.
    w.write(
        "agent/settings.json",
        r#"{"defaultProvider":"fake","defaultModel":"fake-model"}"#,
    );
    let rpc = repo_cassette("rpc/rpc_state.pi87.cassette.jsonl");
    let mut cmd = w.fake_pi(&rpc);
    cmd.args(["--mode", "rpc", "--no-session"])
        .env("PI_HARNESS_MAX_LINE_BYTES", "1000000");
    let (code, err, rss) = on_endless_stdin(cmd);
    assert_eq!(code, 99, "{err}");
    assert!(
        err.contains("the client sent a line longer than 1000000 bytes (the limit; raise it with PI_HARNESS_MAX_LINE_BYTES=BYTES)"),
        "{err}"
    );
    assert!(rss < 64 * 1024, "peak RSS {rss} KiB");
    w.assert_none_left();
}
