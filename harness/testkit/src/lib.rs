//! A test world for code that drives pi: a temp dir, fake-pi on a cassette, and proof that
//! no process survived.
//!
//! Every test that starts processes takes a [`World`]: a temp dir of its own and a unique
//! marker value that every process it starts carries in its environment
//! ([`MARKER_VAR`]). At the end, [`World::assert_none_left`] scans `/proc` for that marker
//! and fails (after killing them) if any process is left; dropping a world that still has
//! marked processes kills them and fails the test too. The scan sees every descendant,
//! detached ones in their own session included, which a check of inherited pipes cannot.
//!
//! ```
//! use pi_testkit::{records, World};
//!
//! let world = World::new("hello");
//! let cassette = world.cassette("hello").records(records::answer("Hello!")).write();
//! let out = world.fake_pi(&cassette).arg("--mode").arg("json").arg("hi").output().unwrap();
//! assert!(String::from_utf8_lossy(&out.stdout).contains("Hello!"));
//! world.assert_none_left();
//! ```
//!
//! Modules: [`world`] (the world and its cassettes), [`setup`] (what a cassette sets up for
//! its call: [`World::fake_pi_set_up`]), [`bins`] (where fake-pi and
//! pi-supervisor are), [`records`] (cassette lines for hand-made runs), `invariants`
//! (the normalized stream's rules, checked independently of the mapper), [`messages`]
//! (reading a message list in assertions), [`process`]
//! (reading a process's state while a test runs, a run's peak memory), [`hostile`] (gzip
//! bombs, FIFOs: inputs that test a reader's bounds), `rpc` (a client that does what a two-way
//! cassette's client did).
//!
//! Features (all on by default; the workspace's dependency turns them off, so each user
//! names what it needs):
//! - `provider`: `World::request` and `provider_options`, provider requests that run
//!   fake-pi (pulls in `pi-provider` and tokio);
//! - `invariants`: the `invariants` module (pulls in the cassette reader);
//! - `rpc`: the `rpc` module (pulls in the cassette reader).

pub mod bins;
pub mod hostile;
#[cfg(feature = "invariants")]
pub mod invariants;
pub mod messages;
pub mod process;
pub mod records;
#[cfg(feature = "rpc")]
pub mod rpc;
pub mod setup;
pub mod world;

#[cfg(feature = "provider")]
pub use bins::provider_options;
pub use bins::{fake_pi, pi_harness, supervisor};
/// What a test of code that drives pi needs beside the world: the provider, its request
/// and cancellation token (so no version of tokio-util has to be matched by hand), and
/// the normalized messages.
#[cfg(feature = "provider")]
pub use pi_provider::{CancellationToken, Provider, ProviderOptions, Request};
pub use pi_wire::message::{Failure, FailureReason, Message};
pub use world::{CassetteBuilder, World, MARKER_VAR};
