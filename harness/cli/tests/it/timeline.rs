//! `cassette show --html` read as a file, without a browser (timeline_browser.rs loads the
//! pages in Chromium): every committed cassette's page holds every record once and every
//! process; the page is self-contained under a policy whose hashes name its own script and
//! style; a hostile cassette's text stays data and its secrets never reach the file; the long
//! answer stays under 5 MB; the file is written only to the path given, never through a link.

use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::process::Output;

use base64::Engine as _;
use serde_json::Value;
use sha2::Digest as _;

use crate::util::{cassettes, pih};

/// Every committed cassette (`cassettes/**`, compressed ones included), sorted.
pub fn committed() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p
                .file_name()
                .is_some_and(|n| n.to_string_lossy().contains(".cassette.jsonl"))
            {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    walk(&cassettes(), &mut out);
    out.sort();
    out
}

/// `cassette show FILE --html OUT` with these variables set.
pub fn render(file: &Path, out: &Path, env: &[(&str, &str)]) -> Output {
    let mut c = pih();
    c.args(["cassette", "show"])
        .arg(file)
        .arg("--html")
        .arg(out)
        .env_remove("PI_HARNESS_TIMELINE_TEST_KEY");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

/// The text of a cassette, decompressed.
pub fn cassette_text(file: &Path) -> String {
    let bytes = std::fs::read(file).unwrap();
    let bytes = if bytes.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        zstd::decode_all(&bytes[..]).unwrap()
    } else if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::MultiGzDecoder::new(&bytes[..]), &mut out)
            .unwrap();
        out
    } else {
        bytes
    };
    String::from_utf8_lossy(&bytes).into_owned()
}

