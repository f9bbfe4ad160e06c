//! Codex CLI (`codex exec --json`) recordings, the pure parts: which provider and model the
//! scripted server stands in for ([`CodexStandIn`]), the `config.toml` written for the run
//! ([`config_toml`]), the header's `expect` read off `codex exec`'s command line
//! ([`codex_expect`], its effective values resolved in one small function,
//! [`resolve_effective`]), the ids Codex invents ([`thread_id`]), and where its tools hang
//! in its process tree ([`tool_root`]). The run itself is `codex_run`'s.
//!
//! Codex reaches the scripted server through a named provider of the run's `config.toml`
//! (`[model_providers.ID]` with `base_url`, `env_key`, `wire_api = "responses"`). Measured
//! with 0.169.0: the built-in `openai` provider can be pointed elsewhere (`openai_base_url`,
//! or `OPENAI_BASE_URL`), but it then first tries the Responses WebSocket (7 failed upgrades,
//! `Reconnecting... n/5` events and a "Falling back from WebSockets" error item before every
//! turn), reads its key from `CODEX_API_KEY` (not `OPENAI_API_KEY`), and its retries cannot
//! be set (`model_providers.openai` is refused: "reserved built-in provider IDs"). So a
//! built-in provider is stood in for by a named one (`openai-pi-harness`) with the same key
//! variable, and the header names the production provider.

use std::collections::BTreeMap;

use super::ChildFate;

use pi_cassette::{
    EffectiveExpect, Expect, FlagRule, ProcessBehaviour, Secret, SessionUse, SignalAction,
};

/// The provider ids Codex 0.169.0 reserves for its built-in providers.
pub const BUILT_IN_PROVIDERS: &[&str] = &["openai", "ollama", "lmstudio"];

/// The provider and model a Codex recording stands in for when the record command names
/// none: the fake ones, as for pi.
pub const CODEX_FAKE: (&str, &str) = ("fake", "fake-model");

/// What the scripted server stands in for in a Codex recording.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodexStandIn {
    /// The provider the cassette expects (`openai`, or a provider of the caller's own).
    pub provider: String,
    /// The `[model_providers.ID]` the run's `config.toml` defines for it (a built-in id
    /// cannot be redefined: it gets a suffix).
    pub config_id: String,
    /// The model the run's `config.toml` names.
    pub model: String,
    /// The variable the key is read from: `CODEX_API_KEY` for the built-in `openai` (what
    /// `codex exec` reads, measured), else `PROVIDER_API_KEY`.
    pub env_key: String,
}

impl CodexStandIn {
    /// The stand-in for `provider`/`model` (the record command's `--provider`/`--model`),
    /// or the fake names.
    pub fn new(provider: Option<&str>, model: Option<&str>) -> CodexStandIn {
        let provider = provider.unwrap_or(CODEX_FAKE.0).to_string();
        let model = model.unwrap_or(CODEX_FAKE.1).to_string();
        let built_in = BUILT_IN_PROVIDERS.contains(&provider.as_str());
        let config_id = if built_in {
            format!("{provider}-pi-harness")
        } else {
            provider.clone()
        };
        let env_key = if provider == "openai" {
            "CODEX_API_KEY".to_string()
        } else {
            let upper: String = provider
                .chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() {
                        c.to_ascii_uppercase()
                    } else {
                        '_'
                    }
                })
                .collect();
            format!("{upper}_API_KEY")
        };
        CodexStandIn {
            provider,
            config_id,
            model,
            env_key,
        }
    }
}

/// How Codex 0.169.0 answers each signal mid-tool, measured by recording it (the node
/// wrapper signalled, or its process group: the same): SIGTERM and SIGHUP kill it by the
/// signal within about 30 ms (the tool's shell is killed, a process that shell started
/// survives it: `kill_children_die`), SIGINT makes it exit 1 within about 50 ms with the
/// whole tool tree killed. A recording's header carries these, and the answer it measured
/// itself ([`death_answer`]).
pub fn measured_process() -> ProcessBehaviour {
    ProcessBehaviour {
        on_sigterm: SignalAction::KillChildrenDie,
        on_sigint: SignalAction::CleanupExit { code: 1 },
        on_sighup: SignalAction::KillChildrenDie,
    }
}

