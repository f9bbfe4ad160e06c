//! Tests of the drift comparison: what is and is not drift, the streams, the diff.

use super::lines::short;
use super::*;
use std::path::Path;

fn cassette(body: &str) -> Cassette {
    let header = r#"{"format":"pi-cassette","version":1,"pi":{"version":"0.87.1","dialect":"delta-only"},"scenario":{"name":"t","description":"d"},"origin":{"kind":"recorded","timing":"measured"}}"#;
    Cassette::parse(Path::new("t"), format!("{header}\n{body}").as_bytes()).unwrap()
}

/// A committed Claude Code cassette, as lines.
fn claude_lines(name: &str) -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../cassettes/claude")
        .join(name);
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

fn claude(lines: &[String]) -> Cassette {
    Cassette::parse(Path::new("t"), format!("{}\n", lines.join("\n")).as_bytes()).unwrap()
}

/// Two real recordings of one Claude Code scenario differ where the CLI races (the
/// permission prompt against `message_stop`) and in its jittered retry delays: neither
/// is drift. A different tool result is.
#[test]
fn claude_races_and_retry_jitter_are_no_drift_but_a_changed_result_is() {
    let lines = claude_lines("claude_tool_allowed.cc21330.cassette.jsonl");
    let base = normalize(&claude(&lines));
    let prompt = lines
        .iter()
        .position(|l| l.contains(r#""type":"control_request""#))
        .unwrap();
    let stop = lines
        .iter()
        .skip(prompt)
        .position(|l| l.contains(r#""type":"message_stop""#))
        .unwrap()
        + prompt;
    let mut raced = lines.clone();
    let moved = raced.remove(stop);
    raced.insert(prompt, moved);
    assert_eq!(normalize(&claude(&raced)), base);
    let changed: Vec<String> = lines
        .iter()
        .map(|l| l.replace("(Bash completed with no output)", "something else"))
        .collect();
    assert_ne!(normalize(&claude(&changed)), base);

    let lines = claude_lines("claude_retry_then_ok.cc21330.cassette.jsonl");
    let base = normalize(&claude(&lines));
    let jittered: Vec<String> = lines
        .iter()
        .map(|l| {
            let Some(at) = l.find(r#""retry_delay_ms":"#) else {
                return l.clone();
            };
            let start = at + r#""retry_delay_ms":"#.len();
            let end = start + l[start..].find(|c: char| !c.is_ascii_digit()).unwrap();
            format!("{}{}{}", &l[..start], 1234, &l[end..])
        })
        .collect();
    assert_ne!(jittered, lines, "the recording has a retry delay");
    assert_eq!(normalize(&claude(&jittered)), base);
}

#[test]
fn normalize_ignores_timing_usage_and_collapses_updates() {
    let a = cassette(concat!(
        r#"{"dt_ms":5,"stdout":{"type":"agent_start"}}"#,
        "\n",
        r#"{"dt_ms":1,"stdout":{"type":"message_update","delta":"a"}}"#,
        "\n",
        r#"{"dt_ms":1,"stdout":{"type":"message_update","delta":"b"}}"#,
        "\n",
        r#"{"dt_ms":1,"stdout":{"type":"message_end","message":{"role":"assistant","content":[{"type":"text","text":"ab"}],"stopReason":"stop","usage":{"input":1}}}}"#,
        "\n",
        r#"{"dt_ms":1,"exit":0}"#,
        "\n"
    ));
    let b = cassette(concat!(
        r#"{"dt_ms":50,"stdout":{"type":"agent_start"}}"#,
        "\n",
        r#"{"dt_ms":9,"stdout":{"type":"message_update","delta":"a"}}"#,
        "\n",
        r#"{"dt_ms":9,"stdout":{"type":"message_update","delta":"b"}}"#,
        "\n",
        r#"{"dt_ms":9,"stdout":{"type":"message_end","message":{"role":"assistant","content":[{"type":"text","text":"ab"}],"stopReason":"stop","usage":{"input":7}}}}"#,
        "\n",
        r#"{"dt_ms":1,"exit":0}"#,
        "\n"
    ));
    let na = normalize(&a);
    assert_eq!(na, normalize(&b));
    assert_eq!(
        wire_stream(&a),
        [
            "agent_start",
            "message_update x2",
            "message_end role=assistant stop=stop",
            "  text: \"ab\"",
            "exit 0"
        ]
    );
}

#[test]
fn parallel_tool_ends_compare_in_any_order() {
    let end = |id: &str| {
        format!(
            r#"{{"dt_ms":1,"stdout":{{"type":"tool_execution_end","toolCallId":"{id}","toolName":"bash","result":{{"content":[]}},"isError":false}}}}"#
        )
    };
    let a = cassette(&format!(
        "{}\n{}\n{{\"dt_ms\":0,\"exit\":0}}\n",
        end("a"),
        end("b")
    ));
    let b = cassette(&format!(
        "{}\n{}\n{{\"dt_ms\":0,\"exit\":0}}\n",
        end("b"),
        end("a")
    ));
    assert_eq!(normalize(&a), normalize(&b));
    let c = cassette(&format!("{}\n{{\"dt_ms\":0,\"exit\":0}}\n", end("a")));
    assert_ne!(normalize(&a), normalize(&c));
}

#[test]
fn diff_marks_changed_lines_with_context() {
    let a: Vec<String> = ["a", "b", "c", "d"].map(String::from).to_vec();
    let b: Vec<String> = ["a", "b", "X", "d"].map(String::from).to_vec();
    assert_eq!(diff(&a, &b, 1), "    ...\n    b\n  - c\n  + X\n    d\n");
    assert_eq!(diff(&a, &a, 3), "");
}

#[test]
fn run_to_run_timings_are_not_drift() {
    let a =
        r#"Script completed\nWall time 0.3 seconds {"durationMs":211,"wall_time_seconds":0.25}"#;
    let b = r#"Script completed\nWall time 0.2 seconds {"durationMs":98.5,"wall_time_seconds":0}"#;
    assert_eq!(short(a), short(b));
    assert_ne!(
        short("Wall time 0.3 minutes"),
        short("Wall time 0.2 minutes")
    );
}

#[test]
fn long_strings_keep_a_hash() {
    let x = "w ".repeat(200);
    let mut y = x.clone();
    y.replace_range(300..301, "Q");
    assert_ne!(short(&x), short(&y));
    assert!(short(&x).contains("400 chars"));
}

/// A Codex run is compared by its events and by the Codex mapper's stream: another usage or
/// timing is no drift; another answer, another tool output or the tool's status is.
#[test]
fn codex_runs_are_compared_by_their_events_and_the_codex_mapper() {
    let codex = |answer: &str, output: &str, input_tokens: u32, dt: u32| {
        let header = r#"{"format":"pi-cassette","version":1,"codex":{"version":"0.169.0","dialect":"exec-json"},"scenario":{"name":"t","description":"d"},"origin":{"kind":"recorded","timing":"measured"}}"#;
        let body = [
            format!(r#"{{"dt_ms":{dt},"stdout":{{"type":"thread.started","thread_id":"<THREAD_ID>"}}}}"#),
            r#"{"dt_ms":1,"stdout":{"type":"turn.started"}}"#.to_string(),
            r#"{"dt_ms":1,"stdout":{"type":"item.started","item":{"id":"item_0","type":"command_execution","command":"/bin/bash -lc 'echo hi'","aggregated_output":"","exit_code":null,"status":"in_progress"}}}"#.to_string(),
            format!(r#"{{"dt_ms":{dt},"stdout":{{"type":"item.completed","item":{{"id":"item_0","type":"command_execution","command":"/bin/bash -lc 'echo hi'","aggregated_output":"{output}","exit_code":0,"status":"completed"}}}}}}"#),
            format!(r#"{{"dt_ms":1,"stdout":{{"type":"item.completed","item":{{"id":"item_1","type":"agent_message","text":"{answer}"}}}}}}"#),
            format!(r#"{{"dt_ms":1,"stdout":{{"type":"turn.completed","usage":{{"input_tokens":{input_tokens},"cached_input_tokens":0,"output_tokens":3}}}}}}"#),
            r#"{"dt_ms":0,"exit":0}"#.to_string(),
        ];
        let text = format!("{header}\n{}\n", body.join("\n"));
        Cassette::parse(Path::new("t"), text.as_bytes()).unwrap()
    };
    let base = normalize(&codex("Done.", "hi\\n", 10, 5));
    assert!(
        base.iter()
            .any(|l| l == r#"item.completed agent_message "Done.""#),
        "{base:#?}"
    );
    assert!(
        base.iter().any(|l| l.starts_with("tool.call ")),
        "{base:#?}"
    );
    assert_eq!(normalize(&codex("Done.", "hi\\n", 99, 50)), base);
    assert_ne!(normalize(&codex("Other.", "hi\\n", 10, 5)), base);
    assert_ne!(normalize(&codex("Done.", "bye\\n", 10, 5)), base);
}

/// A Gemini CLI run is compared by its events (an answer's chunks joined) and by the Gemini
/// mapper's stream: another chunking, usage, time or stderr is no drift (tool ids are made
/// stable by the recorder: their epoch is redacted); another
/// answer, tool output, tool status, ending or surviving spawn is.
#[test]
fn gemini_runs_are_compared_by_their_events_and_the_gemini_mapper() {
    struct Run<'a> {
        chunks: &'a [&'a str],
        output: &'a str,
        status: &'a str,
        tokens: u32,
        stderr: &'a str,
        spawn: bool,
        exit: i32,
    }
    const TOOL_ID: &str = "run_shell_command_1700000000000_0";
    let gemini = |r: &Run| {
        let header = r#"{"format":"pi-cassette","version":1,"gemini":{"version":"0.61.0","dialect":"gemini-stream-json"},"scenario":{"name":"t","description":"d"},"origin":{"kind":"recorded","timing":"measured"}}"#;
        let mut body = vec![
            format!(r#"{{"dt_ms":3,"stderr":"{}"}}"#, r.stderr),
            r#"{"dt_ms":1,"stdout":{"type":"init","timestamp":"<TS>","session_id":"<SESSION_ID>","model":"gemini-2.5-flash"}}"#.to_string(),
            r#"{"dt_ms":1,"stdout":{"type":"message","timestamp":"<TS>","role":"user","content":"go"}}"#.to_string(),
            format!(r#"{{"dt_ms":1,"stdout":{{"type":"tool_use","timestamp":"<TS>","tool_name":"run_shell_command","tool_id":"{}","parameters":{{"command":"echo hi"}}}}}}"#, TOOL_ID),
        ];
        if r.spawn {
            body.push(r#"{"dt_ms":0,"spawn":{"id":"tool-1","own_session":true}}"#.to_string());
        }
        body.push(format!(r#"{{"dt_ms":1,"stdout":{{"type":"tool_result","timestamp":"<TS>","tool_id":"{}","status":"{}","output":"{}"}}}}"#, TOOL_ID, r.status, r.output));
        for c in r.chunks {
            body.push(format!(r#"{{"dt_ms":1,"stdout":{{"type":"message","timestamp":"<TS>","role":"assistant","content":"{c}","delta":true}}}}"#));
        }
        body.push(format!(r#"{{"dt_ms":1,"stdout":{{"type":"result","timestamp":"<TS>","status":"success","stats":{{"total_tokens":{0},"input_tokens":{0}}}}}}}"#, r.tokens));
        body.push(format!(r#"{{"dt_ms":0,"exit":{}}}"#, r.exit));
        let text = format!("{header}\n{}\n", body.join("\n"));
        Cassette::parse(Path::new("t"), text.as_bytes()).unwrap()
    };
    let base_run = Run {
        chunks: &["Do", "ne."],
        output: "hi",
        status: "success",
        tokens: 10,
        stderr: "YOLO mode is enabled.\\n",
        spawn: false,
        exit: 0,
    };
    let base = normalize(&gemini(&base_run));
    assert!(
        base.iter().any(|l| l == r#"message assistant "Done.""#),
        "{base:#?}"
    );
    assert!(
        base.iter().any(|l| l.starts_with("tool.call ")),
        "{base:#?}"
    );
    for same in [
        Run {
            chunks: &["Done", "."],
            ..base_run
        },
        Run {
            tokens: 99,
            ..base_run
        },
        Run {
            stderr: "[STARTUP] Phase 'cleanup_ops' was started\\n",
            ..base_run
        },
    ] {
        assert_eq!(normalize(&gemini(&same)), base);
    }
    for other in [
        Run {
            chunks: &["Other."],
            ..base_run
        },
        Run {
            output: "bye",
            ..base_run
        },
        Run {
            status: "error",
            ..base_run
        },
        Run {
            spawn: true,
            ..base_run
        },
        Run {
            exit: 144,
            ..base_run
        },
    ] {
        assert_ne!(normalize(&gemini(&other)), base);
    }
}

/// A fresh cassette of a release newer than every pinned one is compared with the committed
/// one of the release it borrows, named with its agent's tag and called by its agent's name
/// (a Codex or Gemini CLI cassette was paired with a pi tag, `pi169` for `cx0169`, and came
/// out NEW beside a MISSING one).
#[test]
fn an_unverified_fresh_cassette_pairs_with_its_own_agents_borrowed_release() {
    for agent in pi_grammar::Agent::ALL
        .into_iter()
        .filter(|a| a.spec().one_way)
    {
        let spec = agent.spec();
        let newest = spec.newest();
        let v = pi_grammar::Version::parse(newest.version).unwrap();
        let next = pi_grammar::Version::new(v.major, v.minor, v.patch + 1).to_string();
        let next_tag = spec.tag_of(&next).unwrap();
        let header = |version: &str, mark: &str| {
            format!(
                r#"{{"format":"pi-cassette","version":1,"{}":{{"version":"{version}","dialect":"{}"{mark}}},"scenario":{{"name":"x","description":"d"}},"origin":{{"kind":"recorded","timing":"measured"}}}}
{{"dt_ms":0,"exit":0}}
"#,
                spec.header_key,
                spec.dialects[spec.dialects.len() - 1]
            )
        };
        let committed = tempfile::tempdir().unwrap();
        let fresh = tempfile::tempdir().unwrap();
        std::fs::write(
            committed
                .path()
                .join(format!("x.{}.cassette.jsonl", newest.tag)),
            header(newest.version, ""),
        )
        .unwrap();
        let mark = format!(r#","unverified":{{"grammar":"{}"}}"#, newest.version);
        std::fs::write(
            fresh.path().join(format!("x.{next_tag}.cassette.jsonl")),
            header(&next, &mark),
        )
        .unwrap();
        let report = compare_dirs(committed.path(), fresh.path()).unwrap();
        let want = format!(
            "same     x.{next_tag}.cassette.jsonl ({} {next}, unverified, grammar of {}) vs x.{}.cassette.jsonl",
            spec.display_name, newest.version, newest.tag
        );
        assert!(report.clean, "{agent}: {}", report.text);
        assert!(report.text.starts_with(&want), "{agent}: {}", report.text);
    }
}
