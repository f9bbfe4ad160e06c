//! The command line that replays a cassette with fake-pi: the flags that give the recorded
//! meaning (or the recorded flags literally), the prompts where the recording had them, the
//! session file to seed, the client's lines to pipe; checked against the matching contract
//! as fake-pi would check it, with a note for whatever it cannot satisfy.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use pi_cassette::matching;
use pi_cassette::two_way::{ClientAction, ClientStep};
use pi_cassette::{Action, EffectiveExpect, Expect, FlagRule, SessionUse};
use pi_grammar::{AgentSettings, FlagKind, Grammar, DEFAULT_THINKING, DEFAULT_TOOLS};
use serde::{Serialize, Serializer};

use super::quoted;
use super::read::{Client, Recording, MAX_LISTED, MAX_LISTED_BYTES};

/// How the recording gave pi its prompts, and what a replay passes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prompts {
    /// Piped to stdin.
    pub stdin: Option<String>,
    /// Positional messages.
    pub argv: Vec<String>,
    /// `argv`, `stdin`, `stdin+argv`, or `None` when the cassette does not say.
    pub delivery: Option<&'static str>,
}

/// A command line that replays the cassette with fake-pi.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replay {
    /// `NAME=value` before the program (values as they are, not quoted), in order.
    pub env: Vec<(String, String)>,
    /// Arguments after the program name; [`SESSION_FILE`] stands for the session file.
    pub argv: Vec<String>,
    /// Piped to stdin (`printf %s ... |`); stdin is `/dev/null` otherwise.
    pub stdin: Option<String>,
    /// A two-way (RPC) cassette: the client's lines, piped one per line
    /// (`printf '%s\n' ... |`); fake-pi checks them in order.
    pub stdin_lines: Option<Vec<String>>,
    /// The first line of a session file the call continues (`--session SESSION_FILE`).
    pub session_file: Option<String>,
    /// A Codex cassette: the lines of the `config.toml` written into a fresh `CODEX_HOME`
    /// for the replay.
    pub codex_config: Option<Vec<String>>,
    /// A Gemini CLI cassette: the `settings.json` written into a fresh `GEMINI_CLI_HOME`'s
    /// `.gemini` for the replay (what only settings say: `general.maxAttempts`).
    pub gemini_settings: Option<String>,
    /// The replay hangs until a signal ends it.
    pub hangs: bool,
    /// What a person should know (what pi refuses, what the command cannot satisfy).
    pub notes: Vec<String>,
}

/// Stands for the session file in [`Replay::argv`].
pub const SESSION_FILE: &str = "SESSION_FILE";

/// `--json`'s `replay`: the fields, the command line, and `env` as an object.
impl Serialize for Replay {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Shown<'a> {
            command: String,
            env: BTreeMap<&'a str, &'a str>,
            argv: &'a [String],
            stdin: &'a Option<String>,
            stdin_lines: &'a Option<Vec<String>>,
            session_file: &'a Option<String>,
            codex_config: &'a Option<Vec<String>>,
            gemini_settings: &'a Option<String>,
            hangs: bool,
            notes: &'a [String],
        }
        Shown {
            command: self.command_line(),
            env: self
                .env
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect(),
            argv: &self.argv,
            stdin: &self.stdin,
            stdin_lines: &self.stdin_lines,
            session_file: &self.session_file,
            codex_config: &self.codex_config,
            gemini_settings: &self.gemini_settings,
            hangs: self.hangs,
            notes: &self.notes,
        }
        .serialize(s)
    }
}

