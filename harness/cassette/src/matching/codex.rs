//! The matching contract for a Codex call (`codex exec --json`): does it mean what the
//! recording meant? The same rule as pi's, on Codex's effective values: the mode, the
//! provider (`model_provider`), the model, the sandbox (`sandbox_mode`) and the approval
//! policy (`approval_policy`), each resolved from the flags, the `-c` overrides, the config
//! files and Codex's defaults (`pi_grammar::codex::effective`), so `-m X`, `-c model="X"`
//! and `model = "X"` in `config.toml` are the same call; then the prompt Codex sends, the
//! session use (new, or resumed by `exec resume`), and the environment. A mismatch says
//! where the call's value came from. `expect.syntax: true` also compares `expect.flags`
//! (the `codex exec` options given, by long name) and `expect.argv_messages` (the PROMPT
//! argument) literally.

use pi_grammar::codex::{Command, Effective, Parsed, Resolved};

use super::{environment, quote, quote_list, Mismatch};
use crate::{Expect, FlagRule, SessionUse};

/// How `codex` was actually called.
pub struct CodexCall<'a> {
    /// argv without the program name.
    pub argv: &'a [String],
    /// The argv as Codex's grammar read it.
    pub parsed: &'a Parsed,
    /// What the call runs with, and where each value came from.
    pub effective: &'a Effective,
    /// The prompt Codex sends (argv, stdin, or both joined); `None` when not known yet.
    pub prompt: Option<&'a str>,
    /// The environment.
    pub env: &'a dyn Fn(&str) -> Option<String>,
}

/// Every way the Codex call differs from the cassette's expectations, sorted by field.
pub fn check(expect: &Expect, call: &CodexCall) -> Vec<Mismatch> {
    let mut out = Vec::new();
    let relevant = |field: &str| !expect.irrelevant.iter().any(|f| f == field);
    if let Some(want) = &expect.effective {
        let e = call.effective;
        let mode = Resolved {
            value: Some(e.mode.clone()),
            source: pi_grammar::codex::Source::Default,
        };
        for (name, want, got) in [
            ("mode", &want.mode, &mode),
            ("provider", &want.provider, &e.provider),
            ("model", &want.model, &e.model),
            ("sandbox", &want.sandbox, &e.sandbox),
            ("approval", &want.approval, &e.approval),
        ] {
            let Some(w) = want.as_ref().filter(|_| relevant(name)) else {
                continue;
            };
            if got.value.as_deref() != Some(w.as_str()) {
                let value = got.value.as_deref().map_or("none".to_string(), quote);
                let actual = if name == "mode" {
                    value
                } else {
                    format!("{value} (from {})", got.source)
                };
                out.push(Mismatch {
                    field: format!("expect.effective.{name}"),
                    expected: quote(w),
                    actual,
                });
            }
        }
    }
    if let (Some(want), Some(got), true) = (&expect.prompt, call.prompt, relevant("prompt")) {
        if want != got {
            out.push(Mismatch {
                field: "expect.prompt".into(),
                expected: quote(want),
                actual: quote(got),
            });
        }
    }
    if let (Some(want), true) = (expect.session, relevant("session")) {
        let got = match call.parsed.command {
            Command::ExecResume => SessionUse::Resumed,
            _ => SessionUse::New,
        };
        if want != got {
            out.push(Mismatch {
                field: "expect.session".into(),
                expected: want.describe().into(),
                actual: got.describe().into(),
            });
        }
    }
    if expect.syntax {
        syntax(expect, call, &mut out);
    }
    out.extend(environment(expect, call.env, call.argv));
    out.sort_by(|a, b| a.field.cmp(&b.field));
    super::masked(expect, call.env, out)
}

