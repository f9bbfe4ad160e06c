//! Reading and checking a cassette's header line: the format marker, version and mode
//! first (so a wrong file gets a plain answer), then the JSON shape, the names that become
//! file names, the CLI it imitates (pi or Claude Code, its version and dialect), and the
//! exit codes its signal answers give.

use std::path::Path;

use serde_json::Value;

use crate::error::shown;
use crate::{
    CassetteError, Dialect, FlagRule, Header, ProcessBehaviour, SignalAction, FORMAT_NAME,
    FORMAT_VERSION, FORMAT_VERSION_TWO_WAY, KNOWN_CLAUDE_VERSIONS, TWO_WAY_MODES,
};

/// Read and check the header line `text` (line `lineno` of `path`, which only name it in
/// errors).
pub(crate) fn parse_header(
    path: &Path,
    lineno: usize,
    text: &str,
) -> Result<Header, CassetteError> {
    header(text).map_err(|message| CassetteError::invalid(path, lineno, message))
}

/// The header, or what is wrong with it (`header field ...: problem`).
fn header(text: &str) -> Result<Header, String> {
    // Check the format marker first so a wrong file gets a plain answer.
    let probe: Value =
        serde_json::from_str(text).map_err(|e| format!("header is not JSON: {e}"))?;
    check_format(&probe)?;
    check_version_and_mode(&probe)?;
    crate::shape::check_header(&probe, text).map_err(|what| format!("header {what}"))?;
    let header: Header = serde_json::from_str(text).map_err(|e| format!("header: {e}"))?;
    check_names(&header)?;
    check_agent(&probe, &header)?;
    check_exit_codes(&header.process)?;
    Ok(header)
}

/// `format` is `"pi-cassette"`; a file without one is likely raw pi output.
fn check_format(probe: &Value) -> Result<(), String> {
    match probe.get("format").and_then(|v| v.as_str()) {
        Some(FORMAT_NAME) => Ok(()),
        Some(other) => Err(format!(
            "header field `format`: expected \"{FORMAT_NAME}\", found \"{other}\""
        )),
        None => Err(format!("header field `format` missing: the first line must be a cassette header with \"format\":\"{FORMAT_NAME}\" (is this raw pi output? see `pi-harness cassette import`)")),
    }
}

/// `version` is one this reader knows; a version 2 (two-way) cassette, and only one,
/// names its protocol in `mode`.
fn check_version_and_mode(probe: &Value) -> Result<(), String> {
    match probe.get("version").and_then(|v| v.as_u64()) {
        Some(v)
            if (v == u64::from(FORMAT_VERSION) || v == u64::from(FORMAT_VERSION_TWO_WAY))
                && probe["version"].is_u64() => {}
        Some(v) => {
            return Err(format!("header field `version`: this reader knows format versions {FORMAT_VERSION} and {FORMAT_VERSION_TWO_WAY}, the file says {v}"))
        }
        None => {
            let found = probe
                .get("version")
                .map_or("nothing".to_string(), |v| v.to_string());
            return Err(format!(
                "header field `version`: expected the integer {FORMAT_VERSION}, found {found}"
            ));
        }
    }
    let two_way = probe["version"] == FORMAT_VERSION_TWO_WAY;
    match (two_way, probe.get("mode")) {
        (false, None) => Ok(()),
        (true, Some(Value::String(m))) if TWO_WAY_MODES.contains(&m.as_str()) => Ok(()),
        (false, Some(_)) => Err(format!(
            "header field `mode`: only a version {FORMAT_VERSION_TWO_WAY} (two-way) cassette has one"
        )),
        (true, found) => Err(format!(
            "header field `mode`: a version {FORMAT_VERSION_TWO_WAY} cassette names its two-way protocol, one of {}; found {}",
            TWO_WAY_MODES.join(", "),
            found.map_or("nothing".to_string(), |v| v.to_string())
        )),
    }
}

