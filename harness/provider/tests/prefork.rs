//! The supervisor forked ahead of time, through the library as an application uses it: this
//! test has a `main` of its own (no test harness), so the process has one thread when it
//! forks, as an application's `main` does. One supervisor serves one run, so it is one case:
//! a request whose environment holds a name no environment can hold (a NUL byte). The usual
//! start reports that as a failed start; so must the forked supervisor. Before the fix it
//! set each variable in its own environment (`std::env::set_var` panics on a NUL): the
//! supervisor died without a word and the run ended as a lost supervisor.

// A test with its own `main` (no harness): it prints its one result line, as the harness would.
#![allow(clippy::print_stdout)]

use pi_provider::{collect, CancellationToken, Provider};
use pi_testkit::provider_options as opts;
use pi_testkit::records::conversation;
use pi_testkit::World;
use pi_wire::message::{FailureReason, Message};

fn main() {
    // First, while this process has one thread.
    let _supervisor = pi_provider::prefork_supervisor().expect("one thread at the top of main");

    let w = World::new("prefork-env");
    let c = w
        .cassette("ok")
        .version("0.87.1")
        .expect("{}")
        .process("{}")
        .records(conversation("never said"))
        .write();
    let mut req = w.request(&c, "0.87.1", "0");
    req.env.push(("BAD\0NAME".into(), "x".into()));
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let msgs = runtime.block_on(async {
        collect(Provider::new(opts()).execute(req, CancellationToken::new())).await
    });
    match msgs.last() {
        Some(Message::TerminalFailed(f)) if f.reason == FailureReason::SpawnFailed => {
            assert!(f.message.contains("nul byte"), "{}", f.message)
        }
        other => panic!("expected a failed start, got {other:?} after {msgs:?}"),
    }
    w.assert_none_left();
    println!("prefork: a bad environment through the forked supervisor is a failed start: ok");
}
