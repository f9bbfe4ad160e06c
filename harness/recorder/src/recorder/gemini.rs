//! Gemini CLI (`gemini --output-format stream-json -p ...`) recordings, the pure parts: the
//! throwaway `~/.gemini/settings.json` ([`settings_json`]: the recorder's stand-in merged with
//! the scenario's own settings), the command line read ([`parse_call`], the few options the
//! expectation needs), the header's `expect` ([`gemini_expect`], effective values from the
//! command line, the environment given and the scenario's settings), the measured answer to
//! signals ([`measured_process`]), the ids and times Gemini invents ([`session_id`],
//! [`redact_ids_and_times`]) and where its tools hang in its process tree ([`tool_root`]).
//! The run itself is `gemini_run`'s.
//!
//! What the recorder sets so that Gemini CLI 0.61.0 talks to the loopback server, measured:
//! `GOOGLE_GEMINI_BASE_URL`, `GEMINI_API_KEY` and `security.auth.selectedType =
//! "gemini-api-key"` in the settings (without it the base URL makes the auth type "gateway":
//! "Invalid auth method selected.", exit 41), and the workspace trusted
//! (`GEMINI_CLI_TRUST_WORKSPACE=true`; without it a headless run prints "Gemini CLI is not
//! running in a trusted directory" and exits 55 before any request). These are the
//! recorder's stand-in, as Codex's provider config is: a caller reaches its own server its own
//! way and trusts its folder its own way (`--skip-trust`, `trustedFolders.json` or the
//! variable), so none of them is expected of a replay. What the scenario itself chooses (its
//! command line, its `--setting`s, its `--env`) is.

use std::collections::BTreeMap;

use pi_cassette::redact::{TS, TS_MS};
use pi_cassette::SignalAction;
use pi_cassette::{EffectiveExpect, Expect, FlagRule, ProcessBehaviour, Secret, SessionUse};
use serde_json::{json, Value};

/// The variable Gemini CLI reads its API key from.
pub const GEMINI_KEY_VAR: &str = "GEMINI_API_KEY";

/// How many times Gemini CLI 0.61.0 tries a model call when `general.maxAttempts` is not set
/// (its bundle's default, and what was measured: still retrying a 500 after 200 s).
pub const DEFAULT_MAX_ATTEMPTS: u32 = 10;

/// The model Gemini CLI 0.61.0 runs without `-m`, `GEMINI_MODEL` or `model.name`: `auto`
/// (it then first asks the server to route with a `generateContent` call).
pub const DEFAULT_MODEL: &str = "auto";

/// The approval mode without `-y`, `--approval-mode` or `general.defaultApprovalMode`.
pub const DEFAULT_APPROVAL: &str = "default";

/// What the recorder's own settings say (the stand-in; never expected of a replay): the
/// API-key auth, telemetry, usage statistics and updates off.
fn stand_in_settings() -> Value {
    json!({
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "telemetry": {"enabled": false},
        "privacy": {"usageStatisticsEnabled": false},
        "general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false}
    })
}

/// Parse `--setting KEY=VALUE`: a dotted key (`general.maxAttempts`) and a JSON value (a bare
/// word that is not JSON is a string).
pub fn parse_setting(text: &str) -> Result<(String, Value), String> {
    let (key, value) = text
        .split_once('=')
        .ok_or_else(|| format!("--setting {text:?}: expected KEY=VALUE (general.maxAttempts=2)"))?;
    if key.is_empty() || key.split('.').any(str::is_empty) {
        return Err(format!(
            "--setting {text:?}: the key must be dotted names (general.maxAttempts)"
        ));
    }
    let value = serde_json::from_str(value).unwrap_or_else(|_| Value::String(value.to_string()));
    Ok((key.to_string(), value))
}

/// `settings` (dotted key, value) as a nested object (pure).
pub fn nested(settings: &[(String, Value)]) -> Value {
    let mut root = json!({});
    for (key, value) in settings {
        set_dotted(&mut root, key, value.clone());
    }
    root
}

