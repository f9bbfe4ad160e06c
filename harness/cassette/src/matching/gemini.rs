//! The matching contract for a Gemini CLI call (`gemini -p ... --output-format
//! stream-json`): does it mean what the recording meant? The same rule as pi's and Codex's,
//! on Gemini's effective values: the output format (`mode`), the model, the approval mode,
//! the attempts per request (`max_attempts`) and the sandbox, each resolved from the flags,
//! `GEMINI_MODEL` and the settings files (`pi_grammar::gemini::effective`), so `-m X`,
//! `GEMINI_MODEL=X` and `model.name: "X"` in `settings.json` are the same call; then the
//! prompt Gemini sends (stdin joined before the argv prompt), the session use (always new
//! here), and the environment. A mismatch says where the call's value came from.
//! `expect.syntax: true` also compares `expect.flags` (the options given, by long name, the
//! prompt aside) and `expect.argv_messages` (`-p` or the positional query) literally.

use pi_grammar::gemini::{Effective, Parsed, Resolved, Source};

use super::{environment, quote, quote_list, Mismatch};
use crate::{Expect, FlagRule, SessionUse};

/// How `gemini` was actually called.
pub struct GeminiCall<'a> {
    /// argv without the program name.
    pub argv: &'a [String],
    /// The argv as Gemini's grammar read it.
    pub parsed: &'a Parsed,
    /// What the call runs with, and where each value came from.
    pub effective: &'a Effective,
    /// The prompt Gemini sends (argv, stdin, or both joined); `None` when not known.
    pub prompt: Option<&'a str>,
    /// The environment.
    pub env: &'a dyn Fn(&str) -> Option<String>,
}

/// Every way the Gemini call differs from the cassette's expectations, sorted by field.
pub fn check(expect: &Expect, call: &GeminiCall) -> Vec<Mismatch> {
    let mut out = Vec::new();
    let relevant = |field: &str| !expect.irrelevant.iter().any(|f| f == field);
    if let Some(want) = &expect.effective {
        let e = call.effective;
        let mode = Resolved {
            value: Some(e.mode.clone()),
            source: if call.parsed.has("output-format") {
                Source::Flag("--output-format".into())
            } else {
                Source::Default
            },
        };
        let attempts = want.max_attempts.map(|n| n.to_string());
        for (name, want, got) in [
            ("mode", &want.mode, &mode),
            ("model", &want.model, &e.model),
            ("approval", &want.approval, &e.approval),
            ("max_attempts", &attempts, &e.max_attempts),
            ("sandbox", &want.sandbox, &e.sandbox),
        ] {
            let Some(w) = want.as_ref().filter(|_| relevant(name)) else {
                continue;
            };
            if got.value.as_deref() != Some(w.as_str()) {
                let value = got.value.as_deref().map_or("none".to_string(), quote);
                out.push(Mismatch {
                    field: format!("expect.effective.{name}"),
                    expected: quote(w),
                    actual: format!("{value} (from {})", got.source),
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
        let got = if call.parsed.has("resume") {
            SessionUse::Resumed
        } else {
            SessionUse::New
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

/// `expect.syntax: true`: the options given and the prompt arguments, literally.
fn syntax(expect: &Expect, call: &GeminiCall, out: &mut Vec<Mismatch>) {
    for (key, rule) in &expect.flags {
        let given = call.parsed.options.get(key.as_str());
        let got = match given {
            None => "absent".to_string(),
            Some(v) if v.len() > 1 => quote_list(v),
            Some(v) => quote(&v[0]),
        };
        let (ok, expected) = match rule {
            FlagRule::Present(true) => (call.parsed.on(key), "present".to_string()),
            FlagRule::Present(false) => (!call.parsed.on(key), "absent".to_string()),
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
        let got: Vec<String> = call.parsed.prompt_arg().into_iter().collect();
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
    use pi_grammar::gemini::{effective, Gemini, Layer};

    fn run(
        expect: &Expect,
        argv: &[&str],
        env_model: Option<&str>,
        settings: &[(&str, &str)],
    ) -> Vec<String> {
        let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
        let parsed = Gemini::latest().parse(&argv).expect("parses");
        let layer = Layer {
            name: "settings.json (H/.gemini/settings.json)".into(),
            values: settings
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        };
        let e = effective(&parsed, env_model, &[layer]);
        let env = |k: &str| (k == "GEMINI_API_KEY").then(|| "x".to_string());
        check(
            expect,
            &GeminiCall {
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
                mode: Some("stream-json".into()),
                model: Some("M".into()),
                approval: Some("yolo".into()),
                max_attempts: Some(10),
                ..EffectiveExpect::default()
            }),
            prompt: Some("hi".into()),
            session: Some(SessionUse::New),
            env: vec!["GEMINI_API_KEY".into()],
            ..Expect::default()
        }
    }

    #[test]
    fn the_same_values_by_any_syntax_match() {
        let e = expect();
        assert!(run(
            &e,
            &["-p", "hi", "-o", "stream-json", "-m", "M", "-y"],
            None,
            &[]
        )
        .is_empty());
        assert!(run(
            &e,
            &[
                "hi",
                "--output-format=stream-json",
                "--approval-mode",
                "yolo"
            ],
            Some("M"),
            &[]
        )
        .is_empty());
        assert!(run(
            &e,
            &["-o", "stream-json", "-yp", "hi"],
            None,
            &[("model.name", "M")]
        )
        .is_empty());
    }

    #[test]
    fn a_difference_names_the_field_both_values_and_the_source() {
        let e = expect();
        assert_eq!(
            run(&e, &["-p", "hi", "-o", "stream-json", "-m", "X", "-y"], None, &[("general.maxAttempts", "2")]),
            [
                "expect.effective.max_attempts: expected \"10\", got \"2\" (from settings.json (H/.gemini/settings.json))",
                "expect.effective.model: expected \"M\", got \"X\" (from flag --model)",
            ]
        );
        assert_eq!(
            run(&e, &["-p", "hi", "-o", "stream-json"], None, &[]),
            [
                "expect.effective.approval: expected \"yolo\", got \"default\" (from Gemini CLI's default)",
                "expect.effective.model: expected \"M\", got \"auto\" (from Gemini CLI's default)",
            ]
        );
        let mut syntax = e.clone();
        syntax.syntax = true;
        syntax.argv_messages = Some(vec!["hi".into()]);
        syntax
            .flags
            .insert("model".into(), FlagRule::Value("M".into()));
        assert_eq!(
            run(
                &syntax,
                &["-p", "hi", "-o", "stream-json", "-y"],
                Some("M"),
                &[]
            ),
            ["expect.flags.model: expected \"M\", got absent"]
        );
    }
}
