//! Every committed json-mode cassette replays through the clients integrators write, the
//! way they call pi: `pi-harness run` (the reference provider: model flags, prompt on
//! stdin); a client that relies on settings.json for the model, keeps sessions on and
//! writes the prompt on stdin; and a client that passes pi an empty environment (fake-pi
//! finds its cassette in `fake-pi.conf` beside the program). "Replays" means fake-pi
//! accepts the call: it does not refuse it as a mismatch (96..99).

use std::io::Write as _;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use pi_cassette::{Cassette, SessionUse};
use pi_testkit::{World, MARKER_VAR};

use crate::util::{refused, repo};

/// Every committed cassette whose recorded call ran pi in json mode.
fn json_cassettes() -> Vec<(PathBuf, Cassette)> {
    let mut out = Vec::new();
    for path in pi_testkit::invariants::all_cassettes() {
        let c = Cassette::load(&path).unwrap();
        let Some(g) = pi_grammar::Grammar::for_version(&c.header.pi.version) else {
            continue;
        };
        let e = pi_cassette::matching::expected(&c.header.expect, &g);
        if e.mode.as_deref() == Some("json") {
            out.push((path, c));
        }
    }
    assert!(out.len() >= 60, "{} json-mode cassettes", out.len());
    out
}

/// The child's exit code and stderr; for a cassette that hangs, `None` once the replay
/// visibly started (a first stdout line: fake-pi accepted the call), then the child is
/// killed. A refusal exits at once with nothing on stdout.
fn outcome(mut child: Child, hangs: bool) -> (Option<i32>, String) {
    use std::io::Read as _;
    let mut stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        let mut seen = false;
        while let Ok(n) = stdout.read(&mut buf) {
            if n == 0 {
                break;
            }
            if !seen && buf[..n].contains(&b'\n') {
                seen = true;
                let _ = tx.send(());
            }
        }
    });
    let end = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            let out = child.wait_with_output().unwrap();
            return (st.code(), String::from_utf8_lossy(&out.stderr).into_owned());
        }
        if (hangs && rx.try_recv().is_ok()) || Instant::now() > end {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            return (None, String::from_utf8_lossy(&out.stderr).into_owned());
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// The first prompt and the session id a client would use for this cassette; a session
/// file to continue when the recording continued one (its header is the recorded line).
fn prepare(w: &World, c: &Cassette) -> (String, Option<PathBuf>) {
    let prompt = c
        .header
        .expect
        .prompt
        .clone()
        .unwrap_or_else(|| "hi".into());
    if c.header.expect.session != Some(SessionUse::Resumed) {
        return (prompt, None);
    }
    let seed = w.write(
        "seed.jsonl",
        format!(
            "{{\"type\":\"session\",\"version\":3,\"id\":\"resume-demo\",\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"cwd\":{}}}\n",
            serde_json::json!(w.path().display().to_string())
        ),
    );
    (prompt, Some(seed))
}

#[test]
// One loop over the corpus, three clients per cassette, side by side.
#[allow(clippy::too_many_lines)]
fn every_json_cassette_replays_through_three_kinds_of_client() {
    let fake_pi = pi_testkit::fake_pi();
    let harness = PathBuf::from(env!("CARGO_BIN_EXE_pi-harness"));
    let mut problems = Vec::new();
    for (path, c) in json_cassettes() {
        let name = path
            .strip_prefix(repo().join("cassettes"))
            .unwrap_or(&path)
            .display()
            .to_string();
        let version = c.header.pi.version.clone();
        let w = World::new("corpus-clients");
        let (prompt, seed) = prepare(&w, &c);
        let hangs = matches!(c.ending(), pi_cassette::Action::Hang);
        // A client configured for this scenario asks for the tools the recording had.
        let tools: Option<String> = pi_grammar::Grammar::for_version(&c.header.pi.version)
            .and_then(|g| pi_cassette::matching::expected(&c.header.expect, &g).tools)
            .filter(|t| {
                let mut d = pi_grammar::DEFAULT_TOOLS.to_vec();
                d.sort_unstable();
                t.iter().map(String::as_str).ne(d)
            })
            .map(|t| t.join(","));
        let env_vars: Vec<(String, String)> = c
            .header
            .expect
            .env
            .iter()
            .map(|k| (k.clone(), "set-by-the-client".into()))
            .collect();

        // 1. `pi-harness run`: the reference provider (model flags, prompt on stdin).
        let mut run = Command::new(&harness);
        run.args(["run", "--json", "--pi"])
            .arg(&fake_pi)
            .args([
                "--pi-version",
                &version,
                "--provider",
                "fake",
                "--model",
                "fake-model",
            ])
            .args(["--cancel-after", "300ms"])
            .env(MARKER_VAR, w.marker())
            .env("FAKE_PI_CASSETTE", &path)
            .env("FAKE_PI_SPEED", "0")
            .env("PI_CODING_AGENT_DIR", w.agent_dir())
            .envs(env_vars.clone())
            .current_dir(w.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(seed) = &seed {
            // Where pi looks for the id: 0.73.1 names the file, later versions the id.
            let dir = w.path().join("run-sessions");
            std::fs::create_dir_all(&dir).unwrap();
            let has_id = pi_grammar::Grammar::nearest(&version).has_flag("--session-id");
            let target = if has_id {
                let d = w
                    .agent_dir()
                    .join("sessions")
                    .join(pi_grammar::cwd_slug(&w.path().display().to_string()));
                std::fs::create_dir_all(&d).unwrap();
                d.join(pi_grammar::session_file_name(
                    "2026-01-01T00:00:00.000Z",
                    "resume-demo",
                ))
            } else {
                dir.join("resume-demo.jsonl")
            };
            std::fs::copy(seed, target).unwrap();
            run.args(["--session-id", "resume-demo", "--session-dir"])
                .arg(&dir)
                .arg("--resume");
        }
        if let Some(t) = &tools {
            run.args(["--tools", t]);
        }
        run.arg(&prompt);
        let out = run.output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        if stdout.contains("expectation mismatch") || stdout.contains("\"code\":99") {
            problems.push(format!(
                "{name}: pi-harness run refused: {}",
                stdout.lines().last().unwrap_or("")
            ));
        }
        w.assert_none_left_within(Duration::from_secs(5));

        // 2. Settings for the model, sessions on, the prompt on stdin.
        w.write(
            "agent/settings.json",
            r#"{"defaultProvider":"fake","defaultModel":"fake-model"}"#,
        );
        let mut cmd = w.fake_pi(&path);
        cmd.args(["--mode", "json", "--session-dir", "sessions"])
            .envs(env_vars.clone())
            .stdin(Stdio::piped());
        if let Some(t) = &tools {
            cmd.args(["--tools", t]);
        }
        if let Some(seed) = &seed {
            cmd.arg("--session").arg(seed);
        }
        let mut child = cmd.spawn().unwrap();
        let _ = child.stdin.take().unwrap().write_all(prompt.as_bytes());
        let (code, err) = outcome(child, hangs);
        if refused(code) {
            problems.push(format!(
                "{name}: a settings+sessions+stdin client was refused: {err}"
            ));
        }
        w.kill_all();

        // 3. An empty environment: `pi` finds its cassette beside itself.
        let bin = w.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let pi = bin.join("pi");
        if !pi.exists() {
            pi_testkit::bins::install_exe(&fake_pi, &pi).unwrap();
        }
        std::fs::write(
            bin.join("fake-pi.conf"),
            format!("FAKE_PI_CASSETTE={}\nFAKE_PI_SPEED=0\n", path.display()),
        )
        .unwrap();
        let mut cmd = Command::new(&pi);
        cmd.env_clear()
            .env(MARKER_VAR, w.marker())
            .envs(env_vars)
            .current_dir(w.path())
            .args([
                "--mode",
                "json",
                "--provider",
                "fake",
                "--model",
                "fake-model",
            ])
            .args(
                tools
                    .iter()
                    .flat_map(|t| ["--tools".to_string(), t.clone()]),
            )
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        match &seed {
            Some(seed) => cmd.arg("--session").arg(seed),
            None => cmd.arg("--no-session"),
        };
        let mut child = cmd.spawn().unwrap();
        let _ = child.stdin.take().unwrap().write_all(prompt.as_bytes());
        let (code, err) = outcome(child, hangs);
        if refused(code) {
            problems.push(format!(
                "{name}: an empty-environment client was refused: {err}"
            ));
        }
        w.kill_all();
        w.assert_none_left();
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