fn set_dotted(root: &mut Value, key: &str, value: Value) {
    let mut at = root;
    let parts: Vec<&str> = key.split('.').collect();
    for part in &parts[..parts.len() - 1] {
        if !at.get(*part).is_some_and(Value::is_object) {
            at[*part] = json!({});
        }
        at = &mut at[*part];
    }
    at[parts[parts.len() - 1]] = value;
}

/// `~/.gemini/settings.json` of a recording (pure): the stand-in's settings with the
/// scenario's `settings` (dotted keys) set over them.
pub fn settings_json(settings: &[(String, Value)]) -> Value {
    let mut root = stand_in_settings();
    for (key, value) in settings {
        set_dotted(&mut root, key, value.clone());
    }
    root
}

/// What kind of value an option takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Takes {
    /// A boolean switch (`--yolo`, `--yolo=false`).
    Switch,
    /// One value.
    One,
    /// Values up to the next option (yargs arrays).
    Many,
}

/// Gemini CLI 0.61.0's options (`gemini --help`): long name, short alias, what it takes.
const OPTIONS: &[(&str, Option<char>, Takes)] = &[
    ("debug", Some('d'), Takes::Switch),
    ("model", Some('m'), Takes::One),
    ("prompt", Some('p'), Takes::One),
    ("prompt-interactive", Some('i'), Takes::One),
    ("skip-trust", None, Takes::Switch),
    ("worktree", Some('w'), Takes::One),
    ("sandbox", Some('s'), Takes::Switch),
    ("yolo", Some('y'), Takes::Switch),
    ("approval-mode", None, Takes::One),
    ("policy", None, Takes::Many),
    ("admin-policy", None, Takes::Many),
    ("acp", None, Takes::Switch),
    ("experimental-acp", None, Takes::Switch),
    ("allowed-mcp-server-names", None, Takes::Many),
    ("allowed-tools", None, Takes::Many),
    ("extensions", Some('e'), Takes::Many),
    ("list-extensions", Some('l'), Takes::Switch),
    ("resume", Some('r'), Takes::One),
    ("session-file", None, Takes::One),
    ("session-id", None, Takes::One),
    ("list-sessions", None, Takes::Switch),
    ("delete-session", None, Takes::One),
    ("include-directories", None, Takes::Many),
    ("screen-reader", None, Takes::Switch),
    ("output-format", Some('o'), Takes::One),
    ("raw-output", None, Takes::Switch),
    ("accept-raw-output-risk", None, Takes::Switch),
];

/// A Gemini CLI command line, read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GeminiCall {
    /// Options by long name (the prompt excluded), each value given (`None`: a switch).
    pub flags: BTreeMap<String, Vec<Option<String>>>,
    /// `-p/--prompt`'s text.
    pub prompt: Option<String>,
    /// The positional query words.
    pub query: Vec<String>,
}

impl GeminiCall {
    fn value(&self, long: &str) -> Option<&str> {
        self.flags
            .get(long)
            .and_then(|v| v.last())
            .and_then(|v| v.as_deref())
    }

    /// Whether switch `long` is on (given bare, or `=true`).
    fn on(&self, long: &str) -> bool {
        self.flags
            .get(long)
            .and_then(|v| v.last())
            .is_some_and(|v| v.as_deref().map_or(true, |v| v == "true"))
    }

    /// The prompt of the command line: `-p`'s text, else the query words joined by spaces.
    pub fn argv_prompt(&self) -> Option<String> {
        self.prompt
            .clone()
            .or_else(|| (!self.query.is_empty()).then(|| self.query.join(" ")))
    }
}

fn find_long(name: &str) -> Option<(&'static str, Takes)> {
    OPTIONS
        .iter()
        .find(|(l, _, _)| *l == name)
        .map(|(l, _, t)| (*l, *t))
}

