//! Starting pi under the supervisor ([`spawn_supervised`]): which supervisor (a named
//! binary, `$PI_HARNESS_SUPERVISOR`, the one preforked for this process, or the embedded
//! one), its command line and pi's environment, the control socket, and the run's side of
//! the started process ([`Spawned`], [`SupervisorChild`]): our ends of pi's pipes, a kill,
//! a wait that also reaps a forked supervisor.

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::Stdio;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

use crate::request::{ProviderOptions, Request};
use crate::wait::MAX_WAIT;

/// A supervisor binary named by `$PI_HARNESS_SUPERVISOR` (non-empty), if any. Without one
/// (and without [`ProviderOptions::supervisor`]) the provider runs the supervisor embedded
/// in its own executable (see [`crate::embedded`]).
pub fn supervisor_from_env() -> Option<PathBuf> {
    std::env::var_os("PI_HARNESS_SUPERVISOR")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
}

/// pi started under the supervisor: the supervisor's process (pi's stdin, stdout and stderr
/// are its pipes) and the control socket's two halves.
pub(crate) struct Spawned {
    pub child: SupervisorChild,
    pub ctl_lines: tokio::io::Lines<BufReader<tokio::net::unix::OwnedReadHalf>>,
    pub ctl_write: tokio::net::unix::OwnedWriteHalf,
}

/// The supervisor process, started either way (executed, or preforked by
/// [`crate::prefork_supervisor`]), with our ends of pi's stdin, stdout and stderr.
pub(crate) struct SupervisorChild {
    pub stdin: Option<tokio::net::unix::pipe::Sender>,
    pub stdout: Option<tokio::net::unix::pipe::Receiver>,
    pub stderr: Option<tokio::net::unix::pipe::Receiver>,
    process: SupervisorProcess,
}

enum SupervisorProcess {
    Spawned(tokio::process::Child),
    /// A child of this process forked before the runtime: not known to tokio, so waited
    /// for here (a pidfd, else a blocking `waitpid`).
    Forked {
        pid: nix::unistd::Pid,
        status: Option<std::process::ExitStatus>,
    },
}

impl SupervisorProcess {
    /// Kill a supervisor that has started nothing yet; a forked one is reaped at once (a
    /// spawned one by tokio).
    fn abandon(&mut self) {
        match self {
            SupervisorProcess::Spawned(c) => {
                let _ = c.start_kill();
            }
            SupervisorProcess::Forked { pid, .. } => {
                let _ = nix::sys::signal::kill(*pid, nix::sys::signal::Signal::SIGKILL);
                let _ = nix::sys::wait::waitpid(*pid, None);
            }
        }
    }
}

impl SupervisorChild {
    /// The supervisor's pid, while it has not been waited for.
    pub fn pid(&self) -> Option<i32> {
        match &self.process {
            SupervisorProcess::Spawned(c) => c.id().and_then(|id| i32::try_from(id).ok()),
            SupervisorProcess::Forked { status: None, pid } => Some(pid.as_raw()),
            SupervisorProcess::Forked { .. } => None,
        }
    }

    /// SIGKILL to the supervisor (nothing when it was already waited for).
    pub fn start_kill(&mut self) -> std::io::Result<()> {
        match &mut self.process {
            SupervisorProcess::Spawned(c) => c.start_kill(),
            SupervisorProcess::Forked {
                status: Some(_), ..
            } => Ok(()),
            SupervisorProcess::Forked { pid, .. } => {
                nix::sys::signal::kill(*pid, nix::sys::signal::Signal::SIGKILL)
                    .map_err(std::io::Error::from)
            }
        }
    }

    /// Wait for the supervisor to exit (and reap it).
    pub async fn wait(&mut self) -> std::io::Result<std::process::ExitStatus> {
        match &mut self.process {
            SupervisorProcess::Spawned(c) => c.wait().await,
            SupervisorProcess::Forked {
                status: Some(s), ..
            } => Ok(*s),
            SupervisorProcess::Forked { pid, status } => {
                let s = wait_forked(*pid).await?;
                *status = Some(s);
                Ok(s)
            }
        }
    }
}

