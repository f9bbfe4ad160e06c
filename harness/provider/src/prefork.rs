//! A supervisor forked before the host starts a thread, waiting for its run.
//!
//! The usual start of the supervisor ([`crate::embedded`]) executes the host's binary again:
//! an `exec`, a dynamic link and a process image to fault in, 1.5-2 ms on the path of every
//! run on a small VM, more than the host spends mapping a long answer. A host whose `main` can
//! call [`prefork_supervisor`] before any other thread exists (before a tokio runtime is
//! built) gets a supervisor forked from itself instead, ahead of time: it waits on a socket,
//! and the next supervised run of this process hands it pi's command line, environment,
//! working directory and pipes, then keeps the same socket as the control socket.
//! From there the same code runs ([`crate::supervisor::run`]) with the same guarantees: its
//! own process group, a child subreaper, the control socket's end (the host's exit or death)
//! meaning "stop pi now". `pi-harness run` does this.
//!
//! One preforked supervisor serves one run; later runs start one the usual way. Unused, it
//! exits as soon as the host's end of the socket closes: when the host exits or is killed.
//!
//! Why only with one thread: after `fork` the child has only the thread that forked, and a
//! lock another thread held at that moment (the allocator's, say) stays locked in the child
//! forever. With a single thread nothing can be held, and the child may run ordinary code.

use std::ffi::{OsStr, OsString};
use std::io::{IoSlice, IoSliceMut};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::sync::Mutex;

use nix::sys::socket::{
    recvmsg, sendmsg, socketpair, AddressFamily, ControlMessage, ControlMessageOwned, MsgFlags,
    SockFlag, SockType,
};
use nix::unistd::Pid;

use crate::supervisor::{self, exit, Event};

/// A supervisor forked by [`prefork_supervisor`] and not used yet.
pub(crate) struct Preforked {
    pub pid: Pid,
    /// The host's end of the socket: first the order, then the control socket.
    pub socket: OwnedFd,
}

static WAITING: Mutex<Option<Preforked>> = Mutex::new(None);

/// The preforked supervisor, if one waits (it is handed out once).
pub(crate) fn take() -> Option<Preforked> {
    WAITING.lock().unwrap_or_else(|e| e.into_inner()).take()
}

/// The number of threads of this process (from `/proc/self/status`).
fn threads() -> std::io::Result<usize> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("Threads:"))
        .and_then(|n| n.trim().parse().ok())
        .ok_or_else(|| std::io::Error::other("/proc/self/status: no Threads line"))
}

/// The scope of a preforked supervisor: dropping it ends the supervisor if no run took it
/// (SIGKILL and reaped: it has started nothing), so it does not outlive the caller's use of
/// it, not even by the moment it would take to notice the caller's exit.
#[must_use = "dropping the guard ends the preforked supervisor at once"]
#[derive(Debug)]
pub struct PreforkGuard(());

impl Drop for PreforkGuard {
    fn drop(&mut self) {
        if let Some(z) = take() {
            let _ = nix::sys::signal::kill(z.pid, nix::sys::signal::Signal::SIGKILL);
            drop(z.socket);
            let _ = nix::sys::wait::waitpid(z.pid, None);
        }
    }
}

