//! A case's directory for one run ([`prepare`]): a copy of its cassette for fake-pi, `bin/pi`
//! (or `bin/claude`, `bin/codex`) linked to fake-pi, `sessions/`, a seeded session file when
//! the recording continued one, a Codex case's `CODEX_HOME` with its `config.toml`
//! ([`codex_config_toml`]), a Gemini CLI case's `HOME` with its `.gemini/settings.json`
//! ([`gemini_settings_json`]), and the request document with this directory's paths filled
//! in.

use std::path::{Path, PathBuf};

use pi_cassette::{CassetteReader, Expect, Header};

use crate::case::{Case, CODEX_HOME_DIR, GEMINI_HOME_DIR};
use crate::request::{instantiate, RequestDoc};

/// Where the case's files go: the cassette copy without `argv_messages` (the suite checks the
/// effective prompt, not whether it came in argv or on stdin), `bin/pi` -> fake-pi, `sessions/`.
pub fn prepare(case: &Case, dir: &Path, fake_pi: &Path) -> Result<RequestDoc, String> {
    let copy = dir.join("case.cassette.jsonl");
    let header = copy_without_argv_messages(&case.cassette, &copy)?;
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).map_err(|e| format!("{}: {e}", bin.display()))?;
    let agent = header.agent();
    let name = agent.name();
    // The link lives in another directory: a relative target would point nowhere.
    let fake_pi =
        std::path::absolute(fake_pi).map_err(|e| format!("{}: {e}", fake_pi.display()))?;
    std::os::unix::fs::symlink(&fake_pi, bin.join(name))
        .map_err(|e| format!("{}: {e}", bin.join(name).display()))?;
    std::fs::create_dir_all(dir.join("sessions")).map_err(|e| e.to_string())?;
    let request = instantiate(&case.request, &copy, dir);
    match agent {
        pi_grammar::Agent::Codex => {
            let home = dir.join(CODEX_HOME_DIR);
            let config = home.join("config.toml");
            std::fs::create_dir_all(&home).map_err(|e| format!("{}: {e}", home.display()))?;
            std::fs::write(&config, codex_config_toml(&header.expect))
                .map_err(|e| format!("{}: {e}", config.display()))?;
        }
        pi_grammar::Agent::Gemini => {
            let dir = dir.join(GEMINI_HOME_DIR).join(".gemini");
            let settings = dir.join("settings.json");
            std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
            std::fs::write(&settings, gemini_settings_json(&header.expect))
                .map_err(|e| format!("{}: {e}", settings.display()))?;
        }
        pi_grammar::Agent::Pi | pi_grammar::Agent::Claude => {
            if header.expect.session == Some(pi_cassette::SessionUse::Resumed) {
                seed_session(&header.pi.version, dir, &request)?;
            }
        }
    }
    Ok(request)
}

/// The `settings.json` a Gemini CLI case's `HOME` holds: what the recording ran with that
/// only settings can say (`general.maxAttempts`; approval modes and the model are flags).
pub fn gemini_settings_json(e: &Expect) -> String {
    match e.effective.as_ref().and_then(|x| x.max_attempts) {
        Some(n) => format!("{{\"general\":{{\"maxAttempts\":{n}}}}}\n"),
        None => "{}\n".into(),
    }
}

/// Write `from` to `to` (plain) with its header's `argv_messages` left out, the records
/// streamed through as they are (fake-pi checks them as it replays): one line in memory at a
/// time, whatever the cassette's size. The header written is returned.
fn copy_without_argv_messages(from: &Path, to: &Path) -> Result<Header, String> {
    use std::io::Write as _;
    let reader = CassetteReader::open(from).map_err(|e| e.to_string())?;
    let (mut header, mut rest) = reader
        .into_rest()
        .expect("a reader that has read no record gives its input back");
    header.expect.argv_messages = None;
    let err = |e: std::io::Error| format!("{}: {e}", to.display());
    let file = std::fs::File::create_new(to).map_err(err)?;
    let mut out = std::io::BufWriter::new(file);
    out.write_all(header.to_json().as_bytes()).map_err(err)?;
    out.write_all(b"\n").map_err(err)?;
    std::io::copy(&mut rest, &mut out).map_err(|e| format!("{}: {e}", from.display()))?;
    out.flush().map_err(err)?;
    Ok(header)
}

