//! fake-pi as Gemini CLI: a cassette of dialect `gemini-stream-json` (header `gemini`) makes
//! fake-pi answer as `gemini -p ... --output-format stream-json` of the recorded release.
//!
//! In Gemini's order: the command line read with the release's grammar
//! ([`pi_grammar::gemini`]: yargs' errors and the CLI's checks, the help after each, exit 1;
//! `--help`, `--version`), the settings read as its layers ([`settings_layers`]; a file that
//! is not JSON: fake-pi's own refusal, exit 96), the prompt (`-p` or the query, with piped stdin before it as
//! 0.61.0 joins them; stdin that gives nothing within 500 ms counts as none, as the CLI's
//! reader gives up), then the call compared with the recording by meaning
//! ([`pi_cassette::matching::gemini`]: exit 99, one line per difference, each naming where
//! the call's value came from). Then the process shape of the CLI's relaunch
//! ([`crate::gemini_process`]).

use std::collections::BTreeMap;
use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use pi_cassette::matching::gemini::{check, GeminiCall};
use pi_cassette::Header;
use pi_grammar::gemini::{self, Gemini, Layer};

use crate::exit::{self, fail};
use crate::{environ, files, gemini_process, hints, signals};

/// The CLI's commands (`gemini mcp ...`), which its help lists and fake-pi does not imitate.
const COMMANDS: &[&str] = &[
    "mcp",
    "extensions",
    "extension",
    "skills",
    "skill",
    "hooks",
    "hook",
    "gemma",
];

/// Answer `argv` as the Gemini release of `header` (the cassette at `path`); `speed` is
/// fake-pi's setting, handed to the replay.
pub(crate) fn run(header: &Header, argv: &[String], path: &Path, speed: Option<&str>) -> i32 {
    match call(header, argv, path) {
        Ok(()) => gemini_process::start(path, argv, speed),
        Err(code) => code,
    }
}

/// Everything before the replay; `Err` is the status to exit with (said on stderr).
fn call(header: &Header, argv: &[String], path: &Path) -> Result<(), i32> {
    // From here on the process is the relaunch parent, which never dies of SIGTERM or
    // SIGINT: block them before any thread exists (the replay's process answers them).
    if let Err(e) = signals::block() {
        return Err(fail(exit::MISUSE, format!("cannot block signals: {e}")));
    }
    let cli = header.pi.gemini().unwrap_or_else(Gemini::latest);
    let parsed = match cli.parse(argv) {
        Ok(p) => p,
        Err(s) => {
            let mut out = std::io::stdout().lock();
            if out
                .write_all(s.stdout.as_bytes())
                .and_then(|()| out.flush())
                .is_err()
            {
                return Err(exit::STDOUT_CLOSED);
            }
            let _ = std::io::stderr().write_all(s.stderr.as_bytes());
            // Options Gemini does not know: perhaps another agent's command line.
            if s.stderr.starts_with("Unknown argument") {
                hints::other_agent_for_gemini(header, argv);
            }
            return Err(s.code);
        }
    };
    let tty = std::io::stdin().is_terminal();
    if let Some(command) = parsed
        .query
        .first()
        .filter(|q| COMMANDS.contains(&q.as_str()))
    {
        return Err(fail(
            exit::MISUSE,
            format!("as Gemini CLI, fake-pi answers the headless `gemini -p PROMPT`, not `gemini {command}` (cassette {})", path.display()),
        ));
    }
    if !parsed.headless(tty) {
        return Err(fail(
            exit::MISUSE,
            format!("as Gemini CLI, fake-pi answers the headless `gemini -p PROMPT` (or a query with stdin piped), not the interactive CLI (cassette {})", path.display()),
        ));
    }
    let layers = settings_layers(&parsed).map_err(|e| fail(exit::MISUSE, e))?;
    let env_model = environ::var("GEMINI_MODEL");
    let effective = gemini::effective(&parsed, env_model.as_deref(), &layers);
    let stdin = if tty { None } else { Some(read_stdin()?) };
    let prompt = gemini::join_prompt(parsed.prompt_arg().as_deref(), stdin.as_deref());
    let call = GeminiCall {
        argv,
        parsed: &parsed,
        effective: &effective,
        prompt: Some(prompt.as_deref().unwrap_or("")),
        env: &environ::var,
    };
    let mismatches = check(&header.expect, &call);
    if mismatches.is_empty() {
        return Ok(());
    }
    for m in &mismatches {
        exit::say(&format!(
            "fake-pi: expectation mismatch: {m} (cassette {})",
            path.display()
        ));
    }
    Err(exit::EXPECTATION)
}

