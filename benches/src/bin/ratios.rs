//! `ratios`: every contender on every input in one run, and the table of their ratios.
//!
//! `cargo build --release -p fake-pi -p pi-harness && cargo run --release -p benches --bin ratios`
//!
//! Prints, per input: bytes, lines, MB/s and events/s of the mapper, of memchr + `IgnoredAny`
//! validation and of the naive `Value` mapper (median of interleaved repetitions, so all
//! see the same machine load), and the ratios mapper/validation and mapper/naive as speedups
//! (above 1 = the mapper is faster); beside it, from the same repetitions, the mapper against
//! SIMD JSON crates (sonic-rs and simd-json validating each line, sonic-rs validating and
//! extracting; [`throughput`]). Then allocations per line of the mapper (a counting
//! global allocator, switched on only for that part) on 0.73.1 and 0.87.1, first 10% of the
//! lines against the last 10%, with the peak of live heap; then the end-to-end figure:
//! fake-pi at `FAKE_PI_SPEED=0` driven by `pi_provider::Provider` on the 0.73.1 long
//! answer, beside the mapper alone on the same bytes; then `pi-harness run` on fake-pi
//! against `pi-harness map` on the same stdout bytes (wall time and context switches).
//!
//! Environment: `RATIOS_REPS` (repetitions, default 9), `RATIOS_E2E_REPS` (default 5),
//! `RATIOS_REPLAY_REPS` (default 11), `RATIOS_FAKE_PI_BASELINE` (a second fake-pi timed
//! beside the first in the replay section), `PI_HARNESS_FAKE_PI` (the fake-pi binary; default:
//! beside this executable), `RATIOS_CLI_REPS` (default 11), `PI_HARNESS_BIN` (the pi-harness
//! binary; default: beside this executable). `ratios replay` runs only the
//! replay-at-pipe-speed section ([`replay`]): `fake-pi | cat` against `cat raw | cat`,
//! `--version` on a tiny and a large cassette, and fake-pi's peak RSS.

// A benchmark report: its tables go to stdout, its progress to stderr.
#![allow(clippy::print_stdout, clippy::print_stderr)]

#[path = "ratios/replay.rs"]
mod replay;
#[path = "ratios/throughput.rs"]
mod throughput;

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::time::{Duration, Instant};

use benches::Input;
use pi_provider::{Provider, ProviderOptions, Request};
use pi_wire::mapper::{Mapper, MapperOptions};
use pi_wire::message::Message;

// ---------------------------------------------------------------------------
// Counting allocator (off while timing).

struct Counting;

static COUNTING: AtomicBool = AtomicBool::new(false);
static ALLOCS: AtomicU64 = AtomicU64::new(0);
static ALLOC_BYTES: AtomicU64 = AtomicU64::new(0);
static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn note_alloc(size: usize) {
    ALLOCS.fetch_add(1, Relaxed);
    ALLOC_BYTES.fetch_add(size as u64, Relaxed);
    let live = LIVE.fetch_add(size, Relaxed) + size;
    PEAK.fetch_max(live, Relaxed);
}

