//! Every committed cassette reads with the Rust parser and every line validates
//! against `cassettes/cassette-v1.schema.json`; broken cassettes are rejected by both,
//! with errors naming file:line.

use std::io::Read;
use std::path::{Path, PathBuf};

use pi_cassette::{Action, Cassette, Dialect, OriginKind, TimingKind};
use serde_json::Value;

use crate::util::cassettes_dir;

fn all_cassette_files() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.to_string_lossy().contains(".cassette.jsonl") {
                out.push(path);
            }
        }
    }
    let mut out = Vec::new();
    walk(&cassettes_dir(), &mut out);
    out.sort();
    out
}

fn read_plain(path: &Path) -> Vec<u8> {
    let mut out = Vec::new();
    pi_cassette::input::open(path, &pi_cassette::Limits::default())
        .unwrap()
        .read_to_end(&mut out)
        .unwrap();
    out
}

/// Validators for the header line and for record lines, built from the committed schema.
struct Schema {
    header: jsonschema::Validator,
    record: jsonschema::Validator,
}

impl Schema {
    /// The committed schema of format `version` (`cassette-v1.schema.json`, `-v2`).
    fn load(version: u32) -> Schema {
        let text = std::fs::read_to_string(
            cassettes_dir().join(format!("cassette-v{version}.schema.json")),
        )
        .unwrap();
        let schema: Value = serde_json::from_str(&text).unwrap();
        jsonschema::draft202012::meta::validate(&schema)
            .unwrap_or_else(|e| panic!("the schema itself is not valid 2020-12: {e}"));
        let part = |def: &str| {
            let mut s = schema.clone();
            let obj = s.as_object_mut().unwrap();
            obj.remove("oneOf");
            obj.insert("$ref".into(), Value::String(format!("#/$defs/{def}")));
            jsonschema::draft202012::new(&s).unwrap()
        };
        Schema {
            header: part("header"),
            record: part("record"),
        }
    }

    /// `file:line: schema: ...` for every line that does not validate.
    fn check(&self, name: &Path, data: &[u8]) -> Vec<String> {
        let mut errors = Vec::new();
        let text = match std::str::from_utf8(data) {
            Ok(t) => t,
            Err(e) => return vec![format!("{}: not UTF-8: {e}", name.display())],
        };
        let body = text.strip_suffix('\n').unwrap_or(text);
        for (idx, line) in body.split('\n').enumerate() {
            let lineno = idx + 1;
            let value: Value = match serde_json::from_str(line) {
                Ok(v) => v,
                Err(e) => {
                    errors.push(format!("{}:{lineno}: not JSON: {e}", name.display()));
                    continue;
                }
            };
            let validator = if idx == 0 { &self.header } else { &self.record };
            for e in validator.iter_errors(&value) {
                errors.push(format!(
                    "{}:{lineno}: schema: {e} (at `{}`)",
                    name.display(),
                    e.instance_path()
                ));
            }
        }
        errors
    }
}

