//! How `show` prints a cassette's [`Facts`] for a person: one section after another (what
//! the run is, what the caller must send, how it ends, what the client does, the processes,
//! the placeholders, the replay command), rows aligned, headings bold on a terminal.

use std::fmt::Write as _;

use pi_cassette::two_way::ClientAction;
use pi_cassette::{Dialect, OriginKind, Secret, SessionUse, SignalAction, TimingKind};

use pi_grammar::Agent;

use super::model::{Ending, Expects, Facts, Grandchild, Process, Word};
use super::{quoted, sh_quote};

/// The facts as text for a person.
pub fn render_text(f: &Facts, color: bool) -> String {
    let mut page = Page {
        out: String::new(),
        color,
    };
    title(&mut page, f);
    page.blank();
    if f.expects.any && f.pi.agent != Agent::Claude {
        let heading =
            page.bold("What the caller must send: anything (the cassette has no expectations)");
        page.line(&heading);
    } else {
        match f.pi.agent {
            Agent::Claude => claude_caller(&mut page, f),
            Agent::Codex => codex_caller(&mut page, f),
            Agent::Gemini => gemini_caller(&mut page, f),
            Agent::Pi => caller(&mut page, &f.expects),
        }
    }
    page.blank();
    ending(&mut page, f);
    client(&mut page, f);
    page.blank();
    processes(&mut page, f);
    page.blank();
    placeholders(&mut page, f);
    page.blank();
    world_setup(&mut page, f);
    page.blank();
    let heading = page.bold("Replay with fake-pi");
    page.line(&heading);
    page.line(&format!("  {}", f.replay.command_line()));
    if let Some(lines) = &f.replay.codex_config {
        page.line("  with CODEX_HOME/config.toml (the command writes it into a fresh directory):");
        for l in lines {
            page.line(&format!("    {l}"));
        }
    }
    for n in &f.replay.notes {
        page.line(&format!("  note: {n}"));
    }
    page.out
}

/// The text being written, and whether headings are bold.
struct Page {
    out: String,
    color: bool,
}

