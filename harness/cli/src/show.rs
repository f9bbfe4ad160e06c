//! `pi-harness cassette show FILE`: what a cassette expects, in words, and how to replay it.
//!
//! Nobody should have to read a JSON header to learn what a recorded run needs from its
//! caller. [`facts`] gathers everything a person (or a script, with `--json`) needs: the
//! scenario, pi's version and wire dialect, what the caller must send *by meaning* (the
//! effective values of `pi_cassette::matching::expected`, the same rule fake-pi applies), the
//! prompts, the session, the environment rules, how the run ends and how each signal is
//! answered, the processes it starts, the placeholders, and a command line that replays it
//! with fake-pi, checked against the matching contract before it is printed. [`render_text`]
//! and [`render_json`] print the same facts.

use std::fmt::Write as _;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use pi_cassette::matching;
use pi_cassette::two_way::{ClientAction, ClientStep};
use pi_cassette::{
    Action, Cassette, EffectiveExpect, Expect, FlagRule, Grandchild, OriginKind, Secret,
    SessionUse, SignalAction, Spawn, TimingKind,
};
use pi_grammar::{AgentSettings, FlagKind, Grammar, DEFAULT_THINKING, DEFAULT_TOOLS};
use serde_json::{json, Value};

use crate::{use_color, CliError, EXIT_OK};

/// Command-line arguments of `pi-harness cassette show`.
#[derive(Debug, Clone, clap::Args)]
#[command(after_help = SHOW_HELP)]
pub struct ShowArgs {
    /// The cassette (`.cassette.jsonl`, or gzipped `.gz`); `-` reads it from stdin.
    #[arg(value_name = "FILE|-")]
    pub file: PathBuf,
    /// Print the same facts as one JSON object (its fields are listed below).
    #[arg(long)]
    pub json: bool,
}

const SHOW_HELP: &str = "Examples:
  pi-harness cassette show cassettes/recorded/text_only.pi87.cassette.jsonl
  pi-harness cassette show --json cassettes/recorded/session_resume.pi152.cassette.jsonl | jq .replay.command
  zcat x.cassette.jsonl.gz | pi-harness cassette show -

What the caller must send is compared by meaning (cassettes/FORMAT.md, the matching
contract): flag order, aliases and whether the prompt comes on stdin or in argv do not matter,
unless the cassette says `syntax: true`. The replay command runs fake-pi (on PATH as
`fake-pi`) with an empty agent dir, so that no settings.json changes what the call means.

--json prints one object:
  file          the cassette's absolute path (null for stdin)
  scenario      {name, description, tags}
  pi            {version, dialect, replayable: whether fake-pi knows this pi version}
  origin        {kind, timing, source, notes}
  expects       what the caller must send: {any: true when nothing is checked,
                effective: {mode, provider, model, thinking, tools, system_prompt,
                append_system_prompt, extensions, no_extensions, skills, no_skills,
                prompt_templates, no_prompt_templates, no_context_files, no_mcp}, each the
                recorded value or null (not compared), irrelevant: [fields not compared],
                prompt, prompt_delivery (argv, stdin, stdin+argv, or null), follow_ups,
                session (new, resumed, or null), env: [variables that must be set],
                never_in_argv: [{env: NAME} or {literal_chars: N}], syntax, flags (the
                recorded flags), argv_messages}
  ending        {kind: exit|signal|hang, code (exit), signal (signal), after_ms}
  signals       {SIGTERM, SIGINT, SIGHUP}: {action: die|ignore|cleanup_exit|exit, code,
                pi_default}
  processes     [{id, at_ms, argv, own_session, ignore_sigterm, hold_stdout, lifetime_ms,
                grandchild: {argv, own_session, ignore_sigterm, hold_stdout} or null}]
  placeholders  {PLACEHOLDER: what it replaced}
  output        {stdout_lines, stdout_bytes, stderr_bytes, duration_ms}
  replay        {command: the shell command line, env: {NAME: value} (besides
                PI_CODING_AGENT_DIR, an empty directory), argv (after the program name;
                SESSION_FILE stands for the session file), stdin (piped, or null),
                session_file (its first line, when the call must continue a session;
                CWD stands for the directory the replay runs in),
                hangs, notes: [...]}

Exit status: 0 printed; 2 missing or unreadable file, invalid cassette (FILE:LINE: what).";

/// Run `pi-harness cassette show`; returns the exit status.
pub fn show_command(args: &ShowArgs) -> i32 {
    let (cassette, path) = match load(&args.file) {
        Ok(x) => x,
        Err(e) => return e.report(),
    };
    let facts = match facts(&cassette, path.as_deref()) {
        Ok(f) => f,
        Err(what) => {
            let name = path
                .as_deref()
                .map_or("<stdin>".to_string(), |_| args.file.display().to_string());
            return CliError::usage(format!("{name}:1: {what}")).report();
        }
    };
    let text = if args.json {
        let mut t = serde_json::to_string_pretty(&render_json(&facts)).expect("JSON prints");
        t.push('\n');
        t
    } else {
        render_text(&facts, use_color(std::io::stdout().is_terminal()))
    };
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => EXIT_OK,
        // A closed pipe (`| head`) is not an error worth a message.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => EXIT_OK,
        Err(e) => {
            eprintln!("error: cannot write to stdout: {e}");
            crate::EXIT_FAILED
        }
    }
}

