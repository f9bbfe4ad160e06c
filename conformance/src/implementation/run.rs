//! One case run of an implementation: `sh -c CMD` in its own process group with the request
//! document on stdin, the case's `bin/` first on `PATH` and a marker in its environment; its
//! output read by two threads ([`super::collect`]), a deadline, and the survivor scan that
//! kills and reports every process still carrying the marker.

use std::io::Write;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use pi_procs as procs;

use super::collect;
use crate::request::RequestDoc;

/// Environment variable carrying the per-case marker (the survivor scan looks for it).
pub const MARKER_VAR: &str = "PI_HARNESS_CONFORM_MARKER";

/// How long processes carrying the marker get to go away after the implementation ended,
/// and its pipes to close.
const SETTLE: Duration = Duration::from_secs(2);

/// Set once this process is a child subreaper whose descendants are all conform's own
/// ([`adopt_orphans`]).
static ORPHANS_COME_HERE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Make this process a child subreaper and count every live descendant after a case as
/// a leftover of it (see `ConformOptions::subreaper`: only for a process that is conform's
/// own).
pub fn adopt_orphans() -> nix::Result<()> {
    procs::become_subreaper()?;
    ORPHANS_COME_HERE.store(true, std::sync::atomic::Ordering::SeqCst);
    Ok(())
}

/// What a reader thread of [`run_impl`] hands back.
enum Collected {
    Stdout(collect::Stdout),
    Stderr(Vec<u8>),
}

/// What running an implementation on one case produced.
#[derive(Debug, Clone, Default)]
pub struct ImplOutput {
    /// Each stdout line that is JSON, as written (parsed again only to compare: a parsed
    /// small message takes several times its text's memory).
    pub messages: Vec<Box<serde_json::value::RawValue>>,
    /// What went wrong besides the stream: a budget that ran out, no end in time, a failing
    /// exit, processes left behind, stdout lines that are not normalized messages.
    pub problems: Vec<String>,
    /// The end of its stderr.
    pub stderr: String,
}

/// Run `sh -c CMD` (in the caller's working directory) with the request on stdin, `DIR/bin`
/// first on `PATH`, the request's env and a marker; read normalized JSONL from stdout (at
/// most `max_output` bytes). Killed after `timeout`; survivors carrying the marker are killed
/// and reported.
pub fn run_impl(
    cmd: &str,
    req: &RequestDoc,
    dir: &Path,
    timeout: Duration,
    max_output: u64,
) -> ImplOutput {
    let marker = format!("{}-{:016x}", std::process::id(), fastrand::u64(..));
    let mut out = ImplOutput::default();
    let mut child = match command(cmd, req, dir, &marker).spawn() {
        Ok(c) => c,
        Err(e) => {
            out.problems
                .push(format!("cannot start `sh -c {cmd}`: {e}"));
            return out;
        }
    };
    let body = serde_json::to_vec(req).expect("a request serializes");
    let mut stdin = child.stdin.take().expect("piped");
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&body);
    });
    let pgid = nix::unistd::Pid::from_raw(child.id() as i32);
    let kill_group = move || {
        let _ = nix::sys::signal::killpg(pgid, nix::sys::signal::Signal::SIGKILL);
    };
    let done = read_output(&mut child, max_output, kill_group);
    let status = wait(&mut child, timeout, kill_group, &mut out.problems);
    // Anything still alive with the marker (a pi, a tool process) is a survivor.
    if let Some(survivors) = kill_survivors(&marker) {
        out.problems.push(survivors);
    }
    let _ = writer.join();
    let (stdout, stderr) = receive_output(&done, kill_group, &mut out.problems);
    out.stderr = String::from_utf8_lossy(&stderr.unwrap_or_default()).into_owned();
    if let Some(s) = status {
        if !s.success() {
            out.problems
                .push(format!("the implementation exited with {s}"));
        }
    }
    // A budget that ran out first (it explains the exit), then the end, then bad lines.
    let collected = stdout.unwrap_or_default();
    if let Some(over) = collected.over_budget {
        out.problems.insert(0, over);
    }
    out.problems.extend(collected.problems.into_lines());
    out.messages = collected.messages;
    out
}

