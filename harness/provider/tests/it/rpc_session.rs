//! The RPC session against fake-pi replaying RPC sessions recorded from real pi: prompts
//! stream normalized messages, steer and abort reach pi where the recorded client sent
//! them (fake-pi checks every line; a wrong one would end the replay with exit 99), a
//! rejected prompt is an error, and shutting down mid-tool leaves nothing behind.

use std::path::{Path, PathBuf};
use std::time::Duration;

use pi_provider::message::{FailureReason, Message};
use pi_provider::rpc::{RpcError, RpcSession};
use pi_provider::ProviderOptions;
use pi_testkit::World;
use tokio_stream::wrappers::ReceiverStream;
use tokio_stream::StreamExt;

fn rpc(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../cassettes/rpc")
        .join(format!("{name}.cassette.jsonl"))
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

async fn session(world: &World, name: &str) -> RpcSession {
    let req = world.request(&rpc(name), "1.5.2", "0");
    RpcSession::start(pi_testkit::provider_options(), req)
        .await
        .unwrap_or_else(|f| panic!("{f:?}"))
}

/// Read the stream until `n` assistant text deltas have come (the point where the
/// recorded client acted).
async fn text_deltas(stream: &mut ReceiverStream<Message>, n: usize) {
    let mut seen = 0;
    while seen < n {
        if let Message::Assistant { .. } = stream.next().await.expect("the run streams") {
            seen += 1;
        }
    }
}

/// Read the stream until the tool call.
async fn until_tool_call(stream: &mut ReceiverStream<Message>) {
    loop {
        if let Message::ToolCall { .. } = stream.next().await.expect("the run streams") {
            return;
        }
    }
}

fn text(msgs: &[Message]) -> String {
    msgs.iter()
        .filter_map(|m| match m {
            Message::Assistant { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

#[test]
fn a_steer_mid_stream_is_delivered_and_the_run_completes() {
    let world = World::new("rpc_session_steer");
    runtime().block_on(async {
        let s = session(&world, "rpc_steer.pi152").await;
        let mut stream = s.prompt("write slowly").await.unwrap();
        let mut msgs = Vec::new();
        // The recorded client steered after the second text delta.
        while msgs
            .iter()
            .filter(|m| matches!(m, Message::Assistant { .. }))
            .count()
            < 2
        {
            msgs.push(stream.next().await.expect("the run streams"));
        }
        s.steer("STEER-TEXT change course").await.unwrap();
        while let Some(m) = stream.next().await {
            msgs.push(m);
        }
        assert!(
            matches!(msgs.last(), Some(Message::TerminalCompleted { .. })),
            "{msgs:?}"
        );
        assert_eq!(
            text(&msgs),
            "w1 w2 w3 w4 w5 w6 w7 w8 w9 w10 w11 w12 Steered answer."
        );
        let exit = s.shutdown().await.expect("pi's exit");
        assert_eq!(
            exit.code,
            Some(0),
            "stdin closed where the recording closed it"
        );
    });
    world.assert_none_left();
}

#[test]
fn abort_ends_the_run_as_aborted() {
    let world = World::new("rpc_session_abort");
    runtime().block_on(async {
        let s = session(&world, "rpc_abort_text.pi152").await;
        let mut stream = s.prompt("write slowly").await.unwrap();
        text_deltas(&mut stream, 2).await;
        // pi answers the abort after the run's closing events: the stream ends first.
        let (abort, rest) = tokio::join!(s.abort(), stream.collect::<Vec<_>>());
        abort.unwrap();
        match rest.last() {
            Some(Message::TerminalFailed(f)) => assert_eq!(f.reason, FailureReason::Aborted),
            other => panic!("{other:?}"),
        }
        assert_eq!(s.shutdown().await.and_then(|e| e.code), Some(0));
    });
    world.assert_none_left();
}

#[test]
fn a_prompt_while_streaming_is_refused_with_pis_words() {
    let world = World::new("rpc_session_refused");
    runtime().block_on(async {
        let s = session(&world, "rpc_prompt_while_streaming.pi152").await;
        let mut stream = s.prompt("write slowly").await.unwrap();
        text_deltas(&mut stream, 2).await;
        let refused = s.prompt("PLAIN-PROMPT no behavior").await.err();
        assert_eq!(
            refused,
            Some(RpcError::Rejected("Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') to queue the message.".into()))
        );
        let rest: Vec<Message> = stream.collect().await;
        assert!(matches!(rest.last(), Some(Message::TerminalCompleted { .. })));
        s.shutdown().await;
    });
    world.assert_none_left();
}

#[test]
fn state_and_other_commands_answer_with_their_data() {
    let world = World::new("rpc_session_state");
    runtime().block_on(async {
        let s = session(&world, "rpc_state.pi152").await;
        let state = s.state().await.unwrap();
        assert_eq!(state["isStreaming"], false);
        let messages = s
            .command(serde_json::json!({"type": "get_messages"}))
            .await
            .unwrap();
        assert_eq!(messages["messages"], serde_json::json!([]));
        let mut stream = s.prompt("write slowly").await.unwrap();
        text_deltas(&mut stream, 2).await;
        assert_eq!(s.state().await.unwrap()["isStreaming"], true);
        s.command(serde_json::json!({"type": "get_messages"}))
            .await
            .unwrap();
        let rest: Vec<Message> = stream.collect().await;
        assert!(matches!(
            rest.last(),
            Some(Message::TerminalCompleted { .. })
        ));
        let after = s
            .command(serde_json::json!({"type": "get_messages"}))
            .await
            .unwrap();
        assert!(after["messages"].as_array().unwrap().len() >= 2);
        s.shutdown().await;
    });
    world.assert_none_left();
}

/// The tool's process (`/bin/bash -c sleep 30.517; echo done`) runs under fake-pi as it
/// ran under pi; shutting the session down mid-tool ends the prompt's stream as cancelled
/// and leaves no process.
#[test]
fn shutdown_mid_tool_leaves_nothing() {
    let world = World::new("rpc_session_cancel_tool");
    runtime().block_on(async {
        let s = session(&world, "rpc_eof_mid_tool.pi152").await;
        let mut stream = s.prompt("run the tool").await.unwrap();
        until_tool_call(&mut stream).await;
        let tool = "/bin/bash -c sleep 30.517; echo done";
        let running = || {
            world
                .alive()
                .into_iter()
                .any(|p| pi_testkit::process::cmdline(p) == tool)
        };
        pi_testkit::process::wait_until(Duration::from_secs(5), running);
        assert!(running(), "the tool's process runs");
        let (exit, rest) = tokio::join!(s.shutdown(), stream.collect::<Vec<_>>());
        assert_eq!(exit.and_then(|e| e.code), Some(0));
        assert!(
            matches!(rest.last(), Some(Message::TerminalCancelled { .. })),
            "{rest:?}"
        );
    });
    world.assert_none_left();
}

/// Dropping the session is a shutdown too: nothing outlives it.
#[test]
fn dropping_the_session_mid_tool_leaves_nothing() {
    let world = World::new("rpc_session_drop");
    runtime().block_on(async {
        let s = session(&world, "rpc_eof_mid_tool.pi152").await;
        let mut stream = s.prompt("run the tool").await.unwrap();
        until_tool_call(&mut stream).await;
        drop(s);
        let rest: Vec<Message> = stream.collect().await;
        assert!(matches!(
            rest.last(),
            Some(Message::TerminalCancelled { .. })
        ));
    });
    world.assert_none_left_within(Duration::from_secs(5));
}

#[test]
fn a_session_that_cannot_start_says_why() {
    let world = World::new("rpc_session_nope");
    let mut req = world.request(&rpc("rpc_steer.pi152"), "1.5.2", "0");
    req.pi_path = Some("/nonexistent/pi".into());
    let f = runtime()
        .block_on(RpcSession::start(ProviderOptions::default(), req))
        .err()
        .expect("no pi, no session");
    assert_eq!(f.reason, FailureReason::SpawnFailed);
    world.assert_none_left();
}

/// A command that is not a JSON object is refused by the session itself (pi would answer
/// it without an id, so nothing could be routed back); the session goes on.
#[test]
fn a_command_that_is_not_an_object_is_refused_and_the_session_goes_on() {
    let world = World::new("rpc_session_not_object");
    runtime().block_on(async {
        let s = session(&world, "rpc_state.pi152").await;
        let e = s.command(serde_json::json!([1, 2])).await.unwrap_err();
        assert!(
            matches!(&e, RpcError::Rejected(m) if m.contains("JSON object")),
            "{e:?}"
        );
        assert_eq!(s.state().await.unwrap()["isStreaming"], false);
        s.shutdown().await;
    });
    world.assert_none_left();
}
