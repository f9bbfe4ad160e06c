//! Replay at pipe speed: fake-pi (`FAKE_PI_SPEED=0`) against `cat` on the same bytes, and
//! fake-pi's peak memory.
//!
//! In a temp dir: the 0.73.1 long answer's stdout (`raw.stdout`), the cassette uncompressed
//! (`long_answer.pi73.cassette.jsonl`, the committed `.gz` decompressed byte for byte), the
//! committed `.gz` itself, a tiny cassette (its first records and its ending) and a large one
//! (the records repeated until it holds 69 MB). Then, interleaved and timed from spawn to the exit
//! of both processes (median of the repetitions):
//!
//! - `cat raw.stdout | cat > /dev/null`, the floor;
//! - `fake-pi ... | cat > /dev/null` on the plain and on the gzipped cassette, with realistic
//!   values for the placeholders (the default), and on the plain one with
//!   `FAKE_PI_VALUES=recorded` (the file's bytes as they are);
//! - `fake-pi --version` on the tiny and on the large cassette.
//!
//! Peak RSS is fake-pi's `ru_maxrss` from `wait4` (writing to `/dev/null`), started by
//! `ratios rss` (see [`peak_rss`]).
//! Before timing, one replay with `FAKE_PI_VALUES=recorded` must give the raw stdout byte for
//! byte; the timed runs replay with realistic values (the default).
//!
//! `RATIOS_FAKE_PI_BASELINE=PATH` adds the same rows for another fake-pi binary (an older
//! build, say), timed in the same interleaved repetitions, for before/after figures.

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
    gz: PathBuf,
    tiny: PathBuf,
    large: PathBuf,
    raw_len: u64,
    large_len: u64,
}

