//! The whole-file parser and writer: every payload form read and written back byte for
//! byte, and errors that name the file, the line and the field.

use std::path::Path;

use crate::{Action, Cassette, CassetteError, Record};

fn header_line() -> &'static str {
    r#"{"format":"pi-cassette","version":1,"pi":{"version":"0.87.1","dialect":"delta-only"},"scenario":{"name":"t","description":"d"},"origin":{"kind":"hand-made","timing":"synthetic"}}"#
}

fn parse(body: &str) -> Result<Cassette, CassetteError> {
    Cassette::parse(
        Path::new("x.cassette.jsonl"),
        format!("{}\n{}", header_line(), body).as_bytes(),
    )
}

#[test]
fn round_trips_every_form_byte_for_byte() {
    let body = concat!(
        r#"{"dt_ms":0,"stdout":{"type":"agent_start"}}"#,
        "\n",
        r#"{"dt_ms":1.5,"stdout_text":"not json\r"}"#,
        "\n",
        r#"{"dt_ms":0,"stdout_b64":"/w=="}"#,
        "\n",
        r#"{"dt_ms":0,"stderr":"boom\n"}"#,
        "\n",
        r#"{"dt_ms":0,"spawn":{"id":"tool","own_session":true,"ignore_sigterm":true,"hold_stdout":false}}"#,
        "\n",
        r#"{"dt_ms":0,"stdout":{"type":"x"},"newline":false}"#,
        "\n",
        r#"{"dt_ms":2,"exit":1}"#,
        "\n",
    );
    let c = parse(body).unwrap();
    assert_eq!(c.records.len(), 7);
    assert_eq!(
        c.stdout_bytes(),
        b"{\"type\":\"agent_start\"}\nnot json\r\n\xff{\"type\":\"x\"}".to_vec()
    );
    assert_eq!(c.to_jsonl(), format!("{}\n{}", header_line(), body));
    assert_eq!(c.records[1].line, 3);
}

#[test]
fn errors_name_file_line_and_field() {
    let e = parse(r#"{"dt_ms":0,"stdout":{"a":1},"exit":0}"#)
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "x.cassette.jsonl:2: record has several actions (stdout, exit); one per line"
    );
    let e = parse(r#"{"dt_ms":-1,"exit":0}"#).unwrap_err().to_string();
    assert!(
        e.starts_with("x.cassette.jsonl:2: record field `dt_ms`"),
        "{e}"
    );
    let e = parse("{\"dt_ms\":0,\"stdout\":{}}\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains(":2: the last record must be"), "{e}");
    let e = parse("{\"dt_ms\":0,\"exit\":0}\n{\"dt_ms\":0,\"stdout\":{}}")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains(":3: record after the final `exit` record on line 2"),
        "{e}"
    );
    let e = parse(r#"{"dt_ms":0,"signal":"SIGFOO"}"#)
        .unwrap_err()
        .to_string();
    assert!(e.contains("unknown signal \"SIGFOO\""), "{e}");
    let e = parse(r#"{"dt_ms":0,"exit":0,"colour":"red"}"#)
        .unwrap_err()
        .to_string();
    assert!(e.contains("unknown field `colour`"), "{e}");
}

#[test]
fn header_errors_are_specific() {
    let e = Cassette::parse(Path::new("f"), b"{\"type\":\"session\"}\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("f:1: header field `format` missing"), "{e}");
    let e = Cassette::parse(
        Path::new("f"),
        b"{\"format\":\"pi-cassette\",\"version\":3}\n",
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("knows format versions 1 and 2, the file says 3"),
        "{e}"
    );
}

#[test]
fn a_null_line_is_stored_as_json_null_and_read_back() {
    let r = Record::stdout_line(0.0, b"null", true);
    assert_eq!(r.action.key(), "stdout");
    let c = Cassette {
        header: parse("{\"dt_ms\":0,\"exit\":0}").unwrap().header,
        records: vec![r, Record::new(0.0, Action::Exit(0))],
    };
    let text = c.to_jsonl();
    assert!(text.contains("{\"dt_ms\":0,\"stdout\":null}\n"), "{text}");
    let back = Cassette::parse(Path::new("x"), text.as_bytes()).unwrap();
    assert_eq!(back.stdout_bytes(), b"null\n");
}

#[test]
fn stdout_line_picks_the_readable_form() {
    assert_eq!(
        Record::stdout_line(0.0, br#"{"a":1}"#, true).action.key(),
        "stdout"
    );
    // Leading space: not verbatim JSON, kept as text so replay is exact.
    assert_eq!(
        Record::stdout_line(0.0, br#" {"a":1}"#, true).action.key(),
        "stdout_text"
    );
    assert_eq!(
        Record::stdout_line(0.0, b"\xff\xfe", true).action.key(),
        "stdout_b64"
    );
}
