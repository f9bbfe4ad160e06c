//! Empty: a build script makes cargo count this crate's build-dependencies (cargo-hakari's).
fn main() {}