/// `expect.syntax: true`: the options given and the PROMPT argument, literally.
fn syntax(expect: &Expect, call: &CodexCall, out: &mut Vec<Mismatch>) {
    for (key, rule) in &expect.flags {
        let given = call.parsed.options.get(key.as_str());
        let got = match given {
            None => "absent".to_string(),
            Some(v) if v.iter().all(String::is_empty) => "present".to_string(),
            Some(v) if v.len() > 1 => quote_list(v),
            Some(v) => quote(&v[0]),
        };
        let (ok, expected) = match rule {
            FlagRule::Present(true) => (given.is_some(), "present".to_string()),
            FlagRule::Present(false) => (given.is_none(), "absent".to_string()),
            FlagRule::Value(v) => (call.parsed.value(key) == Some(v.as_str()), quote(v)),
        };
        if !ok {
            out.push(Mismatch {
                field: format!("expect.flags.{key}"),
                expected,
                actual: got,
            });
        }
    }
    if let Some(want) = &expect.argv_messages {
        let got: Vec<String> = call
            .parsed
            .prompt
            .iter()
            .filter(|p| *p != "-")
            .cloned()
            .collect();
        if &got != want {
            out.push(Mismatch {
                field: "expect.argv_messages".into(),
                expected: quote_list(want),
                actual: quote_list(&got),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::EffectiveExpect;
    use pi_grammar::codex::{effective, override_layer, Codex, Layer};

    fn run(expect: &Expect, argv: &[&str], config: &[(&str, &str)]) -> Vec<String> {
        let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
        let parsed = Codex::latest().parse(&argv).expect("parses");
        let layer = Layer {
            name: "config.toml (H/config.toml)".into(),
            values: config
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        };
        // A test's TOML: a quoted string's text; anything else is not TOML here.
        let toml = |v: &str| {
            let v = v.trim();
            (v.len() >= 2 && v.starts_with('"') && v.ends_with('"'))
                .then(|| v[1..v.len() - 1].to_string())
        };
        let over = override_layer(&parsed, &toml).expect("overrides");
        let e = effective(&parsed, &[layer, over]);
        let env = |k: &str| (k == "OPENAI_API_KEY").then(|| "sk".to_string());
        check(
            expect,
            &CodexCall {
                argv: &argv,
                parsed: &parsed,
                effective: &e,
                prompt: Some("hi"),
                env: &env,
            },
        )
        .iter()
        .map(ToString::to_string)
        .collect()
    }

    fn expect() -> Expect {
        Expect {
            effective: Some(EffectiveExpect {
                mode: Some("exec".into()),
                provider: Some("fake".into()),
                model: Some("M".into()),
                sandbox: Some("danger-full-access".into()),
                approval: Some("never".into()),
                ..EffectiveExpect::default()
            }),
            prompt: Some("hi".into()),
            session: Some(SessionUse::New),
            env: vec!["OPENAI_API_KEY".into()],
            ..Expect::default()
        }
    }

    const FAKE: &[(&str, &str)] = &[
        ("model_provider", "fake"),
        ("sandbox_mode", "danger-full-access"),
    ];

    #[test]
    fn the_same_values_by_any_syntax_match() {
        let e = expect();
        assert!(run(&e, &["exec", "-m", "M", "hi"], FAKE).is_empty());
        assert!(run(&e, &["exec", "-c", "model=M", "hi"], FAKE).is_empty());
        assert!(run(&e, &["-c", "model=\"M\"", "exec", "hi"], FAKE).is_empty());
        assert_eq!(
            run(&e, &["exec", "-c", "model=\"X\"", "hi"], FAKE),
            ["expect.effective.model: expected \"M\", got \"X\" (from -c)"]
        );
        let mut config = FAKE.to_vec();
        config.push(("model", "M"));
        assert!(run(&e, &["exec", "hi"], &config).is_empty());
    }

    #[test]
    fn a_difference_names_the_field_both_values_and_the_source() {
        let e = expect();
        assert_eq!(
            run(&e, &["exec", "-m", "X", "-s", "read-only", "hi"], FAKE),
            [
                "expect.effective.model: expected \"M\", got \"X\" (from flag --model)",
                "expect.effective.sandbox: expected \"danger-full-access\", got \"read-only\" (from flag --sandbox)",
            ]
        );
        assert_eq!(
            run(&e, &["exec", "-m", "M", "hi"], &[("sandbox_mode", "danger-full-access")]),
            ["expect.effective.provider: expected \"fake\", got \"openai\" (from Codex's default)"]
        );
        let mut resumed = e.clone();
        resumed.session = Some(SessionUse::Resumed);
        resumed.env.push("FAKE_API_KEY".into());
        assert_eq!(
            run(&resumed, &["exec", "-m", "M", "hi"], FAKE),
            [
                "expect.env.FAKE_API_KEY: expected set and non-empty, got unset",
                "expect.session: expected an existing session continued, got a new session (or none)",
            ]
        );
        let mut ignoring = e;
        ignoring.irrelevant = vec!["model".into(), "env".into()];
        assert!(run(&ignoring, &["exec", "-m", "X", "hi"], FAKE).is_empty());
    }
}