impl Page {
    fn bold(&self, s: &str) -> String {
        if self.color {
            format!("\x1b[1m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }

    fn line(&mut self, text: &str) {
        let _ = writeln!(self.out, "{text}");
    }

    fn blank(&mut self) {
        self.out.push('\n');
    }

    /// `  label                 value`: labels in a column of 22.
    fn row(&mut self, label: &str, value: &str) {
        let _ = writeln!(self.out, "  {label:<22}{value}");
    }
}

/// The name, program, description, tags, origin and file.
fn title(page: &mut Page, f: &Facts) {
    let program = f.pi.agent.display_name();
    let name = page.bold(&f.scenario.name);
    page.line(&format!(
        "{name} ({program} {}, wire dialect {})",
        f.pi.version,
        dialect_name(f.pi.dialect)
    ));
    page.line(&format!("  {}", f.scenario.description));
    if !f.scenario.tags.is_empty() {
        page.row("tags", &f.scenario.tags.join(", "));
    }
    let timing = match f.origin.timing {
        TimingKind::Measured => "measured timing",
        TimingKind::Synthetic => "synthetic timing",
    };
    let origin = origin_kind(f.origin.kind).replace(" pi", &format!(" {program}"));
    page.row("origin", &format!("{origin}, {timing}"));
    if let Some(s) = &f.origin.source {
        page.row("source", s);
    }
    if let Some(n) = &f.origin.notes {
        page.row("notes", n);
    }
    if let Some(p) = &f.file {
        page.row("file", &p.display().to_string());
    }
    if let Some(n) = &f.bundled {
        page.row("bundled as", n);
    }
}

/// What a test world sets up (`--json`'s `setup`): the variables, the home and its files.
fn world_setup(page: &mut Page, f: &Facts) {
    let s = &f.setup;
    let heading = page.bold(
        "What a test world sets up (pytest's pi_world, Node's piWorld, pi_testkit::World; the test's own values win)",
    );
    page.line(&heading);
    for (k, v) in &s.env {
        page.row(k, v);
    }
    if let Some(home) = s.home_var {
        let what = if s.files.is_empty() {
            "a fresh directory of the test's".to_string()
        } else {
            let names: Vec<&str> = s.files.iter().map(|f| f.path.as_str()).collect();
            format!(
                "a fresh directory of the test's, holding {}",
                names.join(", ")
            )
        };
        page.row(home, &what);
    }
    for file in &s.files {
        for l in file.content.lines() {
            page.line(&format!("    {}: {l}", file.path));
        }
    }
}

fn dialect_name(d: Dialect) -> String {
    serde_json::to_value(d)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

fn origin_kind(k: OriginKind) -> &'static str {
    match k {
        OriginKind::Recorded => "recorded from real pi",
        OriginKind::Imported => "imported from a captured real pi stdout",
        OriginKind::HandMade => "hand-made",
    }
}

/// What the host of a Claude Code cassette must run: the CLI's options exactly.
fn claude_caller(page: &mut Page, f: &Facts) {
    let heading = page.bold("What the host must run");
    page.line(&format!(
        "{heading} (the CLI's options exactly: one missing, different or added is exit 99)"
    ));
    let argv: Vec<String> = f.replay.argv.iter().map(|a| sh_quote(a)).collect();
    page.row("command line", &format!("claude {}", argv.join(" ")));
    if !f.expects.env.is_empty() {
        page.row(
            "environment",
            &format!("{} (set and non-empty)", f.expects.env.join(", ")),
        );
    }
    if !f.expects.irrelevant.is_empty() {
        // The options of these fields (`--model`, ...) may differ or be absent.
        page.row("not compared", &f.expects.irrelevant.join(", "));
    }
}

/// What the caller of a Codex cassette must send: the command line, the values it runs
/// with however given (flags, `-c`, `CODEX_HOME/config.toml`), the prompt, the session, the
/// environment and the recorded command line.
fn codex_caller(page: &mut Page, f: &Facts) {
    let e = &f.expects;
    let heading = page.bold("What the caller must send");
    page.line(&format!(
        "{heading} (by meaning: flags, -c overrides and CODEX_HOME/config.toml give one call; order and syntax do not matter)"
    ));
    let argv: Vec<String> = f.replay.argv.iter().map(|a| sh_quote(a)).collect();
    page.row("command line", &format!("codex {}", argv.join(" ")));
    let w = &e.effective;
    let rows = [
        ("provider", "provider", &w.provider),
        ("model", "model", &w.model),
        ("sandbox", "sandbox", &w.sandbox),
        ("approval", "approval", &w.approval),
    ];
    for (label, field, v) in rows {
        page.row(label, &value(e, field, v.clone()));
    }
    let delivery = match e.prompt_delivery {
        Some("stdin") => " (recorded on stdin: PROMPT `-`)",
        Some("argv") => " (recorded as the PROMPT argument)",
        _ => "",
    };
    let prompt = e
        .prompt
        .as_ref()
        .map(|p| format!("{}{delivery}", quoted(p)));
    page.row("prompt", &value(e, "prompt", prompt));
    let session = e.session.map(|s| match s {
        SessionUse::New => "a new session (`codex exec`)".to_string(),
        SessionUse::Resumed => {
            "continues an earlier session (`codex exec resume --last` or `codex exec resume ID`)"
                .to_string()
        }
    });
    page.row("session", &value(e, "session", session));
    env_rows(page, e);
    let recorded = recorded_command(&e.recorded);
    page.row(
        "recorded command",
        &format!("codex {recorded} (not checked: syntax is free)"),
    );
}

/// What the caller of a Gemini CLI cassette must send: the values it runs with however
/// given (flags, `GEMINI_MODEL`, the settings layers), the prompt, the environment and the
/// recorded command line.
fn gemini_caller(page: &mut Page, f: &Facts) {
    let e = &f.expects;
    let heading = page.bold("What the caller must send");
    page.line(&format!(
        "{heading} (by meaning: flags, GEMINI_MODEL and the settings give one call; order, syntax and the prompt on stdin or by --prompt do not matter)"
    ));
    let w = &e.effective;
    page.row("output format", &value(e, "mode", w.mode.clone()));
    page.row("model", &value(e, "model", w.model.clone()));
    page.row("approval mode", &value(e, "approval", w.approval.clone()));
    page.row(
        "max attempts",
        &value(
            e,
            "max_attempts",
            w.max_attempts
                .map(|n| format!("{n} (general.maxAttempts in its settings)")),
        ),
    );
    page.row("sandbox", &value(e, "sandbox", w.sandbox.clone()));
    page.row(
        "prompt",
        &value(e, "prompt", e.prompt.as_ref().map(|p| quoted(p))),
    );
    env_rows(page, e);
    let recorded = recorded_command(&e.recorded);
    page.row(
        "recorded command",
        &format!("gemini {recorded} (not checked: syntax is free)"),
    );
}

/// What the caller of a pi cassette must send: the effective values, the switches, the
/// prompts, the session, the environment and the recorded flags.
fn caller(page: &mut Page, e: &Expects) {
    let how = if e.syntax {
        "by meaning, and the recorded flags and messages literally (syntax: true)"
    } else {
        "by meaning: flag order, aliases, stdin or argv do not matter"
    };
    let heading = page.bold("What the caller must send");
    page.line(&format!("{heading} ({how})"));
    effective_rows(page, e);
    switches_row(page, e);
    call_rows(page, e);
    let recorded = recorded_command(&e.recorded);
    if e.syntax {
        page.row("literal flags", &format!("{recorded} (checked as written)"));
    } else if !recorded.is_empty() {
        page.row(
            "recorded flags",
            &format!("{recorded} (not checked: syntax is free)"),
        );
    }
}

fn irrelevant(e: &Expects, field: &str) -> bool {
    e.irrelevant.iter().any(|x| x == field)
}

/// A compared value, or why any value will do.
fn value(e: &Expects, field: &str, v: Option<String>) -> String {
    match v {
        _ if irrelevant(e, field) => "any (irrelevant for this cassette)".to_string(),
        None => "any (not compared)".to_string(),
        Some(v) => v,
    }
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

/// Mode, provider, model, thinking, tools, system prompt and the lists.
fn effective_rows(page: &mut Page, e: &Expects) {
    let w = &e.effective;
    let list = |l: &Option<Vec<String>>| l.as_deref().map(list_text);
    let tools = w.tools.as_ref().map(|t| {
        if t.is_empty() {
            "none".to_string()
        } else {
            t.join(", ")
        }
    });
    let system_prompt = w.system_prompt.as_ref().map(|s| {
        if s.is_empty() {
            "pi's own (no --system-prompt)".to_string()
        } else {
            quoted(s)
        }
    });
    let rows: Vec<(&str, &str, Option<String>)> = vec![
        ("mode", "mode", w.mode.clone()),
        ("provider", "provider", w.provider.clone()),
        ("model", "model", w.model.clone()),
        ("thinking", "thinking", w.thinking.clone()),
        ("tools", "tools", tools),
        ("system prompt", "system_prompt", system_prompt),
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
        page.row(label, &value(e, field, v));
    }
}

/// The switches, grouped: on, off, not compared.
fn switches_row(page: &mut Page, e: &Expects) {
    let w = &e.effective;
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
                if irrelevant(e, field) {
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
    page.row("switches", &groups.join("; "));
}

/// The prompt, follow-ups, session, environment, secrets and fields not compared.
fn call_rows(page: &mut Page, e: &Expects) {
    let delivery = match e.prompt_delivery {
        Some("stdin") => " (recorded on stdin)",
        Some("argv") => " (recorded as an argv message)",
        Some("stdin+argv") => " (recorded as stdin followed by an argv message)",
        _ => "",
    };
    let prompt = e
        .prompt
        .as_ref()
        .map(|p| format!("{}{delivery}", quoted(p)));
    page.row("prompt", &value(e, "prompt", prompt));
    let follow_ups = e.follow_ups.as_deref().map(list_text);
    page.row("follow-ups", &value(e, "follow_ups", follow_ups));
    let session = e.session.map(|s| match s {
        SessionUse::New => "a new session (or none)".to_string(),
        SessionUse::Resumed => "continues an existing session: resume one with --session PATH (a session file), --session ID, --continue, or --session-id ID (pi 0.87.1+, a session of this directory)".to_string(),
    });
    page.row("session", &value(e, "session", session));
    env_rows(page, e);
}

/// The environment, the secrets never in argv, and the fields not compared.
fn env_rows(page: &mut Page, e: &Expects) {
    let env_text = if e.env.is_empty() {
        "nothing required".to_string()
    } else {
        format!("{} (set and non-empty)", e.env.join(", "))
    };
    page.row("environment", &env_text);
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
    let never = if secrets.is_empty() {
        "nothing".to_string()
    } else {
        secrets.join("; ")
    };
    page.row("never in argv", &never);
    if !e.irrelevant.is_empty() {
        page.row("not compared", &e.irrelevant.join(", "));
    }
}

/// The recorded flags and messages as a command line (`--session-dir <path>` for a flag
/// recorded only as present).
fn recorded_command(words: &[Word]) -> String {
    words
        .iter()
        .map(|w| match w {
            Word::Flag(flag) => flag.clone(),
            Word::Value(v) => sh_quote(v),
            Word::Unrecorded => "<path>".to_string(),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn seconds(ms: f64) -> String {
    format!("{:.2} s", ms / 1000.0)
}

/// How the run ends, what it writes, and each signal's answer.
fn ending(page: &mut Page, f: &Facts) {
    let heading = page.bold("How the run ends");
    page.line(&heading);
    let ending = match &f.ending {
        Ending::Exit { code, after_ms } => format!("exits {code} after {}", seconds(*after_ms)),
        Ending::Signal { signal, after_ms } => format!(
            "dies by {signal} after {} (a shell shows {})",
            seconds(*after_ms),
            signal_status(signal).map_or("128+N".to_string(), |n| n.to_string())
        ),
        Ending::Hang { after_ms } => format!(
            "hangs after {}: stays alive and silent, stdout open, until a signal ends it",
            seconds(*after_ms)
        ),
    };
    page.row("ending", &ending);
    let o = &f.output;
    page.row(
        "output",
        &format!(
            "{} stdout line{} ({} bytes), {} bytes of stderr",
            o.stdout_lines,
            if o.stdout_lines == 1 { "" } else { "s" },
            o.stdout_bytes,
            o.stderr_bytes
        ),
    );
    let grandchild_escapes = f
        .processes
        .iter()
        .any(|p| p.grandchild.as_ref().is_some_and(|g| g.own_session));
    for (sig, answer) in f.signals.each() {
        let mut text = action_text(&answer.action, sig);
        if grandchild_escapes && matches!(answer.action, SignalAction::CleanupExit { .. }) {
            text.push_str(" (the grandchild in its own session survives)");
        }
        if answer.pi_default && f.pi.agent == Agent::Pi {
            text.push_str(" [pi's answer]");
        }
        page.row(&format!("on {sig}"), &text);
    }
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
        SignalAction::CleanupDie => {
            format!("SIGKILLs the process group of each process it started, then dies by {sig}")
        }
        SignalAction::KillChildrenDie => format!(
            "SIGKILLs each process it started (not its group: what that process started keeps running), then dies by {sig}"
        ),
        SignalAction::Exit { code } => {
            format!("exits {code}; the processes it started keep running")
        }
    }
}

/// The exit status a shell shows for a death by this signal (the names a cassette may use,
/// numbered as on Linux).
pub(super) fn signal_status(name: &str) -> Option<i32> {
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

/// A two-way cassette's client, step by step (nothing for a json-mode cassette).
fn client(page: &mut Page, f: &Facts) {
    let Some(steps) = &f.client else { return };
    page.blank();
    let heading = page
        .bold("What the client does (fake-pi waits for each, in order; anything else is exit 99)");
    page.line(&heading);
    for s in steps {
        let what = match &s.action {
            ClientAction::Line(l) => format!("writes {l}"),
            ClientAction::Raw(l) => format!("writes the raw line {}", quoted(l)),
            ClientAction::Close => "closes stdin".to_string(),
            ClientAction::Signal(sig) => format!("sends {sig}"),
        };
        page.row(
            &format!("line {}", s.line),
            &format!("after {} stdout lines: {what}", s.after_stdout_lines),
        );
    }
    if f.client_left_out > 0 {
        page.line(&format!(
            "  ... and {} more, not listed (see the note below)",
            f.client_left_out
        ));
    } else if steps.is_empty() {
        page.line("  nothing");
    }
}

fn argv_text(argv: &[String]) -> String {
    argv.iter()
        .map(|a| sh_quote(a))
        .collect::<Vec<_>>()
        .join(" ")
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

/// The processes the run starts, with their traits and grandchildren.
fn processes(page: &mut Page, f: &Facts) {
    let (spawned, left_out) = (&f.processes, f.processes_left_out);
    if spawned.is_empty() && left_out == 0 {
        let heading = page.bold("Processes it starts: none");
        page.line(&heading);
        return;
    }
    let like = match f.pi.agent {
        Agent::Pi | Agent::Claude => "like pi's bash tool",
        Agent::Codex => "Codex's command tools",
        Agent::Gemini => "Gemini CLI's shell tool",
    };
    let heading = page.bold(&format!(
        "Processes it starts ({like}; real processes on replay)"
    ));
    page.line(&heading);
    for s in spawned {
        let argv = s
            .argv
            .as_deref()
            .map_or_else(|| format!("fake-pi-child {}", s.id), argv_text);
        page.line(&format!("  {} at {}: {argv}", s.id, seconds(s.at_ms)));
        let mut traits = spawn_traits(s.own_session, s.ignore_sigterm, s.hold_stdout);
        traits.push(match s.lifetime_ms {
            Some(ms) => format!("exits by itself after {ms} ms"),
            None => "lives until killed".to_string(),
        });
        page.line(&format!("    {}", traits.join("; ")));
        if let Some(g) = &s.grandchild {
            page.line(&format!("    grandchild: {}", grandchild_text(g, s)));
        }
    }
    if left_out > 0 {
        page.line(&format!(
            "  ... and {left_out} more, not listed (see the note below)"
        ));
    }
}

fn grandchild_text(g: &Grandchild, s: &Process) -> String {
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

/// Each placeholder and what it replaced.
fn placeholders(page: &mut Page, f: &Facts) {
    if f.placeholders.is_empty() {
        let heading = page.bold("Placeholders: none");
        page.line(&heading);
        return;
    }
    let heading = page.bold(
        "Placeholders (fake-pi puts realistic values in; FAKE_PI_VALUES=recorded keeps them)",
    );
    page.line(&heading);
    for (p, what) in &f.placeholders {
        page.row(p, what);
    }
}
