//! Criterion benchmarks: the mapper against its two baselines, on the same bytes.
//!
//! One group per input (see [`benches::inputs`]); in each, `mapper` (lines in, normalized
//! messages out), `validate_ignored_any` (memchr + `serde_json` `IgnoredAny`, the floor of
//! any validating design) and `naive_value` (each line into `serde_json::Value`); beside them
//! the SIMD JSON crates of `benches::simd`: `sonic_rs_validate`, `simd_json_validate` and
//! `sonic_rs_extract`.
//! Throughput is in bytes; events/s and the ratios, all measured in one run, come from
//! `cargo run --release -p benches --bin ratios`. Sample sizes are small so `cargo bench`
//! ends in a few minutes on a shared 2-core machine.

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_main, Criterion, Throughput};

fn contenders(c: &mut Criterion) {
    let inputs = benches::inputs().unwrap_or_else(|e| panic!("cannot load the inputs: {e}"));
    for input in &inputs {
        let mut group = c.benchmark_group(input.name);
        group
            .throughput(Throughput::Bytes(input.total_bytes()))
            .sample_size(10)
            .warm_up_time(Duration::from_millis(500))
            .measurement_time(Duration::from_secs(3));
        group.bench_function("mapper", |b| {
            b.iter(|| benches::map_input(black_box(input)))
        });
        group.bench_function("validate_ignored_any", |b| {
            b.iter(|| benches::validate_input(black_box(input)))
        });
        group.bench_function("naive_value", |b| {
            b.iter(|| benches::naive_input(black_box(input)))
        });
        let each = |f: fn(&[u8]) -> u64| {
            move || -> u64 { (0..input.repeat).map(|_| f(black_box(&input.stdout))).sum() }
        };
        group.bench_function("sonic_rs_validate", |b| {
            b.iter(each(|s| benches::simd::sonic_validate_lines(s).lines))
        });
        group.bench_function("simd_json_validate", |b| {
            b.iter(each(|s| benches::simd::simd_json_validate_lines(s).lines))
        });
        group.bench_function("sonic_rs_extract", |b| {
            b.iter(each(|s| {
                benches::simd::sonic_extract_lines(s).text_delta_bytes
            }))
        });
        group.finish();
    }
}

// `criterion_group!` defines an undocumented `pub fn`: it lives in a private module.
mod group {
    criterion::criterion_group!(benches, super::contenders);
}
criterion_main!(group::benches);
