//! Every Codex cassette in the repository (`cassettes/codex/`) replayed through fake-pi as
//! `codex` at instant speed, as `replay_corpus` replays pi's: a command line
//! (`codex exec [resume --last] FLAGS PROMPT`) and a `CODEX_HOME/config.toml` built from the
//! header's expectations, stdout byte for byte, the recorded stderr, the ending as recorded.
//! The runs stopped mid-tool get the signal their recording sent (named in the notes and
//! the record command), to the node wrapper or, for `--signal-to group`, to its process
//! group; then the processes the header says survive are the ones left, carrying the
//! caller's environment and ending by themselves within their bound: what the tools
//! started after SIGTERM's `kill_children_die` (the `sleep` a killed shell ran), nothing
//! after SIGINT's cleanup, and after SIGKILL of the wrapper the orphaned native child and
//! its tools (`FAKE_PI_CODEX_ORPHAN_MS`).

use std::io::Read;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::{Duration, Instant};

use crate::util::*;
use pi_cassette::{Action, Cassette, FlagRule, SessionUse, SignalAction};

/// How long an orphaned native child lives on in these replays.
const ORPHAN_MS: u64 = 400;
/// How long a tool process lives at most in these replays (once all are up, the signal
/// comes at once).
const CHILD_MAX_MS: u64 = 3_000;

fn codex_cassettes() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../cassettes/codex");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(pi_cassette::input::is_cassette_file_name)
        })
        .collect();
    paths.sort();
    paths
}

/// The key value the replay sets for each `expect.env` variable (nowhere in argv).
const KEY: &str = "sk-set-by-codex-corpus";

/// argv (after `codex`), the prompt on stdin (none: argv carries it) and `config.toml`
/// that satisfy the header's expectations.
fn invocation(c: &Cassette) -> (Vec<String>, Option<String>, String) {
    let e = &c.header.expect;
    let mut argv = vec!["exec".to_string()];
    if e.session == Some(SessionUse::Resumed) {
        argv.push("resume".into());
    }
    for (name, rule) in &e.flags {
        match rule {
            FlagRule::Present(true) => argv.push(format!("--{name}")),
            FlagRule::Present(false) => {}
            FlagRule::Value(v) => argv.extend([format!("--{name}"), v.clone()]),
        }
    }
    let stdin = match e.argv_messages.as_deref() {
        Some([one]) => {
            argv.push(one.clone());
            None
        }
        Some([]) | None => {
            argv.push("-".into());
            Some(e.prompt.clone().unwrap_or_default())
        }
        Some(more) => panic!("codex exec takes one PROMPT, the cassette has {more:?}"),
    };
    let mut config = String::new();
    let eff = e.effective.clone().unwrap_or_default();
    for (key, value) in [
        ("model", &eff.model),
        ("model_provider", &eff.provider),
        ("sandbox_mode", &eff.sandbox),
        ("approval_policy", &eff.approval),
    ] {
        if let Some(v) = value {
            config.push_str(&format!("{key} = {}\n", toml_string(v)));
        }
    }
    // A provider of the caller's own is defined, reading its key from the expected variable.
    if let Some(p) = eff
        .provider
        .as_deref()
        .filter(|p| !["openai", "oss", "ollama", "lmstudio"].contains(p))
    {
        config.push_str(&format!(
            "\n[model_providers.{}]\nname = {}\nbase_url = \"http://127.0.0.1:9/v1\"\nwire_api = \"responses\"\n",
            toml_string(p),
            toml_string(p)
        ));
        if let Some(k) = e.env.first() {
            config.push_str(&format!("env_key = {}\n", toml_string(k)));
        }
    }
    (argv, stdin, config)
}