/// The scenario's name and a recorded `--session-id` become file names: short, file-safe
/// identifiers, never paths.
fn check_names(header: &Header) -> Result<(), String> {
    if header.scenario.name.is_empty() {
        return Err("header field `scenario.name` is empty".into());
    }
    // Both name files: conform's seeded session for a resumed recording.
    if !pi_grammar::is_file_safe_session_id(&header.scenario.name) {
        return Err(format!(
            "header field `scenario.name`: {} is not a short identifier (1 to {} of A-Z a-z 0-9 . _ -, starting and ending with a letter or digit)",
            shown(&header.scenario.name),
            pi_grammar::MAX_SESSION_ID_BYTES
        ));
    }
    if let Some(FlagRule::Value(id)) = header.expect.flags.get("session-id") {
        if !pi_grammar::is_file_safe_session_id(id) {
            return Err(format!(
                "header field `expect.flags.session-id`: {} is not a session id pi accepts (1 to {} of A-Z a-z 0-9 . _ -, starting and ending with a letter or digit)",
                shown(id),
                pi_grammar::MAX_SESSION_ID_BYTES
            ));
        }
    }
    Ok(())
}

/// The CLI the cassette imitates: a stream-json cassette names Claude Code under `claude`
/// with its dialect, any other names pi under `pi`; either in a version pi-harness knows.
fn check_agent(probe: &Value, header: &Header) -> Result<(), String> {
    let claude = header.is_claude();
    let (want, other) = if claude {
        ("claude", "pi")
    } else {
        ("pi", "claude")
    };
    if probe.get(other).is_some() || probe.get(want).is_none() {
        return Err(if claude {
            "header field `claude`: a stream-json cassette names the Claude Code it imitates under `claude` (not `pi`)".to_string()
        } else {
            "header field `pi`: missing (only a `mode: \"stream-json\"` cassette names a `claude` instead)".to_string()
        });
    }
    if claude != (header.pi.dialect == Dialect::StreamJson) {
        return Err(format!(
            "header field `{want}.dialect`: {}",
            if claude {
                "a stream-json cassette's dialect is \"stream-json\""
            } else {
                "\"stream-json\" is Claude Code's dialect (a `mode: \"stream-json\"` cassette)"
            }
        ));
    }
    let (known, borrowed, newest) = if claude {
        (
            KNOWN_CLAUDE_VERSIONS.contains(&header.pi.version.as_str()),
            pi_grammar::claude::Claude::unverified(&header.pi.version).and_then(|c| c.borrowed()),
            pi_grammar::claude::Claude::latest().version(),
        )
    } else {
        (
            pi_grammar::Grammar::for_version(&header.pi.version).is_some(),
            pi_grammar::Grammar::unverified(&header.pi.version).and_then(|g| g.borrowed()),
            pi_grammar::Grammar::newest_pinned().version(),
        )
    };
    let cli = if claude { "Claude Code" } else { "pi" };
    let stated = header.pi.unverified.as_ref().map(|u| u.grammar.as_str());
    match (known, borrowed, stated) {
        // A pinned release; a stale mark (the release was pinned since) is history.
        (true, _, _) => Ok(()),
        (false, Some(b), Some(s)) if b == s => Ok(()),
        (false, Some(b), Some(s)) => Err(format!(
            "header field `{want}.unverified.grammar`: {cli} {} borrows the newest pinned grammar, {b}, not {s:?}",
            header.pi.version
        )),
        (false, Some(b), None) => Err(format!(
            "header field `{want}.unverified`: {cli} {} is newer than every pinned release ({newest}); a cassette of it says so and names the grammar it is read with: \"unverified\":{{\"grammar\":\"{b}\"}}",
            header.pi.version
        )),
        (false, None, _) if claude => Err(format!(
            "header field `claude.version`: pi-harness knows Claude Code {}, not {:?}",
            KNOWN_CLAUDE_VERSIONS.join(", "),
            header.pi.version
        )),
        (false, None, _) => Err(format!(
            "header field `pi.version`: pi-harness knows pi {}, not {:?}",
            pi_grammar::KNOWN_VERSIONS.join(", "),
            header.pi.version
        )),
    }
}

/// The exit codes the signal answers give are 0..=255.
fn check_exit_codes(process: &ProcessBehaviour) -> Result<(), String> {
    for (signal, action) in [
        ("on_sigterm", &process.on_sigterm),
        ("on_sigint", &process.on_sigint),
        ("on_sighup", &process.on_sighup),
    ] {
        if let SignalAction::Exit { code } | SignalAction::CleanupExit { code } = action {
            if !(0..=255).contains(code) {
                return Err(format!(
                    "header field `process.{signal}.code`: exit codes are 0..=255, found {code}"
                ));
            }
        }
    }
    Ok(())
}
