//! What a cassette sets up for its call, for Rust tests: [`World::fake_pi_set_up`], the same
//! setup the Python and Node helpers give a test (`pi-harness cassette show --json`'s `setup`):
//! a dummy key in the variable the CLI reads, and the agent's home holding the config that gives
//! the recorded values (pi's `settings.json`, Codex's `config.toml`, Gemini CLI's
//! `.gemini/settings.json`), so that a call that sets no key and writes no config replays as
//! recorded.

use std::path::{Component, Path};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::world::{World, MARKER_VAR};

/// Numbers the homes a process's worlds make (each world's dir is its own anyway).
static HOMES: AtomicUsize = AtomicUsize::new(0);

impl World {
    /// fake-pi replaying `cassette` as [`World::fake_pi`] does, with what the cassette sets up
    /// for its call: each variable of its setup, and the agent's home variable pointed at a
    /// fresh directory of the world's holding its files. Panics, naming the cassette, when
    /// `pi-harness cassette show --json` cannot read it.
    pub fn fake_pi_set_up(&self, cassette: &Path) -> Command {
        let out = Command::new(crate::pi_harness())
            .args(["cassette", "show", "--json"])
            .arg(cassette)
            .env(MARKER_VAR, self.marker())
            .stdin(Stdio::null())
            .output()
            .expect("pi-harness runs");
        assert!(
            out.status.success(),
            "pi-harness cassette show --json {}: {}",
            cassette.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        let facts: serde_json::Value =
            serde_json::from_slice(&out.stdout).expect("--json prints one JSON object");
        let setup = &facts["setup"];
        let mut cmd = self.fake_pi(cassette);
        for (k, v) in setup["env"].as_object().into_iter().flatten() {
            if let Some(v) = v.as_str() {
                cmd.env(k, v);
            }
        }
        if let Some(var) = setup["home_var"].as_str() {
            let n = HOMES.fetch_add(1, Ordering::Relaxed);
            let home = self.path().join(format!("home-{var}-{n}"));
            std::fs::create_dir_all(&home).expect("create the agent's home");
            for f in setup["files"].as_array().into_iter().flatten() {
                let (Some(rel), Some(content)) = (f["path"].as_str(), f["content"].as_str()) else {
                    continue;
                };
                let rel = Path::new(rel);
                if rel.components().any(|c| !matches!(c, Component::Normal(_))) {
                    continue;
                }
                self.write(
                    &Path::new(&format!("home-{var}-{n}"))
                        .join(rel)
                        .to_string_lossy(),
                    content,
                );
            }
            cmd.env(var, &home);
        }
        cmd
    }
}