/// Wait for our child `pid` to exit without blocking the runtime: readable pidfd, then
/// `waitpid` (which no longer blocks); without pidfd support, `waitpid` on a blocking thread.
async fn wait_forked(pid: nix::unistd::Pid) -> std::io::Result<std::process::ExitStatus> {
    use std::os::fd::FromRawFd;
    use std::os::unix::process::ExitStatusExt;
    let reap = move || -> std::io::Result<std::process::ExitStatus> {
        let mut status = 0;
        loop {
            // SAFETY: waitpid writes only into `status`.
            let r = unsafe { libc::waitpid(pid.as_raw(), &mut status, 0) };
            if r == pid.as_raw() {
                return Ok(std::process::ExitStatus::from_raw(status));
            }
            let e = std::io::Error::last_os_error();
            if e.kind() != std::io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    };
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid.as_raw(), 0) };
    if fd >= 0 {
        // SAFETY: the descriptor was just created for us.
        let pidfd = unsafe { OwnedFd::from_raw_fd(fd as i32) };
        // SAFETY: an OwnedFd stays open and names the same descriptor while the AsyncFd owns it.
        let registered = unsafe {
            tokio::io::unix::AsyncFd::register_with_interest(pidfd, tokio::io::Interest::READABLE)
        };
        if let Ok(ready) = registered {
            let _ = ready.readable().await;
            return reap();
        }
    }
    tokio::task::spawn_blocking(reap)
        .await
        .map_err(std::io::Error::other)?
}

/// The supervisor's arguments after `--control-fd N`: its waits, then pi's command line.
fn supervisor_args(opts: &ProviderOptions, pi: &Path, argv: &[String]) -> Vec<std::ffi::OsString> {
    let mut args: Vec<std::ffi::OsString> = vec![
        "--grace-ms".into(),
        opts.grace.min(MAX_WAIT).as_millis().to_string().into(),
        "--kill-wait-ms".into(),
        opts.kill_wait.min(MAX_WAIT).as_millis().to_string().into(),
        "--".into(),
        pi.as_os_str().to_owned(),
    ];
    args.extend(argv.iter().map(Into::into));
    args
}

/// Variables pi gets on top of this process's environment, in the order they apply.
fn extra_env(opts: &ProviderOptions, req: &Request) -> Vec<(String, String)> {
    let mut env = Vec::new();
    if opts.offline {
        env.push(("PI_OFFLINE".to_string(), "1".to_string()));
    }
    env.extend(req.env.iter().map(|(k, v)| (k.clone(), v.clone())));
    if let Some(key) = &req.api_key {
        env.push((key.env_var.clone(), key.value.clone()));
    }
    env
}