/// Read the cassette (`-`: stdin, gzip recognised by its magic bytes); its absolute path.
pub fn load(file: &Path) -> Result<(Cassette, Option<PathBuf>), CliError> {
    if file == Path::new("-") {
        let c = Cassette::read_from(Path::new("<stdin>"), std::io::stdin())
            .map_err(|e| CliError::usage(e.to_string()))?;
        return Ok((c, None));
    }
    let c = Cassette::load(file).map_err(|e| CliError::usage(e.to_string()))?;
    let abs = std::path::absolute(file).unwrap_or_else(|_| file.to_path_buf());
    Ok((c, Some(abs)))
}

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
    /// The replay hangs until a signal ends it.
    pub hangs: bool,
    /// What a person should know (what pi refuses, what the command cannot satisfy).
    pub notes: Vec<String>,
}

/// Stands for the session file in [`Replay::argv`].
pub const SESSION_FILE: &str = "SESSION_FILE";

/// Everything `show` prints.
#[derive(Debug, Clone)]
pub struct Facts<'a> {
    pub cassette: &'a Cassette,
    pub path: Option<PathBuf>,
    /// The command-line grammar of the cassette's pi (the nearest known one when unknown).
    pub grammar: Grammar,
    /// fake-pi knows this pi version.
    pub replayable: bool,
    /// The effective values the call is compared on.
    pub want: EffectiveExpect,
    /// The follow-up prompts compared, if any.
    pub follow_ups: Option<Vec<String>>,
    pub prompts: Prompts,
    pub replay: Replay,
}

/// Gather the facts; an error (the header's expectations cannot hold) as `header field ...`.
pub fn facts<'a>(c: &'a Cassette, path: Option<&Path>) -> Result<Facts<'a>, String> {
    if c.header.is_claude() {
        return Ok(claude_facts(c, path));
    }
    let version = &c.header.pi.version;
    let known = Grammar::for_version(version);
    let grammar = known.unwrap_or_else(|| Grammar::nearest(version));
    if known.is_some() {
        matching::validate(&c.header.expect, &grammar)?;
    }
    let e = &c.header.expect;
    let want = matching::expected(e, &grammar);
    let follow_ups = match (&e.follow_ups, &e.argv_messages) {
        (Some(f), _) => Some(f.clone()),
        (None, Some(m)) if !e.syntax => Some(m.iter().skip(1).cloned().collect()),
        _ => None,
    };
    let prompts = prompts(e, follow_ups.as_deref());
    let mut replay = replay(c, &grammar, &want, &prompts, path);
    if known.is_none() {
        replay.notes.insert(
            0,
            format!(
                "fake-pi cannot replay pi {version}: it knows pi {} (exit 98)",
                pi_grammar::KNOWN_VERSIONS.join(", ")
            ),
        );
    }
    Ok(Facts {
        cassette: c,
        path: path.map(Path::to_path_buf),
        grammar,
        replayable: known.is_some(),
        want,
        follow_ups,
        prompts,
        replay,
    })
}