/// What Codex did with the signal it died by (`seen`: `die`, read off its ending alone),
/// from what became of the processes under `root`, the native binary (pure): its tools
/// (`root`'s children) all killed while a process they started survived is
/// `kill_children_die`; the tools and everything they started killed, `cleanup_die`; a
/// tool that survived, `die`. Any other answer (an exit) is `seen` as it is.
pub fn death_answer(seen: &SignalAction, root: i32, children: &[ChildFate]) -> SignalAction {
    if *seen != SignalAction::Die {
        return seen.clone();
    }
    let tools: Vec<&ChildFate> = children.iter().filter(|c| c.ppid == root).collect();
    // Under a tool: its parent chain reaches one.
    let under_tool = |c: &ChildFate| {
        let mut ppid = c.ppid;
        for _ in 0..children.len() {
            if tools.iter().any(|t| t.pid == ppid) {
                return true;
            }
            match children.iter().find(|p| p.pid == ppid) {
                Some(p) => ppid = p.ppid,
                None => return false,
            }
        }
        false
    };
    let started: Vec<&ChildFate> = children.iter().filter(|c| under_tool(c)).collect();
    if tools.is_empty() || tools.iter().any(|t| t.survived) {
        SignalAction::Die
    } else if started.iter().any(|c| c.survived) {
        SignalAction::KillChildrenDie
    } else {
        SignalAction::CleanupDie
    }
}

/// A TOML basic string (quoted, escaped).
fn toml_str(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The `config.toml` of a recording (pure): the stand-in's provider pointing at the server
/// (`base_url` ends in `/v1`), approvals never asked, tools unsandboxed (the run's own
/// throwaway directories), plugins, analytics and the update check off (otherwise Codex
/// reaches for the network at start-up); `retries`, when given, bounds both the request
/// and the stream retries (Codex's defaults, 4 and 5, make 30 requests over 25 s on a 5xx).
pub fn config_toml(stand_in: &CodexStandIn, base_url: &str, retries: Option<u32>) -> String {
    let mut t = String::from("# Written by pi-harness record for one recording.\n");
    t.push_str(&format!("model = {}\n", toml_str(&stand_in.model)));
    t.push_str(&format!(
        "model_provider = {}\n",
        toml_str(&stand_in.config_id)
    ));
    t.push_str("approval_policy = \"never\"\n");
    t.push_str("sandbox_mode = \"danger-full-access\"\n");
    t.push_str("check_for_update_on_startup = false\n\n");
    t.push_str("[analytics]\nenabled = false\n\n");
    t.push_str("[features]\nplugins = false\n\n");
    t.push_str(&format!(
        "[model_providers.{}]\n",
        toml_str(&stand_in.config_id)
    ));
    t.push_str(&format!("name = {}\n", toml_str(&stand_in.provider)));
    t.push_str(&format!("base_url = {}\n", toml_str(base_url)));
    t.push_str(&format!("env_key = {}\n", toml_str(&stand_in.env_key)));
    t.push_str("wire_api = \"responses\"\n");
    if let Some(n) = retries {
        t.push_str(&format!(
            "request_max_retries = {n}\nstream_max_retries = {n}\n"
        ));
    }
    t
}

/// The values the run's `config.toml` sets, as [`resolve_effective`] reads them: the
/// production provider (not the config id), the model, the sandbox and the approval policy.
pub fn config_values(stand_in: &CodexStandIn) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("model_provider".into(), stand_in.provider.clone()),
        ("model".into(), stand_in.model.clone()),
        ("sandbox_mode".into(), "danger-full-access".into()),
        ("approval_policy".into(), "never".into()),
    ])
}

