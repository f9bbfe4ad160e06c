//! Replay at pipe speed: fake-pi (`FAKE_PI_SPEED=0`) against `cat` on the same bytes, and
//! fake-pi's peak memory.
//!
//! In a temp dir: the 0.73.1 long answer's stdout (`raw.stdout`), the cassette uncompressed
//! (`long_answer.pi73.cassette.jsonl`, the committed `.zst` decompressed byte for byte), the
//! committed `.zst` itself (zstd: what the recorder writes for a large run), the same text as
//! gzip by the one gzip writer (`.gz`, the format recordings had before), a tiny cassette (its first records and its ending) and a large one
//! (the records repeated until it holds 69 MB). Then, interleaved and timed from spawn to the exit
//! of both processes (median of the repetitions):
//!
//! - `cat raw.stdout | cat > /dev/null`, the floor;
//! - `fake-pi ... | cat > /dev/null` on the plain, the zstd and the gzip cassette, each with
//!   realistic values for the placeholders (the default) and with `FAKE_PI_VALUES=recorded`
//!   (the file's bytes as they are);
//! - `fake-pi --version` on the large and on the tiny cassette.
//!
//! The summary line gives paired ratios (the median of each repetition's own ratio): the
//! `.zst` and the `.gz` against `cat | cat` and against the plain cassette, in both values
//! modes, and the plain cassette against `cat | cat`.
//!
//! Peak RSS is fake-pi's `ru_maxrss` from `wait4` (writing to `/dev/null`), started by
//! `ratios rss` (see [`peak_rss`]).
//! Before timing, one replay with `FAKE_PI_VALUES=recorded` must give the raw stdout byte for
//! byte (plain, `.zst` and `.gz`).
//!
//! `RATIOS_FAKE_PI_BASELINE=PATH` adds the same rows for another fake-pi binary (an older
//! build, say), timed in the same interleaved repetitions, for before/after figures (plain and
//! `.gz` only: a build from before zstd cannot read `.zst`).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::{env_usize, mbps, median};

/// The argv the long answer expects (prompt in argv, JSON mode; no session on disk).
const ARGV: &[&str] = &[
    "--mode",
    "json",
    "--provider",
    "fake",
    "--model",
    "fake-model",
    "--no-session",
    "Write a lot.",
];

/// The size the large cassette is grown to (at least).
const LARGE_BYTES: usize = 69_000_000;

struct Files {
    dir: PathBuf,
    raw: PathBuf,
    plain: PathBuf,
    zst: PathBuf,
    gz: PathBuf,
    tiny: PathBuf,
    large: PathBuf,
    raw_len: u64,
    large_len: u64,
}

fn prepare(marker: &str) -> Result<Files, String> {
    let zst = benches::cassette_dir().join("long_answer.pi73.cassette.jsonl.zst");
    let dir = std::env::temp_dir().join(format!("{marker}-replay"));
    std::fs::create_dir_all(dir.join("agent")).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut text = Vec::new();
    pi_cassette::input::open(&zst, &pi_cassette::Limits::from_env())
        .map_err(|e| e.to_string())?
        .read_to_end(&mut text)
        .map_err(|e| format!("{}: {e}", zst.display()))?;
    let cassette = pi_cassette::Cassette::parse(&zst, &text).map_err(|e| e.to_string())?;
    let stdout = cassette.stdout_bytes();
    let write = |name: &str, bytes: &[u8]| -> Result<PathBuf, String> {
        let p = dir.join(name);
        std::fs::write(&p, bytes).map_err(|e| format!("{}: {e}", p.display()))?;
        Ok(p)
    };
    let raw = write("raw.stdout", &stdout)?;
    let plain = write("long_answer.pi73.cassette.jsonl", &text)?;
    let gz = write(
        "long_answer.pi73.cassette.jsonl.gz",
        &pi_cassette::output::gzip(&text).map_err(|e| e.to_string())?,
    )?;
    // Lines: header, records..., ending (one line each; the file ends with a newline).
    let lines: Vec<&[u8]> = text
        .strip_suffix(b"\n")
        .unwrap_or(&text)
        .split(|b| *b == b'\n')
        .collect();
    let (header, body, ending) = (lines[0], &lines[1..lines.len() - 1], lines[lines.len() - 1]);
    let mut tiny = Vec::new();
    for l in std::iter::once(header)
        .chain(body.iter().take(5).copied())
        .chain([ending])
    {
        tiny.extend_from_slice(l);
        tiny.push(b'\n');
    }
    let tiny = write("tiny.cassette.jsonl", &tiny)?;
    let mut large = Vec::with_capacity(LARGE_BYTES + text.len());
    large.extend_from_slice(header);
    large.push(b'\n');
    'fill: loop {
        for l in body {
            if large.len() >= LARGE_BYTES {
                break 'fill;
            }
            large.extend_from_slice(l);
            large.push(b'\n');
        }
    }
    large.extend_from_slice(ending);
    large.push(b'\n');
    let large_len = large.len() as u64;
    let large = write("large.cassette.jsonl", &large)?;
    Ok(Files {
        raw_len: stdout.len() as u64,
        large_len,
        dir,
        raw,
        plain,
        zst,
        gz,
        tiny,
        large,
    })
}

