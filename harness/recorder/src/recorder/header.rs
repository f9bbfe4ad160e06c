//! The cassette header's parts that come from the options and the command line (pure): what
//! a caller must send (`expect`, read off pi's arguments with `pi_grammar`, or off Claude
//! Code's with `pi_grammar::claude`), whether the run continues a session, the scenario's
//! name and description, and `origin.source`.

use std::path::Path;

use pi_cassette::{Expect, FlagRule};

use super::RecordOptions;
use pi_grammar::Agent;

/// A recording continues a session when a prelude made one and the run names it.
pub fn session_use(opts: &RecordOptions, args: &[String]) -> pi_cassette::SessionUse {
    let names_one = args.iter().any(|a| {
        matches!(
            a.as_str(),
            "--session" | "--session-id" | "--continue" | "-c" | "--fork"
        )
    });
    if opts.prelude.is_some() && names_one {
        pi_cassette::SessionUse::Resumed
    } else {
        pi_cassette::SessionUse::New
    }
}

/// What the caller must send, read off pi's arguments (after redaction of temp paths).
/// Flags whose value names a temp path only need to be present.
pub fn expect_from_args(
    version: &str,
    args: &[String],
    stdin: Option<&str>,
    settings: &pi_grammar::AgentSettings,
    session: pi_cassette::SessionUse,
) -> Result<Expect, String> {
    let grammar = pi_grammar::Grammar::pinned_or_newer(version)
        .ok_or_else(|| format!("no command-line grammar for pi {version}"))?;
    let parsed = grammar
        .parse(args)
        .map_err(|e| format!("pi {version} rejects these arguments: {}", e.stderr.trim()))?;
    // Errors pi reports only after reading stdin (`--provider` without `--model` on 1.x)
    // are recorded like any other run: pi's stderr and exit code are the point.
    // expect.flags keys are long names without their dashes; short aliases were resolved by the grammar.
    let flags = parsed
        .flags
        .iter()
        .map(|(long, values)| {
            let rule = match values.last() {
                Some(Some(v)) => rule_for(v),
                _ => FlagRule::Present(true),
            };
            (long.trim_start_matches('-').to_string(), rule)
        })
        .collect();
    // pi trims piped stdin and joins it to the first argv message with no separator.
    let stdin = stdin.and_then(|s| pi_grammar::stdin_content(s.as_bytes()));
    // The recorder runs pi with stdin and stdout not terminals.
    let mode = parsed.app_mode(false, false, &grammar);
    let effective = grammar.effective(&parsed, mode, stdin.as_deref(), settings);
    Ok(Expect {
        flags,
        prompt: effective.prompts.first().cloned(),
        follow_ups: Some(effective.prompts.iter().skip(1).cloned().collect()),
        argv_messages: Some(parsed.messages),
        effective: Some(pi_cassette::EffectiveExpect::from_effective(&effective)),
        session: Some(session),
        ..Expect::default()
    })
}

/// A flag's value as expected: exact, or only present when it holds a placeholder.
fn rule_for(value: &str) -> FlagRule {
    if value.contains('<') && value.contains('>') {
        FlagRule::Present(true)
    } else {
        FlagRule::Value(value.to_string())
    }
}

/// A Claude Code recording's `expect`: every option of the command line (switches present,
/// values exact); `ANTHROPIC_API_KEY` set.
pub(crate) fn claude_expect(args: &[String]) -> Result<Expect, String> {
    let parsed = pi_grammar::claude::parse(args, false)
        .map_err(|stop| format!("the Claude Code command line: {}", stop.stderr.trim_end()))?;
    let mut expect = Expect::default();
    for name in parsed.options.keys() {
        let rule = match parsed.flag_value(name) {
            Some(v) => FlagRule::Value(v),
            None => FlagRule::Present(true),
        };
        expect.flags.insert(name.clone(), rule);
    }
    expect.argv_messages = Some(parsed.prompt.clone());
    expect.env = vec!["ANTHROPIC_API_KEY".into()];
    Ok(expect)
}

/// The scenario's name: the option, else the output file's name up to its first `.`.
pub(crate) fn scenario_name(opts: &RecordOptions) -> String {
    if opts.scenario.is_empty() {
        let name = opts
            .out
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("recording");
        name.split('.').next().unwrap_or(name).to_string()
    } else {
        opts.scenario.clone()
    }
}

/// The scenario's description: the option, else `recorded from pi VERSION` (or Claude Code).
pub(crate) fn description(opts: &RecordOptions, version: &str) -> String {
    if opts.description.is_empty() {
        format!("recorded from {} {version}", opts.agent.display_name())
    } else {
        opts.description.clone()
    }
}

/// A script's path as `origin.source` names it: as given when relative; when absolute (a
/// test helper passes it so), relative to the cassette's directory when below it, else its
/// file name. A committed cassette never carries the recording machine's directories.
pub(crate) fn script_shown(script: &Path, out: &Path) -> String {
    if script.is_relative() {
        return script.display().to_string();
    }
    let dir = out.parent().unwrap_or(Path::new(""));
    match script.strip_prefix(dir).ok().filter(|_| dir.is_absolute()) {
        Some(rel) => rel.display().to_string(),
        None => script
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
    }
}