/// What a page should hold for a cassette, counted here apart from the renderer: its
/// records, and its processes (the CLI's own, each spawn and the process it forks).
pub fn expected_counts(file: &Path) -> (usize, usize) {
    let text = cassette_text(file);
    let mut lines = text.lines();
    let header: Value = serde_json::from_str(lines.next().unwrap()).unwrap();
    let env: Vec<&str> = header["expect"]["env"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let cli = if header.get("codex").is_some() {
        2
    } else if header.get("gemini").is_some() {
        if env.contains(&"GEMINI_CLI_NO_RELAUNCH") {
            1
        } else {
            2
        }
    } else {
        1
    };
    let mut records = 0;
    let mut procs = cli;
    for l in lines.filter(|l| !l.is_empty()) {
        records += 1;
        let r: Value = serde_json::from_str(l).unwrap();
        if let Some(s) = r.get("spawn") {
            procs += 1 + usize::from(s.get("grandchild").is_some());
        }
    }
    (records, procs)
}

/// The JSON of the page's `<script type="application/json" id=ID>`.
pub fn data(html: &str, id: &str) -> Value {
    let open = format!("<script type=\"application/json\" id=\"{id}\">");
    let start = html.find(&open).unwrap_or_else(|| panic!("no {id}")) + open.len();
    let end = start + html[start..].find("</script>").unwrap();
    serde_json::from_str(&html[start..end]).unwrap()
}

fn ok(out: &Output) {
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn every_committed_cassette_renders_every_record_once_and_every_process() {
    let dir = tempfile::tempdir().unwrap();
    let all = committed();
    assert!(all.len() > 100, "{} cassettes", all.len());
    for (n, file) in all.iter().enumerate() {
        let out = dir.path().join(format!("{n}.html"));
        ok(&render(file, &out, &[]));
        let html = std::fs::read_to_string(&out).unwrap();
        let (records, procs) = expected_counts(file);
        let items = data(&html, "tl-items-0");
        let meta = data(&html, "tl-meta");
        let section = &meta["sections"][0];
        let bulked: u64 = section["bulks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b[5].as_u64().unwrap())
            .sum();
        let items = items.as_array().unwrap();
        assert_eq!(
            items.len() + bulked as usize,
            records,
            "{}: records on the page",
            file.display()
        );
        let mut lines: Vec<u64> = items.iter().map(|i| i[2].as_u64().unwrap()).collect();
        lines.dedup();
        assert_eq!(
            lines,
            (2..records as u64 + 2).collect::<Vec<_>>(),
            "{}",
            file.display()
        );
        assert_eq!(section["records"], records as u64);
        assert_eq!(
            section["procs"].as_array().unwrap().len(),
            procs,
            "{}: processes",
            file.display()
        );
        // Every lane the page names counts what it holds, and they add up.
        let per_lane: u64 = section["lanes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l["count"].as_u64().unwrap())
            .sum();
        assert_eq!(per_lane, records as u64, "{}", file.display());
    }
}

/// The CSP source of `text`, computed here.
fn csp_hash(text: &str) -> String {
    let d = sha2::Sha256::digest(text.as_bytes());
    format!(
        "'sha256-{}'",
        base64::engine::general_purpose::STANDARD.encode(d)
    )
}

#[test]
fn the_page_is_self_contained_under_a_policy_naming_its_own_script_and_style() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("p.html");
    ok(&render(
        &cassettes().join("tool_bash.pi87.cassette.jsonl"),
        &out,
        &[],
    ));
    let html = std::fs::read_to_string(&out).unwrap();
    let csp_at = html
        .find("<meta http-equiv=\"Content-Security-Policy\" content=\"")
        .expect("a CSP meta");
    let csp = &html[csp_at..][..html[csp_at..].find("\">").unwrap()];
    assert!(csp.contains("default-src 'none'"), "{csp}");
    let between = |open: &str, close: &str| {
        let s = html.find(open).unwrap() + open.len();
        html[s..s + html[s..].find(close).unwrap()].to_string()
    };
    let script = between("\n<script>", "</script>");
    let style = between("<style>", "</style>");
    assert!(
        csp.contains(&format!("script-src {}", csp_hash(&script))),
        "{csp}"
    );
    assert!(
        csp.contains(&format!("style-src {}", csp_hash(&style))),
        "{csp}"
    );
    // Nothing to fetch: no source, link, import or URL anywhere in the page's own code.
    for needle in [
        " src=",
        "href=",
        "http://",
        "https://",
        "url(",
        "@import",
        "fetch(",
        "XMLHttpRequest",
        "innerHTML",
        "outerHTML",
        "insertAdjacentHTML",
        "document.write",
        "eval(",
    ] {
        assert!(
            !script.contains(needle) && !style.contains(needle),
            "{needle} in the page's code"
        );
    }
    assert_eq!(
        html.matches("<script").count(),
        3,
        "two data blocks and the script"
    );
}

/// The hostile cassette: markup, a `javascript:` link, bidi controls and secrets in every
/// place a cassette can put text (the header's description and notes, an event's `type`, a
/// text delta, a non-JSON line, stderr cut inside a secret, a tool's command line).
pub const LITERAL: &str = "sk-test-LITERAL-0123456789";
/// The value of the `{"env": ...}` secret in the renderer's environment.
pub const ENV_SECRET: &str = "ENVSECRETVALUE-abcdef";
/// Texts the page must show as text (the browser check presses every mark for them); a
/// stdout record is shown as its JSON, so a quote inside a string shows as `\"`.
pub const HOSTILE_SHOWN: &[&str] = &[
    "</script><script>window.__pwned='stdout'</script>",
    r#"<img src=x onerror=\"window.__pwned='kind'\">"#,
    "javascript:window.__pwned='md'",
    r#"<a href=\"javascript:alert(1)\">x</a>"#,
    "<script>window.__pwned='text'</script>[U+202E][U+2066] bidi",
    "</script><script>window.__pwned='stderr'</script>",
    "</script><script>window.__pwned='description'</script>",
    "[U+202E]evil[U+202C]",
];

/// Write the hostile cassette into `dir`.
pub fn hostile_cassette(dir: &Path) -> PathBuf {
    let header = serde_json::json!({
        "format": "pi-cassette", "version": 1,
        "pi": {"version": "0.87.1", "dialect": "delta-only"},
        "scenario": {"name": "hostile", "description": "</script><script>window.__pwned='description'</script> <img src=x onerror=\"window.__pwned='img'\"> \u{202e}evil\u{202c}"},
        "expect": {"never_in_argv": [{"literal": LITERAL}, {"env": "PI_HARNESS_TIMELINE_TEST_KEY"}]},
        "origin": {"kind": "hand-made", "timing": "synthetic", "notes": format!("<a href=\"javascript:window.__pwned='notes'\">click</a> the key was {LITERAL}")},
    });
    let records = [
        serde_json::json!({"dt_ms": 5, "stdout": {"type": "session", "id": "<SESSION_ID>", "x": "</script><script>window.__pwned='stdout'</script>"}}),
        serde_json::json!({"dt_ms": 5, "stdout": {"type": "</script><img src=x onerror=\"window.__pwned='kind'\">"}}),
        serde_json::json!({"dt_ms": 5, "stdout": {"type": "message_update", "assistantMessageEvent": {"type": "text_delta", "delta": format!("[click](javascript:window.__pwned='md') <a href=\"javascript:alert(1)\">x</a> {LITERAL} and {ENV_SECRET}")}}}),
        serde_json::json!({"dt_ms": 5, "stdout_text": "<script>window.__pwned='text'</script>\u{202e}\u{2066} bidi"}),
        serde_json::json!({"dt_ms": 5, "stderr": &LITERAL[..11]}),
        serde_json::json!({"dt_ms": 5, "stderr": format!("{} </script><script>window.__pwned='stderr'</script>\n", &LITERAL[11..])}),
        serde_json::json!({"dt_ms": 0, "spawn": {"id": "call_1", "argv": ["/bin/sh", "-c", format!("echo </script><script>window.__pwned='argv'</script> {ENV_SECRET}")]}}),
        serde_json::json!({"dt_ms": 5, "exit": 0}),
    ];
    let mut text = format!("{header}\n");
    for r in records {
        text.push_str(&format!("{r}\n"));
    }
    let file = dir.join("hostile.pi87.cassette.jsonl");
    std::fs::write(&file, text).unwrap();
    file
}

#[test]
fn a_hostile_cassette_stays_data_and_its_secrets_never_reach_the_page() {
    let dir = tempfile::tempdir().unwrap();
    let file = hostile_cassette(dir.path());
    let out = dir.path().join("h.html");
    ok(&render(
        &file,
        &out,
        &[("PI_HARNESS_TIMELINE_TEST_KEY", ENV_SECRET)],
    ));
    let html = std::fs::read_to_string(&out).unwrap();
    for secret in [LITERAL, ENV_SECRET, &LITERAL[..11], &LITERAL[11..]] {
        assert!(!html.contains(secret), "{secret} in the page");
    }
    assert_eq!(html.matches("<script").count(), 3);
    assert_eq!(html.matches("</script>").count(), 3);
    for raw in ["<img", "<a ", "\u{202e}", "\u{2066}", "onerror=\"window"] {
        assert!(!html.contains(raw), "{raw:?} raw in the page");
    }
    // The data says what was there, escaped and masked.
    let items = data(&html, "tl-items-0");
    let texts: Vec<&str> = items
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i[3].as_str().unwrap())
        .collect();
    assert!(texts[0].contains("</script><script>window.__pwned='stdout'</script>"));
    assert!(texts[2].contains("[REDACTED] and [REDACTED]"));
    assert_eq!(texts[4], "[REDACTED]");
    assert!(texts[5].starts_with("[REDACTED] </script>"));
    // Without the variable set only the literal is known: the run's own key cannot be.
    let out2 = dir.path().join("h2.html");
    ok(&render(&file, &out2, &[]));
    let html2 = std::fs::read_to_string(&out2).unwrap();
    assert!(!html2.contains(LITERAL) && html2.contains(ENV_SECRET));
}

#[test]
fn the_long_answer_renders_under_5_mb() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("long.html");
    let file = cassettes().join("recorded/long_answer.pi73.cassette.jsonl.zst");
    ok(&render(&file, &out, &[]));
    let size = std::fs::metadata(&out).unwrap().len();
    let input = cassette_text(&file).len();
    println!("long_answer.pi73: {input} bytes of cassette, a page of {size} bytes");
    assert!(input > 20_000_000, "{input}");
    assert!(size < 5_000_000, "{size} bytes");
}

#[test]
fn the_page_is_written_only_to_the_path_given_never_through_a_link() {
    let dir = tempfile::tempdir().unwrap();
    let cassette = cassettes().join("tool_bash.pi87.cassette.jsonl");
    let target = dir.path().join("target.txt");
    std::fs::write(&target, "keep me").unwrap();
    let link = dir.path().join("link.html");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let out = render(&cassette, &link, &[]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        err,
        format!(
            "error: {}: is a symbolic link; the page is written only to a regular file or a new path, never through a link\n",
            link.display()
        )
    );
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep me");
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    // A dangling link too: nothing is created at its target.
    let dangling = dir.path().join("dangling.html");
    std::os::unix::fs::symlink(dir.path().join("nowhere.html"), &dangling).unwrap();
    assert_eq!(render(&cassette, &dangling, &[]).status.code(), Some(2));
    assert!(!dir.path().join("nowhere.html").exists());
    // A directory, and the cassette itself, are refused.
    assert_eq!(render(&cassette, dir.path(), &[]).status.code(), Some(2));
    let copy = dir.path().join("c.cassette.jsonl");
    std::fs::copy(&cassette, &copy).unwrap();
    let out = render(&copy, &copy, &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is the cassette being read"));
    // A regular file is replaced whole (a new file put in place), and no temp file is left.
    let page = dir.path().join("page.html");
    std::fs::write(&page, "old").unwrap();
    let hard = dir.path().join("hard.html");
    std::fs::hard_link(&page, &hard).unwrap();
    let ino = std::fs::metadata(&page).unwrap().ino();
    ok(&render(&cassette, &page, &[]));
    assert_ne!(std::fs::metadata(&page).unwrap().ino(), ino);
    assert_eq!(std::fs::read_to_string(&hard).unwrap(), "old");
    assert!(std::fs::read_to_string(&page)
        .unwrap()
        .starts_with("<!DOCTYPE html>"));
    // A bad cassette leaves nothing behind.
    let bad = dir.path().join("bad.cassette.jsonl");
    std::fs::write(&bad, "{\"format\":\"pi-cassette\"}\n").unwrap();
    let out = render(&bad, &dir.path().join("bad.html"), &[]);
    assert_eq!(out.status.code(), Some(2));
    // ... nor does one found bad at a later line, once the page was begun.
    let header = cassette_text(&cassette).lines().next().unwrap().to_string();
    std::fs::write(
        &bad,
        format!("{header}\n{{\"dt_ms\":1,\"stdout\":{{}}}}\n{{\"dt_ms\":1}}\n"),
    )
    .unwrap();
    let out = render(&bad, &dir.path().join("bad.html"), &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(":3: "),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        names
            .iter()
            .all(|n| !n.ends_with(".tmp") && n != "bad.html"),
        "{names:?}"
    );
}

/// `pi-harness report --html OUT ARGS...`.
fn report(args: &[&std::ffi::OsStr]) -> Output {
    let mut c = pih();
    c.arg("report").args(args);
    c.output().unwrap()
}

#[test]
fn a_replay_is_drawn_beside_its_recording_with_what_departed_and_what_was_left() {
    let dir = tempfile::tempdir().unwrap();
    let cassette = cassettes().join("sigint_mid_tool.pi73.cassette.jsonl");
    let tl = dir.path().join("tl.jsonl");
    std::fs::write(
        &tl,
        concat!(
            r#"{"fake_pi_timeline":1,"pid":11,"started_unix_ms":1000.0,"cassette":"c","argv":["--mode","json","--model","wrong"],"signals":[],"ended":{"t_ms":8.0,"exit":99}}"#,
            "\n",
            r#"{"fake_pi_timeline":1,"pid":12,"started_unix_ms":1010.0,"cassette":"c","argv":["--mode","json","go"],"signals":[{"signal":"SIGINT","t_ms":30.5,"answer":"die"}],"ended":{"t_ms":30.5,"signal":"SIGINT"}}"#,
            "\n"
        ),
    )
    .unwrap();
    let rep = dir.path().join("rep.jsonl");
    std::fs::write(
        &rep,
        r#"{"fake_pi_report":1,"pid":11,"exit":99,"cassette":"c","lines":["fake-pi: expectation mismatch: expect.effective.model: expected \"fake-model\", got \"wrong\""]}"#,
    )
    .unwrap();
    let left = dir.path().join("left.jsonl");
    std::fs::write(
        &left,
        "{\"what\":\"4242 sleep 300 (session 4241, parent 1)\"}\n",
    )
    .unwrap();
    let out = dir.path().join("r.html");
    let o = report(&[
        "--html".as_ref(),
        out.as_os_str(),
        "--cassette".as_ref(),
        cassette.as_os_str(),
        "--fake-pi-report".as_ref(),
        rep.as_os_str(),
        "--fake-pi-timeline".as_ref(),
        tl.as_os_str(),
        "--leftovers".as_ref(),
        left.as_os_str(),
        "--failure".as_ref(),
        "AssertionError: cancelled too early".as_ref(),
        "--name".as_ref(),
        "test_cancel".as_ref(),
    ]);
    ok(&o);
    let html = std::fs::read_to_string(&out).unwrap();
    let meta = data(&html, "tl-meta");
    assert_eq!(meta["title"], "test_cancel: sigint_mid_tool · pi 0.73.1");
    let [recording, replay] = &meta["sections"].as_array().unwrap()[..] else {
        panic!("two sections")
    };
    assert_eq!(recording["records"], expected_counts(&cassette).0 as u64);
    assert!(
        replay["order"].as_i64().unwrap() < recording["order"].as_i64().unwrap(),
        "the replay is drawn first"
    );
    let items = data(&html, "tl-items-1");
    let kinds = replay["kinds"].as_array().unwrap();
    let shown: Vec<(String, String, String)> = items
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            let k = &kinds[i[1].as_u64().unwrap() as usize];
            (
                k[0].as_str().unwrap().to_string(),
                k[1].as_str().unwrap().to_string(),
                i[3].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let has = |lane: &str, kind: &str, text: &str| {
        shown
            .iter()
            .any(|(l, k, t)| l == lane && k == kind && t.contains(text))
    };
    assert!(
        has("call", "the call", "pi --mode json --model wrong"),
        "{shown:?}"
    );
    assert!(
        has(
            "mismatch",
            "fake-pi said",
            "expected \"fake-model\", got \"wrong\""
        ),
        "{shown:?}"
    );
    // The first start exited 99 where the recording hangs until a signal: departed.
    assert!(
        has(
            "mismatch",
            "departed from the recording",
            "this start exited 99 8.0 ms after it began; the recording hangs from 105.0 ms"
        ),
        "{shown:?}"
    );
    // The second died by the SIGINT it received, as the recording's hang allows: no departure.
    assert_eq!(
        shown
            .iter()
            .filter(|s| s.1 == "departed from the recording")
            .count(),
        1
    );
    assert!(
        has(
            "signal",
            "SIGINT received",
            "SIGINT received at 40.5 ms; the cassette's answer: die"
        ),
        "{shown:?}"
    );
    assert!(has("note", "left over", "4242 sleep 300"), "{shown:?}");
    assert!(
        has("note", "the test failed", "cancelled too early"),
        "{shown:?}"
    );
    let procs = replay["procs"].as_array().unwrap();
    assert_eq!(procs.len(), 3);
    assert_eq!(procs[1]["state"], "died");
    assert_eq!(procs[2]["state"], "orphaned");
    assert_eq!(procs[2]["end"], Value::Null);
    assert_eq!(replay["arrows"][0]["from"], "received");
    assert_eq!(
        meta["facts"]["report"]["left over"][0],
        "4242 sleep 300 (session 4241, parent 1)"
    );

    // A malformed input is named by its line; one over 16 MiB is refused.
    std::fs::write(&rep, "{\"fake_pi_report\":1}\nnot json\n").unwrap();
    let o = report(&[
        "--html".as_ref(),
        out.as_os_str(),
        "--cassette".as_ref(),
        cassette.as_os_str(),
        "--fake-pi-report".as_ref(),
        rep.as_os_str(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.starts_with(&format!("error: {}:2: not a JSON line", rep.display())),
        "{err}"
    );
    std::fs::write(&rep, vec![b' '; (16 << 20) + 1]).unwrap();
    let o = report(&[
        "--html".as_ref(),
        out.as_os_str(),
        "--cassette".as_ref(),
        cassette.as_os_str(),
        "--fake-pi-report".as_ref(),
        rep.as_os_str(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("more than 16777216 bytes"));
}

#[test]
fn map_html_draws_the_normalized_stream_on_the_recordings_clock() {
    let dir = tempfile::tempdir().unwrap();
    for name in [
        "tool_bash.pi87.cassette.jsonl",
        "retry_then_success.pi73.cassette.jsonl",
        "recorded/long_answer.pi73.cassette.jsonl.zst",
    ] {
        let cassette = cassettes().join(name);
        let out = dir.path().join("map.html");
        ok(&pih()
            .arg("map")
            .arg(&cassette)
            .arg("--html")
            .arg(&out)
            .output()
            .unwrap());
        let json = pih()
            .args(["map", "--json"])
            .arg(&cassette)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&json.stdout).into_owned();
        let want: Vec<&str> = stdout.lines().collect();
        let html = std::fs::read_to_string(&out).unwrap();
        let items = data(&html, "tl-items-0");
        let items = items.as_array().unwrap();
        assert_eq!(items.len(), want.len(), "{name}: one mark per message");
        let mut last = 0.0;
        for (i, w) in items.iter().zip(&want) {
            let t = i[0].as_f64().unwrap();
            assert!(t >= last, "{name}: in time");
            last = t;
            // The preview is the message's JSON (cut at 1 KiB while the budget lasts).
            let text = i[3].as_str().unwrap();
            assert!(w.starts_with(text), "{name}: {text} vs {w}");
        }
        let meta = data(&html, "tl-meta");
        let kinds = meta["sections"][0]["kinds"].as_array().unwrap();
        let last_kind = &kinds[items.last().unwrap()[1].as_u64().unwrap() as usize];
        assert_eq!(
            last_kind[0], "result",
            "{name}: the terminal closes the stream"
        );
    }
    // A raw capture has no times: refused in one line.
    let raw = dir.path().join("raw.jsonl");
    std::fs::write(&raw, "{\"type\":\"session\"}\n").unwrap();
    let o = pih()
        .arg("map")
        .arg(&raw)
        .arg("--html")
        .arg(dir.path().join("r.html"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("a raw capture has no times") && err.lines().count() == 1,
        "{err}"
    );
}

#[test]
fn run_html_draws_the_stream_as_it_came_and_refuses_a_link_before_the_run() {
    let w = pi_testkit::World::new("timeline-run-html");
    let cassette = cassettes().join("tool_bash.pi87.cassette.jsonl");
    let run = |extra: &[&std::ffi::OsStr]| {
        let mut c = std::process::Command::new(crate::util::bin());
        c.env(pi_testkit::MARKER_VAR, w.marker())
            .env("FAKE_PI_CASSETTE", &cassette)
            .env("FAKE_PI_SPEED", "1")
            .env("PI_CODING_AGENT_DIR", w.agent_dir())
            .arg("run")
            .arg("--pi")
            .arg(pi_testkit::fake_pi())
            .args(["--provider", "fake", "--model", "fake-model", "--json"])
            .args(extra)
            .arg("list files")
            .stdin(std::process::Stdio::null());
        c.output().unwrap()
    };
    let out = w.path().join("run.html");
    let o = run(&["--html".as_ref(), out.as_os_str()]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let lines: Vec<&str> = std::str::from_utf8(&o.stdout).unwrap().lines().collect();
    let html = std::fs::read_to_string(&out).unwrap();
    let items = data(&html, "tl-items-0");
    let items = items.as_array().unwrap();
    assert_eq!(items.len(), lines.len(), "one mark per message printed");
    let times: Vec<f64> = items.iter().map(|i| i[0].as_f64().unwrap()).collect();
    assert!(times.windows(2).all(|p| p[0] <= p[1]), "{times:?}");
    // Replayed at recorded speed, the last message comes over 200 ms in.
    assert!(*times.last().unwrap() > 200.0, "{times:?}");
    for (i, l) in items.iter().zip(&lines) {
        assert_eq!(i[3].as_str().unwrap(), *l);
    }
    // A link at OUT: refused before pi is started.
    let link = w.path().join("link.html");
    std::os::unix::fs::symlink(w.path().join("elsewhere.html"), &link).unwrap();
    let o = run(&["--html".as_ref(), link.as_os_str()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(o.stdout.is_empty(), "no run");
    assert!(String::from_utf8_lossy(&o.stderr).contains("is a symbolic link"));
    assert!(!w.path().join("elsewhere.html").exists());
    w.assert_none_left();
}