/// Read a Gemini CLI command line (pure): the options above by long or short name (yargs'
/// `--x=v`, `-m v`, `-mv`), `--` ending them; an error names the argument not understood.
pub fn parse_call(args: &[String]) -> Result<GeminiCall, String> {
    let mut call = GeminiCall::default();
    let mut i = 0;
    let mut only_query = false;
    while i < args.len() {
        let arg = &args[i];
        i += 1;
        if only_query || arg == "-" || !arg.starts_with('-') {
            call.query.push(arg.clone());
            continue;
        }
        if arg == "--" {
            only_query = true;
            continue;
        }
        let (long, takes, inline) = match arg.strip_prefix("--") {
            Some(l) => {
                let (n, v) = match l.split_once('=') {
                    Some((n, v)) => (n, Some(v.to_string())),
                    None => (l, None),
                };
                let (long, takes) = find_long(n)
                    .ok_or_else(|| format!("gemini: unknown argument '--{n}' in {arg:?}"))?;
                (long, takes, v)
            }
            None => {
                let mut chars = arg[1..].chars();
                let short = chars.next().unwrap_or('-');
                let rest: String = chars.collect();
                let (long, _, takes) = OPTIONS
                    .iter()
                    .find(|(_, s, _)| *s == Some(short))
                    .ok_or_else(|| format!("gemini: unknown argument '-{short}' in {arg:?}"))?;
                let rest = rest.strip_prefix('=').map(str::to_string).or(Some(rest));
                (*long, *takes, rest.filter(|r| !r.is_empty()))
            }
        };
        let values: Vec<Option<String>> = match (takes, inline) {
            (Takes::Switch, v) => vec![v],
            (_, Some(v)) => vec![Some(v)],
            (Takes::One, None) => {
                let v = args
                    .get(i)
                    .cloned()
                    .ok_or_else(|| format!("gemini: --{long} needs a value"))?;
                i += 1;
                vec![Some(v)]
            }
            (Takes::Many, None) => {
                let mut v = Vec::new();
                while let Some(a) = args.get(i).filter(|a| !a.starts_with('-')) {
                    v.push(Some(a.clone()));
                    i += 1;
                }
                v
            }
        };
        if long == "prompt" {
            call.prompt = values.into_iter().flatten().last();
        } else {
            call.flags
                .entry(long.to_string())
                .or_default()
                .extend(values);
        }
    }
    Ok(call)
}

/// What Gemini CLI ran with (pure): `mode` the output format; `model` from `-m` >
/// `GEMINI_MODEL` > settings' `model.name` > [`DEFAULT_MODEL`]; `approval` from
/// `--approval-mode` > `-y` (`yolo`) > settings' `general.defaultApprovalMode` >
/// [`DEFAULT_APPROVAL`]; `max_attempts` from `general.maxAttempts` > [`DEFAULT_MAX_ATTEMPTS`];
/// `sandbox` when `-s` or settings' `tools.sandbox` asked for one. `settings` are the
/// scenario's own (not the recorder's stand-in), `env` the variables the scenario gave.
pub fn resolve_effective(
    call: &GeminiCall,
    settings: &Value,
    env: &BTreeMap<String, String>,
) -> EffectiveExpect {
    let setting = |path: &str| {
        path.split('.')
            .try_fold(settings, |v, k| v.get(k))
            .filter(|v| !v.is_null())
    };
    let text = |v: &Value| {
        v.as_str()
            .map(str::to_string)
            .unwrap_or_else(|| v.to_string())
    };
    let model = call
        .value("model")
        .map(str::to_string)
        .or_else(|| env.get("GEMINI_MODEL").cloned())
        .or_else(|| setting("model.name").map(text))
        .unwrap_or_else(|| DEFAULT_MODEL.to_string());
    let approval = call
        .value("approval-mode")
        .map(str::to_string)
        .or_else(|| call.on("yolo").then(|| "yolo".to_string()))
        .or_else(|| setting("general.defaultApprovalMode").map(text))
        .unwrap_or_else(|| DEFAULT_APPROVAL.to_string());
    let max_attempts = setting("general.maxAttempts")
        .and_then(Value::as_u64)
        .and_then(|n| u32::try_from(n).ok())
        .unwrap_or(DEFAULT_MAX_ATTEMPTS);
    let sandbox = if call.on("sandbox") {
        Some("true".to_string())
    } else {
        setting("tools.sandbox")
            .filter(|v| **v != Value::Bool(false))
            .map(text)
    };
    EffectiveExpect {
        mode: Some(call.value("output-format").unwrap_or("text").to_string()),
        model: Some(model),
        approval: Some(approval),
        max_attempts: Some(max_attempts),
        sandbox,
        ..EffectiveExpect::default()
    }
}