/// Where the prompt was (stdin, argv), from `prompt` and `argv_messages`.
pub fn prompts(e: &Expect, follow_ups: Option<&[String]>) -> Prompts {
    let follow: Vec<String> = follow_ups.map(<[String]>::to_vec).unwrap_or_default();
    let (stdin, first, delivery) = match (&e.prompt, &e.argv_messages) {
        (Some(p), Some(m)) if m.is_empty() => (Some(p.clone()), None, Some("stdin")),
        (Some(p), Some(m)) if *p == m[0] => (None, Some(p.clone()), Some("argv")),
        (Some(p), Some(m)) => match p.strip_suffix(m[0].as_str()) {
            Some(pre) if !pre.is_empty() => (
                Some(pre.to_string()),
                Some(m[0].clone()),
                Some("stdin+argv"),
            ),
            _ => (None, Some(p.clone()), None),
        },
        (Some(p), None) => (None, Some(p.clone()), None),
        (None, Some(m)) => (None, m.first().cloned(), Some("argv")),
        // Nothing says: any prompt will do.
        (None, None) => (None, Some("hello".to_string()), None),
    };
    let argv = match &e.argv_messages {
        Some(m) if e.syntax => m.clone(),
        _ => first.into_iter().chain(follow).collect(),
    };
    Prompts {
        stdin,
        argv,
        delivery,
    }
}

/// The flags that give pi these effective values from an agent dir without settings.
pub fn meaning_flags(want: &EffectiveExpect) -> Vec<String> {
    let mut a: Vec<String> = Vec::new();
    let mut push = |xs: &[&str]| a.extend(xs.iter().map(|s| s.to_string()));
    match want.mode.as_deref() {
        Some("rpc") => push(&["--mode", "rpc"]),
        Some("print") => push(&["--print"]),
        Some("interactive") => {}
        _ => push(&["--mode", "json"]),
    }
    if let Some(p) = &want.provider {
        push(&["--provider", p]);
    }
    if let Some(m) = &want.model {
        push(&["--model", m]);
    }
    if let Some(t) = want.thinking.as_deref().filter(|t| *t != DEFAULT_THINKING) {
        push(&["--thinking", t]);
    }
    if let Some(tools) = &want.tools {
        let mut t = tools.clone();
        t.sort();
        let mut d: Vec<String> = DEFAULT_TOOLS.iter().map(|s| s.to_string()).collect();
        d.sort();
        if t.is_empty() {
            push(&["--no-tools"]);
        } else if t != d {
            push(&["--tools", &t.join(",")]);
        }
    }
    if let Some(s) = want.system_prompt.as_deref().filter(|s| !s.is_empty()) {
        push(&["--system-prompt", s]);
    }
    let lists = [
        ("--append-system-prompt", &want.append_system_prompt),
        ("--extension", &want.extensions),
        ("--skill", &want.skills),
        ("--prompt-template", &want.prompt_templates),
    ];
    for (flag, values) in lists {
        for v in values.iter().flatten() {
            push(&[flag, v]);
        }
    }
    let switches = [
        ("--no-extensions", want.no_extensions),
        ("--no-skills", want.no_skills),
        ("--no-prompt-templates", want.no_prompt_templates),
        ("--no-context-files", want.no_context_files),
        ("--no-mcp", want.no_mcp),
    ];
    for (flag, on) in switches {
        if on == Some(true) {
            push(&[flag]);
        }
    }
    a
}

/// Whether this pi's `--key` is a switch (takes no value).
fn is_switch(grammar: &Grammar, key: &str) -> bool {
    grammar
        .flag(&format!("--{key}"))
        .is_some_and(|s| s.kind == FlagKind::Switch)
}

/// The recorded flags, literally (`expect.syntax: true`); a flag recorded only as present
/// gets a stand-in value.
fn literal_flags(e: &Expect, grammar: &Grammar) -> Vec<String> {
    let mut a = Vec::new();
    for (key, rule) in &e.flags {
        match rule {
            FlagRule::Present(false) => {}
            FlagRule::Value(v) => {
                a.push(format!("--{key}"));
                a.push(v.clone());
            }
            FlagRule::Present(true) => {
                a.push(format!("--{key}"));
                if !is_switch(grammar, key) {
                    a.push(if key == "session" {
                        SESSION_FILE.to_string()
                    } else {
                        "VALUE".to_string()
                    });
                }
            }
        }
    }
    a
}

/// The session file's first line for a replay that continues a session: the recorded
/// `session` line with concrete values.
fn session_seed(c: &Recording) -> String {
    let recorded = c.session_line.as_ref();
    let field = |k: &str| {
        recorded
            .and_then(|v| v[k].as_str())
            .filter(|s| !s.starts_with('<'))
            .map(str::to_string)
    };
    let version = recorded.and_then(|v| v["version"].as_u64()).unwrap_or(3);
    let id = field("id").unwrap_or_else(|| "01900000-0000-7000-8000-000000000000".into());
    // pi's key order: type, version, id, timestamp, cwd.
    format!(
        r#"{{"type":"session","version":{version},"id":{},"timestamp":"2026-01-01T00:00:00.000Z","cwd":"CWD"}}"#,
        quoted(&id)
    )
}

