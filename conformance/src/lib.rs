//! The conformance suite's runner: cases from cassettes, the request document, the
//! capability handshake, running an implementation through fake-pi, comparison with the
//! expected streams, and the report ([`conform`]); the documented cross-version
//! differences ([`cross_version`]).

pub mod conform;
pub mod cross_version;