/// `origin.source` of a json-mode recording: the option, else the command that made it.
pub(crate) fn json_source(opts: &RecordOptions, redacted_args: &[String]) -> String {
    opts.source.clone().unwrap_or_else(|| {
        let mut s = String::from("pi-harness record");
        if opts.agent != Agent::default() {
            s.push_str(&format!(" --agent {}", opts.agent.name()));
        }
        match opts.agent {
            Agent::Codex => {
                if let Some(m) = &opts.model {
                    s.push_str(&format!(" --provider {} --model {}", m.provider, m.id));
                }
                if let Some(n) = opts.retries {
                    s.push_str(&format!(" --retries {n}"));
                }
            }
            Agent::Gemini => {
                for (k, v) in &opts.agent_settings {
                    s.push_str(&format!(" --setting {k}={v}"));
                }
                let secrets = opts.secrets();
                for (k, v) in &opts.agent_env {
                    // A secret's value is written nowhere: its placeholder stands for it.
                    if secrets.iter().any(|(n, _)| n == k) {
                        s.push_str(&format!(" --env {k}=<{k}>"));
                    } else {
                        s.push_str(&format!(" --env {k}={v}"));
                    }
                }
            }
            Agent::Pi | Agent::Claude => {}
        }
        for (name, _) in &opts.secret_env {
            s.push_str(&format!(" --secret-env {name}"));
        }
        if let Some(p) = &opts.signal {
            s.push_str(&format!(
                " --signal {} --at {}+{}",
                p.signal.as_str(),
                p.event,
                p.after_ms
            ));
            if p.to_group {
                s.push_str(" --signal-to group");
            }
        }
        format!(
            "{s} --script {} -- {}",
            script_shown(&opts.script_path, &opts.out),
            redacted_args.join(" ")
        )
    })
}

/// `origin.source` of a two-way recording: the option, else the command that made it.
pub(crate) fn two_way_source(opts: &RecordOptions, redacted_args: &[String]) -> String {
    opts.source.clone().unwrap_or_else(|| {
        let mut s = String::from("pi-harness record");
        if opts.agent != Agent::default() {
            s.push_str(&format!(" --agent {}", opts.agent.name()));
        }
        s.push_str(&format!(
            " --script {}",
            script_shown(&opts.script_path, &opts.out)
        ));
        if let Some(p) = &opts.client_script {
            s.push_str(&format!(" --client-script {}", script_shown(p, &opts.out)));
        }
        if opts.stdin_terminal {
            s.push_str(" --stdin-terminal");
        }
        for (name, _) in &opts.secret_env {
            s.push_str(&format!(" --secret-env {name}"));
        }
        format!("{s} -- {}", redacted_args.join(" "))
    })
}

/// Mark each of `secrets` (a name, and its value) `never_in_argv` in `expect`, unless it is
/// already: a replay then checks the caller keeps it out of argv, and masks it in every line.
pub(crate) fn mark_secrets(expect: &mut pi_cassette::Expect, secrets: &[(String, String)]) {
    for (name, _) in secrets {
        let secret = pi_cassette::Secret::Env(name.clone());
        if !expect.never_in_argv.contains(&secret) {
            expect.never_in_argv.push(secret);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn a_script_is_named_without_the_recording_machines_directories() {
        let out = Path::new("/home/alice/proj/tests/cassettes/hi.cassette.jsonl");
        let shown = |p: &str| script_shown(Path::new(p), out);
        assert_eq!(
            shown("/home/alice/proj/tests/cassettes/hi.llm.json"),
            "hi.llm.json"
        );
        assert_eq!(
            shown("/home/alice/proj/tests/cassettes/scripts/hi.json"),
            "scripts/hi.json"
        );
        assert_eq!(shown("/home/alice/elsewhere/hi.json"), "hi.json");
        assert_eq!(
            shown("cassettes/scripts/hi.json"),
            "cassettes/scripts/hi.json"
        );
    }

    #[test]
    fn expect_reads_flags_switches_and_messages() {
        let e = expect_from_args(
            "0.87.1",
            &s(&[
                "--mode",
                "json",
                "-p",
                "--no-session",
                "--session",
                "<TMP>/s.jsonl",
                "-t",
                "bash",
                "hello",
            ]),
            Some("  from stdin \n"),
            &pi_grammar::AgentSettings {
                default_provider: Some("fake".into()),
                default_model: Some("fake-model".into()),
                ..pi_grammar::AgentSettings::default()
            },
            pi_cassette::SessionUse::New,
        )
        .unwrap();
        let eff = e.effective.as_ref().unwrap();
        assert_eq!(eff.mode.as_deref(), Some("json"));
        assert_eq!(
            eff.model.as_deref(),
            Some("fake-model"),
            "from settings.json"
        );
        assert_eq!(eff.tools.as_deref(), Some(&["bash".to_string()][..]));
        assert_eq!(e.follow_ups, Some(vec![]));
        assert_eq!(e.flags["mode"], FlagRule::Value("json".into()));
        assert_eq!(e.flags["print"], FlagRule::Present(true));
        assert_eq!(e.flags["no-session"], FlagRule::Present(true));
        assert_eq!(e.flags["session"], FlagRule::Present(true));
        assert_eq!(e.flags["tools"], FlagRule::Value("bash".into()));
        assert_eq!(e.argv_messages, Some(s(&["hello"])));
        // stdin is trimmed the way pi trims it, then joined without a separator
        assert_eq!(e.prompt.as_deref(), Some("from stdinhello"));
        let err = expect_from_args(
            "0.73.1",
            &s(&["-xt", "bash"]),
            None,
            &pi_grammar::AgentSettings::default(),
            pi_cassette::SessionUse::New,
        )
        .unwrap_err();
        assert!(err.contains("Unknown option: -xt"), "{err}");
    }
}