/// `FAKE_PI_CASSETTE` (the path, or a stand-in for stdin), `FAKE_PI_SPEED=0`, and a fake
/// value for each variable the cassette wants set.
pub(super) fn replay_env(e: &Expect, path: Option<&Path>) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = vec![
        (
            "FAKE_PI_CASSETTE".into(),
            path.map_or("CASSETTE".to_string(), |p| p.display().to_string()),
        ),
        ("FAKE_PI_SPEED".into(), "0".into()),
    ];
    for var in &e.env {
        env.push((var.clone(), "fake-value".into()));
    }
    env
}

/// The lines the client writes (a line or a raw line each), in order.
fn client_lines(client: &[ClientStep]) -> Vec<String> {
    client
        .iter()
        .filter_map(|s| match &s.action {
            ClientAction::Line(l) | ClientAction::Raw(l) => Some(l.clone()),
            _ => None,
        })
        .collect()
}

/// What `show` did not list (more processes or client actions than it lists), in words.
pub(super) fn listing_notes(c: &Recording) -> Vec<String> {
    let mut notes = Vec::new();
    if c.spawns.left_out() > 0 {
        notes.push(format!(
            "the cassette starts {} processes, more than show lists (the first {MAX_LISTED}, at most {MAX_LISTED_BYTES} bytes of command lines): {} are not listed",
            c.spawns.total,
            c.spawns.left_out()
        ));
    }
    if let Some(client) = c.client.as_ref().filter(|cl| cl.steps.left_out() > 0) {
        notes.push(format!(
            "the client's {} actions are more than show lists (the first {MAX_LISTED}, at most {MAX_LISTED_BYTES} bytes of lines): the list and this command stop after {}; pipe the rest of its lines from the cassette",
            client.steps.total,
            client.steps.kept.len()
        ));
    }
    notes
}

/// The replay of a pi cassette: flags by meaning (or literally, with `syntax`), the
/// session to seed, the prompts where the recording had them.
pub(super) fn replay(
    c: &Recording,
    grammar: &Grammar,
    want: &EffectiveExpect,
    prompts: &Prompts,
    path: Option<&Path>,
) -> Replay {
    let e = &c.header.expect;
    let mut notes = Vec::new();
    let resumed = e.session == Some(SessionUse::Resumed);
    let mut argv = if e.syntax {
        literal_flags(e, grammar)
    } else {
        meaning_flags(want)
    };
    if want.mode.as_deref() == Some("interactive") {
        notes.push("the recording ran pi interactively (a terminal on stdin): fake-pi replays only headless runs".into());
    }
    let session_file = if resumed {
        if !argv.iter().any(|a| a == SESSION_FILE) {
            if e.syntax {
                notes.push("the recording continued a session named by its recorded flags: create that session first (`--session PATH` of a session file works on every pi version)".into());
            } else {
                argv.push("--session".into());
                argv.push(SESSION_FILE.into());
            }
        }
        Some(session_seed(c))
    } else {
        None
    };
    argv.extend(prompts.argv.iter().cloned());
    let env = replay_env(e, path);
    if path.is_none() {
        notes.push("the cassette came on stdin: put its path in FAKE_PI_CASSETTE".into());
    }
    notes.extend(contract_notes(e, grammar, &argv, prompts, &env));
    let hangs = matches!(c.ending, Action::Hang);
    if hangs {
        notes.push(
            "the replay hangs like the recording: end it with a signal (Ctrl-C is SIGINT)".into(),
        );
    }
    if c.spawns.total > 0 {
        notes.push("it starts processes that may outlive it: `pi-harness leftovers -- sh -c '...'` around the command finds and kills them".into());
    }
    let stdin_lines = c.client.as_ref().map(|cl| client_lines(&cl.steps.kept));
    if c.client.as_ref().is_some_and(|cl| cl.signals) {
        notes.push("the recording's client sends a signal (see above): a pipe cannot; send it by hand at that point".into());
    }
    notes.extend(listing_notes(c));
    Replay {
        env,
        argv,
        stdin: prompts.stdin.clone(),
        stdin_lines,
        session_file,
        codex_config: None,
        gemini_settings: None,
        hangs,
        notes,
    }
}

