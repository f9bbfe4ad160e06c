//! The capability handshake: `CMD --capabilities` answers which capabilities the
//! implementation claims, in protocol [`PROTOCOL_VERSION`]. The answer is bounded like a case
//! run: at most [`MAX_ANSWER_BYTES`] read, the command killed (its whole process group) when it
//! has not ended within the case timeout, and an error quotes at most the answer's start.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::Deserialize;

use super::collect;

/// Version of the capability handshake answer.
pub const PROTOCOL_VERSION: u32 = 1;

/// The most of an answer read: a capability list is a few hundred bytes.
pub const MAX_ANSWER_BYTES: u64 = 1 << 20;

/// The capabilities an implementation claims: `CMD --capabilities` prints
/// `{"protocol":1,"name":"...","capabilities":[...]}` and exits 0 within `timeout`.
pub fn handshake(cmd: &str, timeout: Duration) -> Result<(String, Vec<String>), String> {
    use std::os::unix::process::CommandExt as _;
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(format!("{cmd} --capabilities"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .map_err(|e| format!("cannot run `{cmd} --capabilities`: {e}"))?;
    let pgid = nix::unistd::Pid::from_raw(child.id() as i32);
    let kill_group = move || {
        let _ = nix::sys::signal::killpg(pgid, nix::sys::signal::Signal::SIGKILL);
    };
    let stdout = child.stdout.take().expect("piped");
    let out_reader = std::thread::spawn(move || {
        let mut answer = Vec::new();
        let _ = stdout.take(MAX_ANSWER_BYTES + 1).read_to_end(&mut answer);
        if answer.len() as u64 > MAX_ANSWER_BYTES {
            kill_group();
        }
        answer
    });
    let stderr = child.stderr.take().expect("piped");
    let err_reader = std::thread::spawn(move || collect::stderr_tail(stderr));
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if Instant::now() > deadline => {
                kill_group();
                let _ = child.wait();
                return Err(format!(
                    "`{cmd} --capabilities` gave no answer within {} s (--timeout): it was killed",
                    timeout.as_secs()
                ));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => return Err(format!("waiting for `{cmd} --capabilities`: {e}")),
        }
    };
    // The group goes with its leader: nothing it started holds the pipes open after this.
    kill_group();
    let answer = out_reader.join().unwrap_or_default();
    let err = err_reader.join().unwrap_or_default();
    if answer.len() as u64 > MAX_ANSWER_BYTES {
        return Err(format!(
            "`{cmd} --capabilities` printed more than {MAX_ANSWER_BYTES} bytes: {}",
            collect::quote(answer.trim_ascii())
        ));
    }
    if !status.success() {
        return Err(format!(
            "`{cmd} --capabilities` exited with {status}: {}",
            collect::quote(err.trim_ascii())
        ));
    }
    #[derive(Deserialize)]
    struct Hello {
        protocol: u32,
        #[serde(default)]
        name: Option<String>,
        capabilities: Vec<String>,
    }
    let hello: Hello = serde_json::from_slice(&answer).map_err(|e| {
        format!(
            "`{cmd} --capabilities` did not print {{\"protocol\":1,\"capabilities\":[...]}}: {e}: {}",
            collect::quote(answer.trim_ascii())
        )
    })?;
    if hello.protocol != PROTOCOL_VERSION {
        return Err(format!(
            "`{cmd} --capabilities` speaks protocol {}, this runner {PROTOCOL_VERSION}",
            hello.protocol
        ));
    }
    Ok((
        hello.name.unwrap_or_else(|| cmd.to_string()),
        hello.capabilities,
    ))
}
