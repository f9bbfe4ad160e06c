//! pi-cassette: the cassette format.
mod cassette;
pub mod import;
pub mod lint;
pub mod redact;

pub use cassette::*;
