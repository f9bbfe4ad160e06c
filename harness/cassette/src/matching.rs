//! The matching contract: does a call of pi mean what the recording meant?
//!
//! **Semantics strict, syntax lenient, on effective values.** A cassette stands for "what
//! real pi did for this command line, this prompt and this environment". A call matches
//! when pi would behave the same: the same mode, provider and model, thinking level,
//! active tools, system prompts, extensions, skills, prompt templates, context files and
//! MCP switch, the same prompts (stdin joined with the argv messages the way pi joins
//! them), the same session use (a fresh session, or continuing one), and the environment
//! rules. Effective values come from the flags, then the agent dir's settings, then pi's
//! defaults (`pi_grammar::Grammar::effective`). Flag order, `--x v` vs aliases, and
//! whether the prompt is on stdin or in argv do not matter, unless the cassette opts in
//! with `expect.syntax: true`, which also checks `expect.flags` and
//! `expect.argv_messages` literally. Fields listed in `expect.irrelevant` are not compared.
//! Session flags (`--session-dir`, `--session-id`, `--no-session`, ...) are disk effects
//! that fake-pi imitates, not matches.
//!
//! A cassette without `expect.effective` (format v1 as first written) has its effective
//! values derived from `expect.flags`, as the recorder's clean agent dir would have made
//! them: `flags` then stand for what the recording ran with, not for a required syntax.
//!
//! One rule, used by fake-pi (to accept or refuse a call), `cassette lint` (to check the
//! expectations can hold) and `cassette show` (to print what a caller must send).

use std::fmt;

pub mod codex;
pub mod gemini;

use pi_grammar::{AgentSettings, AppMode, Effective, FlagKind, FlagSpec, Grammar, ParsedArgs};

use crate::{EffectiveExpect, Expect, FlagRule, Secret, SessionUse};

/// The effective fields, by the names `expect.effective` and `expect.irrelevant` use.
pub const FIELDS: &[&str] = &[
    "mode",
    "provider",
    "model",
    "thinking",
    "tools",
    "system_prompt",
    "append_system_prompt",
    "extensions",
    "no_extensions",
    "skills",
    "no_skills",
    "prompt_templates",
    "no_prompt_templates",
    "no_context_files",
    "no_mcp",
    "sandbox",
    "approval",
    "max_attempts",
    "prompt",
    "follow_ups",
    "session",
];

/// Every name `expect.irrelevant` accepts: the effective [`FIELDS`], `env` (the
/// variables of `expect.env` need not be set; `never_in_argv` is still checked) and `stdin`
/// (a Claude Code host's stdin may be a terminal or a pipe whatever `expect.stdin` says).
pub const IGNORABLE: &[&str] = &{
    let mut names = [""; FIELDS.len() + 2];
    let mut i = 0;
    while i < FIELDS.len() {
        names[i] = FIELDS[i];
        i += 1;
    }
    names[FIELDS.len()] = "env";
    names[FIELDS.len() + 1] = "stdin";
    names
};

/// How fake-pi was actually called.
pub struct Call<'a> {
    /// argv without the program name.
    pub argv: &'a [String],
    /// The argv as pi's grammar parsed it.
    pub parsed: &'a ParsedArgs,
    /// The run mode pi decides for this call (interactive, print, json, rpc).
    pub mode: AppMode,
    /// What pi keeps of piped stdin (`pi_grammar::stdin_content`).
    pub stdin: Option<&'a str>,
    /// What the agent dir says (settings.json, models.json).
    pub settings: &'a AgentSettings,
    /// Where the agent dir is, for messages.
    pub agent_dir: &'a str,
    /// How this call uses its session.
    pub session: SessionUse,
    /// The environment.
    pub env: &'a dyn Fn(&str) -> Option<String>,
}

/// One difference between the recording and the call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    /// `expect.effective.model`, `expect.prompt`, `expect.env.KEY`, ...
    pub field: String,
    /// What the recording has.
    pub expected: String,
    /// What the call has.
    pub actual: String,
}