fn note_free(size: usize) {
    // Blocks allocated before counting started may be freed while it runs: saturate.
    let _ = LIVE.fetch_update(Relaxed, Relaxed, |l| Some(l.saturating_sub(size)));
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTING.load(Relaxed) {
            note_alloc(layout.size());
        }
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if COUNTING.load(Relaxed) {
            note_free(layout.size());
        }
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if COUNTING.load(Relaxed) {
            note_free(layout.size());
            note_alloc(new_size);
        }
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Counters over one closure: (allocations, bytes allocated).
fn counted<R>(f: impl FnOnce() -> R) -> (R, u64, u64) {
    let a0 = ALLOCS.load(Relaxed);
    let b0 = ALLOC_BYTES.load(Relaxed);
    let r = f();
    (r, ALLOCS.load(Relaxed) - a0, ALLOC_BYTES.load(Relaxed) - b0)
}

// ---------------------------------------------------------------------------
// Timing.

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn env_usize(name: &str, default: usize) -> usize {
    match std::env::var(name) {
        Ok(s) => s.parse().unwrap_or_else(|_| {
            eprintln!("ratios: {name}={s:?} is not a number, using {default}");
            default
        }),
        Err(_) => default,
    }
}

fn mbps(bytes: u64, t: Duration) -> f64 {
    bytes as f64 / 1e6 / t.as_secs_f64()
}

fn main() {
    // `ratios rss PROGRAM ARGS...`: a small helper for the replay section (see `replay`).
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("rss") {
        std::process::exit(replay::rss_main(&args[1..]));
    }
    let inputs = match benches::inputs() {
        Ok(i) => i,
        Err(e) => {
            eprintln!("ratios: cannot load the inputs: {e}");
            std::process::exit(2);
        }
    };
    // `ratios profile CONTENDER INPUT SECONDS`: run one contender in a loop, for a profiler.
    if args.first().map(String::as_str) == Some("profile") {
        std::process::exit(profile(&inputs, &args[1..]));
    }
    if args.first().map(String::as_str) == Some("replay") {
        std::process::exit(i32::from(!replay_section()));
    }
    // `ratios cli`: only `pi-harness run` against `pi-harness map`.
    if args.first().map(String::as_str) == Some("cli") {
        std::process::exit(i32::from(!cli_run_vs_map()));
    }
    let reps = env_usize("RATIOS_REPS", 9).max(1);
    if cfg!(debug_assertions) {
        eprintln!("ratios: WARNING: debug build; run with --release for meaningful figures");
    }
    let med = throughput::tables(&inputs, reps);
    // `ratios mapper`: only the throughput tables above.
    if args.first().map(String::as_str) == Some("mapper") {
        return;
    }

    allocations(&inputs);
    let mapper_alone = inputs
        .iter()
        .position(|i| i.name == "long_answer_pi73")
        .map(|i| med[i]);
    let ok = end_to_end(&inputs, mapper_alone);
    let cli_ok = cli_run_vs_map();
    let replay_ok = replay_section();
    if !ok || !cli_ok || !replay_ok {
        std::process::exit(1);
    }
}

/// The replay-at-pipe-speed section ([`replay`]); false when it went wrong.
fn replay_section() -> bool {
    let Some(fake) = fake_pi() else {
        println!("replay at pipe speed skipped: fake-pi not found; run `cargo build --release -p fake-pi` first");
        return false;
    };
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let marker = format!("ratios-{}-{nanos:x}", std::process::id());
    let ok = replay::replay_speed(&fake, &marker);
    let left = pi_procs::pids_with_env(MARKER_VAR, &marker);
    if !left.is_empty() {
        pi_procs::kill_marked(MARKER_VAR, &marker);
        println!("processes left behind: {left:?}");
        return false;
    }
    ok
}

fn profile(inputs: &[Input], args: &[String]) -> i32 {
    let usage = "usage: ratios profile mapper|validate|naive|sonic-validate|simd-json-validate|sonic-extract INPUT SECONDS";
    let [c, name, secs] = args else {
        eprintln!("{usage}");
        return 2;
    };
    let Some(c) = throughput::Contender::named(c) else {
        eprintln!("unknown contender {c:?}; {usage}");
        return 2;
    };
    let Some(input) = inputs.iter().find(|i| i.name == name) else {
        let names: Vec<&str> = inputs.iter().map(|i| i.name).collect();
        eprintln!("unknown input {name:?}; inputs: {names:?}");
        return 2;
    };
    let Ok(secs) = secs.parse::<f64>() else {
        eprintln!("SECONDS {secs:?} is not a number; {usage}");
        return 2;
    };
    let end = Instant::now() + Duration::from_secs_f64(secs);
    let mut n = 0u64;
    while Instant::now() < end {
        std::hint::black_box(c.run(std::hint::black_box(input)));
        n += 1;
    }
    println!("{n} iterations");
    0
}

// ---------------------------------------------------------------------------
// Allocations per line.

struct LineCost {
    len: usize,
    allocs: u64,
    bytes: u64,
}

/// Push the stdout line by line into one mapper, counting what each line allocates
/// (messages emitted included; they are dropped outside the count).
fn per_line_costs(stdout: &[u8]) -> (Vec<LineCost>, usize) {
    let mut mapper = Mapper::new(MapperOptions::default());
    let mut out: Vec<Message> = Vec::with_capacity(64);
    let mut costs = Vec::new();
    COUNTING.store(true, Relaxed);
    LIVE.store(0, Relaxed);
    PEAK.store(0, Relaxed);
    let mut rest = stdout;
    while !rest.is_empty() {
        let end = memchr::memchr(b'\n', rest).map_or(rest.len(), |i| i + 1);
        let (line, next) = rest.split_at(end);
        rest = next;
        let ((), allocs, bytes) = counted(|| mapper.push(line, &mut out));
        costs.push(LineCost {
            len: line.len(),
            allocs,
            bytes,
        });
        out.clear();
    }
    let peak = PEAK.load(Relaxed);
    COUNTING.store(false, Relaxed);
    drop(mapper);
    (costs, peak)
}

/// The same for the naive mapper, whole input at once: total allocations and peak live bytes.
fn naive_costs(stdout: &[u8]) -> (u64, u64, usize) {
    COUNTING.store(true, Relaxed);
    LIVE.store(0, Relaxed);
    PEAK.store(0, Relaxed);
    let (out, allocs, bytes) = counted(|| benches::naive_map(stdout));
    let peak = PEAK.load(Relaxed);
    COUNTING.store(false, Relaxed);
    drop(out);
    (allocs, bytes, peak)
}

fn allocations(inputs: &[Input]) {
    println!("## Mapper allocations per line (counting allocator; messages emitted included)");
    println!();
    println!("| input | lines | part | avg line bytes | allocs/line | alloc bytes/line | median alloc bytes/line | max alloc bytes in one line |");
    println!("|---|---:|---|---:|---:|---:|---:|---:|");
    let mut peaks = Vec::new();
    for input in inputs.iter().filter(|i| i.name.starts_with("long_answer")) {
        let (costs, peak) = per_line_costs(&input.stdout);
        let tenth = (costs.len() / 10).max(1);
        let parts: [(&str, &[LineCost]); 3] = [
            ("all", &costs),
            ("first 10%", &costs[..tenth]),
            ("last 10%", &costs[costs.len() - tenth..]),
        ];
        for (part, cs) in parts {
            let n = cs.len() as f64;
            let sum = |f: fn(&LineCost) -> u64| cs.iter().map(f).sum::<u64>() as f64 / n;
            let mut bytes: Vec<u64> = cs.iter().map(|c| c.bytes).collect();
            bytes.sort_unstable();
            println!(
                "| {} | {} | {} | {:.0} | {:.2} | {:.0} | {} | {} |",
                input.name,
                costs.len(),
                part,
                sum(|c| c.len as u64),
                sum(|c| c.allocs),
                sum(|c| c.bytes),
                bytes[bytes.len() / 2],
                cs.iter().map(|c| c.bytes).max().unwrap_or(0),
            );
        }
        let (n_allocs, n_bytes, n_peak) = naive_costs(&input.stdout);
        peaks.push((
            input.name,
            input.stdout.len(),
            peak,
            n_allocs,
            n_bytes,
            n_peak,
            costs.len(),
        ));
    }
    println!();
    println!("| input | stdout bytes | mapper peak live heap | naive allocs/line | naive alloc bytes/line | naive peak live heap (incl. its output) |");
    println!("|---|---:|---:|---:|---:|---:|");
    for (name, len, peak, na, nb, np, lines) in peaks {
        println!(
            "| {name} | {len} | {peak} | {:.1} | {:.0} | {np} |",
            na as f64 / lines as f64,
            nb as f64 / lines as f64
        );
    }
    println!();
}

// ---------------------------------------------------------------------------
// End to end.

const MARKER_VAR: &str = "PI_HARNESS_TEST_MARKER";

fn fake_pi() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("PI_HARNESS_FAKE_PI") {
        return Some(PathBuf::from(p));
    }
    let exe = std::env::current_exe().ok()?;
    let bin = exe.parent()?.join("fake-pi");
    bin.is_file().then_some(bin)
}