/// A Gemini recording's `expect` (pure): `flags` by long name (a value holding a placeholder
/// only present), the prompt in `argv_messages` and `prompt` (piped stdin joined before it
/// as Gemini joins it: `STDIN\n\nPROMPT`), `env` the key variable and the scenario's own
/// variables (`env`, e.g. `GEMINI_CLI_NO_RELAUNCH`), the key never in argv, `effective`
/// ([`resolve_effective`]), `session` new (or resumed with `--resume`).
pub fn gemini_expect(
    args: &[String],
    settings: &[(String, Value)],
    env: &BTreeMap<String, String>,
    stdin: Option<&str>,
) -> Result<Expect, String> {
    let call = parse_call(args)?;
    let mut expect = Expect::default();
    for (name, values) in &call.flags {
        let rule = match values.last() {
            Some(Some(v)) if v.contains('<') && v.contains('>') => FlagRule::Present(true),
            Some(Some(v)) => FlagRule::Value(v.clone()),
            _ => FlagRule::Present(true),
        };
        expect.flags.insert(name.clone(), rule);
    }
    let argv = call.argv_prompt();
    expect.argv_messages = Some(argv.iter().cloned().collect());
    expect.prompt = match (stdin.filter(|s| !s.is_empty()), argv) {
        (Some(s), Some(p)) => Some(format!("{s}\n\n{p}")),
        (Some(s), None) => Some(s.to_string()),
        (None, p) => p,
    };
    expect.env = std::iter::once(GEMINI_KEY_VAR.to_string())
        .chain(env.keys().cloned())
        .collect();
    expect.never_in_argv = vec![Secret::Env(GEMINI_KEY_VAR.to_string())];
    expect.effective = Some(resolve_effective(&call, &nested(settings), env));
    expect.session = Some(if call.flags.contains_key("resume") {
        SessionUse::Resumed
    } else {
        SessionUse::New
    });
    Ok(expect)
}

/// How the process that runs a Gemini CLI 0.61.0 session (the relaunched child, or the only
/// process with `GEMINI_CLI_NO_RELAUNCH=1`) answers a signal mid-tool, measured by recording
/// it: SIGTERM, SIGINT and SIGHUP make it exit 0 within about 30-200 ms without touching its
/// tools (their shell tree lives on, orphaned). (The relaunch parent ignores all three: that
/// is the process shape, not this field.)
pub fn measured_process() -> ProcessBehaviour {
    ProcessBehaviour {
        on_sigterm: SignalAction::Exit { code: 0 },
        on_sigint: SignalAction::Exit { code: 0 },
        on_sighup: SignalAction::Exit { code: 0 },
    }
}

/// The `session_id` of Gemini's `init` line, if `line` is one.
pub fn session_id(line: &[u8]) -> Option<String> {
    let v: Value = serde_json::from_slice(line).ok()?;
    (v.get("type")? == "init").then(|| v.get("session_id")?.as_str().map(str::to_string))?
}

/// True for the line that starts a tool: a `tool_use` event (the recorded `spawn` records
/// follow the last one).
pub fn is_tool_start(line: &[u8]) -> bool {
    serde_json::from_slice::<Value>(line).is_ok_and(|v| v["type"] == "tool_use")
}

/// True for Gemini's closing `result` line.
pub fn is_result(line: &[u8]) -> bool {
    serde_json::from_slice::<Value>(line).is_ok_and(|v| v["type"] == "result")
}

/// `text` with what Gemini CLI stamps with the clock made stable (pure): ISO-8601 times
/// (every event's `timestamp`) become [`TS`]; the epoch milliseconds inside its tool ids
/// (`run_shell_command__run_shell_command_1795672339834_0`) become [`TS_MS`]; the stamp of its
/// error reports' file names (`gemini-client-error-...-2026-11-26T05-52-28-797Z.json`) becomes
/// [`TS`]. Returns the text and how many ISO times, epochs and stamps were replaced.
pub fn redact_ids_and_times(text: &str) -> (String, usize, usize) {
    let (text, mut iso) = pi_cassette::redact::redact_iso_timestamps(text);
    let (text, stamps) = replace_file_stamps(&text);
    iso += stamps;
    let mut out = String::with_capacity(text.len());
    let mut epochs = 0;
    let mut rest = text.as_str();
    const MARK: &str = "run_shell_command_";
    while let Some(at) = rest.find(MARK) {
        let digits_at = at + MARK.len();
        out.push_str(&rest[..digits_at]);
        rest = &rest[digits_at..];
        let n = rest.bytes().take_while(u8::is_ascii_digit).count();
        if n == 13 && rest[n..].starts_with('_') {
            out.push_str(TS_MS);
            rest = &rest[n..];
            epochs += 1;
        }
    }
    out.push_str(rest);
    (out, iso, epochs)
}

