//! Measures cancel-to-last-process-gone latency of the reference provider.
//!
//! `cargo run --release -p pi-harness --example cancel_latency -- [FAKE_PI] [RUNS]`
//!
//! For a fake-pi that honours SIGTERM (pi's behaviour) and one that ignores it, each run starts
//! fake-pi mid-tool with a child in its own session and a grandchild that escaped into another,
//! cancels, and measures the time from `cancel()` until no process carrying the run's marker is
//! left (checked by scanning `/proc/*/environ` in a tight loop).

// A measuring program: its table goes to stdout.
#![allow(clippy::print_stdout)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use pi_procs as procs;
use pi_provider::{Provider, ProviderOptions, Request};
use pi_wire::message::Message;
use tokio_stream::StreamExt;
use tokio_util::sync::CancellationToken;

const MARKER: &str = "PI_HARNESS_LATENCY_MARKER";

fn cassette(dir: &std::path::Path, on_sigterm: &str) -> PathBuf {
    let header = format!(
        r#"{{"format":"pi-cassette","version":1,"pi":{{"version":"0.87.1","dialect":"delta-only"}},"scenario":{{"name":"latency","description":"mid-tool hang"}},"process":{{"on_sigterm":{on_sigterm}}},"origin":{{"kind":"hand-made","timing":"synthetic"}}}}"#
    );
    let records = [
        r#"{"dt_ms":0,"stdout":{"type":"session","version":3,"id":"s","timestamp":"T","cwd":"/w"}}"#,
        r#"{"dt_ms":0,"stdout":{"type":"tool_execution_start","toolCallId":"c","toolName":"bash","args":{"command":"sleep 300"}}}"#,
        r#"{"dt_ms":0,"spawn":{"id":"bash","own_session":true,"grandchild":{"own_session":true}}}"#,
        r#"{"dt_ms":0,"hang":true}"#,
    ];
    let path = dir.join(format!("latency-{}.cassette.jsonl", on_sigterm.len()));
    std::fs::write(&path, format!("{header}\n{}\n", records.join("\n"))).unwrap();
    path
}

async fn one(
    fake: &Path,
    cassette: &Path,
    supervisor: &Path,
    grace: Duration,
    run: usize,
) -> Duration {
    let marker = format!("{}-{run}", std::process::id());
    let req = Request {
        pi_path: Some(fake.to_path_buf()),
        pi_version: Some("0.87.1".into()),
        prompt: "go".into(),
        env: vec![
            (MARKER.into(), marker.clone()),
            ("FAKE_PI_CASSETTE".into(), cassette.display().to_string()),
            ("FAKE_PI_SPEED".into(), "0".into()),
        ],
        ..Request::default()
    };
    let opts = ProviderOptions {
        supervisor: Some(supervisor.to_path_buf()),
        grace,
        ..ProviderOptions::default()
    };
    let token = CancellationToken::new();
    let mut stream = Box::pin(Provider::new(opts).execute(req, token.clone()));
    // supervisor + fake-pi + child + grandchild
    while procs::pids_with_env(MARKER, &marker).len() < 4 {
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let start = Instant::now();
    token.cancel();
    let watcher = tokio::task::spawn_blocking(move || {
        while !procs::pids_with_env(MARKER, &marker).is_empty() {}
        start.elapsed()
    });
    let mut last = None;
    while let Some(m) = stream.next().await {
        last = Some(m);
    }
    assert!(
        matches!(last, Some(Message::TerminalCancelled { .. })),
        "{last:?}"
    );
    watcher.await.unwrap()
}

fn summary(label: &str, mut v: Vec<Duration>) {
    v.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "{label:<34} runs {:>3}  median {:>8.1} ms  p90 {:>8.1} ms  max {:>8.1} ms",
        v.len(),
        ms(v[v.len() / 2]),
        ms(v[v.len() * 9 / 10]),
        ms(v[v.len() - 1])
    );
}

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let exe = std::env::current_exe().unwrap();
    let bin_dir = exe.parent().and_then(|p| p.parent()).unwrap().to_path_buf();
    let fake = args
        .next()
        .map(PathBuf::from)
        .unwrap_or_else(|| bin_dir.join("fake-pi"));
    let runs: usize = args.next().map(|s| s.parse().unwrap()).unwrap_or(20);
    let supervisor = bin_dir.join("pi-supervisor");
    let dir = tempfile::tempdir().unwrap();
    let grace = Duration::from_millis(2000);
    for (label, on_sigterm) in [
        (
            "pi honours SIGTERM",
            r#"{"action":"cleanup_exit","code":143}"#,
        ),
        ("pi ignores SIGTERM (grace 2 s)", r#"{"action":"ignore"}"#),
    ] {
        let c = cassette(dir.path(), on_sigterm);
        let mut v = Vec::new();
        for run in 0..runs {
            v.push(one(&fake, &c, &supervisor, grace, run).await);
        }
        summary(label, v);
    }
}