/// The most of a value a mismatch shows; a longer one is shown around where the two differ.
const SHOWN_BYTES: usize = 200;

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (e, a) = (&self.expected, &self.actual);
        if e.len() <= SHOWN_BYTES && a.len() <= SHOWN_BYTES {
            return write!(f, "{}: expected {e}, got {a}", self.field);
        }
        // A long value (a prompt of megabytes): the window where the two part, and the sizes.
        let same = e.bytes().zip(a.bytes()).take_while(|(x, y)| x == y).count();
        write!(
            f,
            "{}: expected {}, got {} (they differ from byte {same})",
            self.field,
            window(e, same),
            window(a, same)
        )
    }
}

/// At most [`SHOWN_BYTES`] of `s` from a little before byte `at`, marked where cut, with the
/// whole length.
fn window(s: &str, at: usize) -> String {
    let floor = |mut i: usize| {
        i = i.min(s.len());
        while !s.is_char_boundary(i) {
            i -= 1;
        }
        i
    };
    let start = floor(at.saturating_sub(40));
    let end = floor(start + SHOWN_BYTES);
    format!(
        "{}{}{} ({} bytes)",
        if start > 0 { "..." } else { "" },
        &s[start..end],
        if end < s.len() { "..." } else { "" },
        s.len()
    )
}

fn quote(s: &str) -> String {
    serde_json::to_string(s).expect("a string serializes")
}

fn quote_list(items: &[impl AsRef<str>]) -> String {
    let items: Vec<String> = items.iter().map(|s| quote(s.as_ref())).collect();
    format!("[{}]", items.join(", "))
}

/// The flag an `expect.flags` key names: the long name without dashes (`model`).
fn lookup(grammar: &Grammar, key: &str) -> Option<&'static FlagSpec> {
    if key.starts_with('-') {
        return None;
    }
    grammar.flag(&format!("--{key}"))
}

/// Problems in the expectations themselves (the cassette is wrong, not the caller), as
/// `header field ...: what`.
pub fn validate(expect: &Expect, grammar: &Grammar) -> Result<(), String> {
    for (key, rule) in &expect.flags {
        if key.starts_with('-') {
            return Err(format!(
                "header field `expect.flags.{key}`: keys are long flag names without dashes (`{}`)",
                key.trim_start_matches('-')
            ));
        }
        let Some(spec) = lookup(grammar, key) else {
            return Err(format!(
                "header field `expect.flags.{key}`: pi {} has no flag --{key}",
                grammar.version()
            ));
        };
        if spec.kind == FlagKind::Switch && matches!(rule, FlagRule::Value(_)) {
            return Err(format!(
                "header field `expect.flags.{key}`: {} takes no value; use true (present) or false (absent)",
                spec.long
            ));
        }
    }
    for field in &expect.irrelevant {
        if !IGNORABLE.contains(&field.as_str()) {
            return Err(format!(
                "header field `expect.irrelevant`: {field:?} is not a field a cassette can ignore (known: {})",
                IGNORABLE.join(", ")
            ));
        }
    }
    if let Some(e) = &expect.effective {
        if let Some(level) = &e.thinking {
            if !grammar.thinking_levels().contains(&level.as_str()) {
                return Err(format!(
                    "header field `expect.effective.thinking`: pi {} has no thinking level {level:?}",
                    grammar.version()
                ));
            }
        }
        if let Some(mode) = &e.mode {
            if !["json", "rpc", "print", "interactive"].contains(&mode.as_str()) {
                return Err(format!(
                    "header field `expect.effective.mode`: {mode:?} is not one of json, rpc, print, interactive"
                ));
            }
        }
    }
    Ok(())
}

