//! The capability handshake: `CMD --capabilities` answers which capabilities the
//! implementation claims, in protocol [`PROTOCOL_VERSION`].

use std::process::{Command, Stdio};

use serde::Deserialize;

/// Version of the capability handshake answer.
pub const PROTOCOL_VERSION: u32 = 1;

/// The capabilities an implementation claims: `CMD --capabilities` prints
/// `{"protocol":1,"name":"...","capabilities":[...]}`.
pub fn handshake(cmd: &str) -> Result<(String, Vec<String>), String> {
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!("{cmd} --capabilities"))
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run `{cmd} --capabilities`: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "`{cmd} --capabilities` exited with {}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    #[derive(Deserialize)]
    struct Hello {
        protocol: u32,
        #[serde(default)]
        name: Option<String>,
        capabilities: Vec<String>,
    }
    let hello: Hello = serde_json::from_slice(&out.stdout).map_err(|e| {
        format!(
            "`{cmd} --capabilities` did not print {{\"protocol\":1,\"capabilities\":[...]}}: {e}: {}",
            String::from_utf8_lossy(&out.stdout).trim()
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
