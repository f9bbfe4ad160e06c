//! Records real pi against a scripted LLM server into cassettes; the corpus and the drift
//! check. Nothing that ships depends on this crate: it is the workshop where cassettes are
//! made.
//!
//! - [`llm_script`]: what the fake model answers, request by request (text, reasoning,
//!   tool calls, HTTP errors, stalls, cut streams), rendered as OpenAI chat-completions,
//!   OpenAI Responses or Anthropic SSE;
//! - [`llm_server`]: that script served on 127.0.0.1, with a log of every request (the
//!   proof of what reached the model);
//! - [`recorder`]: one run of real pi (or Claude Code) against the server, redacted and
//!   written as a cassette, with its children accounted for;
//! - [`client_script`]: the scripted client that drives a two-way (RPC, stream-json)
//!   recording;
//! - [`corpus`]: the manifest of scenarios and re-recording them on every pinned version;
//! - [`drift`]: fresh recordings compared with committed ones, wire and normalized stream;
//! - [`versions`]: the report of what changed between pinned pi versions, from the corpus.
//!
//! Errors are typed per room ([`recorder::RecordError`], [`corpus::CorpusError`],
//! [`drift::DriftError`], [`versions::VersionsError`]). The library prints nothing: what a
//! long operation has to tell the user while it runs goes to the [`Notices`] its caller
//! passes.
//!
//! ```
//! use std::io::{Read, Write};
//! use pi_recorder::llm_script::Script;
//! use pi_recorder::llm_server::{LlmServer, ServerOptions};
//!
//! let script = Script::parse(r#"{"turns":[{"text":["Hello ","there"]}]}"#).unwrap();
//! let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
//! let server = rt.block_on(LlmServer::start(script, ServerOptions::default())).unwrap();
//!
//! // Any client: here a raw HTTP request, as pi's would be.
//! let body = r#"{"model":"fake-model","stream":true,"messages":[{"role":"user","content":"hi"}]}"#;
//! let reply = std::thread::spawn({
//!     let addr = server.addr();
//!     move || {
//!         let mut s = std::net::TcpStream::connect(addr).unwrap();
//!         write!(s, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n{body}", body.len()).unwrap();
//!         let mut out = String::new();
//!         s.read_to_string(&mut out).unwrap();
//!         out
//!     }
//! })
//! .join()
//! .unwrap();
//! assert!(reply.contains(r#""content":"Hello ""#) && reply.contains("data: [DONE]"));
//! assert!(server.requests()[0].mentions("hi"));
//! rt.block_on(server.shutdown());
//! ```

pub mod client_script;
pub mod corpus;
pub mod drift;
pub mod llm_script;
pub mod llm_server;
mod notices;
pub mod recorder;
pub mod versions;

pub use notices::Notices;
