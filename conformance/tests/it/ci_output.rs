//! CI-native output of `pi-harness conform`: `--junit FILE` read back by an independent XML
//! reader (roxmltree), and `--partition K/N`, whose shards together run every case exactly
//! once.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use crate::util::*;

/// `pi-harness conform ARGS` in `dir`, with this test's own bundle cache and fake-pi.
fn conform(world: &World, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(pi_harness_bin())
        .arg("conform")
        .args(args)
        .current_dir(world.path())
        .env("PI_HARNESS_CACHE", world.path().join("cache"))
        .env("PI_HARNESS_FAKE_PI", fake_pi())
        .env(pi_testkit::MARKER_VAR, world.marker())
        .output()
        .expect("run pi-harness conform");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The case names of `--json` lines.
fn json_cases(out: &str) -> Vec<String> {
    out.lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("a JSON line");
            v["case"].as_str().expect("a case name").to_string()
        })
        .collect()
}

#[test]
fn partitions_one_to_four_run_every_case_exactly_once() {
    let w = World::new("conform-partition");
    let all: Vec<String> = conformance::conform::discover(&cassettes_dir())
        .expect("cases")
        .into_iter()
        .map(|c| c.name)
        .collect();
    assert!(all.len() > 8, "too few cases to shard: {}", all.len());
    let mut seen = Vec::new();
    let mut sizes = Vec::new();
    for k in 1..=4 {
        let shard = format!("{k}/4");
        let (code, out, err) = conform(&w, &["--partition", &shard, "--json"]);
        assert_eq!(code, 0, "{err}");
        assert!(err.starts_with(&format!("partition {shard}: ")), "{err}");
        let cases = json_cases(&out);
        sizes.push(cases.len());
        seen.extend(cases);
    }
    let unique: BTreeSet<&String> = seen.iter().collect();
    assert_eq!(seen.len(), all.len(), "a case ran twice or not at all");
    assert_eq!(
        unique,
        all.iter().collect(),
        "the shards do not cover the suite"
    );
    assert!(
        sizes.iter().max().unwrap() - sizes.iter().min().unwrap() <= 1,
        "{sizes:?}"
    );
    // nextest's spelling is the same shard; a shard past N is one line of usage error.
    let (_, a, _) = conform(&w, &["--partition", "count:2/4", "--json"]);
    let (_, b, _) = conform(&w, &["--partition", "2/4", "--json"]);
    assert_eq!(json_cases(&a), json_cases(&b));
    let (code, out, err) = conform(&w, &["--partition", "5/4"]);
    assert_eq!((code, out.as_str()), (2, ""));
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("'5/4' for '--partition <K/N>': expected K/N"),
        "{err}"
    );
    w.assert_none_left();
}

