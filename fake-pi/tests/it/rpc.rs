//! fake-pi in RPC mode: a client that does something other than the recording's client is
//! told so at once, precisely (exit 99, cassette line, field, recorded and actual values);
//! pi's tool processes come and go as recorded; requests reach `FAKE_PI_REQUEST_LOG`.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::time::Duration;

use crate::util::*;

fn rpc(name: &str) -> PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../cassettes/rpc")
        .join(name)
}

const ARGS: &[&str] = &[
    "--mode",
    "rpc",
    "--no-session",
    "--provider",
    "fake",
    "--model",
    "fake-model",
];

fn start(world: &World, cassette: &std::path::Path, env: &[(&str, &str)]) -> Child {
    world
        .fake_pi(cassette)
        .args(ARGS)
        .envs(env.iter().copied())
        .env("FAKE_PI_VALUES", "recorded")
        .stdin(Stdio::piped())
        .spawn()
        .unwrap()
}

fn finish(child: Child) -> (Option<i32>, String, String) {
    let out = child.wait_with_output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_different_command_is_refused_naming_line_field_and_values() {
    let world = World::new("rpc_wrong_field");
    let cassette = rpc("rpc_steer.pi152.cassette.jsonl");
    let mut child = start(&world, &cassette, &[]);
    let mut stdin = child.stdin.take().unwrap();
    writeln!(
        stdin,
        r#"{{"id":"x","type":"prompt","message":"write fast"}}"#
    )
    .unwrap();
    let (code, out, err) = finish(child);
    assert_eq!(code, Some(99), "{err}");
    assert_eq!(out, "", "nothing of the recorded answer is written");
    assert_eq!(
        err.lines().next().unwrap(),
        format!(
            r#"fake-pi: client mismatch: {}:2: field `message`: expected "write slowly", got "write fast" (recorded: the line {{"id":"p1","message":"write slowly","type":"prompt"}})"#,
            cassette.display()
        )
    );
    world.assert_none_left();
}

#[test]
fn a_closed_stdin_or_a_line_that_is_not_json_where_a_command_is_due_is_refused() {
    let world = World::new("rpc_closed");
    let cassette = rpc("rpc_steer.pi152.cassette.jsonl");
    let child = start(&world, &cassette, &[]);
    // stdin dropped at once: closed.
    let (code, _, err) = finish(child);
    assert_eq!(code, Some(99), "{err}");
    assert!(
        err.contains(":2: the client closed stdin; expected the line {\"id\":\"p1\""),
        "{err}"
    );

    let mut child = start(&world, &cassette, &[]);
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "prompt: write slowly").unwrap();
    let (code, _, err) = finish(child);
    assert_eq!(code, Some(99), "{err}");
    assert!(
        err.contains(r#"expected the JSON line {"id":"p1","message":"write slowly","type":"prompt"}, got a line that is not JSON: "prompt: write slowly""#),
        "{err}"
    );
    world.assert_none_left();
}

#[test]
fn a_two_way_cassette_needs_rpc_mode() {
    let world = World::new("rpc_mode");
    let cassette = rpc("rpc_steer.pi152.cassette.jsonl");
    let out = world
        .fake_pi(&cassette)
        .args(["--mode", "json", "--no-session", "hi"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(99));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("expectation mismatch"), "{err}");
    world.assert_none_left();
}

#[test]
fn the_wait_for_a_silent_client_can_be_bounded() {
    let world = World::new("rpc_wait");
    let cassette = rpc("rpc_steer.pi152.cassette.jsonl");
    let mut child = start(&world, &cassette, &[("FAKE_PI_RPC_WAIT_MS", "200")]);
    let _stdin = child.stdin.take().unwrap(); // open, silent
    let (code, _, err) = finish(child);
    assert_eq!(code, Some(99), "{err}");
    assert!(
        err.contains(
            ":2: nothing came from the client in 200 ms (FAKE_PI_RPC_WAIT_MS); expected the line"
        ),
        "{err}"
    );
    world.assert_none_left();
}

/// Reads stdout lines until one contains `what`; returns everything read.
fn read_until(r: &mut impl BufRead, what: &str) -> String {
    let mut seen = String::new();
    loop {
        let mut line = String::new();
        assert!(
            r.read_line(&mut line).unwrap() > 0,
            "EOF before {what}: {seen}"
        );
        seen.push_str(&line);
        if line.contains(what) {
            return seen;
        }
    }
}

#[test]
fn an_aborted_tool_process_runs_until_the_abort_then_is_gone() {
    let world = World::new("rpc_abort_tool");
    let cassette = rpc("rpc_abort_tool.pi152.cassette.jsonl");
    let mut child = start(&world, &cassette, &[]);
    let mut stdin = child.stdin.take().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    writeln!(
        stdin,
        r#"{{"id":1,"type":"prompt","message":"run the tool"}}"#
    )
    .unwrap();
    read_until(&mut out, "\"tool_execution_update\"");
    let fake = child.id() as i32;
    let tools = || {
        world
            .alive()
            .into_iter()
            .filter(|&p| p != fake)
            .map(cmdline)
            .collect::<Vec<_>>()
    };
    wait_until(Duration::from_secs(5), || !tools().is_empty());
    assert_eq!(tools(), ["/bin/bash -c sleep 30.517; echo done"]);
    writeln!(stdin, r#"{{"id":2,"type":"abort"}}"#).unwrap();
    let rest = read_until(&mut out, "\"command\":\"abort\"");
    assert!(rest.contains("Command aborted"), "{rest}");
    assert!(
        rest.ends_with("{\"id\":2,\"type\":\"response\",\"command\":\"abort\",\"success\":true}\n"),
        "{rest}"
    );
    assert!(
        tools().is_empty(),
        "the tool is gone once the abort is answered"
    );
    drop(stdin);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
    world.assert_none_left();
}

#[test]
fn requests_reach_the_request_log_with_the_steer_in_the_second() {
    let world = World::new("rpc_requests");
    let cassette = pi_cassette::Cassette::load(&rpc("rpc_steer.pi87.cassette.jsonl")).unwrap();
    let log = world.path().join("requests.jsonl");
    let mut cmd = world.fake_pi(&rpc("rpc_steer.pi87.cassette.jsonl"));
    cmd.args(ARGS)
        .env("FAKE_PI_REQUEST_LOG", &log)
        .env("FAKE_PI_VALUES", "recorded");
    let run = pi_testkit::rpc::drive(cmd, &cassette);
    assert_eq!(run.status.code(), Some(0));
    assert_eq!(run.stdout, run.expected);
    let requests: Vec<serde_json::Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(requests.len(), 2);
    let last_user = |r: &serde_json::Value| {
        r["messages"]
            .as_array()
            .unwrap()
            .iter()
            .rev()
            .find(|m| m["role"] == "user")
            .map(|m| m["content"].to_string())
            .unwrap()
    };
    assert!(last_user(&requests[1]).contains("STEER-TEXT change course"));
    assert!(!last_user(&requests[0]).contains("STEER-TEXT"));
    world.assert_none_left();
}

#[test]
fn a_sigterm_the_replay_is_not_waiting_for_is_answered_as_pi_answers_it() {
    let world = World::new("rpc_early_sigterm");
    let cassette = rpc("rpc_steer.pi152.cassette.jsonl");
    let mut child = start(&world, &cassette, &[]);
    let mut stdin = child.stdin.take().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    writeln!(
        stdin,
        r#"{{"id":"p1","type":"prompt","message":"write slowly"}}"#
    )
    .unwrap();
    read_until(&mut out, "\"agent_start\"");
    send(child.id(), libc::SIGTERM);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(143), "pi's SIGTERM answer");
    world.assert_none_left();
}

/// Each `reap` of a child whose grandchild is in a session of its own leaves the grandchild
/// running, as recorded; 1,024 such spawn/reap pairs left 729 processes after fake-pi's exit
/// 0 (until the children's ten-minute limit). Such a grandchild keeps its child's place among
/// the 32 alive, so the replay stops at the 33rd pair, naming the line, with at most 32 left.
#[test]
fn reaped_children_whose_grandchildren_live_on_are_bounded() {
    let world = World::new("rpc_reap_bound");
    let header = r#"{"format":"pi-cassette","version":2,"mode":"rpc","pi":{"version":"1.5.2","dialect":"delta-only"},"scenario":{"name":"t","description":"d"},"expect":{"flags":{"mode":"rpc","no-session":true}},"origin":{"kind":"hand-made","timing":"synthetic"}}"#;
    let mut text = format!("{header}\n");
    for i in 0..40 {
        text.push_str(&format!(
            "{{\"dt_ms\":0,\"spawn\":{{\"id\":\"c{i}\",\"grandchild\":{{\"own_session\":true}}}}}}\n{{\"dt_ms\":30,\"reap\":\"c{i}\"}}\n"
        ));
    }
    text.push_str("{\"dt_ms\":0,\"exit\":0}\n");
    let cassette = world.write("reaps.cassette.jsonl", text);
    let out = world
        .fake_pi(&cassette)
        .args(["--mode", "rpc", "--no-session"])
        .env("FAKE_PI_SPEED", "1")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(98), "{err}");
    assert!(
        err.contains(
            "reaps.cassette.jsonl:66: record field `spawn`: more than 32 children alive at once"
        ),
        "{err}"
    );
    let left = world.alive();
    assert!(left.len() <= 32, "{} left: {left:?}", left.len());
    world.kill_all();
    world.assert_none_left();
}
