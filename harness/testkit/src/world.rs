//! One test's world: a temp dir, a unique marker, cassettes written into the dir, fake-pi
//! commands and provider requests that carry the marker, and the proof that no process
//! carrying it is left.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use pi_procs as procs;

/// The environment variable every process of a test carries; its value is the world's
/// marker.
pub const MARKER_VAR: &str = "PI_HARNESS_TEST_MARKER";

/// A temp dir and a marker no other test uses. Dropping a world that still has marked
/// processes kills them, and fails the test unless it is already failing.
pub struct World {
    dir: tempfile::TempDir,
    marker: String,
}

impl World {
    /// A new world; `name` (a test name) appears in the temp dir's name and the marker.
    pub fn new(name: &str) -> World {
        let clean: String = name
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        let dir = tempfile::Builder::new()
            .prefix(&format!("pih-{clean}-"))
            .tempdir()
            .expect("a temp dir can be created");
        let marker = format!("{clean}-{}-{:016x}", std::process::id(), fastrand::u64(..));
        World { dir, marker }
    }

    /// The world's temp dir.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The marker value (set as [`MARKER_VAR`] on every process the world starts).
    pub fn marker(&self) -> &str {
        &self.marker
    }

    /// `(MARKER_VAR, marker)`, for environments built by hand.
    pub fn marker_env(&self) -> (String, String) {
        (MARKER_VAR.to_string(), self.marker.clone())
    }

