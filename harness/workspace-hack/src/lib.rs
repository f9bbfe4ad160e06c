//! Nothing to use: this crate only depends on third-party crates with the features the whole
//! workspace's build gives them (cargo-hakari writes its Cargo.toml from .config/hakari.toml), so
//! that `cargo build -p fake-pi`, `cargo install --path fake-pi` and the packages' builds compile
//! each dependency as `cargo test` does, and reuse what it built.