/// Fork a supervisor now for the next supervised run of this process (see the module
/// documentation), kept until the returned guard is dropped. Call it at the top of `main`,
/// before any other thread exists: with more than one thread it forks nothing and returns
/// an error (a run then starts its supervisor the usual way). Calling it while one waits
/// forks no second one.
///
/// ```
/// use std::os::unix::fs::PermissionsExt;
/// use pi_provider::message::Message;
/// use pi_provider::{collect, CancellationToken, Provider, ProviderOptions, Request};
///
/// // First thing in `main`, while the process has one thread.
/// let _supervisor = pi_provider::prefork_supervisor().expect("one thread so far");
///
/// // A stand-in pi, as in the crate's example.
/// let dir = tempfile::tempdir().unwrap();
/// let pi = dir.path().join("pi");
/// std::fs::write(&pi, r#"#!/bin/sh
/// cat >/dev/null
/// echo '{"type":"message_update","assistantMessageEvent":{"type":"text_delta","contentIndex":0,"delta":"Hi!"}}'
/// echo '{"type":"message_end","message":{"role":"assistant","content":[{"type":"text","text":"Hi!"}],"stopReason":"stop"}}'
/// echo '{"type":"agent_end","messages":[]}'
/// "#).unwrap();
/// std::fs::set_permissions(&pi, std::fs::Permissions::from_mode(0o755)).unwrap();
///
/// let request = Request {
///     pi_path: Some(pi),
///     pi_version: Some("0.87.1".into()),
///     prompt: "Say hi.".into(),
///     ..Request::default()
/// };
/// // Threads from here on: the run uses the supervisor forked above.
/// let rt = tokio::runtime::Runtime::new().unwrap();
/// let messages = rt.block_on(async {
///     collect(Provider::new(ProviderOptions::default()).execute(request, CancellationToken::new()))
///         .await
/// });
/// assert!(messages.contains(&Message::Assistant { text: "Hi!".into() }));
/// assert!(matches!(messages.last(), Some(Message::TerminalCompleted { .. })));
/// ```
pub fn prefork_supervisor() -> std::io::Result<PreforkGuard> {
    let mut slot = WAITING.lock().unwrap_or_else(|e| e.into_inner());
    if slot.is_some() {
        return Ok(PreforkGuard(()));
    }
    let n = threads()?;
    if n != 1 {
        return Err(std::io::Error::other(format!(
            "this process has {n} threads; a supervisor can only be forked with one"
        )));
    }
    let (ours, theirs) = socketpair(
        AddressFamily::Unix,
        SockType::Stream,
        None,
        SockFlag::SOCK_CLOEXEC,
    )?;
    // SAFETY: the process has one thread (checked above, and nothing of ours starts one
    // in between), so the child may run any code; it never returns from `zygote`.
    match unsafe { nix::unistd::fork() }? {
        nix::unistd::ForkResult::Child => {
            drop(ours);
            zygote(theirs)
        }
        nix::unistd::ForkResult::Parent { child } => {
            drop(theirs);
            *slot = Some(Preforked {
                pid: child,
                socket: ours,
            });
            Ok(PreforkGuard(()))
        }
    }
}

/// What the host sends the preforked supervisor: the supervisor's arguments (as
/// [`supervisor::parse_args`] reads them, without `--control-fd`), pi's whole environment
/// and working directory. pi's stdin, stdout and stderr travel beside it (`SCM_RIGHTS`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Order {
    pub args: Vec<OsString>,
    /// Names and values, as the host would give them to `Command::env`.
    pub env: Vec<(OsString, OsString)>,
    pub cwd: Option<PathBuf>,
}

/// An order larger than this is refused (an environment of 16 MiB is not a real one).
const MAX_ORDER: usize = 16 << 20;

impl Order {
    /// The order as bytes: its length (u32, little endian), then the argument count and the
    /// arguments, the variable count and each name and value, the working directory (or
    /// nothing), each string as its length and its bytes.
    pub fn encode(&self) -> Vec<u8> {
        fn put(out: &mut Vec<u8>, s: &[u8]) {
            out.extend_from_slice(&(s.len() as u32).to_le_bytes());
            out.extend_from_slice(s);
        }
        let mut body = Vec::new();
        body.extend_from_slice(&(self.args.len() as u32).to_le_bytes());
        for a in &self.args {
            put(&mut body, a.as_bytes());
        }
        body.extend_from_slice(&(self.env.len() as u32).to_le_bytes());
        for (k, v) in &self.env {
            put(&mut body, k.as_bytes());
            put(&mut body, v.as_bytes());
        }
        match &self.cwd {
            Some(d) => {
                body.push(1);
                put(&mut body, d.as_os_str().as_bytes());
            }
            None => body.push(0),
        }
        let mut out = (body.len() as u32).to_le_bytes().to_vec();
        out.extend_from_slice(&body);
        out
    }

    /// Read an order's body (what follows its length).
    pub fn decode(body: &[u8]) -> Result<Order, String> {
        struct Cursor<'a>(&'a [u8]);
        impl<'a> Cursor<'a> {
            fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
                if self.0.len() < n {
                    return Err("the order ends early".into());
                }
                let (head, rest) = self.0.split_at(n);
                self.0 = rest;
                Ok(head)
            }
            fn u32(&mut self) -> Result<usize, String> {
                let b = self.take(4)?;
                Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
            }
            fn string(&mut self) -> Result<OsString, String> {
                let n = self.u32()?;
                Ok(OsStr::from_bytes(self.take(n)?).to_owned())
            }
            /// A count of entries of `strings` strings each.
            fn count(&mut self, strings: usize) -> Result<usize, String> {
                let n = self.u32()?;
                // Each string takes at least its 4-byte length.
                if n > self.0.len() / (4 * strings) {
                    return Err("the order ends early".into());
                }
                Ok(n)
            }
        }
        let mut c = Cursor(body);
        let n = c.count(1)?;
        let args = (0..n).map(|_| c.string()).collect::<Result<_, _>>()?;
        let n = c.count(2)?;
        let env = (0..n)
            .map(|_| Ok((c.string()?, c.string()?)))
            .collect::<Result<_, String>>()?;
        let cwd = match c.take(1)?[0] {
            0 => None,
            1 => Some(PathBuf::from(c.string()?)),
            b => return Err(format!("the order's working directory flag is {b}")),
        };
        if !c.0.is_empty() {
            return Err(format!("{} bytes after the order", c.0.len()));
        }
        Ok(Order { args, env, cwd })
    }
}