/// The names of the temp dirs Gemini CLI makes for its shell tool (`gemini-shell-` and six
/// random letters or digits, named in the tool's command line) found in `text` (pure).
pub fn shell_dirs(text: &str) -> Vec<String> {
    const MARK: &str = "gemini-shell-";
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find(MARK) {
        let tail = &rest[at + MARK.len()..];
        let n = tail.bytes().take_while(u8::is_ascii_alphanumeric).count();
        if n == 6 {
            let name = format!("{MARK}{}", &tail[..n]);
            if !found.contains(&name) {
                found.push(name);
            }
        }
        rest = &tail[n..];
    }
    found
}

/// `YYYY-MM-DDTHH-MM-SS-mmmZ` (a file name's stamp) replaced by [`TS`].
fn replace_file_stamps(text: &str) -> (String, usize) {
    let b = text.as_bytes();
    let shape = b"dddd-dd-ddTdd-dd-dd-dddZ";
    let fits = |i: usize| {
        b.len() >= i + shape.len()
            && shape.iter().enumerate().all(|(k, s)| match s {
                b'd' => b[i + k].is_ascii_digit(),
                c => b[i + k] == *c,
            })
    };
    let mut out = String::with_capacity(text.len());
    let (mut last, mut i, mut n) = (0, 0, 0);
    while i < b.len() {
        if fits(i) {
            out.push_str(&text[last..i]);
            out.push_str(TS);
            i += shape.len();
            last = i;
            n += 1;
        } else {
            i += 1;
        }
    }
    out.push_str(&text[last..]);
    (out, n)
}

