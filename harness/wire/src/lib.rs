//! pi-wire: turns the bytes `pi --mode json` writes into the normalized stream.
pub mod framing;
pub mod mapper;
pub mod message;