/// The facts of a Claude Code cassette: its recorded options as the command line, the
/// host's lines piped, nothing of pi's matching.
fn claude_facts<'a>(c: &'a Cassette, path: Option<&Path>) -> Facts<'a> {
    let e = &c.header.expect;
    let argv = e.claude_argv();
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
    let mut notes = vec![
        "fake-pi answers to any name: put a `claude` symlink to it on the host's PATH".to_string(),
    ];
    let client = client_steps(c);
    if client
        .iter()
        .any(|s| matches!(s.action, ClientAction::Signal(_)))
    {
        notes.push("the recording's host sends a signal (see above): a pipe cannot; send it by hand at that point".into());
    }
    if !matches!(client.last().map(|s| &s.action), Some(ClientAction::Close)) {
        notes.push("the recording's host keeps stdin open to the end: a pipe closes it, which the replay reports as a mismatch after the last recorded line".into());
    }
    let stdin_lines = Some(
        client
            .iter()
            .filter_map(|s| match &s.action {
                ClientAction::Line(l) | ClientAction::Raw(l) => Some(l.clone()),
                _ => None,
            })
            .collect(),
    );
    let grammar = Grammar::nearest(pi_grammar::KNOWN_VERSIONS[0]);
    Facts {
        cassette: c,
        path: path.map(Path::to_path_buf),
        grammar,
        replayable: true,
        want: EffectiveExpect::default(),
        follow_ups: None,
        prompts: Prompts {
            stdin: None,
            argv: Vec::new(),
            delivery: None,
        },
        replay: Replay {
            env,
            argv,
            stdin: None,
            stdin_lines,
            session_file: None,
            hangs: false,
            notes,
        },
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
                let switch = grammar
                    .flag(&format!("--{key}"))
                    .is_some_and(|s| s.kind == FlagKind::Switch);
                if !switch {
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
fn session_seed(c: &Cassette) -> String {
    let recorded = c.records.iter().find_map(|r| match &r.action {
        Action::Stdout(b) => serde_json::from_slice::<Value>(b.data.trim_ascii_end())
            .ok()
            .filter(|v| v["type"] == "session"),
        _ => None,
    });
    let field = |k: &str| {
        recorded
            .as_ref()
            .and_then(|v| v[k].as_str())
            .filter(|s| !s.starts_with('<'))
            .map(str::to_string)
    };
    let version = recorded
        .as_ref()
        .and_then(|v| v["version"].as_u64())
        .unwrap_or(3);
    let id = field("id").unwrap_or_else(|| "01900000-0000-7000-8000-000000000000".into());
    // pi's key order: type, version, id, timestamp, cwd.
    format!(
        r#"{{"type":"session","version":{version},"id":{},"timestamp":"2026-01-01T00:00:00.000Z","cwd":"CWD"}}"#,
        quoted(&id)
    )
}

fn replay(
    c: &Cassette,
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
    let mut env: Vec<(String, String)> = vec![
        (
            "FAKE_PI_CASSETTE".into(),
            path.map_or("CASSETTE".to_string(), |p| p.display().to_string()),
        ),
        ("FAKE_PI_SPEED".into(), "0".into()),
    ];
    if path.is_none() {
        notes.push("the cassette came on stdin: put its path in FAKE_PI_CASSETTE".into());
    }
    for var in &e.env {
        env.push((var.clone(), "fake-value".into()));
    }

    // The command must satisfy the matching contract: check it as fake-pi would.
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
    let hangs = matches!(c.ending(), Action::Hang);
    if hangs {
        notes.push(
            "the replay hangs like the recording: end it with a signal (Ctrl-C is SIGINT)".into(),
        );
    }
    if c.records
        .iter()
        .any(|r| matches!(r.action, Action::Spawn(_)))
    {
        notes.push("it starts processes that may outlive it: `pi-harness leftovers -- sh -c '...'` around the command finds and kills them".into());
    }
    let client = client_steps(c);
    let stdin_lines = c.header.mode.is_some().then(|| {
        client
            .iter()
            .filter_map(|s| match &s.action {
                ClientAction::Line(l) | ClientAction::Raw(l) => Some(l.clone()),
                _ => None,
            })
            .collect()
    });
    if client
        .iter()
        .any(|s| matches!(s.action, ClientAction::Signal(_)))
    {
        notes.push("the recording's client sends a signal (see above): a pipe cannot; send it by hand at that point".into());
    }
    Replay {
        env,
        argv,
        stdin: prompts.stdin.clone(),
        stdin_lines,
        session_file,
        hangs,
        notes,
    }
}

/// The client's actions of a two-way cassette, in order (none for a json-mode one).
pub fn client_steps(c: &Cassette) -> Vec<ClientStep> {
    pi_cassette::two_way::client_steps(&c.records)
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
        let dir = if let Some(seed) = &self.session_file {
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
        for (k, v) in &self.env {
            let _ = write!(out, "{k}={} ", sh_quote(v));
        }
        let _ = write!(out, "PI_CODING_AGENT_DIR={dir} fake-pi");
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

// ---- rendering ----

fn quoted(s: &str) -> String {
    serde_json::to_string(s).expect("a string serializes")
}

fn list_text(items: &[String]) -> String {
    if items.is_empty() {
        "none".to_string()
    } else {
        items
            .iter()
            .map(|s| quoted(s))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

fn seconds(ms: f64) -> String {
    format!("{:.2} s", ms / 1000.0)
}

fn argv_text(argv: &[String]) -> String {
    argv.iter()
        .map(|a| sh_quote(a))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Sum of the delays up to and including each record, in milliseconds to a tenth (no
/// float noise such as 835.5999999999999).
fn times(c: &Cassette) -> Vec<f64> {
    let mut t = 0.0;
    c.records
        .iter()
        .map(|r| {
            t += r.dt_ms;
            (t * 10.0).round() / 10.0
        })
        .collect()
}

fn spawns(c: &Cassette) -> Vec<(f64, &Spawn)> {
    c.records
        .iter()
        .zip(times(c))
        .filter_map(|(r, t)| match &r.action {
            Action::Spawn(s) => Some((t, s)),
            _ => None,
        })
        .collect()
}

/// What the process does on a signal, in words.
pub fn action_text(a: &SignalAction, sig: &str) -> String {
    match a {
        SignalAction::Die => {
            format!("dies by {sig} at once; the processes it started keep running")
        }
        SignalAction::Ignore => "ignored".to_string(),
        SignalAction::CleanupExit { code } => {
            format!("SIGKILLs the process group of each process it started, then exits {code}")
        }
        SignalAction::Exit { code } => {
            format!("exits {code}; the processes it started keep running")
        }
    }
}

fn signal_answers(c: &Cassette) -> [(&'static str, &SignalAction, bool); 3] {
    let p = &c.header.process;
    [
        (
            "SIGTERM",
            &p.on_sigterm,
            p.on_sigterm == SignalAction::pi_sigterm(),
        ),
        (
            "SIGINT",
            &p.on_sigint,
            p.on_sigint == SignalAction::pi_sigint(),
        ),
        (
            "SIGHUP",
            &p.on_sighup,
            p.on_sighup == SignalAction::pi_sighup(),
        ),
    ]
}

fn origin_kind(k: OriginKind) -> &'static str {
    match k {
        OriginKind::Recorded => "recorded from real pi",
        OriginKind::Imported => "imported from a captured real pi stdout",
        OriginKind::HandMade => "hand-made",
    }
}

fn spawn_traits(own_session: bool, ignore_sigterm: bool, hold_stdout: bool) -> Vec<String> {
    vec![
        if own_session {
            "its own session (setsid)".to_string()
        } else {
            "in its parent's session and process group".to_string()
        },
        if ignore_sigterm {
            "ignores SIGTERM (only SIGKILL ends it)".to_string()
        } else {
            "SIGTERM ends it".to_string()
        },
        if hold_stdout {
            "holds fake-pi's stdout open (no EOF while it lives)".to_string()
        } else {
            "stdio on /dev/null".to_string()
        },
    ]
}

/// The facts as text for a person.
pub fn render_text(f: &Facts, color: bool) -> String {
    let bold = |s: &str| {
        if color {
            format!("\x1b[1m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    };
    let c = f.cassette;
    let h = &c.header;
    let e = &h.expect;
    let mut o = String::new();
    let row = |o: &mut String, label: &str, value: &str| {
        let _ = writeln!(o, "  {label:<22}{value}");
    };

    let _ = writeln!(
        o,
        "{} ({} {}, wire dialect {})",
        bold(&h.scenario.name),
        if h.is_claude() { "Claude Code" } else { "pi" },
        h.pi.version,
        serde_json::to_value(h.pi.dialect)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default()
    );
    let _ = writeln!(o, "  {}", h.scenario.description);
    if !h.scenario.tags.is_empty() {
        row(&mut o, "tags", &h.scenario.tags.join(", "));
    }
    let timing = match h.origin.timing {
        TimingKind::Measured => "measured timing",
        TimingKind::Synthetic => "synthetic timing",
    };
    row(
        &mut o,
        "origin",
        &format!(
            "{}, {timing}",
            origin_kind(h.origin.kind)
                .replace(" pi", if h.is_claude() { " Claude Code" } else { " pi" })
        ),
    );
    if let Some(s) = &h.origin.source {
        row(&mut o, "source", s);
    }
    if let Some(n) = &h.origin.notes {
        row(&mut o, "notes", n);
    }
    if let Some(p) = &f.path {
        row(&mut o, "file", &p.display().to_string());
    }

    // What the caller must send.
    let _ = writeln!(o);
    if h.is_claude() {
        let _ = writeln!(
            o,
            "{} (the CLI's options exactly: one missing, different or added is exit 99)",
            bold("What the host must run")
        );
        let argv: Vec<String> = f.replay.argv.iter().map(|a| sh_quote(a)).collect();
        row(
            &mut o,
            "command line",
            &format!("claude {}", argv.join(" ")),
        );
        if !e.env.is_empty() {
            row(
                &mut o,
                "environment",
                &format!("{} (set and non-empty)", e.env.join(", ")),
            );
        }
    } else if e.is_empty() {
        let _ = writeln!(
            o,
            "{}",
            bold("What the caller must send: anything (the cassette has no expectations)")
        );
    } else {
        let how = if e.syntax {
            "by meaning, and the recorded flags and messages literally (syntax: true)"
        } else {
            "by meaning: flag order, aliases, stdin or argv do not matter"
        };
        let _ = writeln!(o, "{} ({how})", bold("What the caller must send"));
        let irrelevant = |field: &str| e.irrelevant.iter().any(|x| x == field);
        let w = &f.want;
        let value = |field: &str, v: Option<String>| -> String {
            match v {
                _ if irrelevant(field) => "any (irrelevant for this cassette)".to_string(),
                None => "any (not compared)".to_string(),
                Some(v) => v,
            }
        };
        let list = |l: &Option<Vec<String>>| l.as_deref().map(list_text);
        let rows: Vec<(&str, &str, Option<String>)> = vec![
            ("mode", "mode", w.mode.clone()),
            ("provider", "provider", w.provider.clone()),
            ("model", "model", w.model.clone()),
            ("thinking", "thinking", w.thinking.clone()),
            (
                "tools",
                "tools",
                w.tools.as_ref().map(|t| {
                    if t.is_empty() {
                        "none".to_string()
                    } else {
                        t.join(", ")
                    }
                }),
            ),
            (
                "system prompt",
                "system_prompt",
                w.system_prompt.as_ref().map(|s| {
                    if s.is_empty() {
                        "pi's own (no --system-prompt)".to_string()
                    } else {
                        quoted(s)
                    }
                }),
            ),
            (
                "appended prompts",
                "append_system_prompt",
                list(&w.append_system_prompt),
            ),
            ("extensions", "extensions", list(&w.extensions)),
            ("skills", "skills", list(&w.skills)),
            (
                "prompt templates",
                "prompt_templates",
                list(&w.prompt_templates),
            ),
        ];
        for (label, field, v) in rows {
            row(&mut o, label, &value(field, v));
        }
        // The switches, grouped: on, off, not compared.
        let switches = [
            ("--no-extensions", "no_extensions", w.no_extensions),
            ("--no-skills", "no_skills", w.no_skills),
            (
                "--no-prompt-templates",
                "no_prompt_templates",
                w.no_prompt_templates,
            ),
            ("--no-context-files", "no_context_files", w.no_context_files),
            ("--no-mcp", "no_mcp", w.no_mcp),
        ];
        let pick = |want: Option<bool>| -> Vec<&str> {
            switches
                .iter()
                .filter(|(_, field, v)| {
                    if irrelevant(field) {
                        want.is_none()
                    } else {
                        *v == want
                    }
                })
                .map(|(flag, _, _)| *flag)
                .collect()
        };
        let groups: Vec<String> = [
            ("on", pick(Some(true))),
            ("off", pick(Some(false))),
            ("any", pick(None)),
        ]
        .into_iter()
        .filter(|(_, flags)| !flags.is_empty())
        .map(|(word, flags)| format!("{word}: {}", flags.join(", ")))
        .collect();
        row(&mut o, "switches", &groups.join("; "));
        let delivery = match f.prompts.delivery {
            Some("stdin") => " (recorded on stdin)",
            Some("argv") => " (recorded as an argv message)",
            Some("stdin+argv") => " (recorded as stdin followed by an argv message)",
            _ => "",
        };
        row(
            &mut o,
            "prompt",
            &value(
                "prompt",
                e.prompt
                    .as_ref()
                    .map(|p| format!("{}{delivery}", quoted(p))),
            ),
        );
        row(
            &mut o,
            "follow-ups",
            &value("follow_ups", f.follow_ups.as_deref().map(list_text)),
        );
        let session = e.session.map(|s| match s {
            SessionUse::New => "a new session (or none)".to_string(),
            SessionUse::Resumed => "continues an existing session: resume one with --session PATH (a session file), --session ID, --continue, or --session-id ID (pi 0.87.1+, a session of this directory)".to_string(),
        });
        row(&mut o, "session", &value("session", session));
        let env_text = if e.env.is_empty() {
            "nothing required".to_string()
        } else {
            format!("{} (set and non-empty)", e.env.join(", "))
        };
        row(&mut o, "environment", &env_text);
        let secrets: Vec<String> = e
            .never_in_argv
            .iter()
            .map(|s| match s {
                Secret::Env(v) => format!("the value of ${v}"),
                Secret::Literal(l) => {
                    format!("a literal value ({} characters)", l.chars().count())
                }
            })
            .collect();
        row(
            &mut o,
            "never in argv",
            &if secrets.is_empty() {
                "nothing".to_string()
            } else {
                secrets.join("; ")
            },
        );
        if !e.irrelevant.is_empty() {
            row(&mut o, "not compared", &e.irrelevant.join(", "));
        }
        let recorded = literal_command(e, &f.grammar);
        if e.syntax {
            row(
                &mut o,
                "literal flags",
                &format!("{recorded} (checked as written)"),
            );
        } else if !recorded.is_empty() {
            row(
                &mut o,
                "recorded flags",
                &format!("{recorded} (not checked: syntax is free)"),
            );
        }
    }

    // How it ends.
    let _ = writeln!(o);
    let _ = writeln!(o, "{}", bold("How the run ends"));
    let total = times(c).last().copied().unwrap_or(0.0);
    let ending = match c.ending() {
        Action::Exit(code) => format!("exits {code} after {}", seconds(total)),
        Action::Signal(sig) => format!(
            "dies by {sig} after {} (a shell shows {})",
            seconds(total),
            signal_status(sig).map_or("128+N".to_string(), |n| n.to_string())
        ),
        _ => format!(
            "hangs after {}: stays alive and silent, stdout open, until a signal ends it",
            seconds(total)
        ),
    };
    row(&mut o, "ending", &ending);
    let stdout_lines = c
        .records
        .iter()
        .filter(|r| matches!(r.action, Action::Stdout(_)))
        .count();
    row(
        &mut o,
        "output",
        &format!(
            "{stdout_lines} stdout line{} ({} bytes), {} bytes of stderr",
            if stdout_lines == 1 { "" } else { "s" },
            c.stdout_bytes().len(),
            c.stderr_bytes().len()
        ),
    );
    let grandchild_escapes = spawns(c)
        .iter()
        .any(|(_, s)| s.grandchild.as_ref().is_some_and(|g| g.own_session));
    for (sig, action, default) in signal_answers(c) {
        let mut text = action_text(action, sig);
        if grandchild_escapes && matches!(action, SignalAction::CleanupExit { .. }) {
            text.push_str(" (the grandchild in its own session survives)");
        }
        if default && !h.is_claude() {
            text.push_str(" [pi's answer]");
        }
        row(&mut o, &format!("on {sig}"), &text);
    }

    // The client (two-way cassettes).
    let steps = client_steps(c);
    if c.header.mode.is_some() {
        let _ = writeln!(o);
        let _ = writeln!(
            o,
            "{}",
            bold(
                "What the client does (fake-pi waits for each, in order; anything else is exit 99)"
            )
        );
        for s in &steps {
            let what = match &s.action {
                ClientAction::Line(l) => format!("writes {l}"),
                ClientAction::Raw(l) => format!("writes the raw line {}", quoted(l)),
                ClientAction::Close => "closes stdin".to_string(),
                ClientAction::Signal(sig) => format!("sends {sig}"),
            };
            row(
                &mut o,
                &format!("line {}", s.line),
                &format!("after {} stdout lines: {what}", s.after_stdout_lines),
            );
        }
        if steps.is_empty() {
            let _ = writeln!(o, "  nothing");
        }
    }

    // Processes.
    let _ = writeln!(o);
    let spawned = spawns(c);
    if spawned.is_empty() {
        let _ = writeln!(o, "{}", bold("Processes it starts: none"));
    } else {
        let _ = writeln!(
            o,
            "{}",
            bold("Processes it starts (like pi's bash tool; real processes on replay)")
        );
        for (at, s) in spawned {
            let argv = s
                .argv
                .as_deref()
                .map_or_else(|| format!("fake-pi-child {}", s.id), argv_text);
            let _ = writeln!(o, "  {} at {}: {argv}", s.id, seconds(at));
            let mut traits = spawn_traits(s.own_session, s.ignore_sigterm, s.hold_stdout);
            traits.push(match s.lifetime_ms {
                Some(ms) => format!("exits by itself after {ms} ms"),
                None => "lives until killed".to_string(),
            });
            let _ = writeln!(o, "    {}", traits.join("; "));
            if let Some(g) = &s.grandchild {
                let _ = writeln!(o, "    grandchild: {}", grandchild_text(g, s));
            }
        }
    }

    // Placeholders.
    let _ = writeln!(o);
    if h.redactions.is_empty() {
        let _ = writeln!(o, "{}", bold("Placeholders: none"));
    } else {
        let _ = writeln!(
            o,
            "{}",
            bold("Placeholders (fake-pi puts realistic values in; FAKE_PI_VALUES=recorded keeps them)")
        );
        for (p, what) in &h.redactions {
            row(&mut o, p, what);
        }
    }

    // Replay.
    let _ = writeln!(o);
    let _ = writeln!(o, "{}", bold("Replay with fake-pi"));
    let _ = writeln!(o, "  {}", f.replay.command_line());
    for n in &f.replay.notes {
        let _ = writeln!(o, "  note: {n}");
    }
    o
}

fn grandchild_text(g: &Grandchild, s: &Spawn) -> String {
    let argv = g
        .argv
        .as_deref()
        .or(s.argv.as_deref())
        .map_or_else(|| format!("fake-pi-child {}", s.id), argv_text);
    let mut traits = spawn_traits(g.own_session, g.ignore_sigterm, g.hold_stdout);
    if !g.own_session {
        traits[0] = "in the child's process group".to_string();
    }
    traits.push("lives until killed".to_string());
    format!("{argv}; {}", traits.join("; "))
}

/// The exit status a shell shows for a death by this signal (the names a cassette may use,
/// numbered as on Linux).
fn signal_status(name: &str) -> Option<i32> {
    let n = match name {
        "SIGHUP" => 1,
        "SIGINT" => 2,
        "SIGQUIT" => 3,
        "SIGABRT" => 6,
        "SIGBUS" => 7,
        "SIGKILL" => 9,
        "SIGUSR1" => 10,
        "SIGSEGV" => 11,
        "SIGUSR2" => 12,
        "SIGPIPE" => 13,
        "SIGALRM" => 14,
        "SIGTERM" => 15,
        _ => return None,
    };
    Some(128 + n)
}

/// The recorded flags and messages as a command line (`--session-dir <path>` for a flag
/// recorded only as present).
fn literal_command(e: &Expect, grammar: &Grammar) -> String {
    let mut words = Vec::new();
    for (key, rule) in &e.flags {
        match rule {
            FlagRule::Present(false) => {}
            FlagRule::Present(true) => {
                words.push(format!("--{key}"));
                let switch = grammar
                    .flag(&format!("--{key}"))
                    .is_some_and(|s| s.kind == FlagKind::Switch);
                if !switch {
                    words.push("<path>".to_string());
                }
            }
            FlagRule::Value(v) => {
                words.push(format!("--{key}"));
                words.push(sh_quote(v));
            }
        }
    }
    for m in e.argv_messages.iter().flatten() {
        words.push(sh_quote(m));
    }
    words.join(" ")
}

/// The facts as one JSON object (see the command's help for the fields).
pub fn render_json(f: &Facts) -> Value {
    let c = f.cassette;
    let h = &c.header;
    let e = &h.expect;
    let mut effective = serde_json::Map::new();
    let want = serde_json::to_value(&f.want).expect("effective values serialize");
    for field in matching::FIELDS
        .iter()
        .filter(|k| !["prompt", "follow_ups", "session"].contains(k))
    {
        effective.insert(
            field.to_string(),
            want.get(*field).cloned().unwrap_or(Value::Null),
        );
    }
    let total = times(c).last().copied().unwrap_or(0.0);
    let ending = match c.ending() {
        Action::Exit(code) => json!({"kind": "exit", "code": code, "after_ms": total}),
        Action::Signal(sig) => json!({"kind": "signal", "signal": sig, "after_ms": total}),
        _ => json!({"kind": "hang", "after_ms": total}),
    };
    let mut signals = serde_json::Map::new();
    for (sig, action, default) in signal_answers(c) {
        let mut v = serde_json::to_value(action).expect("actions serialize");
        v["pi_default"] = json!(default);
        signals.insert(sig.to_string(), v);
    }
    let processes: Vec<Value> = spawns(c)
        .into_iter()
        .map(|(at, s)| {
            json!({
                "id": s.id,
                "at_ms": at,
                "argv": s.argv,
                "own_session": s.own_session,
                "ignore_sigterm": s.ignore_sigterm,
                "hold_stdout": s.hold_stdout,
                "lifetime_ms": s.lifetime_ms,
                "grandchild": s.grandchild.as_ref().map(|g| json!({
                    "argv": g.argv,
                    "own_session": g.own_session,
                    "ignore_sigterm": g.ignore_sigterm,
                    "hold_stdout": g.hold_stdout,
                })),
            })
        })
        .collect();
    let never: Vec<Value> = e
        .never_in_argv
        .iter()
        .map(|s| match s {
            Secret::Env(v) => json!({"env": v}),
            Secret::Literal(l) => json!({"literal_chars": l.chars().count()}),
        })
        .collect();
    let r = &f.replay;
    let env: serde_json::Map<String, Value> =
        r.env.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
    json!({
        "file": f.path.as_ref().map(|p| p.display().to_string()),
        "scenario": {
            "name": h.scenario.name,
            "description": h.scenario.description,
            "tags": h.scenario.tags,
        },
        "pi": {
            "version": h.pi.version,
            "dialect": h.pi.dialect,
            "replayable": f.replayable,
        },
        "origin": h.origin,
        "expects": {
            "any": e.is_empty(),
            "effective": effective,
            "irrelevant": e.irrelevant,
            "prompt": e.prompt,
            "prompt_delivery": f.prompts.delivery,
            "follow_ups": f.follow_ups,
            "session": e.session,
            "env": e.env,
            "never_in_argv": never,
            "syntax": e.syntax,
            "flags": e.flags,
            "argv_messages": e.argv_messages,
        },
        "ending": ending,
        "signals": signals,
        "processes": processes,
        "placeholders": h.redactions,
        "output": {
            "stdout_lines": c.records.iter().filter(|r| matches!(r.action, Action::Stdout(_))).count(),
            "stdout_bytes": c.stdout_bytes().len(),
            "stderr_bytes": c.stderr_bytes().len(),
            "duration_ms": total,
        },
        "client": client_steps(c).iter().map(|s| {
            let (kind, value) = match &s.action {
                ClientAction::Line(l) => ("line", json!(l)),
                ClientAction::Raw(l) => ("raw_line", json!(l)),
                ClientAction::Close => ("close_stdin", Value::Null),
                ClientAction::Signal(sig) => ("signal", json!(sig)),
            };
            json!({"line": s.line, "after_stdout_lines": s.after_stdout_lines, "action": kind, "value": value})
        }).collect::<Vec<_>>(),
        "replay": {
            "command": r.command_line(),
            "env": env,
            "argv": r.argv,
            "stdin": r.stdin,
            "stdin_lines": r.stdin_lines,
            "session_file": r.session_file,
            "hangs": r.hangs,
            "notes": r.notes,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expect(json: &str) -> Expect {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn prompt_delivery() {
        let p = prompts(&expect(r#"{"prompt":"Hi.","argv_messages":[]}"#), Some(&[]));
        assert_eq!(
            (p.stdin.as_deref(), p.argv.len(), p.delivery),
            (Some("Hi."), 0, Some("stdin"))
        );
        let e = expect(r#"{"prompt":"Hi.","argv_messages":["Hi.","more"]}"#);
        let p = prompts(&e, Some(&["more".to_string()]));
        assert_eq!((p.stdin, p.argv), (None, vec!["Hi.".into(), "more".into()]));
        let e = expect(r#"{"prompt":"ctx: Hi.","argv_messages":["Hi."]}"#);
        let p = prompts(&e, Some(&[]));
        assert_eq!(
            (p.stdin.as_deref(), p.argv, p.delivery),
            (Some("ctx: "), vec!["Hi.".to_string()], Some("stdin+argv"))
        );
        // v1 without argv_messages: the prompt in argv.
        let p = prompts(&expect(r#"{"prompt":"list files"}"#), None);
        assert_eq!((p.stdin, p.argv), (None, vec!["list files".to_string()]));
        // No expectations: any prompt.
        assert_eq!(prompts(&Expect::default(), None).argv, ["hello"]);
    }

    #[test]
    fn flags_by_meaning() {
        let w = EffectiveExpect {
            mode: Some("json".into()),
            provider: Some("fake".into()),
            model: Some("fake-model".into()),
            thinking: Some("medium".into()),
            tools: Some(vec![
                "write".into(),
                "read".into(),
                "edit".into(),
                "bash".into(),
            ]),
            system_prompt: Some(String::new()),
            no_mcp: Some(false),
            ..EffectiveExpect::default()
        };
        assert_eq!(
            meaning_flags(&w).join(" "),
            "--mode json --provider fake --model fake-model"
        );
        let w = EffectiveExpect {
            mode: Some("rpc".into()),
            thinking: Some("high".into()),
            tools: Some(vec!["read".into()]),
            system_prompt: Some("Be brief.".into()),
            append_system_prompt: Some(vec!["a".into(), "b".into()]),
            no_context_files: Some(true),
            ..EffectiveExpect::default()
        };
        assert_eq!(
            meaning_flags(&w),
            [
                "--mode",
                "rpc",
                "--thinking",
                "high",
                "--tools",
                "read",
                "--system-prompt",
                "Be brief.",
                "--append-system-prompt",
                "a",
                "--append-system-prompt",
                "b",
                "--no-context-files"
            ]
        );
        let none = EffectiveExpect {
            tools: Some(vec![]),
            ..EffectiveExpect::default()
        };
        assert_eq!(meaning_flags(&none), ["--mode", "json", "--no-tools"]);
    }

    #[test]
    fn command_lines() {
        let r = Replay {
            env: vec![
                ("FAKE_PI_CASSETTE".into(), "/c/x y.jsonl".into()),
                ("FAKE_PI_SPEED".into(), "0".into()),
            ],
            argv: vec!["--mode".into(), "json".into(), "Say hello.".into()],
            stdin: None,
            stdin_lines: None,
            session_file: None,
            hangs: false,
            notes: vec![],
        };
        assert_eq!(
            r.command_line(),
            "FAKE_PI_CASSETTE='/c/x y.jsonl' FAKE_PI_SPEED=0 PI_CODING_AGENT_DIR=\"$(mktemp -d)\" fake-pi --mode json 'Say hello.' </dev/null"
        );
        let r = Replay {
            argv: vec!["--session".into(), SESSION_FILE.into()],
            stdin: Some("it's".into()),
            session_file: Some(
                r#"{"type":"session","version":3,"id":"x","timestamp":"T","cwd":"CWD"}"#.into(),
            ),
            ..r
        };
        assert_eq!(
            r.command_line(),
            r#"d="$(mktemp -d)" && printf '{"type":"session","version":3,"id":"x","timestamp":"T","cwd":"%s"}\n' "$PWD" > "$d/session.jsonl" && printf %s 'it'\''s' | FAKE_PI_CASSETTE='/c/x y.jsonl' FAKE_PI_SPEED=0 PI_CODING_AGENT_DIR="$d" fake-pi --session "$d/session.jsonl""#
        );
        // A two-way cassette: the client's lines piped one per line, an empty one kept.
        let r = Replay {
            argv: vec!["--mode".into(), "rpc".into()],
            stdin: None,
            stdin_lines: Some(vec![r#"{"type":"get_state"}"#.into(), String::new()]),
            session_file: None,
            ..r
        };
        assert_eq!(
            r.command_line(),
            r#"printf '%s\n' '{"type":"get_state"}' '' | FAKE_PI_CASSETTE='/c/x y.jsonl' FAKE_PI_SPEED=0 PI_CODING_AGENT_DIR="$(mktemp -d)" fake-pi --mode rpc"#
        );
    }

    #[test]
    fn signal_statuses() {
        assert_eq!(signal_status("SIGKILL"), Some(137));
        assert_eq!(signal_status("SIGTERM"), Some(143));
        assert_eq!(signal_status("NOPE"), None);
    }
}