fn assistant_text(ms: &[Message]) -> String {
    ms.iter()
        .filter_map(|m| match m {
            Message::Assistant { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

/// fake-pi (instant) + provider on the 0.73.1 long answer. Returns false when a run went
/// wrong or a process was left behind.
fn end_to_end(inputs: &[Input], mapper_alone: Option<Duration>) -> bool {
    println!("## End to end: fake-pi (FAKE_PI_SPEED=0) + Provider, long answer pi 0.73.1");
    println!();
    let Some(input) = inputs.iter().find(|i| i.name == "long_answer_pi73") else {
        println!("(input missing)");
        return false;
    };
    let Some(fake) = fake_pi() else {
        println!(
            "skipped: fake-pi not found beside {}; run `cargo build --release -p fake-pi` first",
            std::env::current_exe()
                .map(|p| p.display().to_string())
                .unwrap_or_default()
        );
        return false;
    };
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let marker = format!("ratios-{}-{nanos:x}", std::process::id());
    // The recorded cassette expects the prompt in argv (how it was recorded); the provider
    // sends it on stdin, so replay a copy whose expectation says so (same stdout bytes).
    let source = benches::cassette_dir().join("long_answer.pi73.cassette.jsonl.zst");
    let dir = std::env::temp_dir().join(&marker);
    let cassette = dir.join("long_answer.pi73.cassette.jsonl");
    let written = pi_cassette::Cassette::load(&source)
        .map_err(|e| e.to_string())
        .and_then(|mut c| {
            c.header.expect.argv_messages = Some(Vec::new());
            std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
            c.save(&cassette)
                .map_err(|e| format!("{}: {e}", cassette.display()))
        });
    if let Err(e) = written {
        println!("cannot prepare the cassette: {e}");
        return false;
    }
    let mut expected = Vec::new();
    benches::map_run(&input.stdout, &mut expected);
    let expected_text = assistant_text(&expected);

    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            println!("cannot start a tokio runtime: {e}");
            return false;
        }
    };
    let reps = env_usize("RATIOS_E2E_REPS", 5).max(1);
    let provider = Provider::new(ProviderOptions::default());
    let mut times = Vec::new();
    let mut ok = true;
    for _ in 0..reps {
        let request = Request {
            pi_path: Some(fake.clone()),
            pi_version: Some("0.73.1".into()),
            prompt: "Write a lot.".into(),
            provider: Some("fake".into()),
            model: Some("fake-model".into()),
            no_session: true,
            env: vec![
                (MARKER_VAR.into(), marker.clone()),
                ("FAKE_PI_CASSETTE".into(), cassette.display().to_string()),
                ("FAKE_PI_SPEED".into(), "0".into()),
                // Byte-for-byte replay: fake-pi otherwise turns the recorded timestamps into
                // the time of each line, and the bytes would not be the mapper's input.
                ("FAKE_PI_VALUES".into(), "recorded".into()),
            ],
            ..Request::default()
        };
        let t = Instant::now();
        let messages = rt.block_on(async {
            pi_provider::collect(provider.execute(request, Default::default())).await
        });
        times.push(t.elapsed());
        let last = messages.last().map(Message::kind);
        if last != Some("terminal.completed") || assistant_text(&messages) != expected_text {
            println!(
                "end-to-end run went wrong: last message {:?}, text {} bytes (expected {})",
                messages.last(),
                assistant_text(&messages).len(),
                expected_text.len()
            );
            ok = false;
            break;
        }
    }
    drop(rt);
    let _ = std::fs::remove_dir_all(&dir);
    let left = pi_procs::pids_with_env(MARKER_VAR, &marker);
    if !left.is_empty() {
        pi_procs::kill_marked(MARKER_VAR, &marker);
        println!("processes left behind: {left:?}");
        ok = false;
    }
    if !ok {
        return false;
    }
    let e2e = median(times);
    let b = input.total_bytes();
    println!("| what | time | MB/s | ev/s |");
    println!("|---|---:|---:|---:|");
    let row = |what: &str, t: Duration| {
        println!(
            "| {what} | {:.1} ms | {:.0} | {:.0} |",
            t.as_secs_f64() * 1e3,
            mbps(b, t),
            input.total_events() as f64 / t.as_secs_f64()
        )
    };
    if let Some(m) = mapper_alone {
        row("mapper alone", m);
    }
    row(
        &format!("fake-pi + supervisor + provider (median of {reps})"),
        e2e,
    );
    if let Some(m) = mapper_alone {
        println!();
        println!(
            "End to end costs {:.2}x the mapper alone; pipes, processes and replay add {:.1} ms.",
            e2e.as_secs_f64() / m.as_secs_f64(),
            (e2e.as_secs_f64() - m.as_secs_f64()) * 1e3
        );
    }
    true
}

// ---------------------------------------------------------------------------
// `pi-harness run` against `pi-harness map` (the CLI end to end).

/// The release `pi-harness` binary: `PI_HARNESS_BIN`, else beside this executable.
fn pi_harness_bin() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("PI_HARNESS_BIN") {
        return Some(PathBuf::from(p));
    }
    let exe = std::env::current_exe().ok()?;
    let bin = exe.parent()?.join("pi-harness");
    bin.is_file().then_some(bin)
}

/// Context switches (voluntary + involuntary) of every reaped child so far, their own
/// children included.
fn children_switches() -> u64 {
    // SAFETY: `getrusage` fills the struct it is given; a zeroed `rusage` is valid.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) } != 0 {
        return 0;
    }
    (ru.ru_nvcsw + ru.ru_nivcsw) as u64
}