/// The process whose children are Gemini's tools (pure): the relaunched node child of `top`
/// (its child whose command is `node`), else `top` itself (`GEMINI_CLI_NO_RELAUNCH=1`).
/// `(pid, sid)` from `tree` (`(pid, ppid, sid, argv0)` rows).
pub fn tool_root(top: (i32, i32), tree: &[(i32, i32, i32, String)]) -> (i32, i32) {
    tree.iter()
        .find(|(_, ppid, _, argv0)| {
            *ppid == top.0
                && std::path::Path::new(argv0)
                    .file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n == "node" || n.starts_with("node"))
        })
        .map_or(top, |(pid, _, sid, _)| (*pid, *sid))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn the_settings_are_the_stand_in_with_the_scenarios_own_over_them() {
        let plain = settings_json(&[]);
        assert_eq!(
            plain["security"]["auth"]["selectedType"], "gemini-api-key",
            "without it the base URL makes the auth type `gateway` (exit 41)"
        );
        assert_eq!(plain["telemetry"]["enabled"], false);
        assert_eq!(plain["privacy"]["usageStatisticsEnabled"], false);
        assert_eq!(plain["general"]["enableAutoUpdate"], false);
        assert_eq!(plain["general"]["enableAutoUpdateNotification"], false);
        let own = vec![
            parse_setting("general.maxAttempts=2").unwrap(),
            parse_setting("model.name=gemini-2.5-pro").unwrap(),
        ];
        let v = settings_json(&own);
        assert_eq!(v["general"]["maxAttempts"], 2, "a JSON number stays one");
        assert_eq!(
            v["general"]["enableAutoUpdate"], false,
            "set beside the stand-in's, not over its section"
        );
        assert_eq!(
            v["model"]["name"], "gemini-2.5-pro",
            "a bare word is a string"
        );
        assert_eq!(
            nested(&own),
            json!({"general": {"maxAttempts": 2}, "model": {"name": "gemini-2.5-pro"}})
        );
        for bad in ["general.maxAttempts", "=2", "general..x=1", ".x=1"] {
            assert!(
                parse_setting(bad).unwrap_err().contains("--setting"),
                "{bad}"
            );
        }
    }

    #[test]
    fn the_expectation_comes_from_the_command_line_the_settings_and_the_env() {
        let args = s(&[
            "--output-format",
            "stream-json",
            "-m",
            "gemini-2.5-flash",
            "-y",
            "-p",
            "Say hi",
        ]);
        let e = gemini_expect(&args, &[], &BTreeMap::new(), None).unwrap();
        assert_eq!(
            e.flags["output-format"],
            FlagRule::Value("stream-json".into())
        );
        assert_eq!(e.flags["model"], FlagRule::Value("gemini-2.5-flash".into()));
        assert_eq!(e.flags["yolo"], FlagRule::Present(true));
        assert!(!e.flags.contains_key("prompt"), "the prompt is a message");
        assert_eq!(e.argv_messages, Some(s(&["Say hi"])));
        assert_eq!(e.prompt.as_deref(), Some("Say hi"));
        assert_eq!(
            e.env,
            s(&["GEMINI_API_KEY"]),
            "the stand-in's variables are not expected"
        );
        assert_eq!(e.never_in_argv, vec![Secret::Env("GEMINI_API_KEY".into())]);
        assert_eq!(e.session, Some(SessionUse::New));
        let eff = e.effective.unwrap();
        assert_eq!(eff.mode.as_deref(), Some("stream-json"));
        assert_eq!(eff.model.as_deref(), Some("gemini-2.5-flash"));
        assert_eq!(eff.approval.as_deref(), Some("yolo"));
        assert_eq!(eff.max_attempts, Some(DEFAULT_MAX_ATTEMPTS));
        assert_eq!(
            eff.provider, None,
            "the server stands in: no provider expected"
        );
        assert_eq!(eff.sandbox, None);

        // The scenario's settings and env; stdin joined before the prompt as Gemini does.
        let settings = vec![
            parse_setting("general.maxAttempts=2").unwrap(),
            parse_setting("general.defaultApprovalMode=auto_edit").unwrap(),
            parse_setting("model.name=from-settings").unwrap(),
        ];
        let env = BTreeMap::from([("GEMINI_CLI_NO_RELAUNCH".to_string(), "1".to_string())]);
        let e = gemini_expect(
            &s(&["-o", "stream-json", "--prompt=go"]),
            &settings,
            &env,
            Some("piped text"),
        )
        .unwrap();
        assert_eq!(e.prompt.as_deref(), Some("piped text\n\ngo"));
        assert_eq!(e.argv_messages, Some(s(&["go"])));
        assert_eq!(e.env, s(&["GEMINI_API_KEY", "GEMINI_CLI_NO_RELAUNCH"]));
        let eff = e.effective.unwrap();
        assert_eq!(eff.max_attempts, Some(2));
        assert_eq!(
            eff.approval.as_deref(),
            Some("auto_edit"),
            "settings without a flag"
        );
        assert_eq!(eff.model.as_deref(), Some("from-settings"));
        // GEMINI_MODEL beats the settings, -m beats both; --approval-mode beats -y.
        let env = BTreeMap::from([("GEMINI_MODEL".to_string(), "from-env".to_string())]);
        let eff = gemini_expect(&s(&["-p", "x"]), &settings, &env, None)
            .unwrap()
            .effective
            .unwrap();
        assert_eq!(eff.model.as_deref(), Some("from-env"));
        assert_eq!(
            eff.mode.as_deref(),
            Some("text"),
            "the output format's default"
        );
        let eff = gemini_expect(
            &s(&["-m", "m1", "-y", "--approval-mode", "plan", "-s", "-p", "x"]),
            &settings,
            &env,
            None,
        )
        .unwrap()
        .effective
        .unwrap();
        assert_eq!(eff.model.as_deref(), Some("m1"));
        assert_eq!(eff.approval.as_deref(), Some("plan"));
        assert_eq!(eff.sandbox.as_deref(), Some("true"));
        let eff = gemini_expect(&s(&["hello", "there"]), &[], &BTreeMap::new(), None).unwrap();
        assert_eq!(
            eff.argv_messages,
            Some(s(&["hello there"])),
            "a positional query"
        );
        let eff = eff.effective.unwrap();
        assert_eq!(eff.model.as_deref(), Some(DEFAULT_MODEL));
        assert_eq!(eff.approval.as_deref(), Some(DEFAULT_APPROVAL));
        let e = gemini_expect(
            &s(&["-r", "latest", "-p", "more"]),
            &[],
            &BTreeMap::new(),
            None,
        )
        .unwrap();
        assert_eq!(e.session, Some(SessionUse::Resumed));
        assert_eq!(e.flags["resume"], FlagRule::Value("latest".into()));

        for (bad, says) in [
            (&["--nope", "x"][..], "'--nope'"),
            (&["-Z"][..], "'-Z'"),
            (&["-m"][..], "needs a value"),
        ] {
            let err = gemini_expect(&s(bad), &[], &BTreeMap::new(), None).unwrap_err();
            assert!(err.contains(says), "{bad:?}: {err}");
        }
        let c = parse_call(&s(&["--include-directories", "a", "b", "-y", "q"])).unwrap();
        assert_eq!(
            c.flags["include-directories"],
            vec![Some("a".into()), Some("b".into())]
        );
        assert_eq!(c.query, s(&["q"]), "an array stops at the next option");
    }

    #[test]
    fn ids_times_and_shell_dirs_are_found_and_made_stable() {
        let line = r#"{"type":"tool_use","timestamp":"2026-11-26T05:52:19.954Z","tool_id":"run_shell_command__run_shell_command_1795672339834_0"}"#;
        let (out, iso, epochs) = redact_ids_and_times(line);
        assert_eq!(
            out,
            r#"{"type":"tool_use","timestamp":"<TS>","tool_id":"run_shell_command__run_shell_command_1700000000000_0"}"#
        );
        assert_eq!((iso, epochs), (1, 1));
        let err = "Full report available at: /t/gemini-client-error-Turn.run-sendMessageStream-2026-11-26T05-52-28-797Z.json";
        let (out, iso, _) = redact_ids_and_times(err);
        assert!(out.ends_with("sendMessageStream-<TS>.json"), "{out}");
        assert_eq!(iso, 1);
        // Not a tool id's epoch: left alone.
        let (out, _, epochs) = redact_ids_and_times("run_shell_command_123_0 and 1795672339834");
        assert_eq!(
            (out.as_str(), epochs),
            ("run_shell_command_123_0 and 1795672339834", 0)
        );
        assert_eq!(
            session_id(br#"{"type":"init","session_id":"406f5875-ab0a","model":"m"}"#).as_deref(),
            Some("406f5875-ab0a")
        );
        assert_eq!(session_id(br#"{"type":"result","session_id":"x"}"#), None);
        assert!(is_tool_start(
            br#"{"type":"tool_use","tool_name":"run_shell_command"}"#
        ));
        assert!(!is_tool_start(br#"{"type":"tool_result"}"#));
        assert!(is_result(br#"{"type":"result","status":"success"}"#));
        assert_eq!(
            shell_dirs("_bgpids_file=/t/gemini-shell-McIL34/bgpids.tmp; /t/gemini-shell-McIL34/x gemini-shell-ab"),
            s(&["gemini-shell-McIL34"])
        );
    }

    #[test]
    fn the_tools_hang_under_the_relaunched_child_or_the_only_process() {
        let tree = vec![
            (11, 10, 10, "/usr/bin/node".to_string()),
            (12, 11, 12, "/usr/bin/bash".to_string()),
        ];
        assert_eq!(tool_root((10, 10), &tree), (11, 10), "the relaunched child");
        assert_eq!(tool_root((11, 10), &tree[1..]), (11, 10), "no relaunch");
        let p = measured_process();
        assert_eq!(p.on_sigterm, SignalAction::Exit { code: 0 });
        assert_eq!(p.on_sigint, SignalAction::Exit { code: 0 });
        assert_eq!(p.on_sighup, SignalAction::Exit { code: 0 });
    }
}