/// Hand `order` and pi's stdin, stdout and stderr (`fds`) to the preforked supervisor.
pub(crate) fn send(socket: &OwnedFd, order: &Order, fds: [RawFd; 3]) -> std::io::Result<()> {
    let bytes = order.encode();
    let rights = [ControlMessage::ScmRights(&fds)];
    // The descriptors ride on the first byte; the rest follows as plain writes.
    let mut sent = sendmsg::<()>(
        socket.as_raw_fd(),
        &[IoSlice::new(&bytes)],
        &rights,
        MsgFlags::MSG_NOSIGNAL,
        None,
    )?;
    while sent < bytes.len() {
        sent += nix::sys::socket::send(socket.as_raw_fd(), &bytes[sent..], MsgFlags::MSG_NOSIGNAL)?;
    }
    Ok(())
}

/// Read exactly `buf.len()` bytes; the descriptors that came along go to `fds`.
fn receive_exact(socket: RawFd, buf: &mut [u8], fds: &mut Vec<OwnedFd>) -> Result<(), String> {
    let mut got = 0;
    while got < buf.len() {
        let mut space = nix::cmsg_space!([RawFd; 3]);
        let mut iov = [IoSliceMut::new(&mut buf[got..])];
        let msg = match recvmsg::<()>(
            socket,
            &mut iov,
            Some(&mut space),
            MsgFlags::MSG_CMSG_CLOEXEC,
        ) {
            Ok(m) => m,
            Err(nix::errno::Errno::EINTR) => continue,
            Err(e) => return Err(format!("cannot read the order: {e}")),
        };
        for c in msg
            .cmsgs()
            .map_err(|e| format!("cannot read the order: {e}"))?
        {
            if let ControlMessageOwned::ScmRights(received) = c {
                // SAFETY: the kernel just created these descriptors for this process.
                fds.extend(
                    received
                        .into_iter()
                        .map(|fd| unsafe { OwnedFd::from_raw_fd(fd) }),
                );
            }
        }
        if msg.bytes == 0 {
            return Err(if got == 0 && fds.is_empty() {
                String::new()
            } else {
                "the host closed the socket in the middle of the order".into()
            });
        }
        got += msg.bytes;
    }
    Ok(())
}

/// The preforked supervisor's life: wait for the order, take pi's pipes as its own stdio,
/// then supervise. Never returns.
fn zygote(socket: OwnedFd) -> ! {
    // Its own process group, as the usual start gives it: a signal to the host's group (a
    // terminal's Ctrl-C, a CI job's kill) does not take it down before it has stopped pi.
    let _ = nix::unistd::setpgid(Pid::from_raw(0), Pid::from_raw(0));
    // SAFETY: PR_SET_NAME reads a NUL-terminated string of at most 16 bytes.
    unsafe { libc::prctl(libc::PR_SET_NAME, c"pi-supervisor".as_ptr(), 0, 0, 0) };
    // Nothing of the host's stays open here while waiting (the host's stdout, above all:
    // its reader must see the end when the host exits).
    supervisor::release_stdio();
    close_all_but(socket.as_raw_fd());
    let code = match receive(&socket) {
        Ok(None) => exit::SUCCESS,
        Ok(Some(order)) => obey(order, socket),
        Err(e) => {
            // stderr is /dev/null or pi's pipe, depending on how far the order came; the
            // control socket reaches the host.
            let line = serde_json::to_vec(&Event::SpawnFailed {
                error: format!("the preforked supervisor: {e}"),
                errno: None,
            })
            .unwrap_or_default();
            let _ = nix::unistd::write(&socket, &line);
            let _ = nix::unistd::write(&socket, b"\n");
            exit::CANNOT_SUPERVISE
        }
    };
    std::process::exit(code)
}

/// Close every descriptor from 3 up but `keep`.
fn close_all_but(keep: RawFd) {
    let keep = keep as libc::c_uint;
    // SAFETY: close_range only closes descriptors; none of them is used after this.
    let ranges = [(3, keep.saturating_sub(1)), (keep + 1, libc::c_uint::MAX)];
    for (first, last) in ranges {
        if first <= last {
            unsafe { libc::close_range(first, last, 0) };
        }
    }
}

