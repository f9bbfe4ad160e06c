//! Every committed cassette's page (and the hostile one of `timeline`) loaded in ONE headless
//! Chromium, checked from its DOM by `harness/cli/tests/browser/check.mjs` (playwright-core
//! driving Debian's `chromium`; axe-core): no network request, every record reachable (a mark,
//! or counted in an aggregate whose list holds exactly its records), every process a bar,
//! every mark a labelled button in the tab order, no WCAG A/AA violation, hostile text shown
//! as text with no element or handler of its own.
//!
//! It needs `chromium` (`PI_HARNESS_CHROMIUM_BIN`, default `/usr/bin/chromium`), `node` and
//! the check's packages (`npm ci --prefix harness/cli/tests/browser`). Without them it says
//! so and passes, unless `PI_HARNESS_CHROMIUM=1` (CI sets it): then their absence fails.
//! `PI_HARNESS_TIMELINE_SCREENSHOTS=DIR` also writes the README's three screenshots there
//! (`scripts/timeline-screenshots.sh`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use serde_json::json;

use crate::timeline::{
    committed, expected_counts, hostile_cassette, render, ENV_SECRET, HOSTILE_SHOWN,
};
use crate::util::repo;

/// What the check needs, or why it cannot run.
fn needs() -> Result<(PathBuf, PathBuf), String> {
    let chromium = std::env::var_os("PI_HARNESS_CHROMIUM_BIN")
        .map_or_else(|| PathBuf::from("/usr/bin/chromium"), PathBuf::from);
    if !chromium.is_file() {
        return Err(format!(
            "no Chromium at {} (apt-get install chromium)",
            chromium.display()
        ));
    }
    let dir = repo().join("harness/cli/tests/browser");
    if !dir.join("node_modules/playwright-core").is_dir()
        || !dir.join("node_modules/axe-core").is_dir()
    {
        return Err(format!(
            "no playwright-core or axe-core in {} (npm ci --prefix {})",
            dir.display(),
            dir.display()
        ));
    }
    match Command::new("node").arg("--version").output() {
        Ok(o) if o.status.success() => Ok((chromium, dir)),
        _ => Err("no node on PATH".into()),
    }
}

/// The three pages the README shows, and what is pressed before each is taken.
const SHOTS: &[(&str, &str, &str)] = &[
    (
        "claude/claude_tool_allowed.cc21332.cassette.jsonl",
        "timeline-tool.png",
        ".bar[data-proc=\"1\"]",
    ),
    (
        "sigint_mid_tool.pi73.cassette.jsonl",
        "timeline-cancel-orphans.png",
        ".ar.if[aria-label*=\"SIGINT\"]",
    ),
    (
        "retry_then_success.pi73.cassette.jsonl",
        "timeline-retry.png",
        ".L-retry",
    ),
];