/// A suite of three cases whose expected streams say text_only answers "Hello, <moon> & \"stars\"!".
fn tampered_suite(w: &World) -> (std::path::PathBuf, std::path::PathBuf) {
    let (mine, exp) = (w.path().join("mine"), w.path().join("exp"));
    for name in ["text_only.pi87", "tool_bash.pi87", "auth_401.pi87"] {
        let cassette = format!("recorded/{name}.cassette.jsonl");
        let expected = format!("recorded/{name}.json");
        std::fs::create_dir_all(mine.join("recorded")).unwrap();
        std::fs::create_dir_all(exp.join("recorded")).unwrap();
        std::fs::copy(cassettes_dir().join(&cassette), mine.join(&cassette)).unwrap();
        let mut text = std::fs::read_to_string(expected_dir().join(&expected)).unwrap();
        if name == "text_only.pi87" {
            assert!(text.contains(r#""text": "world""#));
            text = text.replacen(r#""text": "world""#, r#""text": "<moon> & \"stars\"""#, 1);
        }
        std::fs::write(exp.join(&expected), text).unwrap();
    }
    (mine, exp)
}

fn attr<'a>(node: roxmltree::Node<'a, '_>, name: &str) -> &'a str {
    node.attribute(name)
        .unwrap_or_else(|| panic!("<{}> without {name}", node.tag_name().name()))
}

#[test]
fn junit_is_the_common_xml_an_independent_reader_takes() {
    let w = World::new("conform-junit");
    let (mine, exp) = tampered_suite(&w);
    let file = w.path().join("conform.xml");
    let args = [
        "--cassettes",
        mine.to_str().unwrap(),
        "--expected",
        exp.to_str().unwrap(),
        "--junit",
        file.to_str().unwrap(),
    ];
    let (code, out, err) = conform(&w, &args);
    assert_eq!(code, 1, "one case fails: {out}{err}");
    let xml = std::fs::read_to_string(&file).unwrap();
    let doc = roxmltree::Document::parse(&xml).expect("well-formed XML");
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "testsuites");
    let suites: Vec<_> = root
        .children()
        .filter(|n| n.has_tag_name("testsuite"))
        .collect();
    assert_eq!(suites.len(), 1);
    let suite = suites[0];
    for n in [root, suite] {
        assert_eq!(
            (
                attr(n, "tests"),
                attr(n, "failures"),
                attr(n, "errors"),
                attr(n, "skipped")
            ),
            ("3", "1", "0", "0")
        );
        attr(n, "time").parse::<f64>().expect("time in seconds");
    }
    let cases: Vec<_> = suite
        .children()
        .filter(|n| n.has_tag_name("testcase"))
        .collect();
    let names: Vec<&str> = cases.iter().map(|c| attr(*c, "name")).collect();
    assert_eq!(
        names,
        [
            "recorded/auth_401.pi87",
            "recorded/text_only.pi87",
            "recorded/tool_bash.pi87"
        ]
    );
    for c in &cases {
        assert_eq!(attr(*c, "classname"), "conform.recorded");
        let failure = c.children().find(|n| n.has_tag_name("failure"));
        if attr(*c, "name") != "recorded/text_only.pi87" {
            assert!(failure.is_none() && c.children().all(|n| !n.is_element()));
            continue;
        }
        let failure = failure.expect("the failing case has a <failure>");
        assert!(!attr(failure, "message").is_empty());
        // The body is the report's block for the case, the difference in it, unescaped.
        let body = failure.text().expect("a failure body");
        assert!(
            body.starts_with("FAIL  recorded/text_only.pi87 ("),
            "{body}"
        );
        assert!(
            body.contains(r#": expected "<moon> & \"stars\"", got "world""#),
            "{body}"
        );
        assert!(
            out.contains(body.lines().nth(1).unwrap()),
            "the same lines as the report"
        );
        // Its timeline page, beside the report, is linked: a property and an attachment.
        let page = c
            .descendants()
            .find(|n| n.has_tag_name("property") && attr(*n, "name") == "timeline")
            .map(|n| attr(n, "value").to_string())
            .expect("a timeline property");
        assert_eq!(
            std::path::Path::new(&page).parent().unwrap(),
            w.path().join("conform.pages")
        );
        let system_out = c
            .children()
            .find(|n| n.has_tag_name("system-out"))
            .and_then(|n| n.text())
            .expect("system-out");
        assert_eq!(
            system_out,
            format!("timeline: {page}\n[[ATTACHMENT|{page}]]")
        );
        let html = std::fs::read_to_string(&page).unwrap();
        assert!(
            html.contains("the replay, as it happened")
                && html.contains("FAIL  recorded/text_only.pi87")
        );
    }
    // Only the failed case has a page.
    assert_eq!(
        std::fs::read_dir(w.path().join("conform.pages"))
            .unwrap()
            .count(),
        1
    );
    w.assert_none_left();
}

#[test]
fn junit_skips_say_what_was_not_claimed() {
    if Command::new("node").arg("--version").output().is_err() {
        eprintln!("node is not on PATH: the Node example is not run");
        return;
    }
    let w = World::new("conform-junit-skips");
    let file = w.path().join("conform.xml");
    let impl_cmd = format!(
        "node {}",
        root()
            .join("conformance/examples/node-impl/impl.js")
            .display()
    );
    let (code, out, err) = conform(
        &w,
        &[
            "--impl",
            &impl_cmd,
            "--junit",
            file.to_str().unwrap(),
            "--partition",
            "1/3",
        ],
    );
    assert_eq!(code, 1, "{out}{err}");
    let xml = std::fs::read_to_string(&file).unwrap();
    let doc = roxmltree::Document::parse(&xml).expect("well-formed XML");
    let cases: Vec<_> = doc
        .descendants()
        .filter(|n| n.has_tag_name("testcase"))
        .collect();
    let count = |tag: &str| {
        cases
            .iter()
            .filter(|c| c.children().any(|n| n.has_tag_name(tag)))
            .count()
    };
    let suite = doc
        .descendants()
        .find(|n| n.has_tag_name("testsuite"))
        .unwrap();
    assert_eq!(attr(suite, "tests"), cases.len().to_string());
    assert_eq!(attr(suite, "failures"), count("failure").to_string());
    assert_eq!(attr(suite, "skipped"), count("skipped").to_string());
    assert!(count("failure") > 0 && count("skipped") > 0, "{xml}");
    for skip in doc.descendants().filter(|n| n.has_tag_name("skipped")) {
        assert!(attr(skip, "message").starts_with("not claimed: "));
    }
    w.assert_none_left();
}

#[test]
fn a_junit_path_that_cannot_be_written_stops_before_any_case() {
    let w = World::new("conform-junit-bad");
    let (code, out, err) = conform(&w, &["--junit", "/nonexistent-dir/conform.xml"]);
    assert_eq!((code, out.as_str()), (2, ""));
    assert_eq!(
        err,
        "error: --junit /nonexistent-dir/conform.xml: cannot create it: No such file or directory (os error 2)\n"
    );
    assert!(!Path::new("/nonexistent-dir").exists());
    w.assert_none_left();
}
