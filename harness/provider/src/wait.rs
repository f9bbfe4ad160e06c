//! How long the provider waits: the longest wait it honours ([`MAX_WAIT`]), deadlines
//! capped by it, so no deadline overflows the clock, and how soon it stops waiting for a
//! supervisor that is stopped ([`StoppedWatch`]).

use std::time::Duration;

use tokio::time::Instant;

/// The longest wait the provider honours (30 days): a longer `grace`, `kill_wait` or
/// timeout is taken as this, so deadlines never overflow the clock.
pub const MAX_WAIT: Duration = Duration::from_secs(30 * 24 * 3600);

/// How often, once a run must end, the provider looks whether its supervisor is stopped.
pub(crate) const STOPPED_LOOK_EVERY: Duration = Duration::from_millis(50);

/// How long the supervisor must be seen stopped, at every look, before the provider stops
/// waiting for its report: long enough that a tracer's brief stops (strace) do not count,
/// short enough that a timeout is honoured within about half a second.
pub(crate) const STOPPED_FOR: Duration = Duration::from_millis(250);

/// `now + d`, with `d` capped at [`MAX_WAIT`].
pub(crate) fn after(d: Duration) -> Instant {
    Instant::now() + d.min(MAX_WAIT)
}

/// Sleep until `until`; forever when there is no deadline.
pub(crate) async fn sleep_until(until: Option<Instant>) {
    match until {
        Some(t) => tokio::time::sleep_until(t).await,
        None => std::future::pending().await,
    }
}

/// Whether the supervisor is stopped (SIGSTOP, a tracer), looked at in `/proc` from the
/// moment the run must end. A stopped supervisor neither stops pi nor reports, so the
/// provider's wait of grace + kill wait for its report would only delay the last resort;
/// one that is merely slow (running, sleeping, in the kernel) keeps its whole wait.
pub(crate) struct StoppedWatch {
    /// The supervisor's pid.
    pid: Option<i32>,
    /// The next look, once watching.
    next: Option<Instant>,
    /// Since when every look found it stopped.
    since: Option<Instant>,
}

impl StoppedWatch {
    /// A watch on `pid`, not looking yet.
    pub(crate) fn new(pid: Option<i32>) -> Self {
        StoppedWatch {
            pid,
            next: None,
            since: None,
        }
    }

    /// Start looking (now, then every [`STOPPED_LOOK_EVERY`]).
    pub(crate) fn start(&mut self) {
        if self.pid.is_some() && self.next.is_none() {
            self.next = Some(Instant::now());
        }
    }

    /// When the next look is due.
    pub(crate) fn wake(&self) -> Option<Instant> {
        self.next
    }

    /// Look when a look is due: true once the supervisor has been found stopped at every
    /// look for [`STOPPED_FOR`].
    pub(crate) fn look(&mut self) -> bool {
        let now = Instant::now();
        match (self.pid, self.next) {
            (Some(pid), Some(next)) if now >= next => {
                self.next = Some(now + STOPPED_LOOK_EVERY);
                if pi_procs::read_proc(pid).is_some_and(|p| p.is_stopped()) {
                    now - *self.since.get_or_insert(now) >= STOPPED_FOR
                } else {
                    self.since = None;
                    false
                }
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nix::sys::signal::{kill, Signal};
    use nix::unistd::Pid;

    /// Look at `watch` every [`STOPPED_LOOK_EVERY`] for up to `within`; true once it says stopped.
    fn says_stopped_within(watch: &mut StoppedWatch, within: Duration) -> bool {
        let end = std::time::Instant::now() + within;
        while std::time::Instant::now() < end {
            if watch.look() {
                return true;
            }
            std::thread::sleep(STOPPED_LOOK_EVERY);
        }
        false
    }

    #[test]
    fn only_a_process_stopped_for_a_while_counts_as_stopped() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        let mut watch = StoppedWatch::new(Some(pid));
        // Not looking before it is started.
        kill(Pid::from_raw(pid), Signal::SIGSTOP).unwrap();
        assert_eq!(watch.wake(), None);
        assert!(!says_stopped_within(&mut watch, 3 * STOPPED_FOR));
        // Started: stopped at every look for STOPPED_FOR, not at the first look.
        watch.start();
        assert!(!watch.look());
        assert!(says_stopped_within(&mut watch, 20 * STOPPED_FOR));
        // Running (here sleeping) again: never stopped.
        kill(Pid::from_raw(pid), Signal::SIGCONT).unwrap();
        std::thread::sleep(STOPPED_LOOK_EVERY);
        assert!(!says_stopped_within(&mut watch, 3 * STOPPED_FOR));
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// How a process ended, in words for a message (`exited with status 3`, `killed by
/// SIGKILL`), never the debug form of its status (`Ok(ExitStatus(unix_wait_status(9)))`).
pub(crate) fn ended(status: &std::io::Result<std::process::ExitStatus>) -> String {
    use std::os::unix::process::ExitStatusExt as _;
    match status {
        Ok(s) => match (s.code(), s.signal()) {
            (Some(code), _) => format!("exited with status {code}"),
            (None, Some(n)) => match nix::sys::signal::Signal::try_from(n) {
                Ok(sig) => format!("killed by {}", sig.as_str()),
                Err(_) => format!("killed by signal {n}"),
            },
            (None, None) => "ended, how unknown".into(),
        },
        Err(e) => format!("its end unknown: {e}"),
    }
}

/// [`ended`] for what a stream reports of pi's end.
pub(crate) fn ended_info(e: &pi_wire::message::ExitInfo) -> String {
    match (&e.code, &e.signal) {
        (Some(code), _) => format!("exited with status {code}"),
        (None, Some(sig)) => format!("killed by {sig}"),
        (None, None) => "ended, how unknown".into(),
    }
}

#[cfg(test)]
mod ended_tests {
    use std::os::unix::process::ExitStatusExt as _;
    use std::process::ExitStatus;

    #[test]
    fn an_end_is_said_in_words() {
        assert_eq!(
            super::ended(&Ok(ExitStatus::from_raw(9))),
            "killed by SIGKILL"
        );
        assert_eq!(
            super::ended(&Ok(ExitStatus::from_raw(3 << 8))),
            "exited with status 3"
        );
        let e = std::io::Error::other("gone");
        assert_eq!(super::ended(&Err(e)), "its end unknown: gone");
    }
}
