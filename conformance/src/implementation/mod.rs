//! An implementation under test, as conform drives it: the capability handshake
//! ([`handshake`]), one case run as `sh -c CMD` with the request document on stdin
//! ([`run_impl`]), and what is kept of its output, bounded ([`collect`]).

pub mod collect;
mod handshake;
mod run;

pub use handshake::{handshake, MAX_ANSWER_BYTES, PROTOCOL_VERSION};
pub use run::{adopt_orphans, run_impl, ImplOutput, MARKER_VAR};
