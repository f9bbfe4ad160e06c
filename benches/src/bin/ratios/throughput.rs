//! The throughput tables: every contender on every input, interleaved.
//!
//! Each repetition runs every contender on every input once, back to back, so all of them
//! see the same machine load; MB/s and events/s are medians, ratios the median of each
//! repetition's own ratio. The first table is the mapper against its two baselines
//! (`IgnoredAny` validation, the naive `Value` mapper); the second the mapper beside the
//! SIMD JSON crates ([`benches::simd`]): sonic-rs and simd-json validating each line, and
//! sonic-rs validating and extracting what the mapper's one-pass path takes from a line.

use std::time::{Duration, Instant};

use benches::simd::{simd_json_validate_lines, sonic_extract_lines, sonic_validate_lines};
use benches::{map_input, naive_input, validate_input, Input};

use super::{mbps, median};

/// One contender of the tables.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Contender {
    Mapper,
    Validate,
    Naive,
    SonicValidate,
    SimdJsonValidate,
    SonicExtract,
}

/// Every contender, in the order of the columns (the mapper first: ratios are to it).
const CONTENDERS: [Contender; 6] = [
    Contender::Mapper,
    Contender::Validate,
    Contender::Naive,
    Contender::SonicValidate,
    Contender::SimdJsonValidate,
    Contender::SonicExtract,
];

impl Contender {
    /// The contender `ratios profile` names so.
    pub fn named(name: &str) -> Option<Contender> {
        Some(match name {
            "mapper" => Contender::Mapper,
            "validate" => Contender::Validate,
            "naive" => Contender::Naive,
            "sonic-validate" => Contender::SonicValidate,
            "simd-json-validate" => Contender::SimdJsonValidate,
            "sonic-extract" => Contender::SonicExtract,
            _ => return None,
        })
    }

    /// Run over the whole input (every repetition of it); something to keep from the optimiser.
    pub fn run(self, input: &Input) -> u64 {
        let each = |f: fn(&[u8]) -> u64| (0..input.repeat).map(|_| f(&input.stdout)).sum();
        match self {
            Contender::Mapper => map_input(input) as u64,
            Contender::Validate => validate_input(input).lines,
            Contender::Naive => naive_input(input) as u64,
            Contender::SonicValidate => each(|s| sonic_validate_lines(s).lines),
            Contender::SimdJsonValidate => each(|s| simd_json_validate_lines(s).lines),
            Contender::SonicExtract => each(|s| sonic_extract_lines(s).text_delta_bytes),
        }
    }
}

/// Time every contender on every input (`reps` interleaved repetitions), print both
/// tables; returns the mapper's median time per input.
pub fn tables(inputs: &[Input], reps: usize) -> Vec<Duration> {
    let mut times = vec![vec![Vec::new(); CONTENDERS.len()]; inputs.len()];
    for _ in 0..reps {
        for (i, input) in inputs.iter().enumerate() {
            for (k, &c) in CONTENDERS.iter().enumerate() {
                let t = Instant::now();
                std::hint::black_box(c.run(std::hint::black_box(input)));
                times[i][k].push(t.elapsed());
            }
        }
    }
    // Paired: each repetition's own ratio (the contenders ran back to back on the same
    // input), then the median; a machine that speeds up or slows down between repetitions
    // moves both sides of a pair together.
    let paired = |i: usize, k: usize| -> f64 {
        let mut r: Vec<f64> = times[i][k]
            .iter()
            .zip(&times[i][0])
            .map(|(other, mapper)| other.as_secs_f64() / mapper.as_secs_f64())
            .collect();
        r.sort_by(f64::total_cmp);
        r[r.len() / 2]
    };
    let ratios: Vec<Vec<f64>> = (0..inputs.len())
        .map(|i| (0..CONTENDERS.len()).map(|k| paired(i, k)).collect())
        .collect();
    let med: Vec<Vec<Duration>> = times
        .into_iter()
        .map(|per| per.into_iter().map(median).collect())
        .collect();

    println!(
        "## Throughput (median of {reps} interleaved repetitions; speedup > 1 = mapper faster, the median of each repetition's own ratio)"
    );
    println!();
    println!("| input | bytes | lines | mapper MB/s | mapper ev/s | validate MB/s | validate ev/s | naive MB/s | naive ev/s | mapper vs validate | mapper vs naive |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (i, input) in inputs.iter().enumerate() {
        let (b, e) = (input.total_bytes(), input.total_events());
        let [m, v, n] = [med[i][0], med[i][1], med[i][2]];
        let evs = |t: Duration| e as f64 / t.as_secs_f64();
        println!(
            "| {} | {} | {} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} | {:.2}x | {:.2}x |",
            input.name,
            b,
            e,
            mbps(b, m),
            evs(m),
            mbps(b, v),
            evs(v),
            mbps(b, n),
            evs(n),
            ratios[i][1],
            ratios[i][2],
        );
    }
    println!();
    for input in inputs {
        println!("- `{}`: {}", input.name, input.description);
    }
    println!();
    simd_table(inputs, &med, &ratios);
    med.iter().map(|m| m[0]).collect()
}

/// The mapper beside the SIMD JSON crates, from the same repetitions.
fn simd_table(inputs: &[Input], med: &[Vec<Duration>], ratios: &[Vec<f64>]) {
    println!(
        "## SIMD JSON crates beside the mapper (same repetitions; speedup > 1 = mapper faster)"
    );
    println!();
    println!("| input | mapper MB/s | sonic-rs validate MB/s | simd-json validate MB/s | sonic-rs validate + extract MB/s | mapper vs sonic-rs validate | mapper vs simd-json validate | mapper vs sonic-rs extract | serde_json `IgnoredAny` vs sonic-rs validate |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (i, input) in inputs.iter().enumerate() {
        let b = input.total_bytes();
        println!(
            "| {} | {:.0} | {:.0} | {:.0} | {:.0} | {:.2}x | {:.2}x | {:.2}x | {:.2}x |",
            input.name,
            mbps(b, med[i][0]),
            mbps(b, med[i][3]),
            mbps(b, med[i][4]),
            mbps(b, med[i][5]),
            ratios[i][3],
            ratios[i][4],
            ratios[i][5],
            // Both against the mapper in the same repetition: their quotient is the
            // speedup of sonic-rs over serde_json's validation floor.
            ratios[i][1] / ratios[i][3],
        );
    }
    println!();
    println!("sonic-rs 0.5 and simd-json 0.19 as `cargo build --release` builds them (no `-C target-cpu`); sonic-rs validates with `from_slice::<IgnoredAny>`, simd-json builds a tape from a padded copy of each line; the extraction reads typed borrowed structs (`benches::simd::Line`) and builds no messages.");
    println!();
}
