//! What the test modules share: where the committed cassettes are.

use std::path::{Path, PathBuf};

/// The repository's `cassettes/` directory.
pub fn cassettes_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../cassettes")
}
