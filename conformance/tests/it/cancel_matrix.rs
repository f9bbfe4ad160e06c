//! The cancellation matrix: the reference provider against fake-pi (real processes, real
//! signals), cancelled at seven points. Each ends in `terminal.cancelled` (the dropped
//! stream has no consumer left to see it) with zero survivors, proven by scanning /proc for
//! the world's marker. `stress_the_matrix` repeats the whole matrix
//! `PI_HARNESS_CANCEL_STRESS` times (default 5).

use std::time::{Duration, Instant};

use crate::util::*;
use pi_procs as procs;
use pi_provider::Provider;
use pi_wire::message::Message;
use tokio_stream::StreamExt as _;
use tokio_util::sync::CancellationToken;

const HANG: &str = r#"{"dt_ms":0,"hang":true}"#;
const PI_DEFAULTS: &str = "{}";

fn out(dt_ms: u64, json: &str) -> String {
    format!(r#"{{"dt_ms":{dt_ms},"stdout":{json}}}"#)
}

/// The start of a 0.87.1 conversation, up to a first text delta `text`.
fn opening(text: &str) -> Vec<String> {
    let t = serde_json::to_string(text).unwrap();
    vec![
        out(
            0,
            r#"{"type":"session","version":3,"id":"sess-1","timestamp":"T","cwd":"/w"}"#,
        ),
        out(0, r#"{"type":"agent_start"}"#),
        out(0, r#"{"type":"turn_start"}"#),
        out(
            0,
            r#"{"type":"message_start","message":{"role":"assistant","content":[],"stopReason":"pending"}}"#,
        ),
        out(
            0,
            &format!(
                r#"{{"type":"message_update","assistantMessageEvent":{{"type":"text_delta","contentIndex":0,"delta":{t}}}}}"#
            ),
        ),
    ]
}

fn tool_start() -> String {
    out(
        0,
        r#"{"type":"tool_execution_start","toolCallId":"call_9","toolName":"bash","args":{"command":"sleep 300"}}"#,
    )
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Point {
    BeforeSpawn,
    BeforeFirstLine,
    MidText,
    MidToolOwnSession,
    PiIgnoresSigterm,
    AfterPiExitedGrandchildHoldsStdout,
    ConsumerDropsStream,
}

const MATRIX: [Point; 7] = [
    Point::BeforeSpawn,
    Point::BeforeFirstLine,
    Point::MidText,
    Point::MidToolOwnSession,
    Point::PiIgnoresSigterm,
    Point::AfterPiExitedGrandchildHoldsStdout,
    Point::ConsumerDropsStream,
];

/// Is fake-pi itself (not one of its children) among the world's processes?
fn pi_alive(w: &World) -> bool {
    w.alive().iter().any(|&pid| {
        procs::read_proc(pid).is_some_and(|p| {
            p.cmdline
                .first()
                .is_some_and(|a| a.ends_with("fake-pi") || a.ends_with("/pi"))
                && !p.cmdline.iter().any(|a| a == "fake-pi-child")
        })
    })
}

/// Is one of fake-pi's tool processes (child or grandchild) alive?
fn holder_alive(w: &World) -> bool {
    w.alive().iter().any(|&pid| {
        procs::read_proc(pid).is_some_and(|p| p.cmdline.iter().any(|a| a == "fake-pi-child"))
    })
}

/// Run one point of the matrix; returns the messages the consumer saw.
async fn run_point(point: Point, round: usize) -> Vec<Message> {
    let w = World::new(&format!("cancel-{point:?}-{round}"));
    let mut grace = Duration::from_secs(2);
    let (records, process): (Vec<String>, &str) = match point {
        Point::BeforeSpawn | Point::BeforeFirstLine => (vec![HANG.into()], PI_DEFAULTS),
        Point::MidText => {
            let mut r = opening("first ");
            r.push(out(60_000, r#"{"type":"message_update","assistantMessageEvent":{"type":"text_delta","contentIndex":0,"delta":"never"}}"#));
            r.push(r#"{"dt_ms":0,"exit":0}"#.into());
            (r, PI_DEFAULTS)
        }
        Point::MidToolOwnSession => {
            let mut r = opening("running");
            r.push(tool_start());
            r.push(r#"{"dt_ms":0,"spawn":{"id":"bash","own_session":true,"grandchild":{"own_session":true}}}"#.into());
            r.push(HANG.into());
            (r, PI_DEFAULTS)
        }
        Point::PiIgnoresSigterm => {
            grace = Duration::from_millis(300);
            let mut r = opening("running");
            r.push(tool_start());
            r.push(
                r#"{"dt_ms":0,"spawn":{"id":"bash","own_session":true,"ignore_sigterm":true}}"#
                    .into(),
            );
            r.push(HANG.into());
            (r, r#"{"on_sigterm":{"action":"ignore"}}"#)
        }
        Point::AfterPiExitedGrandchildHoldsStdout => {
            let mut r = opening("done");
            r.push(r#"{"dt_ms":0,"spawn":{"id":"bash","own_session":true,"hold_stdout":true,"grandchild":{"own_session":true,"hold_stdout":true,"ignore_sigterm":true}}}"#.into());
            // Time for the child to start its grandchild before pi exits (real timing).
            r.push(r#"{"dt_ms":300,"exit":0}"#.into());
            (r, PI_DEFAULTS)
        }
        Point::ConsumerDropsStream => {
            let mut r = opening("running");
            r.push(tool_start());
            r.push(r#"{"dt_ms":0,"spawn":{"id":"bash","own_session":true}}"#.into());
            r.push(HANG.into());
            (r, PI_DEFAULTS)
        }
    };
    let c = w
        .cassette("m")
        .description("cancellation matrix")
        .process(process)
        .records(records.clone())
        .write();
    let speed = match point {
        Point::MidText | Point::AfterPiExitedGrandchildHoldsStdout => "1",
        _ => "0",
    };
    let mut o = opts();
    o.grace = grace;
    let token = CancellationToken::new();
    if point == Point::BeforeSpawn {
        token.cancel();
    }
    let mut stream =
        Box::pin(Provider::new(o).execute(w.request(&c, "0.87.1", speed), token.clone()));
    let mut msgs: Vec<Message> = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut cancelled_at: Option<Instant> = None;
    loop {
        let ready = match point {
            Point::BeforeSpawn => true,
            Point::BeforeFirstLine => msgs.is_empty() && pi_alive(&w),
            Point::MidText => msgs.iter().any(|m| matches!(m, Message::Assistant { .. })),
            // supervisor + fake-pi + child + grandchild (escaped into its own session)
            Point::MidToolOwnSession => w.alive().len() >= 4,
            // supervisor + fake-pi + child
            Point::PiIgnoresSigterm => w.alive().len() >= 3,
            // pi is gone, its tool's processes still hold stdout open
            Point::AfterPiExitedGrandchildHoldsStdout => {
                msgs.iter().any(|m| matches!(m, Message::Assistant { .. }))
                    && !pi_alive(&w)
                    && holder_alive(&w)
            }
            Point::ConsumerDropsStream => !msgs.is_empty() && w.alive().len() >= 3,
        };
        if ready && cancelled_at.is_none() {
            if point == Point::ConsumerDropsStream {
                drop(stream);
                w.assert_none_left_within(SETTLE);
                return msgs;
            }
            token.cancel();
            cancelled_at = Some(Instant::now());
        }
        match tokio::time::timeout(Duration::from_millis(5), stream.next()).await {
            Ok(Some(m)) => msgs.push(m),
            Ok(None) => break,
            Err(_) => {}
        }
        assert!(Instant::now() < deadline, "{point:?}: no end: {msgs:#?}");
    }
    assert!(
        cancelled_at.is_some(),
        "{point:?}: the run ended before the cancel point: {msgs:#?}"
    );
    let last = msgs.last().cloned();
    assert_eq!(
        msgs.iter().filter(|m| m.is_terminal()).count(),
        1,
        "{point:?}: {msgs:#?}"
    );
    match (&point, &last) {
        (Point::BeforeSpawn, _) => {
            assert_eq!(msgs, vec![Message::TerminalCancelled { exit: None }])
        }
        (Point::PiIgnoresSigterm, Some(Message::TerminalCancelled { exit: Some(e) })) => {
            assert_eq!(e.signal.as_deref(), Some("SIGKILL"), "{point:?}");
            assert!(
                cancelled_at.unwrap().elapsed() >= grace,
                "SIGKILL before the grace ended"
            );
        }
        (_, Some(Message::TerminalCancelled { .. })) => {}
        _ => panic!("{point:?}: not cancelled: {msgs:#?}"),
    }
    if point == Point::MidText {
        assert_eq!(
            msgs.get(1),
            Some(&Message::Assistant {
                text: "first ".into()
            })
        );
    }
    w.assert_none_left_within(SETTLE);
    msgs
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancellation_matrix() {
    for point in MATRIX {
        let started = Instant::now();
        run_point(point, 0).await;
        eprintln!("{point:?}: {:?}", started.elapsed());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stress_the_matrix() {
    let rounds: usize = std::env::var("PI_HARNESS_CANCEL_STRESS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5);
    let started = Instant::now();
    for round in 1..=rounds {
        for point in MATRIX {
            run_point(point, round).await;
        }
    }
    eprintln!("{rounds} rounds of the matrix: {:?}", started.elapsed());
}