#[test]
fn every_committed_cassette_parses_validates_and_round_trips() {
    let schemas = [Schema::load(1), Schema::load(2)];
    let files = all_cassette_files();
    let names: Vec<String> = files
        .iter()
        .map(|p| {
            p.strip_prefix(cassettes_dir())
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    for want in [
        "tool_bash.pi73.cassette.jsonl",
        "tool_bash.pi87.cassette.jsonl",
        "prompt_on_stdin.pi87.cassette.jsonl",
        "retry_then_success.pi73.cassette.jsonl",
        "auth_401.pi73.cassette.jsonl",
        "sigterm_mid_tool.pi87.cassette.jsonl",
        "sigint_mid_tool.pi73.cassette.jsonl",
        "faults/huge_line_4mib.pi87.cassette.jsonl.gz",
    ] {
        assert!(names.iter().any(|n| n == want), "missing {want}: {names:?}");
    }
    let mut problems = Vec::new();
    for path in &files {
        let data = read_plain(path);
        match Cassette::load(path) {
            Ok(c) => {
                problems.extend(schemas[c.header.version as usize - 1].check(path, &data));
                // The writer gives back the committed bytes: files are byte-stable.
                if c.to_jsonl().as_bytes() != data {
                    problems.push(format!(
                        "{}: written back differs from the file",
                        path.display()
                    ));
                }
            }
            Err(e) => problems.push(e.to_string()),
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn imported_cassettes_carry_the_samples_facts() {
    let mut imported = 0;
    for path in all_cassette_files() {
        let c = Cassette::load(&path).unwrap();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let h = &c.header;
        if h.origin.kind != OriginKind::Imported {
            continue;
        }
        imported += 1;
        assert_eq!(
            path.parent().unwrap(),
            cassettes_dir(),
            "{name}: imports live in cassettes/"
        );
        assert_eq!(h.origin.timing, TimingKind::Synthetic, "{name}");
        assert_eq!(
            Some(h.pi.dialect),
            Dialect::for_pi_version(&h.pi.version),
            "{name}"
        );
        let suffix = h
            .agent()
            .spec()
            .release(&h.pi.version)
            .expect("a pinned version")
            .tag;
        assert_eq!(
            name,
            format!("{}.{suffix}.cassette.jsonl", h.scenario.name),
            "file name = scenario + version"
        );
        assert!(h.expect.prompt.is_some(), "{name}: prompt");
        // Every stdout line of a real pi run is one JSON object with a type.
        for r in &c.records {
            if let Action::Stdout(b) = &r.action {
                let v: Value = serde_json::from_slice(&b.data).unwrap();
                assert!(v["type"].is_string(), "{name}:{}", r.line);
            }
        }
        let mid_tool = name.starts_with("sig");
        if mid_tool {
            assert_eq!(c.ending(), &Action::Hang, "{name}");
            assert!(h.process.is_pi_default(), "{name}");
            let spawn = c
                .records
                .iter()
                .position(|r| matches!(&r.action, Action::Spawn(s) if s.own_session && s.grandchild.as_ref().is_some_and(|g| !g.own_session)))
                .unwrap_or_else(|| panic!("{name}: no spawn with a same-group grandchild"));
            let before = &c.records[spawn - 1].action;
            let Action::Stdout(b) = before else {
                panic!("{name}: spawn not after a stdout line")
            };
            assert!(
                String::from_utf8_lossy(&b.data).contains("\"type\":\"tool_execution_start\""),
                "{name}: spawn must follow tool_execution_start"
            );
            assert!(h.origin.notes.as_deref().unwrap_or("").contains("survived"));
        } else {
            assert_eq!(c.ending(), &Action::Exit(0), "{name}");
        }
    }
    assert_eq!(imported, 8, "the eight captured real runs");
}

/// (name, cassette text, the line both checkers must blame, part of the parser's message)
const BROKEN: &[(&str, &str, usize, &str)] = &[
    (
        "two_actions",
        "{\"dt_ms\":0,\"stdout\":{\"type\":\"agent_start\"},\"exit\":0}\n",
        2,
        "several actions (stdout, exit)",
    ),
    (
        "negative_delay",
        "{\"dt_ms\":0,\"stdout\":{}}\n{\"dt_ms\":-3,\"exit\":0}\n",
        3,
        "`dt_ms`",
    ),
    (
        "unknown_signal",
        "{\"dt_ms\":0,\"signal\":\"SIGFOO\"}\n",
        2,
        "unknown signal",
    ),
    (
        "exit_out_of_range",
        "{\"dt_ms\":0,\"exit\":300}\n",
        2,
        "exit codes are 0..=255",
    ),
    (
        "bad_base64",
        "{\"dt_ms\":0,\"stdout_b64\":\"not base64!\"}\n{\"dt_ms\":0,\"exit\":0}\n",
        2,
        "invalid base64",
    ),
    (
        "hang_false",
        "{\"dt_ms\":0,\"hang\":false}\n",
        2,
        "`hang`: must be true",
    ),
    (
        "spawn_unknown_field",
        "{\"dt_ms\":0,\"spawn\":{\"id\":\"t\",\"detach\":true}}\n{\"dt_ms\":0,\"hang\":true}\n",
        2,
        "unknown field `detach`",
    ),
    (
        "newline_on_stderr",
        "{\"dt_ms\":0,\"stderr\":\"x\",\"newline\":false}\n{\"dt_ms\":0,\"exit\":1}\n",
        2,
        "`newline` only applies",
    ),
    (
        "no_dt_ms",
        "{\"stdout\":{}}\n{\"dt_ms\":0,\"exit\":0}\n",
        2,
        "`dt_ms` missing",
    ),
];

const GOOD_HEADER: &str = r#"{"format":"pi-cassette","version":1,"pi":{"version":"0.87.1","dialect":"delta-only"},"scenario":{"name":"b","description":"broken"},"origin":{"kind":"hand-made","timing":"synthetic"}}"#;

/// Header-level breakage: (name, header line, part of the parser's message).
const BROKEN_HEADERS: &[(&str, &str, &str)] = &[
    (
        "unknown_dialect",
        r#"{"format":"pi-cassette","version":1,"pi":{"version":"0.87.1","dialect":"deltas"},"scenario":{"name":"b","description":"d"},"origin":{"kind":"hand-made","timing":"synthetic"}}"#,
        "unknown variant `deltas`",
    ),
    (
        "no_origin",
        r#"{"format":"pi-cassette","version":1,"pi":{"version":"0.87.1","dialect":"delta-only"},"scenario":{"name":"b","description":"d"}}"#,
        "missing field `origin`",
    ),
    (
        "future_version",
        r#"{"format":"pi-cassette","version":3,"pi":{"version":"0.87.1","dialect":"delta-only"},"scenario":{"name":"b","description":"d"},"origin":{"kind":"hand-made","timing":"synthetic"}}"#,
        "knows format versions 1 and 2, the file says 3",
    ),
    (
        "unknown_header_field",
        r#"{"format":"pi-cassette","version":1,"pi":{"version":"0.87.1","dialect":"delta-only"},"scenario":{"name":"b","description":"d"},"origin":{"kind":"hand-made","timing":"synthetic"},"colour":"red"}"#,
        "unknown field `colour`",
    ),
    (
        "bad_flag_rule",
        r#"{"format":"pi-cassette","version":1,"pi":{"version":"0.87.1","dialect":"delta-only"},"scenario":{"name":"b","description":"d"},"expect":{"flags":{"mode":3}},"origin":{"kind":"hand-made","timing":"synthetic"}}"#,
        "header:",
    ),
];

#[test]
fn broken_cassettes_are_rejected_by_parser_and_schema_naming_file_and_line() {
    let schema = Schema::load(1);
    let dir = tempfile::tempdir().unwrap();
    let mut cases: Vec<(String, String, usize, &str)> = BROKEN
        .iter()
        .map(|(n, body, line, msg)| (n.to_string(), format!("{GOOD_HEADER}\n{body}"), *line, *msg))
        .collect();
    cases.extend(BROKEN_HEADERS.iter().map(|(n, header, msg)| {
        (
            n.to_string(),
            format!("{header}\n{{\"dt_ms\":0,\"exit\":0}}\n"),
            1,
            *msg,
        )
    }));
    for (name, text, line, msg) in &cases {
        let path = dir.path().join(format!("{name}.cassette.jsonl"));
        std::fs::write(&path, text).unwrap();
        let prefix = format!("{}:{line}: ", path.display());

        let err = Cassette::load(&path)
            .expect_err(&format!("parser accepted {name}"))
            .to_string();
        assert!(
            err.starts_with(&prefix),
            "{name}: parser said {err:?}, want {prefix:?}..."
        );
        assert!(
            err.contains(msg),
            "{name}: parser said {err:?}, want it to mention {msg:?}"
        );

        let schema_errors = schema.check(&path, text.as_bytes());
        assert!(!schema_errors.is_empty(), "{name}: the schema accepted it");
        assert!(
            schema_errors.iter().all(|e| e.starts_with(&prefix)),
            "{name}: schema blamed {schema_errors:?}, want {prefix:?}..."
        );
    }
    // The good header with a good ending passes both.
    let good =
        format!("{GOOD_HEADER}\n{{\"dt_ms\":0,\"stdout\":null}}\n{{\"dt_ms\":0,\"exit\":0}}\n");
    assert!(schema.check(Path::new("good"), good.as_bytes()).is_empty());
    assert!(Cassette::parse(Path::new("good"), good.as_bytes()).is_ok());
}

#[test]
fn cross_line_rules_are_the_parsers_job() {
    // Valid line by line, wrong as a whole: the schema cannot see these, the parser does.
    let schema = Schema::load(1);
    for (body, want) in [
        (
            "{\"dt_ms\":0,\"exit\":0}\n{\"dt_ms\":0,\"stdout\":{}}\n",
            "x:3: record after the final `exit` record on line 2",
        ),
        (
            "{\"dt_ms\":0,\"stdout\":{}}\n",
            "x:2: the last record must be `exit`, `signal` or `hang`",
        ),
    ] {
        let text = format!("{GOOD_HEADER}\n{body}");
        assert!(schema.check(Path::new("x"), text.as_bytes()).is_empty());
        let err = Cassette::parse(Path::new("x"), text.as_bytes())
            .unwrap_err()
            .to_string();
        assert!(err.starts_with(want), "{err}");
    }
}

#[test]
fn the_examples_in_format_md_are_valid() {
    let schema = Schema::load(1);
    let doc = std::fs::read_to_string(cassettes_dir().join("FORMAT.md")).unwrap();
    let blocks: Vec<&str> = doc
        .split("```jsonl\n")
        .skip(1)
        .map(|b| b.split("```").next().unwrap())
        .collect();
    assert_eq!(blocks.len(), 3, "FORMAT.md has three jsonl examples");
    // The third is a complete two-way cassette.
    let path = Path::new("FORMAT.md example 3");
    let two_way = Cassette::parse(path, blocks[2].as_bytes()).unwrap();
    assert_eq!(two_way.header.version, 2);
    assert_eq!(
        Schema::load(2).check(path, blocks[2].as_bytes()),
        Vec::<String>::new()
    );
    // The first is a complete cassette.
    let path = Path::new("FORMAT.md example 1");
    Cassette::parse(path, blocks[0].as_bytes()).unwrap();
    assert_eq!(
        schema.check(path, blocks[0].as_bytes()),
        Vec::<String>::new()
    );
    // The second is an excerpt of records: each line is a valid record.
    for line in blocks[1].lines() {
        let value: Value = serde_json::from_str(line).unwrap();
        let errors: Vec<String> = schema
            .record
            .iter_errors(&value)
            .map(|e| e.to_string())
            .collect();
        assert!(errors.is_empty(), "{line}: {errors:?}");
    }
    // Every record example in the records tables is valid too: version 1's under its
    // schema, the client records of version 2 under version 2's.
    let (v1_part, v2_part) = doc.split_once("## Version 2").expect("a Version 2 section");
    for (part, schema, want) in [(v1_part, &schema, 9), (v2_part, &Schema::load(2), 4)] {
        let mut checked = 0;
        for example in part
            .lines()
            .filter(|l| l.starts_with("| `") && l.contains("| `{\"dt_ms\""))
        {
            let json = example.split('`').nth(3).unwrap();
            let value: Value = serde_json::from_str(json).unwrap_or_else(|e| panic!("{json}: {e}"));
            assert!(schema.record.is_valid(&value), "{json}");
            checked += 1;
        }
        assert_eq!(checked, want, "one example per action");
    }
}

const TWO_WAY_HEADER: &str = r#"{"format":"pi-cassette","version":2,"mode":"rpc","pi":{"version":"1.5.2","dialect":"delta-only"},"scenario":{"name":"t","description":"d"},"origin":{"kind":"hand-made","timing":"synthetic"}}"#;

#[test]
fn two_way_records_are_checked_with_file_and_line() {
    let v1 = GOOD_HEADER;
    let v2 = TWO_WAY_HEADER;
    let v2_no_mode = TWO_WAY_HEADER.replace(r#""mode":"rpc","#, "");
    let v1_with_mode = GOOD_HEADER.replace(r#""version":1,"#, r#""version":1,"mode":"rpc","#);
    let exit = r#"{"dt_ms":0,"exit":0}"#;
    for (header, body, want) in [
        (
            v1,
            r#"{"dt_ms":0,"stdin":{"type":"get_state"}}"#,
            "x:2: record field `stdin`: a two-way record; only a version 2 cassette",
        ),
        (
            v1,
            r#"{"dt_ms":0,"stdout":{"type":"response"},"reply":0}"#,
            "x:2: record field `reply`: a two-way record",
        ),
        (
            v2_no_mode.as_str(),
            exit,
            "x:1: header field `mode`: a version 2 cassette names its two-way protocol",
        ),
        (
            v1_with_mode.as_str(),
            exit,
            "x:1: header field `mode`: only a version 2",
        ),
        (
            v2,
            r#"{"dt_ms":0,"stdout":{"type":"response"},"reply":0}"#,
            "x:2: record field `reply`: 0 names no client line before it",
        ),
        (
            v2,
            r#"{"dt_ms":0,"reap":"call_1"}"#,
            "x:2: record field `reap`: no `spawn` with the id \"call_1\"",
        ),
        (
            v2,
            r#"{"dt_ms":0,"client_signal":"SIGKILL"}"#,
            "x:2: record field `client_signal`: \"SIGKILL\" is not one pi answers",
        ),
        (
            v2,
            r#"{"dt_ms":0,"stdin":{"type":"prompt"},"match":["id"]}"#,
            "x:2: record field `match`: \"id\" is not a field to compare",
        ),
        (
            v2,
            r#"{"dt_ms":0,"stdin_close":false}"#,
            "x:2: record field `stdin_close`: must be true",
        ),
        (
            v2,
            r#"{"dt_ms":0,"stdout":"ready","reply":0}"#,
            "x:2: record field `reply`: the stdout line must be a JSON object",
        ),
        (
            v2,
            r#"{"dt_ms":0,"stderr":"x","match":["a"]}"#,
            "x:2: record field `match` only applies to stdin",
        ),
        (
            v2,
            r#"{"dt_ms":0,"request":[1]}"#,
            "x:2: record field `request`: must be a JSON object",
        ),
    ] {
        let text = format!("{header}\n{body}\n{exit}\n");
        let text = if body == exit {
            format!("{header}\n{exit}\n")
        } else {
            text
        };
        let err = Cassette::parse(Path::new("x"), text.as_bytes())
            .expect_err(body)
            .to_string();
        assert!(err.starts_with(want), "{body}: {err}");
        // lint gives the same verdict on the same line.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.cassette.jsonl");
        std::fs::write(&path, &text).unwrap();
        let problems = pi_cassette::lint::lint_file(&path).unwrap();
        let line = want.split(':').nth(1).unwrap();
        assert!(
            problems.iter().any(|p| p.line.to_string() == line),
            "{body}: lint {problems:?}"
        );
    }
    // A good two-way cassette: a client line, its answer, a spawn and its reap.
    let good = format!(
        "{v2}\n{}\n{}\n{}\n{}\n{exit}\n",
        r#"{"dt_ms":0,"stdin":{"id":1,"type":"get_state"},"match":["type"]}"#,
        r#"{"dt_ms":0,"stdout":{"id":1,"type":"response"},"reply":0}"#,
        r#"{"dt_ms":0,"spawn":{"id":"call_1","own_session":true,"ignore_sigterm":false,"hold_stdout":false}}"#,
        r#"{"dt_ms":0,"reap":"call_1"}"#,
    );
    let c = Cassette::parse(Path::new("good"), good.as_bytes()).unwrap();
    assert_eq!(c.to_jsonl(), good, "written back byte for byte");
    assert!(Schema::load(2)
        .check(Path::new("good"), good.as_bytes())
        .is_empty());
}

/// Values that would name a file outside the run's directories: the parser and lint refuse
/// each, naming the line and the field.
#[test]
fn ids_and_names_that_would_name_a_path_are_refused_by_the_parser_and_lint() {
    let header = r#"{"format":"pi-cassette","version":1,"pi":{"version":"0.87.1","dialect":"delta-only"},"scenario":{"name":"t","description":"d"},"origin":{"kind":"hand-made","timing":"synthetic"}}"#;
    let session = |id: &str| {
        format!(
            "{{\"dt_ms\":0,\"stdout\":{{\"type\":\"session\",\"version\":3,\"id\":{},\"timestamp\":\"<TS>\",\"cwd\":\"<CWD>\"}}}}",
            serde_json::json!(id)
        )
    };
    let exit = r#"{"dt_ms":0,"exit":0}"#;
    let long = "a".repeat(pi_grammar::MAX_SESSION_ID_BYTES + 1);
    let mut cases: Vec<(String, usize, &str)> = Vec::new();
    for id in [
        "x/../../../../tmp/x/victim.cassette",
        "/tmp/x/victim",
        "a\u{0}b",
        long.as_str(),
        "",
        "<SESSION_ID>/../x",
    ] {
        cases.push((
            format!("{header}\n{}\n{exit}\n", session(id)),
            2,
            "record field `stdout`: the `session` line's `id`",
        ));
    }
    for name in ["../x", "a/b", "/abs"] {
        cases.push((
            format!(
                "{}\n{exit}\n",
                header.replace(
                    r#""name":"t""#,
                    &format!("\"name\":{}", serde_json::json!(name))
                )
            ),
            1,
            "header field `scenario.name`",
        ));
    }
    cases.push((
        format!(
            "{}\n{exit}\n",
            header.replace(
                r#""scenario""#,
                r#""expect":{"flags":{"session-id":"../../x"}},"scenario""#
            )
        ),
        1,
        "header field `expect.flags.session-id`",
    ));
    for (text, line, field) in &cases {
        let path = Path::new("hostile.cassette.jsonl");
        let e = Cassette::parse(path, text.as_bytes())
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with(&format!("hostile.cassette.jsonl:{line}: {field}")),
            "{e}"
        );
        assert!(e.len() < 400, "{e}");
        let problems = pi_cassette::lint::lint_bytes(path, text.as_bytes());
        assert!(
            problems
                .iter()
                .any(|p| p.line == *line && p.message.starts_with(field)),
            "{problems:?}"
        );
    }
    // Placeholders and real ids pass.
    for id in [
        "<SESSION_ID>",
        "019d8a2e-1f3c-7000-8000-0123456789ab",
        "my-run-1",
    ] {
        let text = format!("{header}\n{}\n{exit}\n", session(id));
        Cassette::parse(Path::new("ok"), text.as_bytes()).unwrap();
    }
}

/// A gzip cassette whose checksum does not match: every reader refuses it (the streaming
/// reader swallowed the one error the decoder gives, took the read after it for a clean end,
/// and map and fake-pi replayed the file to exit 0 while lint refused it).
#[test]
fn a_gzip_cassette_with_a_bad_checksum_is_refused_by_the_streaming_reader() {
    let plain =
        std::fs::read(cassettes_dir().join("recorded/text_only.pi87.cassette.jsonl")).unwrap();
    let mut gz = pi_cassette::output::gzip(&plain).unwrap();
    // The trailer: CRC-32, then the length. Spoil the CRC.
    let at = gz.len() - 8;
    gz[at] ^= 0xff;
    let path = Path::new("bad-crc.cassette.jsonl.gz");
    let reader = pi_cassette::CassetteReader::from_read(path, &gz[..]).unwrap();
    let mut records = 0;
    let mut error = None;
    for r in reader {
        match r {
            Ok(_) => records += 1,
            Err(e) => error = Some(e.to_string()),
        }
    }
    let e = error.expect("the bad checksum is an error");
    assert!(
        e.starts_with("bad-crc.cassette.jsonl.gz: cannot read cassette:"),
        "{e}"
    );
    assert!(records > 0, "the records before the trailer were read");
    assert!(Cassette::parse(path, &gz).is_err());
}

/// What one replay starts is bounded: at most 32 children alive at once and 1024 spawns in
/// all; the parser (and so lint and fake-pi) names the record past the cap.
#[test]
fn spawns_past_the_caps_are_refused_at_their_line() {
    let header = r#"{"format":"pi-cassette","version":1,"pi":{"version":"0.87.1","dialect":"delta-only"},"scenario":{"name":"t","description":"d"},"origin":{"kind":"hand-made","timing":"synthetic"}}"#;
    let spawn = |i: usize| format!(r#"{{"dt_ms":0,"spawn":{{"id":"c{i}"}}}}"#);
    let reap = |i: usize| format!(r#"{{"dt_ms":0,"reap":"c{i}"}}"#);
    let exit = r#"{"dt_ms":0,"exit":0}"#;
    let alive: Vec<String> = (0..33).map(spawn).collect();
    let text = format!("{header}\n{}\n{exit}\n", alive.join("\n"));
    let e = Cassette::parse(Path::new("c"), text.as_bytes())
        .unwrap_err()
        .to_string();
    assert_eq!(e, "c:34: record field `spawn`: more than 32 children alive at once (spawned and not reaped, or reaped with a grandchild that lives on); a replay keeps at most that many");
    // 32 alive is fine; reaped ones make room (`reap` is a version 2 record).
    let header = r#"{"format":"pi-cassette","version":2,"mode":"rpc","pi":{"version":"1.5.2","dialect":"delta-only"},"scenario":{"name":"t","description":"d"},"expect":{"flags":{"mode":"rpc","no-session":true}},"origin":{"kind":"hand-made","timing":"synthetic"}}"#;
    let ok: Vec<String> = (0..32)
        .map(spawn)
        .chain((0..32).map(reap))
        .chain((32..64).map(spawn))
        .collect();
    Cassette::parse(
        Path::new("c"),
        format!("{header}\n{}\n{exit}\n", ok.join("\n")).as_bytes(),
    )
    .unwrap();
    let many: Vec<String> = (0..1025).flat_map(|i| [spawn(i), reap(i)]).collect();
    let e = Cassette::parse(
        Path::new("c"),
        format!("{header}\n{}\n{exit}\n", many.join("\n")).as_bytes(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.starts_with("c:2050: record field `spawn`: more than 1024 spawn records"),
        "{e}"
    );
    assert!(!pi_cassette::lint::lint_bytes(Path::new("c"), text.as_bytes()).is_empty());
}

/// The schemas' `expect.irrelevant` names are the ones the matching contract accepts
/// (`pi_cassette::matching::IGNORABLE`, which `record --ignore` and `cassette relax` take).
#[test]
fn the_schemas_ignorable_fields_are_the_contracts() {
    for version in [1, 2] {
        let text = std::fs::read_to_string(
            cassettes_dir().join(format!("cassette-v{version}.schema.json")),
        )
        .unwrap();
        let schema: Value = serde_json::from_str(&text).unwrap();
        let names = schema["$defs"]["expect"]["properties"]["irrelevant"]["items"]["enum"]
            .as_array()
            .unwrap_or_else(|| panic!("v{version}: no expect.irrelevant enum"))
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect::<Vec<_>>();
        assert_eq!(names, pi_cassette::matching::IGNORABLE, "v{version}");
    }
}

#[test]
fn a_release_newer_than_every_pinned_one_is_marked_with_the_grammar_it_borrows() {
    use pi_cassette::{Dialect, PiSource};
    let newer = PiSource::new("1.6.0", Dialect::DeltaOnly);
    assert_eq!(
        newer.unverified.as_ref().map(|u| u.grammar.as_str()),
        Some("1.5.2")
    );
    assert_eq!(newer.grammar().map(|g| g.version()), Some("1.5.2"));
    let json = serde_json::to_string(&newer).unwrap();
    assert_eq!(
        json,
        r#"{"version":"1.6.0","dialect":"delta-only","unverified":{"grammar":"1.5.2"}}"#
    );
    // Pinned releases carry no mark; Claude Code's newer release borrows the newest measured.
    assert_eq!(PiSource::new("1.5.2", Dialect::DeltaOnly).unverified, None);
    assert!(PiSource::new("1.5.2", Dialect::DeltaOnly)
        .unverified_warning()
        .is_none());
    let cc = PiSource::new("2.1.340", Dialect::StreamJson);
    let newest = pi_grammar::claude::Claude::latest().version();
    assert_eq!(
        cc.unverified.as_ref().map(|u| u.grammar.as_str()),
        Some(newest)
    );
    assert_eq!(
        cc.claude().map(|c| c.claimed_version()).as_deref(),
        Some("2.1.340")
    );
    assert_eq!(
        cc.unverified_warning().as_deref(),
        Some(format!("warning: Claude Code 2.1.340 is newer than every pinned release: unverified, read with Claude Code {newest}'s command-line grammar (`pi-harness drift` shows what changed; pinning it: docs/pinning.md)").as_str())
    );
    // A mark left on a release pinned since is history: the header still reads.
    let stale = r#"{"format":"pi-cassette","version":1,"pi":{"version":"1.5.2","dialect":"delta-only","unverified":{"grammar":"0.87.1"}},"scenario":{"name":"s","description":"d"},"origin":{"kind":"hand-made","timing":"synthetic"}}
{"dt_ms":0,"exit":0}
"#;
    let c = pi_cassette::Cassette::parse(std::path::Path::new("stale"), stale.as_bytes()).unwrap();
    assert_eq!(c.header.pi.borrowed(), None);
    assert_eq!(c.header.pi.unverified_warning(), None);
    assert_eq!(c.header.pi.grammar().and_then(|g| g.borrowed()), None);
    // The mark must be an object with the one field.
    let bad = stale.replace(r#"{"grammar":"0.87.1"}"#, r#""0.87.1""#);
    let err = pi_cassette::Cassette::parse(std::path::Path::new("bad"), bad.as_bytes())
        .unwrap_err()
        .to_string();
    assert!(err.contains("pi.unverified"), "{err}");
}

#[test]
fn a_codex_cassette_names_codex_under_its_own_key_and_only_there() {
    let text = r#"{"format":"pi-cassette","version":1,"codex":{"version":"0.169.0","dialect":"exec-json"},"scenario":{"name":"s","description":"d"},"origin":{"kind":"hand-made","timing":"synthetic"}}
{"dt_ms":0,"exit":0}
"#;
    let c = Cassette::parse(Path::new("c"), text.as_bytes()).unwrap();
    assert_eq!(c.header.agent(), pi_grammar::Agent::Codex);
    assert_eq!(c.header.agent_name(), "codex");
    assert_eq!(c.header.pi.dialect, Dialect::ExecJson);
    assert_eq!(c.header.pi.codex().map(|x| x.version()), Some("0.169.0"));
    assert!(c.header.pi.grammar().is_none() && c.header.pi.claude().is_none());
    // Written back under the same key, byte for byte.
    assert_eq!(c.header.to_json(), text.lines().next().unwrap());

    let err = |text: String| {
        Cassette::parse(Path::new("c"), text.as_bytes())
            .unwrap_err()
            .to_string()
    };
    assert!(
        err(text.replace(r#""codex":{"#, r#""pi":{"#))
            .contains("header field `pi`: a cassette of Codex names it under `codex`"),
        "{}",
        err(text.replace(r#""codex":{"#, r#""pi":{"#))
    );
    let as_pi = err(text.replace("exec-json", "delta-only"));
    assert!(as_pi.contains("header field `codex`: a cassette of pi names it under `pi` (only a cassette of dialect \"exec-json\" names a `codex`)"), "{as_pi}");
    let old = err(text.replace("0.169.0", "0.100.0"));
    assert!(
        old.contains(
            "header field `codex.version`: pi-harness knows Codex 0.169.0, not \"0.100.0\""
        ),
        "{old}"
    );
    let newer = err(text.replace("0.169.0", "0.170.0"));
    assert!(newer.contains("header field `codex.unverified`: Codex 0.170.0 is newer than every pinned release (0.169.0)"), "{newer}");
    let marked = text.replace(
        r#""0.169.0","dialect":"exec-json""#,
        r#""0.170.0","dialect":"exec-json","unverified":{"grammar":"0.169.0"}"#,
    );
    let c = Cassette::parse(Path::new("c"), marked.as_bytes()).unwrap();
    assert_eq!(c.header.pi.borrowed(), Some("0.169.0"));
    assert!(c
        .header
        .pi
        .unverified_warning()
        .unwrap()
        .starts_with("warning: Codex 0.170.0 is newer than every pinned release"));
    let two_way = err(text.replace(r#""version":1,"#, r#""version":2,"mode":"rpc","#));
    assert!(
        two_way.contains("a Codex (exec-json) cassette is one-way, version 1, with no mode"),
        "{two_way}"
    );
}

#[test]
fn a_gemini_cassette_names_gemini_under_its_own_key_and_only_there() {
    let text = r#"{"format":"pi-cassette","version":1,"gemini":{"version":"0.61.0","dialect":"gemini-stream-json"},"scenario":{"name":"s","description":"d"},"expect":{"effective":{"model":"gemini-2.5-flash","approval":"yolo","max_attempts":2}},"origin":{"kind":"hand-made","timing":"synthetic"}}
{"dt_ms":0,"exit":244}
"#;
    let c = Cassette::parse(Path::new("c"), text.as_bytes()).unwrap();
    assert_eq!(c.header.agent(), pi_grammar::Agent::Gemini);
    assert_eq!(c.header.agent_name(), "gemini");
    assert_eq!(c.header.pi.dialect, Dialect::GeminiStreamJson);
    assert_eq!(c.header.pi.gemini().map(|x| x.version()), Some("0.61.0"));
    assert!(c.header.pi.grammar().is_none() && c.header.pi.codex().is_none());
    let effective = c.header.expect.effective.as_ref().unwrap();
    assert_eq!(
        (effective.approval.as_deref(), effective.max_attempts),
        (Some("yolo"), Some(2))
    );
    // Written back under the same key, byte for byte.
    assert_eq!(c.header.to_json(), text.lines().next().unwrap());

    let err = |text: String| {
        Cassette::parse(Path::new("c"), text.as_bytes())
            .unwrap_err()
            .to_string()
    };
    let under_pi = err(text.replace(r#""gemini":{"#, r#""pi":{"#));
    assert!(
        under_pi.contains("header field `pi`: a cassette of Gemini CLI names it under `gemini`"),
        "{under_pi}"
    );
    let as_codex = err(text.replace("gemini-stream-json", "exec-json"));
    assert!(as_codex.contains("header field `gemini`: a cassette of Codex names it under `codex` (only a cassette of dialect \"gemini-stream-json\" names a `gemini`)"), "{as_codex}");
    let old = err(text.replace("0.61.0", "0.60.1"));
    assert!(
        old.contains(
            "header field `gemini.version`: pi-harness knows Gemini CLI 0.61.0, not \"0.60.1\""
        ),
        "{old}"
    );
    let newer = err(text.replace("0.61.0", "0.62.0"));
    assert!(newer.contains("header field `gemini.unverified`: Gemini CLI 0.62.0 is newer than every pinned release (0.61.0)"), "{newer}");
    let two_way = err(text.replace(r#""version":1,"#, r#""version":2,"mode":"rpc","#));
    assert!(
        two_way.contains(
            "a Gemini CLI (gemini-stream-json) cassette is one-way, version 1, with no mode"
        ),
        "{two_way}"
    );
    let zero = err(text.replace(r#""max_attempts":2"#, r#""max_attempts":0"#));
    assert!(
        zero.contains("c:1: header field `expect.effective.max_attempts`: a model call is tried at least once, found 0"),
        "{zero}"
    );
}

/// A two-way cassette is bounded as a one-way one: a grandchild that outlives its child's
/// `reap` (its own session, a child without one, or a child that ended by itself) keeps the
/// child's place among the 32 alive. Before, 1,024 such spawn/reap pairs linted clean and a
/// replay left 729 processes after fake-pi's exit 0. A grandchild the reap's kill reaches
/// (the child's own group) does not; a spawn id used again is counted again (a `reap` reaps
/// the latest spawn with its id, as fake-pi does).
#[test]
fn a_reap_that_leaves_a_grandchild_alive_keeps_its_place() {
    let header = r#"{"format":"pi-cassette","version":2,"mode":"rpc","pi":{"version":"1.5.2","dialect":"delta-only"},"scenario":{"name":"t","description":"d"},"expect":{"flags":{"mode":"rpc","no-session":true}},"origin":{"kind":"hand-made","timing":"synthetic"}}"#;
    let exit = r#"{"dt_ms":0,"exit":0}"#;
    let parse = |records: Vec<String>| {
        let text = format!("{header}\n{}\n{exit}\n", records.join("\n"));
        let parsed = Cassette::parse(Path::new("c"), text.as_bytes()).map(|_| ());
        let linted = pi_cassette::lint::lint_bytes(Path::new("c"), text.as_bytes());
        (parsed.map_err(|e| e.to_string()), linted.is_empty())
    };
    let pairs = |n: usize, spawn: &str| -> Vec<String> {
        (0..n)
            .flat_map(|i| {
                [
                    format!(r#"{{"dt_ms":0,"spawn":{{"id":"c{i}",{spawn}}}}}"#),
                    format!(r#"{{"dt_ms":0,"reap":"c{i}"}}"#),
                ]
            })
            .collect()
    };
    let refused = "c:66: record field `spawn`: more than 32 children alive at once (spawned and not reaped, or reaped with a grandchild that lives on); a replay keeps at most that many";
    for spawn in [
        r#""grandchild":{"own_session":true}"#,
        r#""own_session":false,"grandchild":{}"#,
        r#""lifetime_ms":5,"grandchild":{}"#,
    ] {
        assert_eq!(parse(pairs(32, spawn)), (Ok(()), true), "{spawn}");
        assert_eq!(
            parse(pairs(1024, spawn)),
            (Err(refused.to_string()), false),
            "{spawn}"
        );
    }
    // The reap's kill of the child's group takes its grandchild: nothing is left.
    assert_eq!(parse(pairs(1024, r#""grandchild":{}"#)), (Ok(()), true));
    // The same id, spawned 33 times and never reaped: 33 children.
    let same: Vec<String> = (0..33)
        .map(|_| r#"{"dt_ms":0,"spawn":{"id":"c"}}"#.to_string())
        .collect();
    assert_eq!(
        parse(same).0.unwrap_err(),
        refused.replace("c:66:", "c:34:")
    );
    // Two spawns with one id and two reaps: the second reap finds the latest reaped already
    // (as fake-pi does), so the first child is still alive and 31 more fill the 32.
    let mut twice: Vec<String> = [
        r#"{"dt_ms":0,"spawn":{"id":"a"}}"#,
        r#"{"dt_ms":0,"spawn":{"id":"a"}}"#,
        r#"{"dt_ms":0,"reap":"a"}"#,
        r#"{"dt_ms":0,"reap":"a"}"#,
    ]
    .map(String::from)
    .to_vec();
    twice.extend((0..31).map(|i| format!(r#"{{"dt_ms":0,"spawn":{{"id":"b{i}"}}}}"#)));
    assert_eq!(parse(twice.clone()), (Ok(()), true));
    twice.push(r#"{"dt_ms":0,"spawn":{"id":"z"}}"#.to_string());
    assert!(parse(twice).0.unwrap_err().starts_with("c:37: "));
}

/// Every registered agent, from its row: its section read and written under its own key
/// (byte for byte), refused under another agent's key or beside one, in the kind of cassette
/// it has (version 1 without mode, version 2 with its protocol), each message naming the
/// agents from their rows.
#[test]
fn every_agent_is_read_and_written_under_its_own_key_and_only_there() {
    use pi_grammar::Agent;
    let err = |text: &str| {
        Cassette::parse(Path::new("c"), text.as_bytes())
            .unwrap_err()
            .to_string()
    };
    for agent in Agent::ALL {
        let spec = agent.spec();
        let (key, dialect) = (spec.header_key, spec.dialects[0]);
        let version = spec.newest().version;
        let kind = match spec.two_way {
            Some(mode) if !spec.one_way => format!(r#""version":2,"mode":"{mode}""#),
            _ => r#""version":1"#.to_string(),
        };
        let text = format!(
            r#"{{"format":"pi-cassette",{kind},"{key}":{{"version":"{version}","dialect":"{dialect}"}},"scenario":{{"name":"s","description":"d"}},"origin":{{"kind":"hand-made","timing":"synthetic"}}}}
{{"dt_ms":0,"exit":0}}
"#
        );
        let c = Cassette::parse(Path::new("c"), text.as_bytes())
            .unwrap_or_else(|e| panic!("{agent}: {e}"));
        assert_eq!(c.header.agent(), agent);
        assert_eq!(c.header.to_json(), text.lines().next().unwrap(), "{agent}");
        for other in Agent::ALL.into_iter().filter(|o| *o != agent) {
            let okey = other.spec().header_key;
            let under = err(&text.replace(&format!(r#""{key}":{{"#), &format!(r#""{okey}":{{"#)));
            assert!(
                under.contains(&format!(
                    "header field `{okey}`: a cassette of {} names it under `{key}` (only a cassette of dialect \"{}\"",
                    spec.display_name,
                    other.spec().dialects[0]
                )),
                "{agent} under {other}: {under}"
            );
            let beside = err(&text.replace(
                r#","scenario""#,
                &format!(r#","{okey}":{{"version":"1.0.0","dialect":"x"}},"scenario""#),
            ));
            assert!(
                beside.contains("two agents' sections")
                    && beside.contains("a cassette imitates one CLI"),
                "{agent} beside {other}: {beside}"
            );
        }
        let with_key_as_string = err(&text.replace(
            &format!(r#""{key}":{{"version":"{version}","dialect":"{dialect}"}}"#),
            &format!(r#""{key}":"{version}""#),
        ));
        assert!(
            with_key_as_string.contains(&format!("header field `{key}`: expected an object")),
            "{agent}: {with_key_as_string}"
        );
        let unknown = err(&text.replace(r#","scenario""#, r#","colour":"red","scenario""#));
        assert!(unknown.contains("unknown field `colour`"), "{unknown}");
        for a in Agent::ALL {
            assert!(
                unknown.contains(&format!("`{}`", a.spec().header_key)),
                "{unknown}"
            );
        }
    }
    let claude_one_way = err(&format!(
        r#"{{"format":"pi-cassette","version":1,"claude":{{"version":"{}","dialect":"stream-json"}},"scenario":{{"name":"s","description":"d"}},"origin":{{"kind":"hand-made","timing":"synthetic"}}}}
{{"dt_ms":0,"exit":0}}
"#,
        Agent::Claude.spec().newest().version
    ));
    assert!(
        claude_one_way.contains("header field `mode`: a Claude Code (stream-json) cassette is two-way, version 2, with mode \"stream-json\""),
        "{claude_one_way}"
    );
    let pi_as_claude_mode = err(TWO_WAY_HEADER
        .replace(r#""mode":"rpc""#, r#""mode":"stream-json""#)
        .as_str());
    assert!(
        pi_as_claude_mode.contains("header field `mode`: a pi (delta-only) cassette's two-way protocol is \"rpc\", not \"stream-json\""),
        "{pi_as_claude_mode}"
    );
}

/// Each dialect is one agent's: the registry's rows and `Dialect::agent` agree.
#[test]
fn the_dialects_are_the_registrys() {
    let mut named = 0;
    for agent in pi_grammar::Agent::ALL {
        for d in agent.spec().dialects {
            let dialect: Dialect = serde_json::from_value(Value::String(d.to_string()))
                .unwrap_or_else(|e| panic!("{agent}'s dialect {d}: {e}"));
            assert_eq!(dialect.agent(), agent, "{d}");
            assert_eq!(dialect.to_string(), *d);
            named += 1;
        }
    }
    let all = [
        Dialect::SnapshotDelta,
        Dialect::DeltaOnly,
        Dialect::SnapshotOnly,
        Dialect::StreamJson,
        Dialect::ExecJson,
        Dialect::GeminiStreamJson,
    ];
    assert_eq!(named, all.len(), "a dialect no agent's row names");
}