/// The command must satisfy the matching contract: check it as fake-pi would, a note for
/// each refusal or mismatch.
fn contract_notes(
    e: &Expect,
    grammar: &Grammar,
    argv: &[String],
    prompts: &Prompts,
    env: &[(String, String)],
) -> Vec<String> {
    let mut notes = Vec::new();
    let resumed = e.session == Some(SessionUse::Resumed);
    let concrete: Vec<String> = argv
        .iter()
        .map(|a| {
            if a == SESSION_FILE {
                "/tmp/pi-harness-show/session.jsonl".to_string()
            } else {
                a.clone()
            }
        })
        .collect();
    match grammar.parse(&concrete) {
        Err(err) => notes.push(format!(
            "pi {} refuses this command line: {}",
            grammar.version(),
            err.stderr.trim_end()
        )),
        Ok(parsed) => {
            if let Some(err) = grammar.runtime_errors(&parsed) {
                notes.push(format!(
                    "pi {} refuses this command line, as in the recording: {} (exit {})",
                    grammar.version(),
                    err.stderr.trim_end(),
                    err.exit_code
                ));
            }
            let stdin = prompts
                .stdin
                .as_deref()
                .and_then(|s| pi_grammar::stdin_content(s.as_bytes()));
            let settings = AgentSettings::default();
            let lookup = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
            let call = matching::Call {
                argv: &concrete,
                parsed: &parsed,
                mode: parsed.app_mode(false, false, grammar),
                stdin: stdin.as_deref(),
                settings: &settings,
                agent_dir: "(an empty agent dir)",
                session: if resumed {
                    SessionUse::Resumed
                } else {
                    SessionUse::New
                },
                env: &lookup,
            };
            for m in matching::check(e, grammar, &call) {
                notes.push(format!("this command line does not satisfy {m}"));
            }
        }
    }
    notes
}

/// The replay of a Claude Code cassette: its recorded options as the command line, the
/// host's lines piped, nothing of pi's matching.
pub(super) fn claude_replay(c: &Recording, path: Option<&Path>) -> Replay {
    let e = &c.header.expect;
    let mut notes = vec![
        "fake-pi answers to any name: put a `claude` symlink to it on the host's PATH".to_string(),
    ];
    let none = Client::default();
    let client = c.client.as_ref().unwrap_or(&none);
    if client.signals {
        notes.push("the recording's host sends a signal (see above): a pipe cannot; send it by hand at that point".into());
    }
    if !client.ends_with_close {
        notes.push("the recording's host keeps stdin open to the end: a pipe closes it, which the replay reports as a mismatch after the last recorded line".into());
    }
    notes.extend(listing_notes(c));
    Replay {
        env: replay_env(e, path),
        argv: e.claude_argv(),
        stdin: None,
        stdin_lines: Some(client_lines(&client.steps.kept)),
        session_file: None,
        codex_config: None,
        gemini_settings: None,
        hangs: false,
        notes,
    }
}

/// The recorded flags and messages as the words of a command line.
pub(super) fn recorded_words(e: &Expect, grammar: &Grammar) -> Vec<super::Word> {
    use super::Word;
    let mut words = Vec::new();
    for (key, rule) in &e.flags {
        match rule {
            FlagRule::Present(false) => {}
            FlagRule::Present(true) => {
                words.push(Word::Flag(format!("--{key}")));
                if !is_switch(grammar, key) {
                    words.push(Word::Unrecorded);
                }
            }
            FlagRule::Value(v) => {
                words.push(Word::Flag(format!("--{key}")));
                words.push(Word::Value(v.clone()));
            }
        }
    }
    for m in e.argv_messages.iter().flatten() {
        words.push(Word::Value(m.clone()));
    }
    words
}

