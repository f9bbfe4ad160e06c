//! The reference provider: runs pi once, yields a normalized stream ending in exactly one
//! terminal message, and leaves no process behind.
//!
//! This is what a production application depends on. [`Provider::execute`] builds pi's
//! command line for the pi version at hand (from `pi-grammar`), starts pi under a
//! supervisor, delivers the prompt on stdin, maps stdout with `pi-wire`'s mapper, keeps a
//! bounded and redacted stderr tail, enforces caps and the timeout, and on cancellation
//! stops pi in order: SIGTERM, a grace period, then SIGKILL of everything below pi, found
//! through a child subreaper even when a tool detached into its own session.
//!
//! - [`Provider`], [`Request`], [`ProviderOptions`]: one supervised run;
//! - [`supervisor`]: the process that owns pi's tree; [`embedded`]: how it ships inside
//!   your executable, so there is no second binary to install; [`prefork`]: fork
//!   it at the top of `main` instead, and spare each run an `exec` of your executable;
//! - [`retry`]: attempts under a policy. pi retries some failures on its own; anything
//!   more is the caller's decision, made explicit here;
//! - [`rpc`]: an RPC session, pi started once in `--mode rpc`: prompt (a stream per run),
//!   steer, follow-up, abort, state, any command; shut down in the same order.
//!
//! [`message`] and [`CancellationToken`] are re-exported, so a caller needs no other crate
//! to read the stream or to cancel it.
//!
//! Inside, a json-mode run ([`Provider`], `run`) and an RPC session ([`rpc`]) both step
//! down to the same rooms: `request` (what to run), `argv` (pi's command line per
//! version), `probe` (finding pi and its version), `spawn` (starting the supervisor and
//! pi's pipes), `stderr_tail` and `wait` (the longest wait, deadlines capped by it).
//!
//! ```
//! use std::os::unix::fs::PermissionsExt;
//! use pi_provider::message::Message;
//! use pi_provider::{collect, CancellationToken, Provider, ProviderOptions, Request};
//!
//! // A stand-in pi: a script that answers like `pi --mode json` (use fake-pi and a
//! // cassette in real tests, see pi-testkit).
//! let dir = tempfile::tempdir().unwrap();
//! let pi = dir.path().join("pi");
//! std::fs::write(&pi, r#"#!/bin/sh
//! cat >/dev/null
//! echo '{"type":"session","version":3,"id":"s-1","timestamp":"T","cwd":"/w"}'
//! echo '{"type":"message_update","assistantMessageEvent":{"type":"text_delta","contentIndex":0,"delta":"Hi!"}}'
//! echo '{"type":"message_end","message":{"role":"assistant","content":[{"type":"text","text":"Hi!"}],"stopReason":"stop"}}'
//! echo '{"type":"agent_end","messages":[]}'
//! "#).unwrap();
//! std::fs::set_permissions(&pi, std::fs::Permissions::from_mode(0o755)).unwrap();
//!
//! let request = Request {
//!     pi_path: Some(pi),
//!     pi_version: Some("0.87.1".into()),
//!     prompt: "Say hi.".into(),
//!     ..Request::default()
//! };
//! let rt = tokio::runtime::Runtime::new().unwrap();
//! let messages = rt.block_on(async {
//!     let cancel = CancellationToken::new(); // cancel() stops pi and everything below it
//!     collect(Provider::new(ProviderOptions::default()).execute(request, cancel)).await
//! });
//! assert!(messages.contains(&Message::Assistant { text: "Hi!".into() }));
//! assert!(matches!(messages.last(), Some(Message::TerminalCompleted { .. })));
//! ```

mod argv;
mod codex_argv;
pub mod embedded;
mod gemini_argv;
pub mod prefork;
mod probe;
mod provider;
mod request;
pub mod retry;
pub mod rpc;
mod run;
mod spawn;
mod stderr_tail;
pub mod supervisor;
mod wait;

pub use argv::{build_argv, grammar_for, thinking_levels};
pub use codex_argv::{codex_argv, LAST_THREAD};
pub use gemini_argv::{gemini_argv, GEMINI_APPROVAL_MODES};
pub use pi_grammar::Agent;
/// pi's built-in tools enabled by default, as `pi-grammar` knows them (re-exported: a
/// request's `exclude_tools` on pi 0.73.1 becomes an allow-list of the others).
pub use pi_grammar::DEFAULT_TOOLS;
pub use pi_wire::message;
pub use prefork::{prefork_supervisor, PreforkGuard};
pub use probe::{probe_version, which};
pub use provider::{collect, Provider};
pub use request::{ApiKey, ProviderOptions, Request, SessionRef};
pub use spawn::supervisor_from_env;
pub use stderr_tail::StderrTail;
pub use tokio_util::sync::CancellationToken;
pub use wait::MAX_WAIT;

/// Whether the provider runs `agent` (pi, Codex and Gemini CLI; Claude Code not yet: a
/// request for it fails as invalid, naming it).
pub fn drives(agent: Agent) -> bool {
    match agent {
        Agent::Pi | Agent::Codex | Agent::Gemini => true,
        Agent::Claude => false,
    }
}

/// The agents the provider runs ([`drives`]), for a message: `pi, Codex and Gemini CLI`.
pub fn driven_names() -> String {
    let names: Vec<&str> = Agent::ALL
        .into_iter()
        .filter(|a| drives(*a))
        .map(Agent::display_name)
        .collect();
    match names.as_slice() {
        [rest @ .., last] if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => names.join(""),
    }
}
