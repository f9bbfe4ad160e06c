//! Helpers shared by the integration tests.

use std::path::{Path, PathBuf};

/// The repository's root (where `cassettes/` is).
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}