fn toml_string(s: &str) -> String {
    serde_json::to_string(s).unwrap()
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

/// How a run stopped mid-tool was stopped: the signal the notes name first, and whether
/// the record command sent it to the process group (`--signal-to group`).
fn stop_signal(c: &Cassette) -> (&'static str, i32, bool) {
    let notes = c.header.origin.notes.as_deref().unwrap_or("");
    let (name, sig) = [
        ("SIGINT", libc::SIGINT),
        ("SIGTERM", libc::SIGTERM),
        ("SIGHUP", libc::SIGHUP),
        ("SIGKILL", libc::SIGKILL),
    ]
    .into_iter()
    .filter_map(|(n, s)| notes.find(n).map(|at| (at, n, s)))
    .min()
    .map(|(_, n, s)| (n, s))
    .unwrap_or_else(|| panic!("the notes name no signal: {notes:?}"));
    let source = c.header.origin.source.as_deref().unwrap_or("");
    (name, sig, source.contains("--signal-to group"))
}

/// The command lines of the recorded tool processes (each spawn and its grandchild).
fn tool_cmdlines(c: &Cassette) -> Vec<String> {
    let mut v: Vec<String> = c
        .records
        .iter()
        .filter_map(|r| match &r.action {
            Action::Spawn(s) => Some(s),
            _ => None,
        })
        .flat_map(|s| {
            let child = s
                .argv
                .as_ref()
                .map_or(format!("fake-pi-child {}", s.id), |a| a.join(" "));
            let grandchild = s
                .grandchild
                .as_ref()
                .map(|g| g.argv.as_ref().map_or(child.clone(), |a| a.join(" ")));
            std::iter::once(child).chain(grandchild)
        })
        .collect();
    v.sort();
    v
}

/// The command lines of the tool processes a signal's `action` leaves running: all of them
/// (`die`, `exit`); what the tools started (`kill_children_die`: the tools' own processes
/// killed); what escaped into a session of its own (the group cleanups).
fn survivors(c: &Cassette, action: &SignalAction) -> Vec<String> {
    let mut v: Vec<String> = c
        .records
        .iter()
        .filter_map(|r| match &r.action {
            Action::Spawn(s) => Some(s),
            _ => None,
        })
        .flat_map(|s| {
            let child = s
                .argv
                .as_ref()
                .map_or(format!("fake-pi-child {}", s.id), |a| a.join(" "));
            let grandchild = s.grandchild.as_ref().and_then(|g| {
                let line = g.argv.as_ref().map_or(child.clone(), |a| a.join(" "));
                match action {
                    SignalAction::CleanupDie | SignalAction::CleanupExit { .. } => {
                        g.own_session.then_some(line)
                    }
                    _ => Some(line),
                }
            });
            let child =
                matches!(action, SignalAction::Die | SignalAction::Exit { .. }).then_some(child);
            child.into_iter().chain(grandchild)
        })
        .collect();
    v.sort();
    v
}

/// Marked processes other than `but`, by command line, sorted.
fn shown(sb: &World, but: i32) -> Vec<String> {
    let mut v: Vec<String> = sb
        .alive()
        .into_iter()
        .filter(|&p| p != but)
        .map(cmdline)
        .collect();
    v.sort();
    v
}

fn fail(sb: &World, child: &mut Child, why: String) -> Result<std::process::ExitStatus, String> {
    let _ = child.kill();
    let _ = child.wait();
    sb.kill_all();
    Err(why)
}

/// A run stopped mid-tool: its processes as recorded, the signal as recorded, the ending
/// and the survivors as the header says.
fn stop_mid_tool(
    sb: &World,
    c: &Cassette,
    child: &mut Child,
    native_cmdline: &str,
) -> Result<std::process::ExitStatus, String> {
    let wrapper = child.id() as i32;
    let tools = tool_cmdlines(c);
    let mut want = tools;
    want.push(native_cmdline.to_string());
    want.sort();
    wait_until(Duration::from_secs(5), || shown(sb, wrapper) == want);
    let got = shown(sb, wrapper);
    if got != want {
        return fail(
            sb,
            child,
            format!("under the wrapper: {got:?}, the recording: {want:?}"),
        );
    }
    if child.try_wait().unwrap().is_some() {
        return fail(sb, child, "a run stopped mid-tool ended by itself".into());
    }
    let (name, sig, group) = stop_signal(c);
    let target = if group { -wrapper } else { wrapper };
    // SAFETY: kill(2) with a pid or a negated process group id.
    unsafe { libc::kill(target, sig) };
    let status = child.wait().unwrap();
    if sig == libc::SIGKILL {
        // The native child and its tools live on, orphaned, then end by themselves.
        let orphaned = Instant::now();
        let left = shown(sb, wrapper);
        if left != want {
            return fail(
                sb,
                child,
                format!("after {name}: left {left:?}, the recording left {want:?}"),
            );
        }
        wait_until(Duration::from_secs(10), || sb.alive().is_empty());
        if !sb.alive().is_empty() || orphaned.elapsed() > Duration::from_secs(5) {
            return fail(
                sb,
                child,
                format!("the orphans did not end within {ORPHAN_MS} ms"),
            );
        }
        return if status.signal() == Some(libc::SIGKILL) {
            Ok(status)
        } else {
            Err(format!("after {name}: {status:?}"))
        };
    }
    let p = &c.header.process;
    let action = match sig {
        libc::SIGINT => &p.on_sigint,
        libc::SIGHUP => &p.on_sighup,
        _ => &p.on_sigterm,
    };
    let ended_right = match action {
        SignalAction::Die | SignalAction::CleanupDie | SignalAction::KillChildrenDie => {
            status.signal() == Some(sig)
        }
        SignalAction::CleanupExit { code } | SignalAction::Exit { code } => {
            status.code() == Some(*code)
        }
        SignalAction::Ignore => false,
    };
    if !ended_right {
        return fail(
            sb,
            child,
            format!("after {name}: expected {action:?}, got {status:?}"),
        );
    }
    let survivors = survivors(c, action);
    wait_until(Duration::from_secs(5), || shown(sb, wrapper) == survivors);
    let left = shown(sb, wrapper);
    if left != survivors {
        return fail(
            sb,
            child,
            format!("after {name}: left {left:?}, expected {survivors:?}"),
        );
    }
    // What survives carries the caller's environment (the marker found it) and ends by
    // itself within its bound (FAKE_PI_CHILD_MAX_MS).
    wait_until(Duration::from_secs(10), || sb.alive().is_empty());
    if !sb.alive().is_empty() {
        return fail(
            sb,
            child,
            format!("after {name}: the survivors did not end within {CHILD_MAX_MS} ms"),
        );
    }
    Ok(status)
}

/// One Codex cassette's whole replay and its checks.
fn replay(path: &Path) -> Result<(), String> {
    let c = Cassette::load(path).map_err(|e| e.to_string())?;
    if c.header.agent() != pi_grammar::Agent::Codex {
        return Err("not a Codex cassette".into());
    }
    let sb = World::new(module_path!());
    let (argv, stdin, config) = invocation(&c);
    let home = sb.write("codex-home/config.toml", &config);
    let mut cmd = sb.fake_pi(path);
    cmd.args(&argv)
        .env("CODEX_HOME", home.parent().unwrap())
        .env("FAKE_PI_VALUES", "recorded")
        .env("FAKE_PI_CODEX_ORPHAN_MS", ORPHAN_MS.to_string())
        .env("FAKE_PI_CHILD_MAX_MS", CHILD_MAX_MS.to_string())
        .process_group(0);
    for k in &c.header.expect.env {
        cmd.env(k, KEY);
    }
    if stdin.is_some() {
        cmd.stdin(std::process::Stdio::piped());
    }
    let mut child = cmd.spawn().map_err(|e| e.to_string())?;
    if let (Some(text), Some(mut input)) = (stdin, child.stdin.take()) {
        use std::io::Write;
        input
            .write_all(text.as_bytes())
            .map_err(|e| e.to_string())?;
    }
    let want_out = c.stdout_bytes();
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let err_reader = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = stderr.read_to_end(&mut v);
        v
    });
    let mut got_out = vec![0u8; want_out.len()];
    if let Err(e) = stdout.read_exact(&mut got_out) {
        let _ = fail(&sb, &mut child, String::new());
        let err = String::from_utf8_lossy(&err_reader.join().unwrap()).into_owned();
        return Err(format!(
            "reading the expected {} stdout bytes: {e}; stderr: {err}",
            want_out.len()
        ));
    }
    let status = if matches!(c.ending(), Action::Hang) {
        stop_mid_tool(&sb, &c, &mut child, &format!("codex {}", argv.join(" ")))?
    } else {
        let start = Instant::now();
        loop {
            if let Some(st) = child.try_wait().unwrap() {
                break st;
            }
            if start.elapsed() > Duration::from_secs(30) {
                return fail(&sb, &mut child, "did not end".into()).map(|_| ());
            }
            std::thread::sleep(Duration::from_millis(5));
        }
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
    match c.ending() {
        Action::Exit(code) if status.code() != Some(*code) => {
            return Err(format!("expected exit {code}, got {status:?}"))
        }
        _ => {}
    }
    sb.assert_none_left();
    Ok(())
}

#[test]
fn every_codex_cassette_in_the_repo_replays_as_recorded() {
    let paths = codex_cassettes();
    assert!(paths.len() >= 10, "the Codex corpus: {paths:?}");
    let mut failures = Vec::new();
    for p in &paths {
        if let Err(e) = replay(p) {
            failures.push(format!("{}: {e}", p.display()));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} Codex cassettes failed:\n{}",
        failures.len(),
        paths.len(),
        failures.join("\n")
    );
}
