//! fake-pi's tests on top of `pi_testkit`: fake-pi under assert_cmd, and the process
//! helpers every module uses.

use std::path::Path;

pub use pi_testkit::process::{alive, cmdline, send, stat, wait_until};
pub use pi_testkit::{World, MARKER_VAR};

/// This crate's fake-pi under assert_cmd: the world's marker, the cassette, instant speed,
/// the world's dir as cwd.
pub fn cmd(world: &World, cassette: &Path) -> assert_cmd::Command {
    assert_cmd::Command::from_std(world.fake_pi(cassette))
}

/// A committed cassette, by its path under `cassettes/`.
pub fn repo_cassette(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../cassettes")
        .join(name)
}
