//! Every pi cassette in the repository (`cassettes/**/*.cassette.jsonl[.gz|.zst]`; Claude Code's and
//! Codex's replay in `claude.rs` and `codex_corpus.rs`) replayed through
//! fake-pi as a real subprocess at instant speed, with its expectations satisfied from its
//! own header: stdout must equal the cassette's stdout byte for byte, stderr its stderr,
//! and the process must end as recorded. Cassettes that end in `hang` (runs ended by a
//! signal) get, once all their stdout has arrived, the signal their notes name (else
//! SIGTERM), and must end as the header's `process` section says.

use std::io::{Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::util::*;
use pi_cassette::{Action, Cassette, FlagRule, SignalAction};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn find(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            find(&p, out);
        } else if p
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(pi_cassette::input::is_cassette_file_name)
            // Claude Code's sessions replay in tests/claude.rs, Codex's in
            // tests/codex_corpus.rs, Gemini CLI's in tests/gemini_corpus.rs (other command
            // lines).
            && !p.parent().is_some_and(|d| {
                d.ends_with("claude") || d.ends_with("codex") || d.ends_with("gemini")
            })
        {
            out.push(p);
        }
    }
}

/// argv, stdin and env that satisfy the header's expectations.
fn invocation(c: &Cassette) -> (Vec<String>, Vec<u8>, Vec<(String, String)>) {
    let e = &c.header.expect;
    let grammar = pi_grammar::Grammar::for_version(&c.header.pi.version)
        .expect("the cassette's pi version has a grammar");
    let mut argv = Vec::new();
    for (name, rule) in &e.flags {
        // Session flags are disk effects fake-pi imitates, not part of the match: the
        // replay starts a session in the test's own agent dir.
        if matches!(
            name.as_str(),
            "session" | "session-id" | "session-dir" | "no-session" | "continue" | "fork"
        ) {
            continue;
        }
        match rule {
            FlagRule::Present(true) => {
                argv.push(format!("--{name}"));
                // A flag that takes a value but whose value was redacted (a temp path)
                // still needs one, or it would swallow the next argument.
                let kind = grammar.flag(&format!("--{name}")).map(|f| f.kind);
                if kind.is_some_and(|k| k != pi_grammar::FlagKind::Switch) {
                    argv.push(format!("value-of-{name}"));
                }
            }
            FlagRule::Present(false) => {}
            FlagRule::Value(v) => {
                argv.push(format!("--{name}"));
                argv.push(v.clone());
            }
        }
    }
    // A recording that took its model from settings.json: name it with flags instead
    // (by meaning, the same call).
    if let Some(eff) = &e.effective {
        if !e.flags.contains_key("model") {
            if let (Some(p), Some(m)) = (&eff.provider, &eff.model) {
                argv.extend(["--provider".into(), p.clone(), "--model".into(), m.clone()]);
            }
        }
    }
    let messages: Vec<String> = e.argv_messages.clone().unwrap_or_default();
    let stdin = match (&e.prompt, e.argv_messages.is_some()) {
        // The prompt travels on stdin, minus the first message pi appends to it.
        (Some(p), true) => {
            let first = messages.first().map_or("", |m| m.as_str());
            p.strip_suffix(first)
                .unwrap_or_else(|| {
                    panic!("prompt {p:?} does not end with the first argv message {first:?}")
                })
                .to_string()
        }
        _ => String::new(),
    };
    argv.extend(messages);
    if let (Some(p), None) = (&e.prompt, &e.argv_messages) {
        argv.push(p.clone()); // the prompt as the one argv message
    }
    let env = e
        .env
        .iter()
        .map(|k| (k.clone(), "set-by-replay-corpus".to_string()))
        .collect();
    (argv, stdin.into_bytes(), env)
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

/// The signal a hanging cassette's notes name first (SIGINT, SIGTERM or SIGHUP), else SIGTERM.
fn ending_signal(c: &Cassette) -> (&'static str, i32) {
    let notes = c.header.origin.notes.as_deref().unwrap_or("");
    [
        ("SIGINT", libc::SIGINT),
        ("SIGTERM", libc::SIGTERM),
        ("SIGHUP", libc::SIGHUP),
    ]
    .into_iter()
    .filter_map(|(n, s)| notes.find(n).map(|at| (at, n, s)))
    .min()
    .map_or(("SIGTERM", libc::SIGTERM), |(_, n, s)| (n, s))
}

// Test code: one cassette's whole replay and its checks, in the order they happen.
#[allow(clippy::too_many_lines)]
fn replay(path: &Path) -> Result<(), String> {
    let c = Cassette::load(path).map_err(|e| e.to_string())?;
    if c.header.mode.is_some() {
        return replay_two_way(path, &c);
    }
    let sb = World::new(module_path!());
    let (mut argv, stdin, env) = invocation(&c);
    if c.header.expect.session == Some(pi_cassette::SessionUse::Resumed) {
        // The recording continued a session: continue one whose header is the recorded
        // `session` line (pi prints the stored header when it resumes).
        let line = c
            .records
            .iter()
            .find_map(|r| match &r.action {
                Action::Stdout(b) if b.data.starts_with(b"{\"type\":\"session\"") => {
                    Some(b.data.clone())
                }
                _ => None,
            })
            .expect("a resumed recording prints its session line");
        let seed = sb.write("seed-session.jsonl", line);
        argv.splice(0..0, ["--session".to_string(), seed.display().to_string()]);
    }
    let mut cmd = sb.fake_pi(path);
    // Byte for byte: the recorder's placeholders stay as recorded.
    cmd.args(&argv)
        .envs(env)
        .env("FAKE_PI_VALUES", "recorded")
        .stdin(Stdio::piped());
    let mut child = cmd.spawn().map_err(|e| e.to_string())?;
    let mut input = child.stdin.take().unwrap();
    input.write_all(&stdin).map_err(|e| e.to_string())?;
    drop(input);
    let want_out = c.stdout_bytes();
    let want_err = stderr_bytes(&c);
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let err_reader = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = stderr.read_to_end(&mut v);
        v
    });
    let mut got_out = vec![0u8; want_out.len()];
    if let Err(e) = stdout.read_exact(&mut got_out) {
        let _ = child.kill();
        let _ = child.wait();
        sb.kill_and_await(&sb.alive());
        let err = String::from_utf8_lossy(&err_reader.join().unwrap()).into_owned();
        return Err(format!(
            "reading the expected {} stdout bytes: {e}; stderr: {err}",
            want_out.len()
        ));
    }
    let status = if matches!(c.ending(), Action::Hang) {
        // Every spawned process that lives until killed is up before the signal.
        let expected_children: usize = c
            .records
            .iter()
            .filter_map(|r| match &r.action {
                Action::Spawn(s) if s.lifetime_ms.is_none() => {
                    Some(1 + usize::from(s.grandchild.is_some()))
                }
                _ => None,
            })
            .sum();
        let fake_pi = child.id() as i32;
        let children = || sb.alive().into_iter().filter(|&p| p != fake_pi).count();
        wait_until(Duration::from_secs(5), || children() == expected_children);
        // Stand-in processes show the command line the recording saw (pi's tool's).
        let mut want: Vec<String> = c
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
        want.sort();
        let shown = || {
            let mut v: Vec<String> = sb
                .alive()
                .into_iter()
                .filter(|&p| p != fake_pi)
                .map(cmdline)
                .collect();
            v.sort();
            v
        };
        // A grandchild shows its parent's command line between its fork and its own exec
        // or title change: wait for the titles to settle, not only for the count.
        wait_until(Duration::from_secs(5), || shown() == want);
        let shown = shown();
        if want != shown {
            let _ = child.kill();
            let _ = child.wait();
            sb.kill_and_await(&sb.alive());
            return Err(format!(
                "children show {shown:?}, the recording saw {want:?}"
            ));
        }
        if child.try_wait().unwrap().is_some() {
            return Err("a hanging cassette ended by itself".into());
        }
        let (name, sig) = ending_signal(&c);
        send(child.id(), sig);
        let status = child.wait().unwrap();
        let p = &c.header.process;
        let action = match sig {
            libc::SIGINT => &p.on_sigint,
            libc::SIGHUP => &p.on_sighup,
            _ => &p.on_sigterm,
        };
        let ok = match action {
            SignalAction::Die | SignalAction::CleanupDie | SignalAction::KillChildrenDie => {
                status.signal() == Some(sig)
            }
            SignalAction::CleanupExit { code } | SignalAction::Exit { code } => {
                status.code() == Some(*code)
            }
            SignalAction::Ignore => false,
        };
        if !ok {
            return Err(format!("after {name}: expected {action:?}, got {status:?}"));
        }
        if matches!(action, SignalAction::Die) {
            // A `die` leaves the spawned tool processes running, as real pi does.
            if children() != expected_children || sb.alive().len() != expected_children {
                return Err(format!(
                    "after {name}: expected {expected_children} surviving children, found {:?}",
                    sb.alive()
                ));
            }
        } else {
            wait_until(Duration::from_secs(5), || sb.alive().is_empty());
        }
        sb.kill_and_await(&sb.alive());
        status
    } else {
        let start = Instant::now();
        loop {
            if let Some(st) = child.try_wait().unwrap() {
                break st;
            }
            if start.elapsed() > Duration::from_secs(30) {
                let _ = child.kill();
                return Err("did not end".into());
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
        Action::Signal(name) if status.signal().is_none() => {
            return Err(format!("expected death by {name}, got {status:?}"))
        }
        _ => {}
    }
    sb.assert_none_left();
    Ok(())
}

/// A two-way (RPC) cassette: a client that does what the recorded client did, with ids of
/// its own, gets the recorded stdout byte for byte (responses carrying its ids), the
/// recorded stderr and ending, and no process is left (tool children reaped).
fn replay_two_way(path: &Path, c: &Cassette) -> Result<(), String> {
    let sb = World::new(module_path!());
    let (argv, _, env) = invocation(c);
    let mut cmd = sb.fake_pi(path);
    cmd.args(&argv).envs(env).env("FAKE_PI_VALUES", "recorded");
    let run = pi_testkit::rpc::drive(cmd, c);
    if run.stdout != run.expected {
        let at = run
            .stdout
            .iter()
            .zip(&run.expected)
            .position(|(a, b)| a != b)
            .unwrap_or(run.stdout.len().min(run.expected.len()));
        return Err(format!(
            "stdout differs from byte {at} (got {} bytes, expected {}); stderr: {}",
            run.stdout.len(),
            run.expected.len(),
            String::from_utf8_lossy(&run.stderr)
        ));
    }
    if run.stderr != stderr_bytes(c) {
        return Err(format!("stderr: {}", String::from_utf8_lossy(&run.stderr)));
    }
    let ok = match c.ending() {
        Action::Exit(code) => run.status.code() == Some(*code),
        Action::Signal(name) => run.status.signal().is_some_and(|s| {
            name.parse::<nix::sys::signal::Signal>().ok() == Some(s.try_into().unwrap())
        }),
        _ => false,
    };
    if !ok {
        return Err(format!(
            "ended {:?}, the recording: {:?}",
            run.status,
            c.ending()
        ));
    }
    sb.assert_none_left();
    Ok(())
}

#[test]
fn every_cassette_in_the_repo_replays_byte_for_byte() {
    let mut paths = Vec::new();
    find(&repo_root().join("cassettes"), &mut paths);
    paths.sort();
    assert!(
        !paths.is_empty(),
        "no cassettes found under {}/cassettes (expected **/*.cassette.jsonl[.gz|.zst])",
        repo_root().display()
    );
    let mut failures = Vec::new();
    for p in &paths {
        if let Err(e) = replay(p) {
            failures.push(format!("{}: {e}", p.display()));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cassettes failed:\n{}",
        failures.len(),
        paths.len(),
        failures.join("\n")
    );
    eprintln!("replayed {} cassettes", paths.len());
}