/// One timed process: wall time, context switches of it and its descendants, its stdout.
fn timed(cmd: &mut std::process::Command) -> Result<(Duration, u64, Vec<u8>), String> {
    let s0 = children_switches();
    let t = Instant::now();
    let out = cmd
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("cannot start {cmd:?}: {e}"))?;
    let elapsed = t.elapsed();
    let switches = children_switches().saturating_sub(s0);
    Ok((elapsed, switches, out.stdout))
}

/// `pi-harness run --json` on fake-pi (instant, byte-for-byte replay) against `pi-harness
/// map --json` over the same stdout bytes (a raw JSONL file), per recorded run: median wall
/// times, their ratio, and context switches; fake-pi alone (`> /dev/null`) for scale.
/// Checks that both print the same normalized stream. Returns false when something went
/// wrong or a process was left behind.
fn cli_run_vs_map() -> bool {
    println!("## `pi-harness run` on fake-pi against `pi-harness map`, same stdout bytes");
    println!();
    let (Some(fake), Some(pih)) = (fake_pi(), pi_harness_bin()) else {
        println!(
            "skipped: fake-pi or pi-harness not found beside this executable; run `cargo build --release -p fake-pi -p pi-harness` first"
        );
        return false;
    };
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let marker = format!("ratios-cli-{}-{nanos:x}", std::process::id());
    let dir = std::env::temp_dir().join(&marker);
    if let Err(e) = std::fs::create_dir_all(&dir) {
        println!("cannot create {}: {e}", dir.display());
        return false;
    }
    let reps = env_usize("RATIOS_CLI_REPS", 11).max(1);
    let mut ok = true;
    println!("| run | stdout bytes | lines | map | run | run / map | fake-pi alone | switches map | switches run |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for file in [
        "long_answer.pi73.cassette.jsonl.zst",
        "long_answer.pi87.cassette.jsonl",
        "tool_loop.pi87.cassette.jsonl",
    ] {
        match cli_one(file, &fake, &pih, &dir, &marker, reps) {
            Ok(row) => println!("{row}"),
            Err(e) => {
                println!("| {file} | {e} |");
                ok = false;
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    let left = pi_procs::pids_with_env(MARKER_VAR, &marker);
    if !left.is_empty() {
        pi_procs::kill_marked(MARKER_VAR, &marker);
        println!("processes left behind: {left:?}");
        ok = false;
    }
    println!();
    println!(
        "Median of {reps} (`RATIOS_CLI_REPS`), both printing `--json` into a pipe read by `ratios`; run / map: the median of each repetition's own ratio (the two ran back to back); switches: context switches (voluntary + involuntary) of the process and its descendants (getrusage RUSAGE_CHILDREN), median."
    );
    println!();
    ok
}

fn cli_one(
    file: &str,
    fake: &Path,
    pih: &Path,
    dir: &Path,
    marker: &str,
    reps: usize,
) -> Result<String, String> {
    let source = benches::cassette_dir().join(file);
    let mut c = pi_cassette::Cassette::load(&source).map_err(|e| e.to_string())?;
    let prompt = c
        .header
        .expect
        .prompt
        .clone()
        .unwrap_or_else(|| "go".into());
    let version = c.header.pi.version.clone();
    // The recording took the prompt in argv; `run` sends it on stdin (same stdout bytes).
    c.header.expect.argv_messages = Some(Vec::new());
    let stem = file.split('.').next().unwrap_or("run");
    let cassette = dir.join(format!("{stem}.{version}.cassette.jsonl"));
    c.save(&cassette)
        .map_err(|e| format!("{}: {e}", cassette.display()))?;
    let stdout = c.stdout_bytes();
    let raw = dir.join(format!("{stem}.{version}.stdout.jsonl"));
    std::fs::write(&raw, &stdout).map_err(|e| format!("{}: {e}", raw.display()))?;
    let lines = benches::count_events(&stdout);

    let env = |cmd: &mut std::process::Command| {
        cmd.env(MARKER_VAR, marker)
            .env("FAKE_PI_CASSETTE", &cassette)
            .env("FAKE_PI_SPEED", "0")
            .env("FAKE_PI_VALUES", "recorded")
            .env_remove("NO_COLOR")
            .current_dir(dir);
    };
    let run_cmd = || {
        let mut cmd = std::process::Command::new(pih);
        cmd.arg("run")
            .arg("--pi")
            .arg(fake)
            .args(["--pi-version", &version])
            .args(["--provider", "fake", "--model", "fake-model", "--json"])
            .arg(&prompt);
        env(&mut cmd);
        cmd
    };
    let map_cmd = || {
        let mut cmd = std::process::Command::new(pih);
        cmd.arg("map").arg("--json").arg(&raw);
        cmd
    };
    let fake_cmd = || {
        let mut cmd = std::process::Command::new(fake);
        cmd.args([
            "--mode",
            "json",
            "--provider",
            "fake",
            "--model",
            "fake-model",
        ])
        .arg(&prompt);
        env(&mut cmd);
        cmd
    };
    // Once, untimed: both must print the same stream, ending `terminal.completed`.
    let (_, _, by_run) = timed(&mut run_cmd())?;
    let (_, _, by_map) = timed(&mut map_cmd())?;
    if by_run != by_map || by_map.is_empty() {
        return Err(format!(
            "run and map differ ({} and {} bytes of output)",
            by_run.len(),
            by_map.len()
        ));
    }
    let last = by_map
        .trim_ascii_end()
        .rsplit(|&b| b == b'\n')
        .next()
        .unwrap_or_default();
    if !last.starts_with(b"{\"type\":\"terminal.completed\"") {
        return Err(format!("ends with {}", String::from_utf8_lossy(last)));
    }
    let (mut t_map, mut t_run, mut t_fake) = (Vec::new(), Vec::new(), Vec::new());
    let (mut s_map, mut s_run) = (Vec::new(), Vec::new());
    for _ in 0..reps {
        let (t, s, _) = timed(&mut map_cmd())?;
        t_map.push(t);
        s_map.push(s);
        let (t, s, _) = timed(&mut run_cmd())?;
        t_run.push(t);
        s_run.push(s);
        let (t, _, _) = timed(&mut fake_cmd())?;
        t_fake.push(t);
    }
    let med = |v: &mut Vec<u64>| {
        v.sort_unstable();
        v[v.len() / 2]
    };
    // Each repetition ran `map` and `run` back to back: the median of their own ratios, as
    // for the mapper (a ratio of two medians may take them from different moments).
    let mut paired: Vec<f64> = t_run
        .iter()
        .zip(&t_map)
        .map(|(r, m)| r.as_secs_f64() / m.as_secs_f64())
        .collect();
    paired.sort_by(f64::total_cmp);
    let ratio = paired[paired.len() / 2];
    let (m, r, f) = (median(t_map), median(t_run), median(t_fake));
    let ms = |t: Duration| format!("{:.1} ms", t.as_secs_f64() * 1e3);
    Ok(format!(
        "| {stem} (pi {version}) | {} | {lines} | {} | {} | {:.1}x | {} | {} | {} |",
        stdout.len(),
        ms(m),
        ms(r),
        ratio,
        ms(f),
        med(&mut s_map),
        med(&mut s_run),
    ))
}