fn fake_pi_cmd(fake: &Path, files: &Files, cassette: &Path, marker: &str) -> Command {
    let mut c = Command::new(fake);
    c.args(ARGV)
        .env("FAKE_PI_CASSETTE", cassette)
        .env("FAKE_PI_SPEED", "0")
        .env("PI_CODING_AGENT_DIR", files.dir.join("agent"))
        .env(super::MARKER_VAR, marker)
        .env_remove("FAKE_PI_VALUES")
        .env_remove("FAKE_PI_CHILD_SPEC")
        .current_dir(&files.dir)
        .stdin(Stdio::null())
        .stderr(Stdio::null());
    c
}

/// `first | cat > /dev/null`, timed from spawn to both exits; false when `first` failed.
fn piped(mut first: Command) -> Result<Duration, String> {
    let t = Instant::now();
    let mut a = first
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("spawn: {e}"))?;
    let out = a.stdout.take().expect("piped");
    let mut b = Command::new("cat")
        .stdin(Stdio::from(out))
        .stdout(Stdio::null())
        .spawn()
        .map_err(|e| format!("spawn cat: {e}"))?;
    let sa = a.wait().map_err(|e| e.to_string())?;
    let sb = b.wait().map_err(|e| e.to_string())?;
    let elapsed = t.elapsed();
    if !sa.success() || !sb.success() {
        return Err(format!("{first:?}: {sa}, cat: {sb}"));
    }
    Ok(elapsed)
}

/// Run to the end with stdout on /dev/null: the time.
fn alone(mut c: Command) -> Result<Duration, String> {
    let t = Instant::now();
    let status = c
        .stdout(Stdio::null())
        .status()
        .map_err(|e| format!("spawn: {e}"))?;
    let elapsed = t.elapsed();
    if !status.success() {
        return Err(format!("{c:?}: {status}"));
    }
    Ok(elapsed)
}

/// Peak RSS (KiB) of `c` run to the end with stdout on /dev/null, through `ratios rss`: a
/// child's `ru_maxrss` includes the memory of the process it was forked from, so the
/// command is started by a fresh, small process rather than by this one.
fn peak_rss(c: &Command) -> Result<u64, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut w = Command::new(exe);
    w.arg("rss").arg(c.get_program()).args(c.get_args());
    for (k, v) in c.get_envs() {
        match v {
            Some(v) => w.env(k, v),
            None => w.env_remove(k),
        };
    }
    if let Some(d) = c.get_current_dir() {
        w.current_dir(d);
    }
    let out = w
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("spawn ratios rss: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    match (out.status.success(), text.trim().parse::<u64>()) {
        (true, Ok(kib)) => Ok(kib),
        _ => Err(format!("{c:?}: ratios rss: {}, {text:?}", out.status)),
    }
}