/// `codex exec` options of 0.169.0: long name, short alias, whether it takes a value.
const OPTIONS: &[(&str, Option<char>, bool)] = &[
    ("config", Some('c'), true),
    ("enable", None, true),
    ("disable", None, true),
    ("strict-config", None, false),
    ("image", Some('i'), true),
    ("model", Some('m'), true),
    ("oss", None, false),
    ("local-provider", None, true),
    ("profile", Some('p'), true),
    ("sandbox", Some('s'), true),
    ("approve-for-me", None, false),
    ("dangerously-bypass-approvals-and-sandbox", None, false),
    ("dangerously-bypass-hook-trust", None, false),
    ("cd", Some('C'), true),
    ("worktree", None, false),
    ("add-dir", None, true),
    ("thread-source", None, true),
    ("cyber-access-program", None, true),
    ("skip-git-repo-check", None, false),
    ("trust", None, false),
    ("ephemeral", None, false),
    ("ignore-user-config", None, false),
    ("ignore-rules", None, false),
    ("output-schema", None, true),
    ("color", None, true),
    ("json", None, false),
    ("output-last-message", Some('o'), true),
    // `exec resume` only.
    ("last", None, false),
    ("all", None, false),
];

/// A `codex exec` command line, read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExecCall {
    /// `exec resume`.
    pub resume: bool,
    /// Options by long name, each value given (`None` for a switch); `config` excluded.
    pub flags: BTreeMap<String, Vec<Option<String>>>,
    /// `-c key=value` overrides, in order.
    pub overrides: Vec<(String, String)>,
    /// The positionals: `[SESSION_ID] [PROMPT]` for resume, `[PROMPT]` for exec.
    pub positionals: Vec<String>,
}

impl ExecCall {
    /// The prompt given in argv (not `-`, which reads stdin).
    pub fn prompt(&self) -> Option<&str> {
        let last_only = !self.resume || self.flags.contains_key("last");
        let p = if last_only {
            self.positionals.first()
        } else {
            self.positionals.get(1)
        };
        p.map(String::as_str).filter(|p| *p != "-")
    }

    fn value(&self, long: &str) -> Option<&str> {
        self.flags
            .get(long)
            .and_then(|v| v.last())
            .and_then(|v| v.as_deref())
    }

    fn override_of(&self, key: &str) -> Option<String> {
        self.overrides
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.trim().trim_matches('"').trim_matches('\'').to_string())
    }
}

/// Read `codex exec [resume] ...` (pure); an error names the argument Codex would refuse.
pub fn parse_exec(args: &[String]) -> Result<ExecCall, String> {
    let mut call = ExecCall::default();
    let mut it = args.iter().peekable();
    match it.next().map(String::as_str) {
        Some("exec") | Some("e") => {}
        other => {
            return Err(format!(
                "record --agent codex records `codex exec`: the arguments start with {:?}",
                other.unwrap_or("")
            ))
        }
    }
    if it.peek().map(|a| a.as_str()) == Some("resume") {
        it.next();
        call.resume = true;
    }
    let mut only_positionals = false;
    while let Some(arg) = it.next() {
        if only_positionals || arg == "-" || !arg.starts_with('-') {
            call.positionals.push(arg.clone());
            continue;
        }
        if arg == "--" {
            only_positionals = true;
            continue;
        }
        let (name, inline) = match arg.strip_prefix("--") {
            Some(long) => match long.split_once('=') {
                Some((n, v)) => (n.to_string(), Some(v.to_string())),
                None => (long.to_string(), None),
            },
            None => {
                let mut chars = arg[1..].chars();
                let short = chars.next().unwrap_or('-');
                let rest: String = chars.collect();
                let long = OPTIONS
                    .iter()
                    .find(|(_, s, _)| *s == Some(short))
                    .map(|(l, _, _)| l.to_string())
                    .ok_or_else(|| format!("codex exec: unexpected argument '{arg}'"))?;
                (long, (!rest.is_empty()).then_some(rest))
            }
        };
        let (_, _, takes) = OPTIONS
            .iter()
            .find(|(l, _, _)| *l == name)
            .ok_or_else(|| format!("codex exec: unexpected argument '--{name}'"))?;
        let value = match (takes, inline) {
            (true, Some(v)) => Some(v),
            (true, None) => Some(
                it.next()
                    .cloned()
                    .ok_or_else(|| format!("codex exec: --{name} needs a value"))?,
            ),
            (false, Some(_)) => return Err(format!("codex exec: --{name} takes no value")),
            (false, None) => None,
        };
        if name == "config" {
            let v = value.unwrap_or_default();
            let (k, val) = v
                .split_once('=')
                .ok_or_else(|| format!("codex exec: -c {v:?}: expected key=value"))?;
            call.overrides
                .push((k.trim().to_string(), val.trim().to_string()));
        } else {
            call.flags.entry(name).or_default().push(value);
        }
    }
    Ok(call)
}

