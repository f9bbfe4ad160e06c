//! fake-pi's tests on top of `pi_testkit`: fake-pi under assert_cmd, and argv helpers.
#![allow(dead_code, unused_imports)]

use std::path::Path;

pub use pi_testkit::process::{alive, cmdline, send, stat, wait_until};
pub use pi_testkit::{World, MARKER_VAR};

/// This crate's fake-pi under assert_cmd: the world's marker, the cassette, instant speed,
/// the world's dir as cwd.
pub fn cmd(world: &World, cassette: &Path) -> assert_cmd::Command {
    assert_cmd::Command::from_std(world.fake_pi(cassette))
}

/// `"--a","b"` style argv from a slice.
pub fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}