/// The settings files 0.61.0 reads, lowest first (read in its bundle): the system defaults
/// (`GEMINI_CLI_SYSTEM_DEFAULTS_PATH`, else `system-defaults.json` beside the system
/// settings), the user's (`$GEMINI_CLI_HOME/.gemini/settings.json` when that is set, as
/// the CLI's home directory, else `$HOME/.gemini/settings.json`), the workspace's
/// (`./.gemini/settings.json`, only when the workspace is trusted: [`trusted`]), then the
/// system settings over all (`GEMINI_CLI_SYSTEM_SETTINGS_PATH`, else
/// `/etc/gemini-cli/settings.json`).
fn settings_layers(parsed: &gemini::Parsed) -> Result<Vec<Layer>, String> {
    let home = PathBuf::from(
        environ::var("GEMINI_CLI_HOME")
            .filter(|h| !h.is_empty())
            .or_else(|| environ::var("HOME"))
            .unwrap_or_default(),
    );
    let cwd = std::env::current_dir().unwrap_or_default();
    let system = environ::var("GEMINI_CLI_SYSTEM_SETTINGS_PATH")
        .filter(|p| !p.is_empty())
        .map_or_else(
            || PathBuf::from("/etc/gemini-cli/settings.json"),
            PathBuf::from,
        );
    let defaults = environ::var("GEMINI_CLI_SYSTEM_DEFAULTS_PATH")
        .filter(|p| !p.is_empty())
        .map_or_else(
            || system.with_file_name("system-defaults.json"),
            PathBuf::from,
        );
    let user = home.join(".gemini/settings.json");
    let workspace = cwd.join(".gemini/settings.json");
    let mut layers = Vec::new();
    for file in [&defaults, &user] {
        layers.extend(read_layer(file)?);
    }
    let system_layer = read_layer(&system)?;
    let same = |a: &Path, b: &Path| {
        a.canonicalize()
            .ok()
            .is_some_and(|a| b.canonicalize().ok() == Some(a))
    };
    if !same(&workspace, &user) {
        let mut so_far = layers.clone();
        so_far.extend(system_layer.clone());
        if trusted(parsed, &so_far) {
            layers.extend(read_layer(&workspace)?);
        }
    }
    layers.extend(system_layer);
    Ok(layers)
}

/// Is the workspace trusted, so its settings count: `GEMINI_CLI_TRUST_WORKSPACE=true`
/// (`false`, or `GEMINI_RESTRICTED_MODE=true`, says no), `--skip-trust`, or folder trust
/// turned off in the settings (`security.folderTrust.enabled: false`). The CLI's list of
/// trusted folders (`~/.gemini/trustedFolders.json`) is not read: a workspace only it
/// trusts counts as untrusted here.
fn trusted(parsed: &gemini::Parsed, layers: &[Layer]) -> bool {
    let env = |k: &str| environ::var(k).unwrap_or_default();
    if env("GEMINI_RESTRICTED_MODE") == "true" || env("GEMINI_CLI_TRUST_WORKSPACE") == "false" {
        return false;
    }
    if env("GEMINI_CLI_TRUST_WORKSPACE") == "true" || parsed.on("skip-trust") {
        return true;
    }
    layers
        .iter()
        .rev()
        .find_map(|l| l.values.get("security.folderTrust.enabled"))
        .is_some_and(|v| v == "false")
}

/// One settings file as a layer; `None` when it does not exist. Read as
/// [`files::read_config`] reads a CLI's configuration: a regular file (through a link), at
/// most 1 MiB (a FIFO hung the relaunch parent, which ignores SIGTERM; `/dev/zero` grew).
fn read_layer(file: &Path) -> Result<Option<Layer>, String> {
    let text = match files::read_config(file) {
        Ok(Some(t)) => t,
        Ok(None) => return Ok(None),
        Err(e) => return Err(e.line("Gemini CLI's settings", file)),
    };
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("{}: not JSON: {e}", file.display()))?;
    let mut values = BTreeMap::new();
    flatten("", &value, &mut values);
    Ok(Some(Layer {
        name: format!("settings.json ({})", file.display()),
        values,
    }))
}

/// `value` flattened to dotted keys under `prefix` (strings as their text).
fn flatten(prefix: &str, value: &serde_json::Value, out: &mut BTreeMap<String, String>) {
    match value {
        serde_json::Value::Object(map) => {
            for (k, v) in map {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(&key, v, out);
            }
        }
        serde_json::Value::String(s) if !prefix.is_empty() => {
            out.insert(prefix.to_string(), s.clone());
        }
        v if !prefix.is_empty() => {
            out.insert(prefix.to_string(), v.to_string());
        }
        _ => {}
    }
}

/// Piped stdin as the CLI reads it: nothing within 500 ms is none; else to its end, at
/// most the cassette line limit (fake-pi's bound; the CLI truncates at 8 MiB).
fn read_stdin() -> Result<String, i32> {
    let max = pi_cassette::Limits::from_env().max_line_bytes;
    let (tx, rx) = std::sync::mpsc::channel::<std::io::Result<Vec<u8>>>();
    let _ = crate::signals::spawn_thread("fake-pi-stdin", move || {
        let mut stdin = std::io::stdin().lock();
        let mut first = [0u8; 8192];
        let n = match stdin.read(&mut first) {
            Ok(n) => n,
            Err(e) => {
                let _ = tx.send(Err(e));
                return;
            }
        };
        let _ = tx.send(Ok(first[..n].to_vec()));
        if n > 0 {
            let mut rest = Vec::new();
            let read = stdin.take(max as u64).read_to_end(&mut rest);
            let _ = tx.send(read.map(|_| rest));
        }
    });
    let failed = |e: std::io::Error| fail(exit::MISUSE, format!("cannot read stdin: {e}"));
    // The first bytes within 500 ms, then the rest without a time limit.
    let mut raw = match rx.recv_timeout(Duration::from_millis(500)) {
        Ok(r) => r.map_err(failed)?,
        Err(_) => return Ok(String::new()),
    };
    if !raw.is_empty() {
        if let Ok(rest) = rx.recv() {
            raw.extend(rest.map_err(failed)?);
        }
    }
    if raw.len() > max {
        return Err(fail(
            exit::MISUSE,
            format!(
                "stdin: more than {max} bytes piped (the limit; raise it with {}=BYTES)",
                pi_cassette::input::MAX_LINE_ENV
            ),
        ));
    }
    Ok(String::from_utf8_lossy(&raw).into_owned())
}
