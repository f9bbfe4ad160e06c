//! `pi-harness map` as a real process: cassettes (plain and gzip) and raw stdout give what the
//! mapper gives, the summary counts what was read, errors are one line, and a large input
//! streams through in bounded memory.

use std::io::Write;
use std::path::PathBuf;
use std::process::Stdio;

use pi_cassette::{Action, Cassette};
use pi_wire::mapper::{EndCause, Mapper, MapperOptions, StreamEnd};
use pi_wire::message::{ExitInfo, Message};

use crate::util::{bin, cassettes, messages, pih};

/// What the mapper makes of a cassette's stdout in one push, ending as the cassette ends.
fn expected(c: &Cassette) -> Vec<Message> {
    let exit = match c.ending() {
        Action::Exit(code) => Some(ExitInfo {
            code: Some(*code),
            signal: None,
        }),
        Action::Signal(s) => Some(ExitInfo {
            code: None,
            signal: Some(s.clone()),
        }),
        _ => None,
    };
    let stderr = c.stderr_bytes();
    let mut m = Mapper::new(MapperOptions::default());
    let mut out = Vec::new();
    m.push(&c.stdout_bytes(), &mut out);
    m.finish(
        StreamEnd {
            exit,
            stderr_tail: (!stderr.is_empty())
                .then(|| String::from_utf8_lossy(&stderr).into_owned()),
            cause: EndCause::Eof,
        },
        &mut out,
    );
    out
}

fn summary(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr).into_owned();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1, "one summary line expected: {text}");
    assert!(lines[0].starts_with("map: "), "{text}");
    lines[0].to_string()
}