/// What Codex ran with (pure): flags, then `-c` overrides, then the run's `config.toml`
/// (`config`, as [`config_values`] gives it); `mode` is `exec`. The one place a recording
/// resolves Codex's effective values.
pub fn resolve_effective(call: &ExecCall, config: &BTreeMap<String, String>) -> EffectiveExpect {
    let from = |flag: Option<&str>, key: &str| {
        flag.map(str::to_string)
            .or_else(|| call.override_of(key))
            .or_else(|| config.get(key).cloned())
    };
    // The sandbox and approval policy the recorder's own config.toml sets (so that tools run
    // wherever it records) are not the caller's: expected only when the call names them.
    let named =
        |flag: Option<&str>, key: &str| flag.map(str::to_string).or_else(|| call.override_of(key));
    let bypass = call
        .flags
        .contains_key("dangerously-bypass-approvals-and-sandbox");
    EffectiveExpect {
        mode: Some("exec".into()),
        provider: from(None, "model_provider"),
        model: from(call.value("model"), "model"),
        sandbox: named(
            call.value("sandbox")
                .or(bypass.then_some("danger-full-access")),
            "sandbox_mode",
        ),
        approval: named(bypass.then_some("never"), "approval_policy"),
        ..EffectiveExpect::default()
    }
}

/// A Codex recording's `expect` (pure): `flags` by long name (a value holding a placeholder
/// only present), `argv_messages` and `prompt` (none in argv: the prompt came on stdin),
/// `env` the provider's key variable (its value never in argv), `effective`, `session`.
pub fn codex_expect(
    args: &[String],
    stand_in: &CodexStandIn,
    stdin: Option<&str>,
) -> Result<Expect, String> {
    let call = parse_exec(args)?;
    let mut expect = Expect::default();
    for (name, values) in &call.flags {
        let rule = match values.last() {
            Some(Some(v)) if v.contains('<') && v.contains('>') => FlagRule::Present(true),
            Some(Some(v)) => FlagRule::Value(v.clone()),
            _ => FlagRule::Present(true),
        };
        expect.flags.insert(name.clone(), rule);
    }
    let prompt = call.prompt().map(str::to_string);
    expect.argv_messages = Some(prompt.iter().cloned().collect());
    expect.prompt = prompt.or_else(|| stdin.map(|s| s.trim().to_string()));
    expect.env = vec![stand_in.env_key.clone()];
    expect.never_in_argv = vec![Secret::Env(stand_in.env_key.clone())];
    expect.effective = Some(resolve_effective(&call, &config_values(stand_in)));
    expect.session = Some(if call.resume {
        SessionUse::Resumed
    } else {
        SessionUse::New
    });
    Ok(expect)
}

/// The `thread_id` of Codex's `thread.started` line, if `line` is one.
pub fn thread_id(line: &[u8]) -> Option<String> {
    let v: serde_json::Value = serde_json::from_slice(line).ok()?;
    (v.get("type")? == "thread.started")
        .then(|| v.get("thread_id")?.as_str().map(str::to_string))?
}

/// True for the line that starts a tool: an `item.started` of a `command_execution` (the
/// recorded `spawn` records follow the last one).
pub fn is_tool_start(line: &[u8]) -> bool {
    serde_json::from_slice::<serde_json::Value>(line)
        .is_ok_and(|v| v["type"] == "item.started" && v["item"]["type"] == "command_execution")
}