    /// Write a file into the world's dir; returns its path.
    pub fn write(&self, name: &str, contents: impl AsRef<[u8]>) -> PathBuf {
        let path = self.dir.path().join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("create the file's directory");
        }
        std::fs::write(&path, contents).expect("write a file in the world's dir");
        path
    }

    /// A hand-made cassette named `name`, written into the world's dir by
    /// [`CassetteBuilder::write`] (pi 0.87.1 unless [`CassetteBuilder::version`] says
    /// otherwise).
    pub fn cassette(&self, name: &str) -> CassetteBuilder<'_> {
        CassetteBuilder {
            world: self,
            name: name.to_string(),
            version: "0.87.1".into(),
            description: "test".into(),
            members: Vec::new(),
            records: Vec::new(),
        }
    }

    /// The world's pi agent dir (`<dir>/agent`; `PI_CODING_AGENT_DIR` of the fake-pi
    /// commands it makes), where settings and sessions go.
    pub fn agent_dir(&self) -> PathBuf {
        self.dir.path().join("agent")
    }

    /// fake-pi replaying `cassette` at instant speed, in the world's dir, with the marker
    /// and the world's agent dir; stdin null, stdout and stderr piped.
    pub fn fake_pi(&self, cassette: &Path) -> Command {
        let mut c = Command::new(crate::fake_pi());
        c.env(MARKER_VAR, &self.marker)
            .env("FAKE_PI_CASSETTE", cassette)
            .env("FAKE_PI_SPEED", "0")
            .env("PI_CODING_AGENT_DIR", self.agent_dir())
            .env_remove("FAKE_PI_CHILD_SPEC")
            .current_dir(self.dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c
    }

    /// pi for a test that may record its cassette: `pi-harness record --record-mode MODE
    /// --script SCRIPT --out CASSETTE --pi REAL_PI --replay-with fake-pi --`, to which the
    /// caller appends pi's arguments. `none` replays `cassette` and fails (exit 1, naming
    /// it, creating nothing) when it is missing; `once` records a missing cassette from
    /// `script` against `real_pi`, then replays it; `all` records again, leaving a result
    /// that differs beside the cassette (`.new`) for `pi-harness cassette review`. Every
    /// mode is `none` when `CI` is set. Otherwise as [`World::fake_pi`].
    pub fn pi_recording(
        &self,
        mode: &str,
        cassette: &Path,
        script: &Path,
        real_pi: &Path,
    ) -> Command {
        let mut c = Command::new(crate::pi_harness());
        c.args(["record", "--record-mode", mode, "--script"])
            .arg(script)
            .arg("--out")
            .arg(cassette)
            .arg("--pi")
            .arg(real_pi)
            .arg("--replay-with")
            .arg(crate::fake_pi())
            .arg("--")
            .env(MARKER_VAR, &self.marker)
            .env("FAKE_PI_SPEED", "0")
            .env("PI_CODING_AGENT_DIR", self.agent_dir())
            .env_remove("FAKE_PI_CHILD_SPEC")
            .current_dir(self.dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c
    }

    /// A provider request that runs fake-pi on `cassette` for pi `version` at `speed`
    /// (`FAKE_PI_SPEED`: `"0"` instant, `"1"` recorded timing), prompt `hi`, provider
    /// `fake`, model `fake-model`, in the world's dir, with the marker.
    #[cfg(feature = "provider")]
    pub fn request(&self, cassette: &Path, version: &str, speed: &str) -> pi_provider::Request {
        pi_provider::Request {
            pi_path: Some(crate::fake_pi()),
            pi_version: Some(version.to_string()),
            prompt: "hi".into(),
            provider: Some("fake".into()),
            model: Some("fake-model".into()),
            env: vec![
                self.marker_env(),
                ("FAKE_PI_CASSETTE".into(), cassette.display().to_string()),
                ("FAKE_PI_SPEED".into(), speed.into()),
            ],
            cwd: Some(self.dir.path().to_path_buf()),
            ..pi_provider::Request::default()
        }
    }

    /// Live (non-zombie) processes carrying the marker, this process and its ancestors
    /// excepted.
    pub fn alive(&self) -> Vec<i32> {
        procs::pids_with_env(MARKER_VAR, &self.marker)
    }

    /// Wait (at most `within`) until at least `n` marked processes exist; returns them.
    pub fn wait_alive(&self, n: usize, within: Duration) -> Vec<i32> {
        let end = Instant::now() + within;
        loop {
            let a = self.alive();
            if a.len() >= n || Instant::now() > end {
                return a;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// SIGKILL these processes (survivors a test expected) and wait until they are gone.
    pub fn kill_and_await(&self, pids: &[i32]) {
        for &pid in pids {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        crate::process::wait_until(Duration::from_secs(5), || {
            pids.iter().all(|&p| !crate::process::alive(p))
        });
    }

    /// SIGKILL every marked process, including ones forked while this runs (it polls until
    /// none is left, up to two seconds): for processes a test meant to leave running.
    pub fn kill_all(&self) {
        procs::kill_marked(MARKER_VAR, &self.marker);
    }

    /// The proof that no marked process is left, now: fails (after killing them) with
    /// each survivor's pid and command line if any is.
    pub fn assert_none_left(&self) {
        self.assert_none_left_within(Duration::ZERO)
    }

    /// Like [`World::assert_none_left`], but gives marked processes up to `settle` to go
    /// away first (for processes this test does not wait for itself).
    pub fn assert_none_left_within(&self, settle: Duration) {
        let end = Instant::now() + settle;
        while !self.alive().is_empty() && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(10));
        }
        let left = self.kill_survivors();
        assert!(
            left.is_empty(),
            "processes left behind with {MARKER_VAR}={}: {left:?}",
            self.marker
        );
    }

    /// Kill every marked process; returns them as `pid command line`.
    fn kill_survivors(&self) -> Vec<String> {
        // Several looks: one can miss a process that forks and exits at once.
        if (0..procs::sweep::QUIET_LOOKS).all(|_| self.alive().is_empty()) {
            return Vec::new();
        }
        procs::kill_marked(MARKER_VAR, &self.marker)
            .iter()
            .map(|p| format!("{} {}", p.pid, p.command()))
            .collect()
    }
}

impl Drop for World {
    fn drop(&mut self) {
        let left = self.kill_survivors();
        if !left.is_empty() && !std::thread::panicking() {
            panic!(
                "the test ended with processes left behind (killed now) with {MARKER_VAR}={}: {left:?}",
                self.marker
            );
        }
    }
}

/// A hand-made cassette being written: a header built from the version, name and extra
/// header members, then the given record lines.
pub struct CassetteBuilder<'w> {
    world: &'w World,
    name: String,
    version: String,
    description: String,
    members: Vec<String>,
    records: Vec<String>,
}

impl CassetteBuilder<'_> {
    /// pi's version (`0.73.1` gets the `snapshot+delta` dialect, others `delta-only`).
    pub fn version(mut self, version: &str) -> Self {
        self.version = version.to_string();
        self
    }

    /// The scenario description.
    pub fn description(mut self, text: &str) -> Self {
        self.description = text.to_string();
        self
    }

    /// The header's `expect` object, as JSON.
    pub fn expect(self, json: &str) -> Self {
        self.member("expect", json)
    }

    /// The header's `process` object, as JSON.
    pub fn process(self, json: &str) -> Self {
        self.member("process", json)
    }

    /// Any other header member, its value as JSON.
    pub fn member(mut self, key: &str, json: &str) -> Self {
        self.members
            .push(format!("{}:{json}", serde_json::json!(key)));
        self
    }

    /// Header members as a JSON fragment without braces (`"expect":{...},"process":{...}`),
    /// empty for none.
    pub fn members(mut self, fragment: &str) -> Self {
        if !fragment.is_empty() {
            self.members.push(fragment.to_string());
        }
        self
    }

    /// One record line.
    pub fn record(mut self, line: impl AsRef<str>) -> Self {
        self.records.push(line.as_ref().to_string());
        self
    }

    /// Record lines.
    pub fn records<S: AsRef<str>>(mut self, lines: impl IntoIterator<Item = S>) -> Self {
        self.records
            .extend(lines.into_iter().map(|l| l.as_ref().to_string()));
        self
    }

    /// The cassette's text.
    pub fn text(&self) -> String {
        let dialect = if self.version == "0.73.1" {
            "snapshot+delta"
        } else {
            "delta-only"
        };
        let mut text = format!(
            r#"{{"format":"pi-cassette","version":1,"pi":{{"version":{},"dialect":"{dialect}"}},"scenario":{{"name":{},"description":{}}},"origin":{{"kind":"hand-made","timing":"synthetic"}}"#,
            serde_json::json!(self.version),
            serde_json::json!(self.name),
            serde_json::json!(self.description),
        );
        for m in &self.members {
            text.push(',');
            text.push_str(m);
        }
        text.push_str("}\n");
        for r in &self.records {
            text.push_str(r);
            text.push('\n');
        }
        text
    }

    /// Write `NAME.cassette.jsonl` into the world's dir; returns its path.
    pub fn write(self) -> PathBuf {
        let text = self.text();
        self.world
            .write(&format!("{}.cassette.jsonl", self.name), text)
    }
}