/// `ratios rss PROGRAM ARGS...`: run PROGRAM (stdin and stderr inherited, stdout on
/// /dev/null), print its peak RSS in KiB (`ru_maxrss` from `wait4`); exit 1 when it failed.
pub fn rss_main(args: &[String]) -> i32 {
    let Some((program, rest)) = args.split_first() else {
        eprintln!("usage: ratios rss PROGRAM ARGS...");
        return 2;
    };
    let child = match Command::new(program)
        .args(rest)
        .stdout(Stdio::null())
        .spawn()
    {
        Ok(c) => c,
        Err(e) => {
            eprintln!("ratios rss: {program}: {e}");
            return 2;
        }
    };
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value for wait4 to overwrite.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waiting for our own child, which std's `Child` never waits for afterwards.
    let r = unsafe { libc::wait4(child.id() as libc::pid_t, &mut status, 0, &mut usage) };
    if r < 0 {
        eprintln!("ratios rss: wait4: {}", std::io::Error::last_os_error());
        return 2;
    }
    println!("{}", usage.ru_maxrss);
    i32::from(!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0))
}

fn check_bytes(fake: &Path, files: &Files, marker: &str) -> Result<(), String> {
    let raw = std::fs::read(&files.raw).map_err(|e| e.to_string())?;
    for cassette in [&files.plain, &files.zst, &files.gz] {
        let out = fake_pi_cmd(fake, files, cassette, marker)
            .env("FAKE_PI_VALUES", "recorded")
            .stdout(Stdio::piped())
            .output()
            .map_err(|e| e.to_string())?;
        if !out.status.success() || out.stdout != raw {
            return Err(format!(
                "{}: fake-pi gave {} ({} bytes of stdout), expected exit 0 and the {} raw bytes",
                cassette.display(),
                out.status,
                out.stdout.len(),
                raw.len()
            ));
        }
    }
    Ok(())
}

/// The replay-speed section. Returns false when a run went wrong.
pub fn replay_speed(fake: &Path, marker: &str) -> bool {
    println!("## Replay at pipe speed: fake-pi (FAKE_PI_SPEED=0) vs cat, long answer pi 0.73.1");
    println!();
    let files = match prepare(marker) {
        Ok(f) => f,
        Err(e) => {
            println!("cannot prepare the files: {e}");
            return false;
        }
    };
    let result = measure(fake, &files, marker);
    let _ = std::fs::remove_dir_all(&files.dir);
    match result {
        Ok(()) => true,
        Err(e) => {
            println!("replay run went wrong: {e}");
            false
        }
    }
}

/// One timed command of the replay section: what it is, how to make it, and whether its
/// stdout goes through `| cat` (else to /dev/null).
struct Row<'a> {
    what: String,
    make: Box<dyn Fn() -> Command + 'a>,
    piped: bool,
}

/// The rows timed for one fake-pi binary (`who`: empty for the one under test, else a
/// label), in this order: plain, `.zst` (when `zst`), `.gz`, then the same recorded (all
/// `| cat`), then `--version` on the large cassette and, for the binary under test, on the
/// tiny one.
fn fake_rows<'a>(
    who: &str,
    fake: &'a Path,
    files: &'a Files,
    marker: &'a str,
    zst: bool,
) -> Vec<Row<'a>> {
    let replay = move |cassette: &'a Path, recorded: bool| {
        Box::new(move || {
            let mut c = fake_pi_cmd(fake, files, cassette, marker);
            if recorded {
                c.env("FAKE_PI_VALUES", "recorded");
            }
            c
        }) as Box<dyn Fn() -> Command + 'a>
    };
    let version = move |cassette: &'a Path| {
        Box::new(move || {
            let mut c = fake_pi_cmd(fake, files, cassette, marker);
            c.arg("--version");
            c
        }) as Box<dyn Fn() -> Command + 'a>
    };
    let rec = ", `FAKE_PI_VALUES=recorded`";
    let mut rows = Vec::new();
    for (recorded, r) in [(false, ""), (true, rec)] {
        rows.push((
            format!("{who}`fake-pi \\| cat`, plain cassette{r}"),
            replay(&files.plain, recorded),
            true,
        ));
        if zst {
            rows.push((
                format!("{who}`fake-pi \\| cat`, committed .zst{r}"),
                replay(&files.zst, recorded),
                true,
            ));
        }
        rows.push((
            format!("{who}`fake-pi \\| cat`, the same as .gz{r}"),
            replay(&files.gz, recorded),
            true,
        ));
    }
    rows.extend([(
        format!("{who}`fake-pi --version`, large cassette"),
        version(&files.large),
        false,
    )]);
    if who.is_empty() {
        rows.push((
            "`fake-pi --version`, tiny cassette".into(),
            version(&files.tiny),
            false,
        ));
    }
    rows.into_iter()
        .map(|(what, make, piped)| Row { what, make, piped })
        .collect()
}