/// `"N <label>"` in the summary -> N.
fn field(summary: &str, label: &str) -> f64 {
    let at = summary
        .find(label)
        .unwrap_or_else(|| panic!("{label:?} not in {summary}"));
    summary[..at]
        .trim_end()
        .rsplit([' ', ','])
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

#[test]
fn every_cassette_in_the_repo_maps_like_the_mapper_including_faults() {
    let mut n = 0;
    let mut paths: Vec<PathBuf> = Vec::new();
    for dir in [cassettes(), cassettes().join("faults")] {
        if let Ok(entries) = std::fs::read_dir(&dir) {
            paths.extend(entries.map(|e| e.unwrap().path()));
        }
    }
    for path in paths {
        let name = path.to_string_lossy();
        if !pi_cassette::input::is_cassette_file_name(&name) {
            continue;
        }
        n += 1;
        let c = Cassette::load(&path).unwrap();
        let a = pih().args(["map", "--json"]).arg(&path).assert().code(0);
        assert_eq!(
            messages(&a.get_output().stdout),
            expected(&c),
            "{}",
            path.display()
        );
        let s = summary(&a.get_output().stderr);
        // Lines as the mapper frames them; when stdout ends with a newline that is simply
        // the number of newlines (a final unterminated line is the mapper's to count).
        let stdout = c.stdout_bytes();
        let mut m = Mapper::new(MapperOptions::default());
        m.push(&stdout, &mut Vec::new());
        let end = StreamEnd {
            exit: None,
            stderr_tail: None,
            cause: EndCause::Eof,
        };
        m.finish(end, &mut Vec::new());
        assert_eq!(field(&s, "lines"), m.stats().lines as f64, "{s}");
        if stdout.ends_with(b"\n") {
            let newlines = stdout.iter().filter(|&&b| b == b'\n').count();
            assert_eq!(field(&s, "lines"), newlines as f64, "{s}");
        }
        assert_eq!(field(&s, "bytes"), c.stdout_bytes().len() as f64, "{s}");
    }
    assert!(
        n >= 5,
        "only {n} cassettes found in {}",
        cassettes().display()
    );
}

#[test]
fn human_output_shows_text_and_outcome() {
    let path = cassettes().join("tool_bash.pi87.cassette.jsonl");
    let c = Cassette::load(&path).unwrap();
    let text: String = expected(&c)
        .iter()
        .filter_map(|m| match m {
            Message::Assistant { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert!(!text.is_empty());
    let a = pih()
        .arg("map")
        .arg(&path)
        .env_remove("NO_COLOR")
        .assert()
        .code(0);
    let stdout = String::from_utf8_lossy(&a.get_output().stdout).into_owned();
    // Text is printed as it streamed; blocks (tools, thoughts) may break it into lines.
    let first_piece = text.split_whitespace().next().unwrap();
    assert!(stdout.contains(first_piece), "{stdout}");
    assert!(
        stdout.lines().last().unwrap().starts_with("== completed"),
        "{stdout}"
    );
    assert!(!stdout.contains('\x1b'), "colour on a pipe");
}

#[test]
fn raw_stdout_from_stdin_and_gzip_cassette_agree() {
    let dir = tempfile::tempdir().unwrap();
    let path = cassettes().join("tool_bash.pi73.cassette.jsonl");
    let c = Cassette::load(&path).unwrap();
    let want = expected(&c);
    // Raw stdout on stdin: the same messages; the process end is unknown without a cassette.
    let a = pih()
        .args(["map", "--json", "-"])
        .write_stdin(c.stdout_bytes())
        .assert()
        .code(0);
    let got = messages(&a.get_output().stdout);
    assert_eq!(got[..got.len() - 1], want[..want.len() - 1]);
    assert!(got.last().unwrap().is_terminal());
    assert!(!summary(&a.get_output().stderr).contains("cassette"));
    // The cassette gzip-compressed, as a file and on stdin.
    let gz = dir.path().join("c.cassette.jsonl.gz");
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(&std::fs::read(&path).unwrap()).unwrap();
    let bytes = enc.finish().unwrap();
    std::fs::write(&gz, &bytes).unwrap();
    let a = pih().args(["map", "--json"]).arg(&gz).assert().code(0);
    assert_eq!(messages(&a.get_output().stdout), want);
    let a = pih()
        .args(["map", "--json"])
        .write_stdin(bytes)
        .assert()
        .code(0);
    assert_eq!(messages(&a.get_output().stdout), want);
}

fn one_error_line(a: &assert_cmd::assert::Assert) -> String {
    let err = String::from_utf8_lossy(&a.get_output().stderr).into_owned();
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "expected one line: {err}");
    assert!(lines[0].starts_with("error: "), "{err}");
    lines[0].to_string()
}

#[test]
fn malformed_cassette_names_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let good = std::fs::read_to_string(cassettes().join("tool_bash.pi87.cassette.jsonl")).unwrap();
    let mut lines: Vec<&str> = good.lines().collect();
    lines[3] = r#"{"dt_ms":0,"stdout":{"type":"x"},"colour":"red"}"#;
    let bad = dir.path().join("bad.cassette.jsonl");
    std::fs::write(&bad, lines.join("\n") + "\n").unwrap();
    let a = pih().arg("map").arg(&bad).assert().code(2);
    let line = one_error_line(&a);
    assert!(
        line.starts_with(&format!(
            "error: malformed cassette: {}:4: record: unknown field `colour`",
            bad.display()
        )),
        "{line}"
    );
}

/// A Codex or Gemini CLI cassette is not pi's stream: refused in one line naming what maps
/// it (pi's mapper read it as unknown lines and a missing terminal before).
#[test]
fn other_agents_cassettes_are_refused_naming_what_maps_them() {
    for (file, agent, name) in [
        (
            "gemini/gemini_text.gm061.cassette.jsonl",
            "Gemini CLI",
            "gemini",
        ),
        ("codex/codex_text.cx0169.cassette.jsonl", "Codex", "codex"),
    ] {
        let path = cassettes().join(file);
        let a = pih().arg("map").arg(&path).assert().code(2);
        let line = one_error_line(&a);
        assert_eq!(
            line,
            format!(
                "error: {}:1: a {agent} cassette: `map` reads pi's json-mode runs; its stream is mapped by `pi-harness run --agent {name}` (replaying it with fake-pi) or `conform`",
                path.display()
            )
        );
    }
}

#[test]
fn missing_file_and_bad_flag_are_one_line() {
    let a = pih()
        .args(["map", "/no/such/capture.jsonl"])
        .assert()
        .code(2);
    assert_eq!(
        one_error_line(&a),
        "error: /no/such/capture.jsonl: no such file"
    );
    let a = pih().args(["map", "--jsonl", "x"]).assert().code(2);
    let line = one_error_line(&a);
    assert!(
        line.contains("'--jsonl'") && line.contains("pi-harness map --help"),
        "{line}"
    );
    let a = pih().args(["map", "/"]).assert().code(2);
    assert_eq!(one_error_line(&a), "error: /: is a directory");
}

/// 256 MB of pi 0.73.1-like stdout piped in from a writer thread: one long answer whose every
/// token line carries two snapshots of the text so far (the quadratic growth of that version).
/// All of it is counted, and the process's peak memory stays far below the input size.
#[test]
fn large_input_streams_in_bounded_memory() {
    const TOTAL: u64 = 256 << 20;
    let mut child = std::process::Command::new(bin())
        .arg("map")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = std::io::BufWriter::with_capacity(1 << 20, child.stdin.take().unwrap());
    let pid = child.id();
    let writer = std::thread::spawn(move || {
        let (mut sent, mut lines, mut peak_seen) = (0u64, 0u64, 0u64);
        let mut send = |line: String, sent: &mut u64, lines: &mut u64| {
            stdin.write_all(line.as_bytes()).unwrap();
            stdin.write_all(b"\n").unwrap();
            *sent += line.len() as u64 + 1;
            *lines += 1;
        };
        send(
            r#"{"type":"session","version":3,"id":"big","timestamp":"T","cwd":"/w"}"#.into(),
            &mut sent,
            &mut lines,
        );
        send(r#"{"type":"agent_start"}"#.into(), &mut sent, &mut lines);
        send(
            r#"{"type":"message_start","message":{"role":"assistant","content":[]}}"#.into(),
            &mut sent,
            &mut lines,
        );
        let mut text = String::new();
        while sent < TOTAL {
            text.push_str("abc ");
            let snap =
                format!(r#"{{"role":"assistant","content":[{{"type":"text","text":"{text}"}}]}}"#);
            send(
                format!(
                    r#"{{"type":"message_update","assistantMessageEvent":{{"type":"text_delta","contentIndex":0,"delta":"abc ","partial":{snap}}},"message":{snap}}}"#
                ),
                &mut sent,
                &mut lines,
            );
            if lines % 256 == 0 {
                peak_seen = peak_seen.max(rss_kib(pid));
            }
        }
        let end = format!(
            r#"{{"role":"assistant","content":[{{"type":"text","text":"{text}"}}],"stopReason":"stop"}}"#
        );
        send(
            format!(r#"{{"type":"message_end","message":{end}}}"#),
            &mut sent,
            &mut lines,
        );
        send(
            r#"{"type":"agent_end","messages":[]}"#.into(),
            &mut sent,
            &mut lines,
        );
        stdin.flush().unwrap();
        (sent, lines, peak_seen, text.len())
    });
    let (sent, lines, peak_seen, answer) = writer.join().unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s = summary(&out.stderr);
    assert_eq!(field(&s, "bytes"), sent as f64, "{s}");
    assert_eq!(field(&s, "lines"), lines as f64, "{s}");
    assert_eq!(field(&s, "invalid lines"), 0.0, "{s}");
    let peak_mb = s
        .rsplit("peak RSS ")
        .next()
        .unwrap()
        .trim_end_matches(" MB")
        .parse::<f64>()
        .unwrap();
    eprintln!("{s}; answer {answer} bytes; highest RSS seen from outside: {peak_seen} KiB");
    assert!(
        peak_mb < 64.0,
        "peak RSS {peak_mb} MB for {} MB of input",
        sent >> 20
    );
    assert!(peak_seen > 0 && peak_seen < 64 * 1024, "{peak_seen} KiB");
}

fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// A pseudo-terminal (master, slave), both ends close-on-exec from the start: the tests
/// share one process, and a child another test starts meanwhile must not inherit an end (the
/// master would see no end of the output while that child lives). `openpty` opens them
/// inheritable.
fn pty() -> (std::fs::File, std::os::fd::OwnedFd) {
    use nix::fcntl::OFlag;
    use std::os::fd::{FromRawFd as _, IntoRawFd as _};
    use std::os::unix::fs::OpenOptionsExt as _;
    let master = nix::pty::posix_openpt(OFlag::O_RDWR | OFlag::O_NOCTTY | OFlag::O_CLOEXEC)
        .expect("a pty master");
    nix::pty::grantpt(&master).unwrap();
    nix::pty::unlockpt(&master).unwrap();
    let name = nix::pty::ptsname_r(&master).unwrap();
    // std opens close-on-exec.
    let slave = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(nix::libc::O_NOCTTY)
        .open(name)
        .expect("the pty slave");
    // SAFETY: the descriptor is the master's own, handed over by into_raw_fd.
    let master = unsafe { std::fs::File::from_raw_fd(master.into_raw_fd()) };
    (master, slave.into())
}

/// stdout on a pseudo-terminal: colours, unless NO_COLOR is set.
#[test]
fn colour_only_on_a_terminal_without_no_color() {
    let path = cassettes().join("tool_bash.pi87.cassette.jsonl");
    for (no_color, want_colour) in [(None, true), (Some("1"), false)] {
        let (master, slave) = pty();
        let mut cmd = std::process::Command::new(bin());
        cmd.arg("map")
            .arg(&path)
            .stdout(Stdio::from(slave))
            .stderr(Stdio::null());
        match no_color {
            Some(v) => cmd.env("NO_COLOR", v),
            None => cmd.env_remove("NO_COLOR"),
        };
        let mut child = cmd.spawn().unwrap();
        drop(cmd); // our copy of the slave end, so the master sees the end
        let mut master = master;
        let mut seen = Vec::new();
        // Reading the master ends with EIO once the child is gone.
        let _ = std::io::Read::read_to_end(&mut master, &mut seen);
        assert!(child.wait().unwrap().success());
        let text = String::from_utf8_lossy(&seen);
        assert!(text.contains("== completed"), "{text}");
        assert_eq!(
            text.contains("\x1b["),
            want_colour,
            "NO_COLOR={no_color:?}: {text:?}"
        );
    }
}