/// The process whose children are Codex's tools (pure): the native binary the node
/// wrapper `top` started (its only child running `codex`), else `top` itself (the native
/// binary run directly). `(pid, sid)` from `tree` (`(pid, ppid, sid, argv0)` rows).
pub fn tool_root(top: (i32, i32), tree: &[(i32, i32, i32, String)]) -> (i32, i32) {
    tree.iter()
        .find(|(_, ppid, _, argv0)| {
            *ppid == top.0
                && std::path::Path::new(argv0)
                    .file_name()
                    .is_some_and(|n| n == "codex")
        })
        .map_or(top, |(pid, _, sid, _)| (*pid, *sid))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    fn fate(pid: i32, ppid: i32, command: &str, survived: bool) -> ChildFate {
        ChildFate {
            pid,
            ppid,
            command: command.into(),
            own_session: false,
            survived,
        }
    }

    #[test]
    fn a_death_is_told_apart_by_what_became_of_the_tools_and_what_they_started() {
        let die = SignalAction::Die;
        // The SIGTERM recording: native 11 under the wrapper, its tool's shell 12, the
        // shell's sleep 13 (survived).
        let tree = |shell: bool, sleep: bool| {
            vec![
                fate(11, 10, "codex exec", false),
                fate(12, 11, "/bin/bash -c sleep 300; echo done", shell),
                fate(13, 12, "sleep 300", sleep),
            ]
        };
        assert_eq!(
            death_answer(&die, 11, &tree(false, true)),
            SignalAction::KillChildrenDie
        );
        assert_eq!(
            death_answer(&die, 11, &tree(false, false)),
            SignalAction::CleanupDie
        );
        assert_eq!(death_answer(&die, 11, &tree(true, true)), SignalAction::Die);
        // No tool running: nothing to tell.
        assert_eq!(
            death_answer(&die, 11, &tree(false, true)[..1]),
            SignalAction::Die
        );
        // An exit is what it was.
        let exit = SignalAction::CleanupExit { code: 1 };
        assert_eq!(death_answer(&exit, 11, &tree(false, true)), exit);
    }

    #[test]
    fn the_config_points_a_named_provider_at_the_server_with_everything_else_off() {
        let si = CodexStandIn::new(Some("openai"), Some("gpt-5.5"));
        assert_eq!(
            si.config_id, "openai-pi-harness",
            "a built-in id is reserved"
        );
        assert_eq!(si.env_key, "CODEX_API_KEY");
        let t = config_toml(&si, "http://127.0.0.1:9/v1", Some(1));
        let lines: Vec<&str> = t.lines().collect();
        let has = |l: &str| lines.contains(&l);
        for l in [
            "model = \"gpt-5.5\"",
            "model_provider = \"openai-pi-harness\"",
            "approval_policy = \"never\"",
            "sandbox_mode = \"danger-full-access\"",
            "check_for_update_on_startup = false",
            "[model_providers.\"openai-pi-harness\"]",
            "base_url = \"http://127.0.0.1:9/v1\"",
            "wire_api = \"responses\"",
            "env_key = \"CODEX_API_KEY\"",
            "request_max_retries = 1",
            "stream_max_retries = 1",
        ] {
            assert!(has(l), "{l} in\n{t}");
        }
        let section = |name: &str| {
            let at = lines.iter().position(|l| *l == name).unwrap();
            lines[at + 1]
        };
        assert_eq!(section("[analytics]"), "enabled = false");
        assert_eq!(section("[features]"), "plugins = false");
        let t = config_toml(&CodexStandIn::new(Some("my \"co\"\n"), None), "u", None);
        assert!(t.contains("[model_providers.\"my \\\"co\\\"\\n\"]"), "{t}");
        assert!(t.contains("env_key = \"MY__CO___API_KEY\""), "{t}");
        assert!(!t.contains("max_retries"), "Codex's defaults");
        assert!(t.contains("model = \"fake-model\""));
    }

    #[test]
    fn the_header_expects_flags_prompt_and_what_codex_ran_with() {
        let si = CodexStandIn::new(Some("openai"), Some("gpt-5.5"));
        let e = codex_expect(
            &s(&[
                "exec",
                "--json",
                "--skip-git-repo-check",
                "-s",
                "read-only",
                "-c",
                "approval_policy=\"on-request\"",
                "-o",
                "<TMP>/last.txt",
                "Say hi",
            ]),
            &si,
            None,
        )
        .unwrap();
        assert_eq!(e.flags["json"], FlagRule::Present(true));
        assert_eq!(e.flags["sandbox"], FlagRule::Value("read-only".into()));
        assert_eq!(e.flags["output-last-message"], FlagRule::Present(true));
        assert!(
            !e.flags.contains_key("config"),
            "-c is folded into effective"
        );
        assert_eq!(e.argv_messages, Some(s(&["Say hi"])));
        assert_eq!(e.prompt.as_deref(), Some("Say hi"));
        assert_eq!(e.env, s(&["CODEX_API_KEY"]));
        let eff = e.effective.unwrap();
        assert_eq!(eff.mode.as_deref(), Some("exec"));
        assert_eq!(
            eff.provider.as_deref(),
            Some("openai"),
            "the production name"
        );
        assert_eq!(eff.model.as_deref(), Some("gpt-5.5"));
        assert_eq!(
            eff.sandbox.as_deref(),
            Some("read-only"),
            "flag over config"
        );
        assert_eq!(
            eff.approval.as_deref(),
            Some("on-request"),
            "-c over config"
        );
        assert_eq!(e.session, Some(SessionUse::New));

        let e = codex_expect(
            &s(&["exec", "resume", "--last", "--json", "-m", "gpt-6-sol", "-"]),
            &si,
            Some(" go on \n"),
        )
        .unwrap();
        assert_eq!(e.session, Some(SessionUse::Resumed));
        assert_eq!(e.flags["last"], FlagRule::Present(true));
        assert_eq!(e.argv_messages, Some(vec![]), "`-`: the prompt is on stdin");
        assert_eq!(e.prompt.as_deref(), Some("go on"));
        let eff = e.effective.unwrap();
        assert_eq!(eff.model.as_deref(), Some("gpt-6-sol"));
        // The recorder's own config.toml runs tools unsandboxed and never asks: not the
        // caller's choice, so not expected of a replay.
        assert_eq!(eff.sandbox, None);
        assert_eq!(eff.approval, None);
        let c = parse_exec(&s(&["exec", "resume", "abc-id", "more"])).unwrap();
        assert_eq!(c.prompt(), Some("more"), "after the session id");

        let e = codex_expect(
            &s(&["exec", "--dangerously-bypass-approvals-and-sandbox", "x"]),
            &CodexStandIn::new(None, None),
            None,
        )
        .unwrap();
        let eff = e.effective.unwrap();
        assert_eq!(eff.provider.as_deref(), Some("fake"));
        assert_eq!(eff.approval.as_deref(), Some("never"));
        assert_eq!(e.env, s(&["FAKE_API_KEY"]));

        for (bad, says) in [
            (&["--json", "x"][..], "records `codex exec`"),
            (&["exec", "--nope", "x"][..], "'--nope'"),
            (&["exec", "-m"][..], "needs a value"),
            (&["exec", "-c", "novalue"][..], "key=value"),
        ] {
            let err = codex_expect(&s(bad), &si, None).unwrap_err();
            assert!(err.contains(says), "{bad:?}: {err}");
        }
    }

    #[test]
    fn thread_ids_and_tool_starts_are_found_in_codex_lines() {
        let id = "01a21667-79ea-74a2-ab80-9c1d9c921153";
        assert_eq!(
            thread_id(format!(r#"{{"type":"thread.started","thread_id":"{id}"}}"#).as_bytes())
                .as_deref(),
            Some(id)
        );
        assert_eq!(thread_id(br#"{"type":"turn.started"}"#), None);
        assert!(is_tool_start(
            br#"{"type":"item.started","item":{"id":"item_1","type":"command_execution"}}"#
        ));
        assert!(!is_tool_start(
            br#"{"type":"item.completed","item":{"type":"command_execution"}}"#
        ));
        let tree = vec![
            (11, 10, 10, "/x/vendor/bin/codex".to_string()),
            (12, 11, 12, "/bin/bash".to_string()),
        ];
        assert_eq!(tool_root((10, 10), &tree), (11, 10));
        assert_eq!(tool_root((11, 10), &tree[1..]), (11, 10));
    }
}
