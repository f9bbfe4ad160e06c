//! fake-pi's process shapes (pi, Claude Code, the Codex wrapper and its native child, the
//! Gemini CLI relaunch parent and its child) run many times on a loaded machine, stdin a
//! pipe and hints on: each run either to its recorded end or to where it waits mid-tool,
//! where every thread's signal mask is checked and SIGTERM is sent as the recording's
//! caller sent it. Prints, per shape, the runs, the hangs (a run that got nowhere within
//! 30 s, with its threads) and the wrong endings; exits 1 when there was any.
//!
//! `scripts/fake-pi-shapes-stress.sh [RUNS_PER_SHAPE] [--load THREADS] [--jobs N] [--only
//! pi|claude|codex|gemini]` builds and runs it (default 5 runs per shape, a few seconds; a
//! busy thread per CPU; two runs at a time; every shape). Half of a shape's runs go to the
//! end, half are signalled.

// A command-line program: its report goes to stdout, each failed run to stderr.
#![allow(clippy::print_stdout, clippy::print_stderr)]

#[path = "../tests/it/shape.rs"]
mod shape;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use shape::{Failure, Kind, Shape, SHAPES};

/// Runs, hangs and wrong endings of one shape.
#[derive(Default, Clone, Copy)]
struct Tally {
    runs: usize,
    hangs: usize,
    wrong: usize,
}

/// One run of `shape`: `Err` says what went wrong.
fn one(shape: Shape, kind: Kind) -> Result<(), Failure> {
    let world = pi_testkit::World::new(&format!("stress_{shape:?}"));
    let result = (|| {
        let mut run = shape::start(&world, shape, kind)?;
        match kind {
            Kind::ToEnd => run.run_to_end(&world),
            Kind::Sigterm => {
                run.drive_to_wait(&world)?;
                if let Err(e) = run.masks_agree(&world) {
                    return Err(Failure::Wrong(format!("{e}{}", run.threads(&world))));
                }
                run.sigterm(&world)
            }
        }
    })();
    world.kill_all();
    result
}

fn arg(args: &[String], name: &str) -> Option<usize> {
    let i = args.iter().position(|a| a == name)?;
    args.get(i + 1)?.parse().ok()
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
    let runs = args
        .first()
        .filter(|a| !a.starts_with('-'))
        .and_then(|a| a.parse().ok())
        .unwrap_or(5usize);
    let load = arg(&args, "--load").unwrap_or(cpus);
    let jobs = arg(&args, "--jobs").unwrap_or(2).max(1);
    // The load: busy threads until the runs are done.
    let stop = Arc::new(AtomicBool::new(false));
    let busy: Vec<_> = (0..load)
        .map(|_| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut x = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
                }
            })
        })
        .collect();
    let only = args
        .iter()
        .position(|a| a == "--only")
        .and_then(|i| args.get(i + 1));
    let shapes: Vec<Shape> = SHAPES
        .into_iter()
        .filter(|s| only.map_or(true, |o| format!("{s:?}").eq_ignore_ascii_case(o)))
        .collect();
    if shapes.is_empty() {
        eprintln!("--only: pi, claude, codex or gemini");
        std::process::exit(2);
    }
    let total = runs * shapes.len();
    let next = AtomicUsize::new(0);
    let tally: Mutex<BTreeMap<usize, Tally>> = Mutex::new(BTreeMap::new());
    let started = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..jobs {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= total {
                    return;
                }
                let k = i % shapes.len();
                let kind = if (i / shapes.len()) % 2 == 0 {
                    Kind::ToEnd
                } else {
                    Kind::Sigterm
                };
                let result = one(shapes[k], kind);
                let mut t = tally.lock().unwrap();
                let e = t.entry(k).or_default();
                e.runs += 1;
                match result {
                    Ok(()) => {}
                    Err(f) => {
                        match f {
                            Failure::Hung(_) => e.hangs += 1,
                            Failure::Wrong(_) => e.wrong += 1,
                        }
                        eprintln!("{} ({kind:?}), run {i}: {f}", shapes[k].name());
                    }
                }
            });
        }
    });
    stop.store(true, Ordering::Relaxed);
    for b in busy {
        let _ = b.join();
    }
    let t = tally.into_inner().unwrap();
    println!(
        "fake-pi's process shapes, stdin a pipe, hints on, {load} busy threads on {cpus} CPUs, {jobs} runs at a time ({:.1} s)",
        started.elapsed().as_secs_f64()
    );
    println!(
        "{:<34} {:>6} {:>6} {:>6}",
        "shape", "runs", "hangs", "wrong"
    );
    let (mut hangs, mut wrong) = (0, 0);
    for (k, s) in shapes.iter().enumerate() {
        let r = t.get(&k).copied().unwrap_or_default();
        println!(
            "{:<34} {:>6} {:>6} {:>6}",
            s.name(),
            r.runs,
            r.hangs,
            r.wrong
        );
        hangs += r.hangs;
        wrong += r.wrong;
    }
    println!("hangs: {hangs} in {total} runs; wrong endings: {wrong}");
    if hangs + wrong > 0 {
        std::process::exit(1);
    }
}