/// A recording that continued a session needs one to continue: write a minimal session
/// file where the case's pi will look for it (`--session-id` in the agent dir's sessions of
/// the case dir; 0.73.1's `--session DIR/ID.jsonl`).
fn seed_session(version: &str, dir: &Path, request: &RequestDoc) -> Result<(), String> {
    let Some(s) = &request.session else {
        return Ok(());
    };
    let cwd = request
        .cwd
        .clone()
        .unwrap_or_else(|| dir.display().to_string());
    let timestamp = "2026-01-01T00:00:00.000Z";
    let has_session_id = pi_grammar::Grammar::nearest(version).has_flag("--session-id");
    let path = match (&s.dir, has_session_id) {
        (Some(d), false) => PathBuf::from(d).join(format!("{}.jsonl", s.id)),
        _ => dir
            .join("agent/sessions")
            .join(pi_grammar::cwd_slug(&cwd))
            .join(pi_grammar::session_file_name(timestamp, &s.id)),
    };
    let header = format!(
        "{{\"type\":\"session\",\"version\":3,\"id\":{},\"timestamp\":\"{timestamp}\",\"cwd\":{}}}",
        serde_json::json!(s.id),
        serde_json::json!(cwd)
    );
    let parent = path.parent().unwrap_or(dir);
    std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    std::fs::write(&path, format!("{header}\n")).map_err(|e| format!("{}: {e}", path.display()))
}

/// The model providers Codex has built in: a `config.toml` may name them but not redefine
/// them (`[model_providers.openai]` is refused as a reserved id).
const CODEX_BUILT_IN_PROVIDERS: &[&str] = &["openai", "oss", "ollama", "lmstudio"];

/// Where a Codex case's own provider points: a loopback port nothing serves (fake-pi
/// replays the model's answers; it never calls the provider).
pub const CODEX_CASE_BASE_URL: &str = "http://127.0.0.1:9/v1";

/// A Codex case's `config.toml` (pure): what the recording ran with, by meaning (its
/// `expect.effective`: `model`, `model_provider`, `sandbox_mode`, `approval_policy`), and,
/// for a provider that is not built in, its `[model_providers.ID]` table (the key read from
/// the recording's `expect.env` variable, the Responses API) pointing at
/// [`CODEX_CASE_BASE_URL`]; the update check, analytics and plugins off, as the recorder has
/// them. So plain `codex exec --json --skip-git-repo-check` means what the recording meant.
pub fn codex_config_toml(expect: &Expect) -> String {
    let e = expect.effective.clone().unwrap_or_default();
    let mut t = String::from("# Written by pi-harness conform for one Codex case.\n");
    for (key, value) in [
        ("model", &e.model),
        ("model_provider", &e.provider),
        ("approval_policy", &e.approval),
        ("sandbox_mode", &e.sandbox),
    ] {
        if let Some(v) = value {
            t.push_str(&format!("{key} = {}\n", toml_str(v)));
        }
    }
    t.push_str("check_for_update_on_startup = false\n\n");
    t.push_str("[analytics]\nenabled = false\n\n[features]\nplugins = false\n");
    if let Some(p) = e
        .provider
        .as_deref()
        .filter(|p| !CODEX_BUILT_IN_PROVIDERS.contains(p))
    {
        t.push_str(&format!("\n[model_providers.{}]\n", toml_str(p)));
        t.push_str(&format!("name = {}\n", toml_str(p)));
        t.push_str(&format!("base_url = {}\n", toml_str(CODEX_CASE_BASE_URL)));
        if let Some(key) = expect.env.first() {
            t.push_str(&format!("env_key = {}\n", toml_str(key)));
        }
        t.push_str("wire_api = \"responses\"\n");
    }
    t
}

/// A TOML basic string (quoted, escaped).
fn toml_str(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\u{:04X}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expect(provider: &str) -> Expect {
        let mut e = Expect {
            env: vec!["MY_CO_API_KEY".into()],
            ..Expect::default()
        };
        e.effective = Some(pi_cassette::EffectiveExpect {
            provider: Some(provider.into()),
            model: Some("m \"1\"".into()),
            sandbox: Some("danger-full-access".into()),
            approval: Some("never".into()),
            ..Default::default()
        });
        e
    }

    #[test]
    fn a_codex_config_says_what_the_recording_ran_with() {
        let t = codex_config_toml(&expect("my-co"));
        for line in [
            "model = \"m \\\"1\\\"\"",
            "model_provider = \"my-co\"",
            "approval_policy = \"never\"",
            "sandbox_mode = \"danger-full-access\"",
            "[model_providers.\"my-co\"]",
            "env_key = \"MY_CO_API_KEY\"",
            "wire_api = \"responses\"",
        ] {
            assert!(t.lines().any(|l| l == line), "{line}: {t}");
        }
        // A built-in provider is named, never redefined.
        let t = codex_config_toml(&expect("openai"));
        assert!(t.contains("model_provider = \"openai\""), "{t}");
        assert!(!t.contains("[model_providers"), "{t}");
    }
}