/// The effective values a cassette was recorded with: `expect.effective` when present,
/// else derived from `expect.flags` as the recorder's clean agent dir (no settings.json)
/// would have made them. Fields neither says are `None` (not compared); a cassette with
/// neither (hand-made, no expectations) accepts any call.
pub fn expected(expect: &Expect, grammar: &Grammar) -> EffectiveExpect {
    if let Some(e) = &expect.effective {
        return e.clone();
    }
    if expect.flags.is_empty() {
        // Nothing says what the recording ran with (a hand-made cassette): no check.
        return EffectiveExpect::default();
    }
    let mut argv = Vec::new();
    for (key, rule) in &expect.flags {
        match rule {
            FlagRule::Present(true) => {
                argv.push(format!("--{key}"));
                // A value that was a temp path: present, with some value.
                if lookup(grammar, key).is_some_and(|s| s.kind != FlagKind::Switch) {
                    argv.push("<value>".into());
                }
            }
            FlagRule::Present(false) => {}
            FlagRule::Value(v) => {
                argv.push(format!("--{key}"));
                argv.push(v.clone());
            }
        }
    }
    let Ok(parsed) = grammar.parse(&argv) else {
        return EffectiveExpect::default();
    };
    // The recorder and imports ran pi headless with stdin not a terminal.
    let mode = parsed.app_mode(false, false, grammar);
    let e = grammar.effective(&parsed, mode, None, &AgentSettings::default());
    let mut out = EffectiveExpect::from_effective(&e);
    if !expect.flags.contains_key("mode") && !expect.flags.contains_key("print") {
        // Partial expectations that do not say how pi ran.
        out.mode = None;
    }
    if e.model.is_none() {
        // Nothing in the flags says which model: the recording's agent dir did.
        out.provider = None;
        out.model = None;
    }
    out
}

/// Every way the call differs from the cassette's expectations.
pub fn check(expect: &Expect, grammar: &Grammar, call: &Call) -> Vec<Mismatch> {
    let mut out = Vec::new();
    let mut push = |field: String, expected: String, actual: String| {
        out.push(Mismatch {
            field,
            expected,
            actual,
        })
    };
    let relevant = |field: &str| !expect.irrelevant.iter().any(|f| f == field);
    let want = expected(expect, grammar);
    let got = grammar.effective(call.parsed, call.mode, call.stdin, call.settings);
    compare_effective(&want, &got, call, &relevant, &mut push);

    // Prompts (always by meaning: the joined prompt, then follow-ups).
    if relevant("prompt") {
        if let Some(want) = &expect.prompt {
            let first = got.prompts.first();
            if first != Some(want) {
                push(
                    "expect.prompt".into(),
                    quote(want),
                    first.map_or("no prompt (no piped stdin and no message)".into(), |p| {
                        quote(p)
                    }),
                );
            }
        }
    }
    if relevant("follow_ups") {
        let want_follow = match (&expect.follow_ups, &expect.argv_messages) {
            (Some(f), _) => Some(f.clone()),
            // v1: the argv messages after the first are follow-up prompts.
            (None, Some(m)) if !expect.syntax => Some(m.iter().skip(1).cloned().collect()),
            _ => None,
        };
        if let Some(want) = want_follow {
            let got_follow: Vec<String> = got.prompts.iter().skip(1).cloned().collect();
            if got_follow != want {
                push(
                    "expect.follow_ups".into(),
                    quote_list(&want),
                    quote_list(&got_follow),
                );
            }
        }
    }
    if relevant("session") {
        if let Some(want) = expect.session {
            if want != call.session {
                push(
                    "expect.session".into(),
                    want.describe().into(),
                    call.session.describe().into(),
                );
            }
        }
    }
    if expect.syntax {
        check_syntax(expect, grammar, call, &mut push);
    }
    for m in environment(expect, call.env, call.argv) {
        push(m.field, m.expected, m.actual);
    }
    out.sort_by(|a, b| a.field.cmp(&b.field));
    masked(expect, call.env, out)
}