fn prepare(marker: &str) -> Result<Files, String> {
    let gz = benches::cassette_dir().join("long_answer.pi73.cassette.jsonl.gz");
    let dir = std::env::temp_dir().join(format!("{marker}-replay"));
    std::fs::create_dir_all(dir.join("agent")).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut text = Vec::new();
    pi_cassette::input::open(&gz, &pi_cassette::Limits::from_env())
        .map_err(|e| e.to_string())?
        .read_to_end(&mut text)
        .map_err(|e| format!("{}: {e}", gz.display()))?;
    let cassette = pi_cassette::Cassette::parse(&gz, &text).map_err(|e| e.to_string())?;
    let stdout = cassette.stdout_bytes();
    let write = |name: &str, bytes: &[u8]| -> Result<PathBuf, String> {
        let p = dir.join(name);
        std::fs::write(&p, bytes).map_err(|e| format!("{}: {e}", p.display()))?;
        Ok(p)
    };
    let raw = write("raw.stdout", &stdout)?;
    let plain = write("long_answer.pi73.cassette.jsonl", &text)?;
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
    for cassette in [&files.plain, &files.gz] {
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

fn measure(fake: &Path, files: &Files, marker: &str) -> Result<(), String> {
    check_bytes(fake, files, marker)?;
    let reps = env_usize("RATIOS_REPLAY_REPS", 11).max(1);
    let cat = || {
        let mut c = Command::new("cat");
        c.arg(&files.raw);
        c
    };
    let version = |cassette: &Path| {
        let mut c = fake_pi_cmd(fake, files, cassette, marker);
        c.arg("--version");
        c
    };
    let baseline = std::env::var_os("RATIOS_FAKE_PI_BASELINE").map(PathBuf::from);
    let mut t_base = Vec::new();
    let mut t_base_recorded = Vec::new();
    let mut t_base_v_large = Vec::new();
    let mut t_cat = Vec::new();
    let mut t_plain = Vec::new();
    let mut t_gz = Vec::new();
    let mut t_recorded = Vec::new();
    let recorded = || {
        let mut c = fake_pi_cmd(fake, files, &files.plain, marker);
        c.env("FAKE_PI_VALUES", "recorded");
        c
    };
    let mut t_v_tiny = Vec::new();
    let mut t_v_large = Vec::new();
    for _ in 0..reps {
        t_cat.push(piped(cat())?);
        t_plain.push(piped(fake_pi_cmd(fake, files, &files.plain, marker))?);
        t_gz.push(piped(fake_pi_cmd(fake, files, &files.gz, marker))?);
        t_recorded.push(piped(recorded())?);
        t_v_tiny.push(alone(version(&files.tiny))?);
        t_v_large.push(alone(version(&files.large))?);
        if let Some(b) = &baseline {
            t_base.push(piped(fake_pi_cmd(b, files, &files.plain, marker))?);
            let mut c = fake_pi_cmd(b, files, &files.plain, marker);
            c.env("FAKE_PI_VALUES", "recorded");
            t_base_recorded.push(piped(c)?);
            let mut c = fake_pi_cmd(b, files, &files.large, marker);
            c.arg("--version");
            t_base_v_large.push(alone(c)?);
        }
    }
    let rss_plain = peak_rss(&fake_pi_cmd(fake, files, &files.plain, marker))?;
    let rss_gz = peak_rss(&fake_pi_cmd(fake, files, &files.gz, marker))?;
    let rss_large = peak_rss(&fake_pi_cmd(fake, files, &files.large, marker))?;
    let rss_tiny = peak_rss(&fake_pi_cmd(fake, files, &files.tiny, marker))?;
    let plain_len = std::fs::metadata(&files.plain).map_or(0, |m| m.len());
    let [cat, plain, gz, recorded, v_tiny, v_large] =
        [t_cat, t_plain, t_gz, t_recorded, t_v_tiny, t_v_large].map(median);
    let b = files.raw_len;
    println!("Median of {reps} interleaved repetitions; {b} bytes of stdout ({plain_len} bytes of cassette).");
    println!();
    println!("| what | time | stdout MB/s | vs cat |");
    println!("|---|---:|---:|---:|");
    let row = |what: &str, t: Duration| {
        println!(
            "| {what} | {:.1} ms | {:.0} | {:.2}x |",
            t.as_secs_f64() * 1e3,
            mbps(b, t),
            t.as_secs_f64() / cat.as_secs_f64()
        )
    };
    row("`cat raw.stdout \\| cat`", cat);
    row("`fake-pi \\| cat`, plain cassette", plain);
    row("`fake-pi \\| cat`, committed .gz", gz);
    row(
        "`fake-pi \\| cat`, plain cassette, `FAKE_PI_VALUES=recorded`",
        recorded,
    );
    if let Some(b) = &baseline {
        row(
            &format!("baseline `{}` \\| cat, plain cassette", b.display()),
            median(t_base),
        );
        row(
            &format!(
                "baseline `{}` \\| cat, plain cassette, `FAKE_PI_VALUES=recorded`",
                b.display()
            ),
            median(t_base_recorded),
        );
    }
    println!();
    println!("| what | cassette bytes | time |");
    println!("|---|---:|---:|");
    let tiny_len = std::fs::metadata(&files.tiny).map_or(0, |m| m.len());
    println!(
        "| `fake-pi --version`, tiny cassette | {tiny_len} | {:.2} ms |",
        v_tiny.as_secs_f64() * 1e3
    );
    println!(
        "| `fake-pi --version`, large cassette | {} | {:.2} ms |",
        files.large_len,
        v_large.as_secs_f64() * 1e3
    );
    if let Some(b) = &baseline {
        println!(
            "| baseline `{}` --version, large cassette | {} | {:.2} ms |",
            b.display(),
            files.large_len,
            median(t_base_v_large).as_secs_f64() * 1e3
        );
    }
    println!();
    println!("| fake-pi replaying (stdout on /dev/null) | cassette bytes | peak RSS |");
    println!("|---|---:|---:|");
    let mib = |kib: u64| kib as f64 / 1024.0;
    println!("| tiny cassette | {tiny_len} | {:.1} MiB |", mib(rss_tiny));
    println!(
        "| long answer, plain | {plain_len} | {:.1} MiB |",
        mib(rss_plain)
    );
    println!(
        "| long answer, committed .gz | {} (compressed) | {:.1} MiB |",
        std::fs::metadata(&files.gz).map_or(0, |m| m.len()),
        mib(rss_gz)
    );
    println!(
        "| large (long answer's records repeated) | {} | {:.1} MiB |",
        files.large_len,
        mib(rss_large)
    );
    if let Some(b) = &baseline {
        let rss = peak_rss(&fake_pi_cmd(b, files, &files.large, marker))?;
        println!(
            "| baseline `{}`, large | {} | {:.1} MiB |",
            b.display(),
            files.large_len,
            mib(rss)
        );
    }
    println!();
    println!(
        "fake-pi | cat vs cat | cat: {:.2}x (target: within 2x); peak RSS on {:.0} MB: {:.1} MiB (target: under 16 MB); --version large/tiny: {:.1}x",
        plain.as_secs_f64() / cat.as_secs_f64(),
        files.large_len as f64 / 1e6,
        mib(rss_large),
        v_large.as_secs_f64() / v_tiny.as_secs_f64()
    );
    println!();
    let _ = std::io::stdout().flush();
    Ok(())
}