#[test]
fn every_page_loads_in_one_chromium_with_every_record_reachable() {
    let (chromium, check) = match needs() {
        Ok(x) => x,
        Err(why) if std::env::var_os("PI_HARNESS_CHROMIUM").is_some_and(|v| v == "1") => {
            panic!("PI_HARNESS_CHROMIUM=1 and the browser check cannot run: {why}")
        }
        Err(why) => {
            println!(
                "timeline_browser: skipped: {why} (PI_HARNESS_CHROMIUM=1 makes this a failure)"
            );
            return;
        }
    };
    let started = Instant::now();
    let dir = tempfile::tempdir().unwrap();
    let shots = std::env::var_os("PI_HARNESS_TIMELINE_SCREENSHOTS").map(PathBuf::from);
    let mut pages = Vec::new();
    let mut seen_dirs = std::collections::BTreeSet::new();
    for (n, file) in committed().iter().enumerate() {
        let html = dir.path().join(format!("{n}.html"));
        let out = render(file, &html, &[]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}: {}",
            file.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        let (records, procs) = expected_counts(file);
        let name = file
            .strip_prefix(repo().join("cassettes"))
            .unwrap_or(file)
            .display()
            .to_string();
        // axe and a real Tab walk on the first page of each directory, the long answer and
        // the pages the README shows; every page gets the rest.
        let parent = file.parent().map(Path::to_path_buf);
        let first_of_dir = seen_dirs.insert(parent);
        let shot = SHOTS.iter().find(|s| s.0 == name);
        let deep = first_of_dir || shot.is_some() || name.contains("long_answer.pi73");
        let mut page = json!({
            "name": name, "html": html, "records": records, "procs": procs,
            "axe": deep, "tab": deep && records < 150, "hostile": null,
        });
        if let (Some(shots), Some(s)) = (&shots, shot) {
            page["screenshot"] = json!(shots.join(s.1));
            page["click"] = json!(s.2);
        }
        pages.push(page);
    }
    let hostile = hostile_cassette(dir.path());
    let html = dir.path().join("hostile.html");
    let out = render(
        &hostile,
        &html,
        &[("PI_HARNESS_TIMELINE_TEST_KEY", ENV_SECRET)],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (records, procs) = expected_counts(&hostile);
    pages.push(json!({
        "name": "hostile", "html": html, "records": records, "procs": procs,
        "axe": true, "tab": true, "hostile": HOSTILE_SHOWN,
    }));
    pages.push(report_page(dir.path(), &hostile, records, procs));
    pages.push(map_page(dir.path()));
    let rendered = started.elapsed();
    let manifest = dir.path().join("manifest.json");
    std::fs::write(&manifest, json!({"pages": pages}).to_string()).unwrap();
    let browser = Instant::now();
    let out = Command::new("node")
        .arg(check.join("check.mjs"))
        .arg(&manifest)
        .env("PI_HARNESS_CHROMIUM_BIN", &chromium)
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&out.stdout);
    println!("{report}{}", String::from_utf8_lossy(&out.stderr));
    println!(
        "timeline_browser: {} pages rendered in {:.1} s, checked in Chromium in {:.1} s",
        pages.len(),
        rendered.as_secs_f64(),
        browser.elapsed().as_secs_f64()
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "the browser check failed:\n{report}"
    );
    assert!(
        report.contains(&format!("timeline pages: {} checked", pages.len())),
        "{report}"
    );
}

/// A replay's page: the hostile cassette's recording beside a replay whose failure and
/// leftover hold markup.
fn report_page(dir: &Path, hostile: &Path, records: usize, procs: usize) -> serde_json::Value {
    // A replay's page: the recording beside a replay whose failure and leftover hold markup.
    let tl = dir.join("tl.jsonl");
    std::fs::write(&tl, r#"{"fake_pi_timeline":1,"pid":7,"started_unix_ms":5.0,"argv":["--mode","json","<img src=x onerror=alert(1)>"],"signals":[{"signal":"SIGINT","t_ms":3.0,"answer":"die"}],"ended":{"t_ms":3.0,"signal":"SIGINT"}}"#).unwrap();
    let left = dir.join("left.txt");
    std::fs::write(
        &left,
        "99 </script><script>window.__pwned='leftover'</script>\n",
    )
    .unwrap();
    let html = dir.join("report.html");
    let out = crate::util::pih()
        .arg("report")
        .arg("--html")
        .arg(&html)
        .arg("--cassette")
        .arg(hostile)
        .arg("--fake-pi-timeline")
        .arg(&tl)
        .arg("--leftovers")
        .arg(&left)
        .args(["--failure", "<script>window.__pwned='failure'</script>"])
        .env("PI_HARNESS_TIMELINE_TEST_KEY", ENV_SECRET)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let page = std::fs::read_to_string(&html).unwrap();
    let items = crate::timeline::data(&page, "tl-items-1")
        .as_array()
        .unwrap()
        .len();
    json!({
        "name": "report", "html": html, "records": records + items, "procs": procs + 2,
        "lines": false, "axe": true, "tab": true,
        "hostile": ["<script>window.__pwned='failure'</script>", "</script><script>window.__pwned='leftover'</script>"],
    })
}

/// The normalized stream of a tool run (`map --html`).
fn map_page(dir: &Path) -> serde_json::Value {
    let html = dir.join("map.html");
    let out = crate::util::pih()
        .arg("map")
        .arg(repo().join("cassettes/tool_bash.pi87.cassette.jsonl"))
        .arg("--html")
        .arg(&html)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let messages = crate::timeline::data(&std::fs::read_to_string(&html).unwrap(), "tl-items-0")
        .as_array()
        .unwrap()
        .len();
    json!({
        "name": "map", "html": html, "records": messages, "procs": 0,
        "lines": false, "axe": true, "tab": true, "hostile": null,
    })
}