/// A shell variable's name: letters, digits and `_`, not starting with a digit.
fn is_var_name(k: &str) -> bool {
    k.bytes()
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// A word for `sh`: as it is when it is safe, else in single quotes.
///
/// ```
/// use pi_harness::show::sh_quote;
/// assert_eq!(sh_quote("--mode"), "--mode");
/// assert_eq!(sh_quote("Say hello."), "'Say hello.'");
/// assert_eq!(sh_quote("it's"), r#"'it'\''s'"#);
/// assert_eq!(sh_quote(""), "''");
/// ```
pub fn sh_quote(s: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "-_./,:=@%+".contains(c);
    if !s.is_empty() && s.chars().all(safe) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

impl Replay {
    /// The command line for `sh`, ready to paste: a fresh empty agent dir (no settings.json
    /// of yours changes what the call means; sessions go there), the session file seeded when
    /// the call continues a session, the prompt on stdin when the recording had it there.
    pub fn command_line(&self) -> String {
        let mut out = String::new();
        let dir = if let Some(lines) = &self.codex_config {
            // Codex reads its config from CODEX_HOME: a fresh one holding config.toml.
            out.push_str("d=\"$(mktemp -d)\" && printf '%s\\n'");
            for l in lines {
                out.push(' ');
                out.push_str(&sh_quote(l));
            }
            out.push_str(" > \"$d/config.toml\" && ");
            "\"$d\"".to_string()
        } else if let Some(settings) = &self.gemini_settings {
            // Gemini CLI reads its user settings from GEMINI_CLI_HOME/.gemini: a fresh one.
            let _ = write!(
                out,
                "d=\"$(mktemp -d)\" && mkdir \"$d/.gemini\" && printf '%s\\n' {} > \"$d/.gemini/settings.json\" && ",
                sh_quote(settings)
            );
            "\"$d\"".to_string()
        } else if let Some(seed) = &self.session_file {
            // The seed's cwd is the directory the replay runs in. printf's format treats
            // `%` and `\` specially.
            let esc = |s: &str| s.replace('\\', "\\\\").replace('%', "%%");
            let (before, after) = seed.split_once("\"CWD\"").unwrap_or((seed, ""));
            let format = format!("{}\"%s\"{}\\n", esc(before), esc(after));
            let _ = write!(
                out,
                "d=\"$(mktemp -d)\" && printf {} \"$PWD\" > \"$d/session.jsonl\" && ",
                sh_quote(&format)
            );
            "\"$d\"".to_string()
        } else {
            "\"$(mktemp -d)\"".to_string()
        };
        if let Some(stdin) = &self.stdin {
            let _ = write!(out, "printf %s {} | ", sh_quote(stdin));
        }
        if let Some(lines) = &self.stdin_lines {
            out.push_str("printf '%s\\n'");
            for l in lines {
                out.push(' ');
                // An empty line is a line too: quoted, never dropped.
                out.push_str(&if l.is_empty() {
                    "''".to_string()
                } else {
                    sh_quote(l)
                });
            }
            out.push_str(" | ");
        }
        // A name that is not a shell variable's (a hostile header's `$(...)`) cannot be an
        // assignment: then `env` takes them all, each quoted whole.
        let names_ok = self.env.iter().all(|(k, _)| is_var_name(k));
        if !names_ok {
            out.push_str("env ");
        }
        for (k, v) in &self.env {
            if names_ok {
                let _ = write!(out, "{k}={} ", sh_quote(v));
            } else {
                let _ = write!(out, "{} ", sh_quote(&format!("{k}={v}")));
            }
        }
        let home = if self.codex_config.is_some() {
            "CODEX_HOME"
        } else if self.gemini_settings.is_some() {
            "GEMINI_CLI_HOME"
        } else {
            "PI_CODING_AGENT_DIR"
        };
        let _ = write!(out, "{home}={dir} fake-pi");
        for a in &self.argv {
            if a == SESSION_FILE {
                out.push_str(" \"$d/session.jsonl\"");
            } else {
                out.push(' ');
                out.push_str(&sh_quote(a));
            }
        }
        if self.stdin.is_none() && self.stdin_lines.is_none() {
            out.push_str(" </dev/null");
        }
        out
    }
}