/// `sh -c CMD` with `DIR/bin` first on `PATH`, the marker and the request's env, every pipe
/// ours, in a process group of its own.
fn command(cmd: &str, req: &RequestDoc, dir: &Path, marker: &str) -> Command {
    use std::os::unix::process::CommandExt as _;
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut paths = vec![dir.join("bin")];
    paths.extend(std::env::split_paths(&path));
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg(cmd)
        .env("PATH", std::env::join_paths(paths).unwrap_or(path))
        .env(MARKER_VAR, marker)
        .envs(&req.env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    command
}

/// Start the two reader threads: stdout within its budget (`kill_group` once it runs out),
/// and stderr's tail. Each sends what it kept when its pipe ends.
fn read_output(
    child: &mut Child,
    max_output: u64,
    kill_group: impl FnMut() + Send + 'static,
) -> Receiver<Collected> {
    let stdout = child.stdout.take().expect("piped");
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    let err_done = done_tx.clone();
    std::thread::spawn(move || {
        let _ = done_tx.send(Collected::Stdout(collect::read_stdout(
            stdout, max_output, kill_group,
        )));
    });
    let stderr = child.stderr.take().expect("piped");
    std::thread::spawn(move || {
        let _ = err_done.send(Collected::Stderr(collect::stderr_tail(stderr)));
    });
    done_rx
}

/// Wait for the implementation to exit; past `timeout` its process group is killed. `None`
/// when it did not exit by itself (the problem is noted).
fn wait(
    child: &mut Child,
    timeout: Duration,
    kill_group: impl Fn(),
    problems: &mut Vec<String>,
) -> Option<ExitStatus> {
    let deadline = Instant::now() + timeout;
    loop {
        match child.try_wait() {
            Ok(Some(s)) => return Some(s),
            Ok(None) if Instant::now() > deadline => {
                problems.push(format!(
                    "no end after {} s: the implementation was killed",
                    timeout.as_secs()
                ));
                kill_group();
                let _ = child.wait();
                return None;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => {
                problems.push(format!("waiting for the implementation: {e}"));
                return None;
            }
        }
    }
}

/// Give the processes carrying `marker` a moment to go away, then kill the rest: the problem
/// line naming them, if any were left.
fn kill_survivors(marker: &str) -> Option<String> {
    let settle = Instant::now() + SETTLE;
    while !procs::pids_with_env(MARKER_VAR, marker).is_empty() && Instant::now() < settle {
        std::thread::sleep(Duration::from_millis(10));
    }
    let mut survivors = procs::kill_marked(MARKER_VAR, marker);
    if ORPHANS_COME_HERE.load(std::sync::atomic::Ordering::SeqCst) {
        // A subreaper whose only children are the case's: every live descendant is a
        // leftover, for example a child started with `setsid env -i` (no marker).
        survivors.extend(procs::kill_descendants(std::process::id() as i32));
    }
    if survivors.is_empty() {
        return None;
    }
    let names: Vec<String> = survivors
        .iter()
        .map(|p| format!("{} {}", p.pid, p.command()))
        .collect();
    Some(format!("processes left behind: {}", names.join("; ")))
}

/// What the reader threads kept. The pipes end when every process holding them has: a
/// process outside the group and without the marker may still hold one. Wait a moment, then
/// go on without it.
fn receive_output(
    done: &Receiver<Collected>,
    kill_group: impl Fn(),
    problems: &mut Vec<String>,
) -> (Option<collect::Stdout>, Option<Vec<u8>>) {
    let (mut stdout, mut stderr) = (None, None);
    let until = Instant::now() + SETTLE;
    while stdout.is_none() || stderr.is_none() {
        let left = until.saturating_duration_since(Instant::now());
        match done.recv_timeout(left) {
            Ok(Collected::Stdout(s)) => stdout = Some(s),
            Ok(Collected::Stderr(e)) => stderr = Some(e),
            Err(_) => {
                kill_group();
                problems.push(
                    "stdout or stderr still open 2 s after the implementation ended (a process outside its group holds it); what came until then is judged".into(),
                );
                break;
            }
        }
    }
    (stdout, stderr)
}