/// Start pi (`pi argv`) under the supervisor (the given binary, `$PI_HARNESS_SUPERVISOR`,
/// the one preforked for this process, or the embedded one), in its own process group,
/// with the request's environment, key and working directory; stdin, stdout and stderr piped.
pub(crate) fn spawn_supervised(
    opts: &ProviderOptions,
    req: &Request,
    pi: &Path,
    argv: &[String],
    supervisor: Option<&Path>,
) -> Result<Spawned, String> {
    if supervisor.is_none() {
        if let Some(z) = crate::prefork::take() {
            return spawn_preforked(z, opts, req, pi, argv);
        }
    }
    use nix::sys::socket::{socketpair, AddressFamily, SockFlag, SockType};
    let (ours, theirs) = socketpair(
        AddressFamily::Unix,
        SockType::Stream,
        None,
        SockFlag::SOCK_CLOEXEC,
    )
    .map_err(|e| format!("cannot create control socket: {e}"))?;
    let mut cmd = match supervisor {
        Some(binary) => Command::new(binary),
        None => {
            crate::embedded::ensure_linked();
            let mut c = Command::new(crate::embedded::SELF_EXE);
            c.arg0("pi-supervisor")
                .env(crate::embedded::SUPERVISOR_ENV, "1");
            c
        }
    };
    let supervisor_name = supervisor.map_or("the embedded supervisor".to_string(), |p| {
        p.display().to_string()
    });
    // Its own process group: a signal to the caller's group (a terminal's Ctrl-C, a CI
    // job's kill) does not take the supervisor down before it has stopped pi.
    cmd.process_group(0);
    cmd.arg("--control-fd")
        .arg("3")
        .args(supervisor_args(opts, pi, argv))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in extra_env(opts, req) {
        cmd.env(k, v);
    }
    if let Some(dir) = &req.cwd {
        cmd.current_dir(dir);
    }
    let theirs_fd = theirs.as_raw_fd();
    unsafe {
        cmd.pre_exec(move || {
            // dup2 clears close-on-exec on the new descriptor.
            nix::unistd::dup2(theirs_fd, 3).map_err(std::io::Error::from)?;
            Ok(())
        });
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot start {supervisor_name}: {e}"))?;
    drop(theirs);
    let ends = (|| -> std::io::Result<[OwnedFd; 3]> {
        let fd = |r: Option<std::io::Result<OwnedFd>>| r.expect("piped");
        Ok([
            fd(child.stdin.take().map(|s| s.into_owned_fd()))?,
            fd(child.stdout.take().map(|s| s.into_owned_fd()))?,
            fd(child.stderr.take().map(|s| s.into_owned_fd()))?,
        ])
    })();
    assemble(SupervisorProcess::Spawned(child), ends, ours)
}

/// The run's side of a started supervisor: our ends of pi's pipes (stdin's write end,
/// stdout's and stderr's read ends) and the control socket, made the runtime's. When that
/// fails, the supervisor is killed: nothing of the run has started that it would stop.
fn assemble(
    mut process: SupervisorProcess,
    ends: std::io::Result<[OwnedFd; 3]>,
    control: OwnedFd,
) -> Result<Spawned, String> {
    use tokio::net::unix::pipe;
    let ready = ends
        .and_then(|[stdin, stdout, stderr]| {
            Ok((
                pipe::Sender::from_owned_fd(stdin)?,
                pipe::Receiver::from_owned_fd(stdout)?,
                pipe::Receiver::from_owned_fd(stderr)?,
            ))
        })
        .map_err(|e| format!("pi's pipes: {e}"))
        .and_then(|pipes| {
            control_stream(control)
                .map(|c| (pipes, c))
                .map_err(|e| format!("control socket: {e}"))
        });
    match ready {
        Ok(((stdin, stdout, stderr), control)) => Ok(spawned(
            SupervisorChild {
                stdin: Some(stdin),
                stdout: Some(stdout),
                stderr: Some(stderr),
                process,
            },
            control,
        )),
        Err(e) => {
            process.abandon();
            Err(e)
        }
    }
}

fn spawned(child: SupervisorChild, control: tokio::net::UnixStream) -> Spawned {
    let (ctl_read, ctl_write) = control.into_split();
    Spawned {
        child,
        ctl_lines: BufReader::new(ctl_read).lines(),
        ctl_write,
    }
}

/// [`spawn_supervised`] with the supervisor preforked for this process: the order and pi's
/// pipes go over its socket, which then serves as the control socket.
fn spawn_preforked(
    z: crate::prefork::Preforked,
    opts: &ProviderOptions,
    req: &Request,
    pi: &Path,
    argv: &[String],
) -> Result<Spawned, String> {
    use crate::prefork::Order;
    let mut env: Vec<(std::ffi::OsString, std::ffi::OsString)> = std::env::vars_os().collect();
    for (k, v) in extra_env(opts, req) {
        let (k, v) = (std::ffi::OsString::from(k), std::ffi::OsString::from(v));
        match env.iter_mut().find(|(name, _)| *name == k) {
            Some(slot) => slot.1 = v,
            None => env.push((k, v)),
        }
    }
    let order = Order {
        args: supervisor_args(opts, pi, argv),
        env,
        cwd: req.cwd.clone(),
    };
    let mut process = SupervisorProcess::Forked {
        pid: z.pid,
        status: None,
    };
    let sent = (|| -> std::io::Result<[OwnedFd; 3]> {
        use nix::fcntl::OFlag;
        let (in_r, in_w) = nix::unistd::pipe2(OFlag::O_CLOEXEC)?;
        let (out_r, out_w) = nix::unistd::pipe2(OFlag::O_CLOEXEC)?;
        let (err_r, err_w) = nix::unistd::pipe2(OFlag::O_CLOEXEC)?;
        crate::prefork::send(
            &z.socket,
            &order,
            [in_r.as_raw_fd(), out_w.as_raw_fd(), err_w.as_raw_fd()],
        )?;
        // The supervisor has its own copies now; ours close here.
        Ok([in_w, out_r, err_r])
    })();
    match sent {
        Ok(ends) => assemble(process, Ok(ends), z.socket),
        Err(e) => {
            process.abandon();
            Err(format!("cannot start the preforked supervisor: {e}"))
        }
    }
}

fn control_stream(fd: OwnedFd) -> std::io::Result<tokio::net::UnixStream> {
    let std_stream = std::os::unix::net::UnixStream::from(fd);
    std_stream.set_nonblocking(true)?;
    tokio::net::UnixStream::from_std(std_stream)
}
