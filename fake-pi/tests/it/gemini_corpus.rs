//! Every Gemini CLI cassette in the repository (`cassettes/gemini/`) replayed through
//! fake-pi as `gemini` at instant speed, as `replay_corpus` replays pi's: the recorded
//! options with `--prompt`, the key and the recorded variables set, `GEMINI_CLI_HOME` holding
//! what only settings say (`general.maxAttempts`). stdout and stderr must come byte for byte,
//! with the recorded exit status; a run that hangs mid-tool is stopped as the recording was
//! (the signal its name says, to the process group: exit 0, the tool left running, orphaned,
//! until its bound), and nothing is left at the end.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::util::*;
use pi_cassette::{Action, Cassette, FlagRule};

/// How long an orphaned tool lives on here (the CLI's are bounded by this variable): long
/// enough that it is still there to be seen after the CLI ended, on a loaded machine too.
const ORPHAN_MS: u64 = 3_000;
const KEY: &str = "set-by-gemini-corpus";

fn gemini_cassettes() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../cassettes/gemini");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(pi_cassette::input::is_cassette_file_name)
        })
        .collect();
    v.sort();
    v
}

/// The recorded options again, then `--prompt` and the prompt.
fn argv(c: &Cassette) -> Vec<String> {
    let e = &c.header.expect;
    let mut argv = Vec::new();
    for (flag, rule) in &e.flags {
        match rule {
            FlagRule::Present(true) => argv.push(format!("--{flag}")),
            FlagRule::Value(v) => argv.extend([format!("--{flag}"), v.clone()]),
            FlagRule::Present(false) => {}
        }
    }
    let prompt = e
        .argv_messages
        .as_ref()
        .and_then(|m| m.first().cloned())
        .or_else(|| e.prompt.clone())
        .expect("a recorded prompt");
    argv.extend(["--prompt".into(), prompt]);
    argv
}

fn stderr_bytes(c: &Cassette) -> Vec<u8> {
    c.records
        .iter()
        .filter_map(|r| match &r.action {
            Action::Stderr(b) => Some(b.data.as_slice()),
            _ => None,
        })
        .flatten()
        .copied()
        .collect()
}

fn replay(path: &Path) -> Result<(), String> {
    let sb = World::new(module_path!());
    let result = replay_in(&sb, path);
    if result.is_err() {
        // The error is the finding: what is still running is taken down without a second
        // panic hiding it.
        for pid in sb.alive() {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
    result
}

fn replay_in(sb: &World, path: &Path) -> Result<(), String> {
    let c = Cassette::load(path).map_err(|e| e.to_string())?;
    if c.header.agent() != pi_grammar::Agent::Gemini {
        return Err("not a Gemini CLI cassette".into());
    }
    let settings = match c
        .header
        .expect
        .effective
        .as_ref()
        .and_then(|e| e.max_attempts)
    {
        Some(n) => format!(r#"{{"general":{{"maxAttempts":{n}}}}}"#),
        None => "{}".into(),
    };
    let home = sb.write("gemini-home/.gemini/settings.json", settings);
    let argv = argv(&c);
    let mut cmd = sb.fake_pi(path);
    cmd.args(&argv)
        .env("GEMINI_CLI_HOME", home.parent().unwrap().parent().unwrap())
        .env("FAKE_PI_VALUES", "recorded")
        .env_remove("FAKE_PI_HINTS")
        .env("FAKE_PI_GEMINI_ORPHAN_MS", ORPHAN_MS.to_string())
        .env_remove("GEMINI_CLI_NO_RELAUNCH")
        .process_group(0);
    for k in &c.header.expect.env {
        cmd.env(k, if k == "GEMINI_API_KEY" { KEY } else { "1" });
    }
    let mut child = cmd.spawn().map_err(|e| e.to_string())?;
    let want_out = c.stdout_bytes();
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    // stderr as it comes, shared: a run stopped mid-tool is signalled once its recorded
    // stderr is all out (the replay has reached its hang), as the recording's was.
    let err_seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let err_reader = {
        let seen = err_seen.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            loop {
                match stderr.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => seen.lock().unwrap().extend_from_slice(&buf[..n]),
                }
            }
            let v = seen.lock().unwrap().clone();
            v
        })
    };
    let kill = |child: &mut std::process::Child| {
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(child.id() as i32),
            nix::sys::signal::Signal::SIGKILL,
        );
        let _ = child.wait();
    };
    let mut got_out = vec![0u8; want_out.len()];
    if let Err(e) = stdout.read_exact(&mut got_out) {
        kill(&mut child);
        let err = String::from_utf8_lossy(&err_reader.join().unwrap()).into_owned();
        return Err(format!(
            "reading the expected {} stdout bytes: {e}; stderr: {err}",
            want_out.len()
        ));
    }
    let hangs = matches!(c.ending(), Action::Hang);
    if hangs {
        // Stopped as recorded: once the tool runs, its signal to the whole group.
        let name = &c.header.scenario.name;
        let signal = if name.contains("sigint") {
            nix::sys::signal::Signal::SIGINT
        } else {
            nix::sys::signal::Signal::SIGTERM
        };
        let start = Instant::now();
        let want_err_len = stderr_bytes(&c).len();
        while err_seen.lock().unwrap().len() < want_err_len {
            if start.elapsed() > Duration::from_secs(30) {
                kill(&mut child);
                return Err("the recorded stderr never came out".into());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        while !sb
            .alive()
            .iter()
            .any(|p| cmdline(*p).contains("bgpids.tmp"))
        {
            if start.elapsed() > Duration::from_secs(30) {
                kill(&mut child);
                return Err("the tool never ran".into());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        nix::sys::signal::killpg(nix::unistd::Pid::from_raw(child.id() as i32), signal)
            .map_err(|e| e.to_string())?;
    }
    let start = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if start.elapsed() > Duration::from_secs(30) {
            kill(&mut child);
            return Err("did not end".into());
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let mut rest = Vec::new();
    let _ = stdout.read_to_end(&mut rest);
    if got_out != want_out || !rest.is_empty() {
        return Err(format!(
            "stdout differs ({} extra bytes after the expected ones)",
            rest.len()
        ));
    }
    let got_err = err_reader.join().unwrap();
    let want_err = stderr_bytes(&c);
    if got_err != want_err {
        return Err(format!(
            "stderr: expected {:?}, got {:?}",
            String::from_utf8_lossy(&want_err),
            String::from_utf8_lossy(&got_err)
        ));
    }
    let want_code = match c.ending() {
        Action::Exit(code) => *code,
        // A signal to the group: Gemini CLI exits 0, without its `result`.
        _ => 0,
    };
    if status.code() != Some(want_code) {
        return Err(format!("expected exit {want_code}, got {status:?}"));
    }
    if hangs
        && !sb
            .alive()
            .iter()
            .any(|p| cmdline(*p).contains("bgpids.tmp"))
    {
        return Err("the tool did not outlive the CLI, as the recording's did".into());
    }
    sb.assert_none_left_within(Duration::from_millis(ORPHAN_MS + 5000));
    Ok(())
}

fn cmdline(pid: i32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .unwrap_or_default()
}

#[test]
fn every_gemini_cassette_in_the_repo_replays_as_recorded() {
    let paths = gemini_cassettes();
    assert!(paths.len() >= 10, "the Gemini CLI corpus: {paths:?}");
    let mut failures = Vec::new();
    for p in &paths {
        if let Err(e) = replay(p) {
            failures.push(format!("{}: {e}", p.display()));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} Gemini CLI cassettes failed:\n{}",
        failures.len(),
        paths.len(),
        failures.join("\n")
    );
}