/// The values `expect.never_in_argv` names, as this call has them: each variable's value in
/// `env` (when set and non-empty), each literal. No message may show one ([`masked`]).
pub fn secret_values(expect: &Expect, env: &dyn Fn(&str) -> Option<String>) -> Vec<String> {
    expect
        .never_in_argv
        .iter()
        .filter_map(|secret| match secret {
            Secret::Env(var) => env(var),
            Secret::Literal(s) => Some(s.clone()),
        })
        .filter(|v| !v.is_empty())
        .collect()
}

/// `mismatches` with every value of [`secret_values`] masked in what they show
/// ([`crate::redact::mask`]): a prompt, a model or a flag's value may carry the key a
/// caller put in the wrong place, and these lines reach terminals, reports and CI logs.
pub fn masked(
    expect: &Expect,
    env: &dyn Fn(&str) -> Option<String>,
    mut mismatches: Vec<Mismatch>,
) -> Vec<Mismatch> {
    let secrets = secret_values(expect, env);
    if secrets.is_empty() {
        return mismatches;
    }
    for m in &mut mismatches {
        m.expected = crate::redact::mask(&m.expected, &secrets);
        m.actual = crate::redact::mask(&m.actual, &secrets);
    }
    mismatches
}

/// What the environment and the command line owe the recording whatever the CLI: every
/// variable of `expect.env` set and non-empty (unless `env` is irrelevant), and no secret of `expect.never_in_argv` in any
/// argument of `argv` (never shown). pi's calls get this within [`check`]; a Claude Code
/// call (its own grammar) gets it alone.
pub fn environment(
    expect: &Expect,
    env: &dyn Fn(&str) -> Option<String>,
    argv: &[String],
) -> Vec<Mismatch> {
    let mut out = Vec::new();
    let mut push = |field: String, expected: String, actual: String| {
        out.push(Mismatch {
            field,
            expected,
            actual,
        })
    };
    let env_relevant = !expect.irrelevant.iter().any(|f| f == "env");
    for var in expect.env.iter().filter(|_| env_relevant) {
        match env(var) {
            Some(v) if !v.is_empty() => {}
            Some(_) => push(
                format!("expect.env.{var}"),
                "set and non-empty".into(),
                "empty".into(),
            ),
            None => push(
                format!("expect.env.{var}"),
                "set and non-empty".into(),
                "unset".into(),
            ),
        }
    }
    for (i, secret) in expect.never_in_argv.iter().enumerate() {
        let (value, what) = match secret {
            Secret::Env(var) => (env(var).unwrap_or_default(), format!("the value of ${var}")),
            // The literal itself is a secret too: named by its place, never shown.
            Secret::Literal(s) => (s.clone(), "the literal secret (not shown)".to_string()),
        };
        if value.is_empty() {
            continue; // nothing that could leak
        }
        if let Some(pos) = argv.iter().position(|a| secret_in_arg(a, &value)) {
            // Never print a secret's value.
            push(
                format!("expect.never_in_argv[{i}]"),
                format!("{what} nowhere in argv"),
                format!("it in argv[{}]", pos + 1),
            );
        }
    }
    masked(expect, env, out)
}

/// Shorter than this, a secret's value is looked for only as a whole argument or after `=`:
/// a dummy key such as `x` is inside `exec` and inside any prompt.
pub const SECRET_SUBSTRING_MIN_BYTES: usize = 8;

/// Does `arg` carry the secret `value`? Anywhere in it for a value of
/// [`SECRET_SUBSTRING_MIN_BYTES`] or more; a shorter one only as the whole argument
/// (`--api-key x`) or as what follows its `=` (`--api-key=x`).
pub fn secret_in_arg(arg: &str, value: &str) -> bool {
    if value.is_empty() {
        return false;
    }
    if value.len() >= SECRET_SUBSTRING_MIN_BYTES {
        return arg.contains(value);
    }
    arg == value || arg.split_once('=').is_some_and(|(_, v)| v == value)
}