/// The order, with pi's stdio in place as 0, 1 and 2; `None` when the host closed the
/// socket without one.
fn receive(socket: &OwnedFd) -> Result<Option<Order>, String> {
    let mut fds = Vec::new();
    let mut len = [0u8; 4];
    match receive_exact(socket.as_raw_fd(), &mut len, &mut fds) {
        Ok(()) => {}
        Err(e) if e.is_empty() => return Ok(None),
        Err(e) => return Err(e),
    }
    let n = u32::from_le_bytes(len) as usize;
    if n > MAX_ORDER {
        return Err(format!("an order of {n} bytes (at most {MAX_ORDER})"));
    }
    let mut body = vec![0u8; n];
    receive_exact(socket.as_raw_fd(), &mut body, &mut fds).map_err(|e| {
        if e.is_empty() {
            "the host closed the socket in the middle of the order".into()
        } else {
            e
        }
    })?;
    if fds.len() != 3 {
        return Err(format!(
            "the order came with {} descriptors instead of 3",
            fds.len()
        ));
    }
    for (target, fd) in fds.iter().enumerate() {
        nix::unistd::dup2(fd.as_raw_fd(), target as RawFd)
            .map_err(|e| format!("cannot take pi's stdio: {e}"))?;
    }
    drop(fds);
    Order::decode(&body).map(Some)
}

/// Become the supervisor the order describes; returns the supervisor's exit code
/// ([`supervisor::exit`]).
// The preforked supervisor's own process: a bad order is said on its stderr (pi's pipe by
// now), as the usual start says it.
#[allow(clippy::print_stderr)]
fn obey(order: Order, socket: OwnedFd) -> i32 {
    let args: Vec<String> = order
        .args
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let mut cfg = match supervisor::parse_args(&args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("pi-supervisor: {e}");
            return exit::USAGE;
        }
    };
    // The environment pi gets: the host's at the time of the run, not at the fork. Given
    // to pi's `Command` as it is (a name or value it cannot take is a spawn failure there,
    // reported, as with the usual start).
    cfg.env = Some(order.env);
    if let Some(dir) = &order.cwd {
        if let Err(e) = std::env::set_current_dir(dir) {
            // What the usual start reports when the working directory is missing.
            let event = Event::SpawnFailed {
                error: format!("cannot start {}: {e}", cfg.program),
                errno: e.raw_os_error(),
            };
            let mut line = serde_json::to_vec(&event).unwrap_or_default();
            line.push(b'\n');
            let _ = nix::unistd::write(&socket, &line);
            return exit::SUCCESS;
        }
    }
    cfg.control_fd = Some(socket.as_raw_fd());
    // `run` owns the control socket from here.
    std::mem::forget(socket);
    supervisor::run(cfg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::ffi::OsStringExt;

    fn os(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    #[test]
    fn an_order_reads_back_as_sent() {
        let order = Order {
            args: os(&["--grace-ms", "2000", "--", "/bin/pi", "--mode", "json", ""]),
            env: vec![
                (OsString::from("PATH"), OsString::from("/usr/bin")),
                (
                    OsString::from("=ODD"),
                    OsString::from_vec(b"\xff\0=x".to_vec()),
                ),
                (OsString::new(), OsString::new()),
            ],
            cwd: Some(PathBuf::from("/tmp/a dir")),
        };
        let bytes = order.encode();
        let n = u32::from_le_bytes(bytes[..4].try_into().unwrap()) as usize;
        assert_eq!(n, bytes.len() - 4);
        assert_eq!(Order::decode(&bytes[4..]).unwrap(), order);
        let none = Order {
            cwd: None,
            ..order.clone()
        };
        assert_eq!(Order::decode(&none.encode()[4..]).unwrap(), none);
    }

    #[test]
    fn a_damaged_order_is_refused() {
        let bytes = Order {
            args: os(&["--", "pi"]),
            env: vec![(OsString::from("A"), OsString::from("1"))],
            cwd: None,
        }
        .encode();
        let body = &bytes[4..];
        for cut in 0..body.len() {
            assert!(Order::decode(&body[..cut]).is_err(), "cut at {cut}");
        }
        let mut extra = body.to_vec();
        extra.push(0);
        assert_eq!(
            Order::decode(&extra).unwrap_err(),
            "1 bytes after the order"
        );
        // A count far beyond what follows is refused before anything is allocated for it.
        assert!(Order::decode(&[0xff, 0xff, 0xff, 0x7f]).is_err());
    }

    proptest::proptest! {
        #[test]
        fn any_bytes_decode_without_panic(body in proptest::collection::vec(proptest::num::u8::ANY, 0..64)) {
            let _ = Order::decode(&body);
        }
    }

    #[test]
    fn a_process_with_threads_forks_nothing() {
        // A second thread for certain, whatever the test harness does.
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let other = std::thread::spawn(move || rx.recv());
        let e = prefork_supervisor().unwrap_err();
        drop(tx);
        let _ = other.join();
        assert!(e.to_string().contains("threads"), "{e}");
        assert!(take().is_none());
    }
}