/// The median over the repetitions of `t[a][k] / t[b][k]`: each repetition's own ratio
/// (the two ran in the same repetition, close in time), as the mapper's ratios are taken.
fn paired(t: &[Vec<Duration>], a: usize, b: usize) -> f64 {
    let mut r: Vec<f64> = t[a]
        .iter()
        .zip(&t[b])
        .map(|(x, y)| x.as_secs_f64() / y.as_secs_f64())
        .collect();
    r.sort_by(f64::total_cmp);
    r[r.len() / 2]
}

fn measure(fake: &Path, files: &Files, marker: &str) -> Result<(), String> {
    check_bytes(fake, files, marker)?;
    let reps = env_usize("RATIOS_REPLAY_REPS", 11).max(1);
    let baseline = std::env::var_os("RATIOS_FAKE_PI_BASELINE").map(PathBuf::from);
    let mut rows = vec![Row {
        what: "`cat raw.stdout \\| cat`".into(),
        make: Box::new(|| {
            let mut c = Command::new("cat");
            c.arg(&files.raw);
            c
        }),
        piped: true,
    }];
    rows.extend(fake_rows("", fake, files, marker, true));
    let base_at = rows.len();
    if let Some(b) = &baseline {
        rows.extend(fake_rows(
            &format!("baseline `{}`: ", b.display()),
            b,
            files,
            marker,
            false,
        ));
    }
    // Interleaved: each repetition runs every row once, in order.
    let mut t: Vec<Vec<Duration>> = vec![Vec::new(); rows.len()];
    for _ in 0..reps {
        for (row, times) in rows.iter().zip(&mut t) {
            times.push(if row.piped {
                piped((row.make)())?
            } else {
                alone((row.make)())?
            });
        }
    }
    let med: Vec<Duration> = t.iter().cloned().map(median).collect();
    let plain_len = std::fs::metadata(&files.plain).map_or(0, |m| m.len());
    let b = files.raw_len;
    println!("Median of {reps} interleaved repetitions; {b} bytes of stdout ({plain_len} bytes of cassette). `vs cat`: ratio of the medians.");
    println!();
    println!("| what | time | stdout MB/s | vs cat |");
    println!("|---|---:|---:|---:|");
    for (row, &m) in rows.iter().zip(&med).filter(|(r, _)| r.piped) {
        println!(
            "| {} | {:.1} ms | {:.0} | {:.2}x |",
            row.what,
            m.as_secs_f64() * 1e3,
            mbps(b, m),
            m.as_secs_f64() / med[0].as_secs_f64()
        );
    }
    println!();
    println!("| what | cassette bytes | time |");
    println!("|---|---:|---:|");
    let tiny_len = std::fs::metadata(&files.tiny).map_or(0, |m| m.len());
    for (row, &m) in rows.iter().zip(&med).filter(|(r, _)| !r.piped) {
        let len = if row.what.contains("tiny") {
            tiny_len
        } else {
            files.large_len
        };
        println!("| {} | {len} | {:.2} ms |", row.what, m.as_secs_f64() * 1e3);
    }
    println!();
    let rss_large = rss_table(fake, files, marker, baseline.as_deref())?;
    // Rows of the binary under test: 0 cat, 1 plain, 2 zst, 3 gz, 4 plain recorded, 5 zst
    // recorded, 6 gz recorded, 7 --version large, 8 --version tiny.
    println!(
        "Paired ratios (median of each repetition's own): .zst vs cat | cat: {:.2}x, recorded {:.2}x (target: within 2.5x); .zst vs plain: {:.2}x, recorded {:.2}x (target: within 1.25x); .gz vs cat | cat: {:.2}x, recorded {:.2}x; .gz vs plain: {:.2}x, recorded {:.2}x; plain vs cat | cat: {:.2}x, recorded {:.2}x (aim: 1.5x); peak RSS on {:.0} MB: {:.1} MiB (target: under 16 MB); --version large/tiny: {:.1}x",
        paired(&t, 2, 0),
        paired(&t, 5, 0),
        paired(&t, 2, 1),
        paired(&t, 5, 4),
        paired(&t, 3, 0),
        paired(&t, 6, 0),
        paired(&t, 3, 1),
        paired(&t, 6, 4),
        paired(&t, 1, 0),
        paired(&t, 4, 0),
        files.large_len as f64 / 1e6,
        rss_large as f64 / 1024.0,
        paired(&t, 7, 8),
    );
    if let Some(bl) = &baseline {
        // The baseline's rows: plain, gz, plain recorded, gz recorded, --version large.
        let k = base_at;
        println!(
            "Baseline `{}`, same repetitions: .gz vs cat | cat: {:.2}x, recorded {:.2}x; .gz vs plain: {:.2}x, recorded {:.2}x; plain vs cat | cat: {:.2}x, recorded {:.2}x",
            bl.display(),
            paired(&t, k + 1, 0),
            paired(&t, k + 3, 0),
            paired(&t, k + 1, k),
            paired(&t, k + 3, k + 2),
            paired(&t, k, 0),
            paired(&t, k + 2, 0),
        );
    }
    println!();
    let _ = std::io::stdout().flush();
    Ok(())
}