fn compare_effective(
    want: &EffectiveExpect,
    got: &Effective,
    call: &Call,
    relevant: &dyn Fn(&str) -> bool,
    push: &mut dyn FnMut(String, String, String),
) {
    let field = |name: &str| format!("expect.effective.{name}");
    let mut scalar = |name: &str, want: &Option<String>, got: Option<&str>, why: &str| {
        if let Some(w) = want {
            if relevant(name) && got != Some(w.as_str()) {
                let actual = match got {
                    Some(g) => format!("{}{why}", quote(g)),
                    None => format!("none{why}"),
                };
                push(field(name), quote(w), actual);
            }
        }
    };
    scalar("mode", &want.mode, Some(&got.mode), "");
    let source = format!(" (from {}; agent dir {})", got.model_source, call.agent_dir);
    scalar("provider", &want.provider, got.provider.as_deref(), &source);
    scalar("model", &want.model, got.model.as_deref(), &source);
    scalar("thinking", &want.thinking, Some(&got.thinking), "");
    scalar(
        "system_prompt",
        &want.system_prompt,
        Some(got.system_prompt.as_deref().unwrap_or("")),
        "",
    );
    let mut list = |name: &str, want: &Option<Vec<String>>, got: &[String]| {
        if let Some(w) = want {
            if relevant(name) && w.as_slice() != got {
                push(field(name), quote_list(w), quote_list(got));
            }
        }
    };
    let mut tools_want = want.tools.clone();
    if let Some(t) = tools_want.as_mut() {
        t.sort();
    }
    list("tools", &tools_want, &got.tools);
    list(
        "append_system_prompt",
        &want.append_system_prompt,
        &got.append_system_prompt,
    );
    list("extensions", &want.extensions, &got.extensions);
    list("skills", &want.skills, &got.skills);
    list(
        "prompt_templates",
        &want.prompt_templates,
        &got.prompt_templates,
    );
    let mut switch = |name: &str, want: Option<bool>, got: bool| {
        if let Some(w) = want {
            if relevant(name) && w != got {
                let word = |b: bool| if b { "on" } else { "off" }.to_string();
                push(field(name), word(w), word(got));
            }
        }
    };
    switch("no_extensions", want.no_extensions, got.no_extensions);
    switch("no_skills", want.no_skills, got.no_skills);
    switch(
        "no_prompt_templates",
        want.no_prompt_templates,
        got.no_prompt_templates,
    );
    switch(
        "no_context_files",
        want.no_context_files,
        got.no_context_files,
    );
    switch("no_mcp", want.no_mcp, got.no_mcp);
}

/// `expect.syntax: true`: the flags and argv messages, literally.
fn check_syntax(
    expect: &Expect,
    grammar: &Grammar,
    call: &Call,
    push: &mut dyn FnMut(String, String, String),
) {
    for (key, rule) in &expect.flags {
        let Some(spec) = lookup(grammar, key) else {
            continue; // rejected by `validate`
        };
        let given = call.parsed.flags.get(spec.long);
        let got = match given {
            None => "absent".to_string(),
            Some(_) if spec.kind == FlagKind::Switch => "present".to_string(),
            Some(_) if spec.kind == FlagKind::Repeated => {
                quote_list(&call.parsed.values(spec.long))
            }
            Some(_) => call
                .parsed
                .value(spec.long)
                .map_or("present without a value".to_string(), quote),
        };
        let (ok, expected) = match rule {
            FlagRule::Present(true) => (given.is_some(), "present".to_string()),
            FlagRule::Present(false) => (given.is_none(), "absent".to_string()),
            FlagRule::Value(v) if spec.kind == FlagKind::Repeated => (
                call.parsed.values(spec.long) == [v.as_str()],
                quote_list(&[v]),
            ),
            FlagRule::Value(v) => (call.parsed.value(spec.long) == Some(v.as_str()), quote(v)),
        };
        if !ok {
            push(format!("expect.flags.{key}"), expected, got);
        }
    }
    if let Some(want) = &expect.argv_messages {
        if &call.parsed.messages != want {
            push(
                "expect.argv_messages".into(),
                quote_list(want),
                quote_list(&call.parsed.messages),
            );
        }
    }
}

#[cfg(test)]
mod tests;
