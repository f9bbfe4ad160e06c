//! What a two-way import reads besides the transcript ([`TwoWayInputs`], [`FileInputs`]),
//! the entries a client may log that say nothing ([`ANNOTATIONS`]), and the error that names
//! a bad input line: the leaf the import and its transcript walk both step down to.

use std::path::Path;

use crate::import::{Ending, ImportError};
use crate::two_way::Protocol;

/// Entries a client may log that say nothing about the protocol.
pub const ANNOTATIONS: &[&str] = &["note", "host", "ps", "final", "stdout_eof"];

/// What a two-way import reads besides the transcript.
#[derive(Debug, Clone, Default)]
pub struct TwoWayInputs<'a> {
    /// pi's stdout byte for byte (`--raw-stdout`): each `stdout` entry must be the same
    /// JSON value as the next line, and the cassette keeps the line's exact bytes.
    pub raw_stdout: Option<(&'a Path, &'a [u8])>,
    /// The scripted server's request log (`--requests`), one JSON object per request.
    pub requests: Option<(&'a Path, &'a [u8])>,
    /// How pi ended, when the transcript does not say (`--exit`, `--signal`, `--hang`).
    pub ending: Option<Ending>,
    /// Model pi's bash tool processes (`--spawn-tools`): a `spawn` after each bash
    /// `tool_execution_start` (`/bin/bash -c COMMAND`, its own session), a `reap` when its
    /// `tool_execution_end` comes, and at an exit whose cause kills tools in this pi version
    /// (a signal pi handles; stdin closing on pi 0.87.1 and later). For Claude Code: a
    /// `spawn` where a Bash `tool_use` starts running (after the host's `allow` of its
    /// permission prompt; commands the CLI runs without asking are not modelled), a `reap`
    /// at its tool result and at an exit by a signal (the CLI kills its tools' trees).
    pub spawn_tools: bool,
    /// pi's RPC mode or Claude Code's stream-json (`--mode stream-json`).
    pub protocol: Protocol,
}

/// The files and choices of `cassette import --mode rpc|stream-json` besides the
/// transcript (see [`TwoWayInputs`] for what each means).
#[derive(Debug, Clone, Default)]
pub struct FileInputs<'a> {
    /// The file holding pi's stdout byte for byte (`--raw-stdout`).
    pub raw_stdout: Option<&'a Path>,
    /// The scripted server's request log (`--requests`).
    pub requests: Option<&'a Path>,
    /// How pi ended, when the transcript does not say.
    pub ending: Option<Ending>,
    /// Model the bash tool's processes (`--spawn-tools`).
    pub spawn_tools: bool,
    /// pi's RPC mode or Claude Code's stream-json.
    pub protocol: Protocol,
}

/// An input error at `file:line` (`line` 0: the whole file).
pub(super) fn input_err(file: &Path, line: usize, message: String) -> ImportError {
    ImportError::Input {
        file: file.to_path_buf(),
        line,
        message,
    }
}