/// fake-pi's peak RSS replaying each cassette (stdout on /dev/null), and the baseline's on
/// the large one and the `.gz`; returns the first's on the large cassette (KiB).
fn rss_table(
    fake: &Path,
    files: &Files,
    marker: &str,
    baseline: Option<&Path>,
) -> Result<u64, String> {
    let rss = |cassette: &Path| peak_rss(&fake_pi_cmd(fake, files, cassette, marker));
    let len = |p: &Path| std::fs::metadata(p).map_or(0, |m| m.len());
    let mib = |kib: u64| kib as f64 / 1024.0;
    println!("| fake-pi replaying (stdout on /dev/null) | cassette bytes | peak RSS |");
    println!("|---|---:|---:|");
    let mut large = 0;
    for (what, cassette, note) in [
        ("tiny cassette", &files.tiny, ""),
        ("long answer, plain", &files.plain, ""),
        ("long answer, committed .zst", &files.zst, " (compressed)"),
        ("long answer, the same as .gz", &files.gz, " (compressed)"),
        ("large (long answer's records repeated)", &files.large, ""),
    ] {
        let kib = rss(cassette)?;
        if cassette == &files.large {
            large = kib;
        }
        println!("| {what} | {}{note} | {:.1} MiB |", len(cassette), mib(kib));
    }
    if let Some(b) = baseline {
        for (what, cassette) in [("large", &files.large), ("the .gz", &files.gz)] {
            let kib = peak_rss(&fake_pi_cmd(b, files, cassette, marker))?;
            println!(
                "| baseline `{}`, {what} | {} | {:.1} MiB |",
                b.display(),
                len(cassette),
                mib(kib)
            );
        }
    }
    println!();
    Ok(large)
}
