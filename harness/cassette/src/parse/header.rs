//! Reading and checking a cassette's header line: the format marker, version and mode
//! first (so a wrong file gets a plain answer), then the JSON shape, the names that become
//! file names, the CLI it imitates (its key, kind, version and dialect, as the registry of
//! agents says), and the exit codes its signal answers give.

use std::path::Path;

use pi_grammar::Agent;
use serde_json::Value;

use crate::error::shown;
use crate::{
    CassetteError, FlagRule, Header, ProcessBehaviour, SignalAction, FORMAT_NAME, FORMAT_VERSION,
    FORMAT_VERSION_TWO_WAY,
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
    if header
        .expect
        .effective
        .as_ref()
        .and_then(|e| e.max_attempts)
        == Some(0)
    {
        return Err(
            "header field `expect.effective.max_attempts`: a model call is tried at least once, found 0"
                .into(),
        );
    }
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
    let modes = crate::two_way_modes();
    match (two_way, probe.get("mode")) {
        (false, None) => Ok(()),
        (true, Some(Value::String(m))) if modes.contains(&m.as_str()) => Ok(()),
        (false, Some(_)) => Err(format!(
            "header field `mode`: only a version {FORMAT_VERSION_TWO_WAY} (two-way) cassette has one"
        )),
        (true, found) => Err(format!(
            "header field `mode`: a version {FORMAT_VERSION_TWO_WAY} cassette names its two-way protocol, one of {}; found {}",
            modes.join(", "),
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

/// The CLI the cassette imitates (its dialect's agent), named under its own key (the
/// registry's `header_key`: `pi`, `claude`, `codex`, `gemini`), in a cassette of a kind it
/// has (one-way: version 1, no mode; two-way: version 2, its protocol as the mode), in a
/// version pi-harness knows or one newer than every pinned one (marked). Every message is
/// built from the agents' rows.
fn check_agent(probe: &Value, header: &Header) -> Result<(), String> {
    let agent = header.agent();
    let spec = agent.spec();
    let want = spec.header_key;
    let cli = spec.display_name;
    let dialect = header.pi.dialect;
    if let Some(other) = Agent::ALL
        .into_iter()
        .map(Agent::spec)
        .find(|o| o.header_key != want && probe.get(o.header_key).is_some())
    {
        let dialects: Vec<String> = other.dialects.iter().map(|d| format!("{d:?}")).collect();
        return Err(format!(
            "header field `{}`: a cassette of {cli} names it under `{want}` (only a cassette of dialect {} names a `{}`)",
            other.header_key,
            pi_grammar::agents::or_list(&dialects.iter().map(String::as_str).collect::<Vec<_>>()),
            other.header_key,
        ));
    }
    match (header.mode.as_deref(), spec.two_way) {
        (None, Some(own)) if !spec.one_way => {
            return Err(format!(
                "header field `mode`: a {cli} ({dialect}) cassette is two-way, version {FORMAT_VERSION_TWO_WAY}, with mode \"{own}\""
            ))
        }
        (Some(_), None) => {
            return Err(format!(
                "header field `mode`: a {cli} ({dialect}) cassette is one-way, version {FORMAT_VERSION}, with no mode"
            ))
        }
        (Some(mode), Some(own)) if mode != own => {
            return Err(format!(
                "header field `mode`: a {cli} ({dialect}) cassette's two-way protocol is \"{own}\", not \"{mode}\""
            ))
        }
        _ => {}
    }
    let version = header.pi.version.as_str();
    let known = spec.release(version).is_some();
    let borrowed = spec.borrowed_for(version);
    let stated = header.pi.unverified.as_ref().map(|u| u.grammar.as_str());
    match (known, borrowed, stated) {
        // A pinned release; a stale mark (the release was pinned since) is history.
        (true, _, _) => Ok(()),
        (false, Some(b), Some(s)) if b == s => Ok(()),
        (false, Some(b), Some(s)) => Err(format!(
            "header field `{want}.unverified.grammar`: {cli} {version} borrows the newest pinned grammar, {b}, not {s:?}"
        )),
        (false, Some(b), None) => Err(format!(
            "header field `{want}.unverified`: {cli} {version} is newer than every pinned release ({}); a cassette of it says so and names the grammar it is read with: \"unverified\":{{\"grammar\":\"{b}\"}}",
            spec.newest().version
        )),
        (false, None, _) => Err(format!(
            "header field `{want}.version`: pi-harness knows {cli} {}, not {version:?}",
            spec.versions().join(", "),
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
