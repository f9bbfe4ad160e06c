//! Checking a cassette's `expect` section against how fake-pi was actually called.
//!
//! Pure: the caller passes argv, the parsed command line, the joined prompt and a way to
//! read the environment. [`validate`] finds expectations that can never hold (a flag the
//! cassette's pi version does not have); [`check`] lists every mismatch as
//! `expect.<field>: expected <x>, got <y>`.

use pi_cassette::{Expect, FlagRule, Secret};
use pi_grammar::{FlagKind, FlagSpec, Grammar, ParsedArgs};

/// What fake-pi was called with.
pub struct Actual<'a> {
    /// argv without the program name.
    pub argv: &'a [String],
    pub parsed: &'a ParsedArgs,
    /// The prompt as pi would build it (stdin joined with the first message).
    pub prompt: Option<&'a str>,
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

/// Problems in the expectations themselves (the cassette is wrong, not the caller).
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
    Ok(())
}

/// Every way the actual call differs from the expectations.
pub fn check(
    expect: &Expect,
    grammar: &Grammar,
    actual: &Actual,
    env: &dyn Fn(&str) -> Option<String>,
) -> Vec<String> {
    let mut out = Vec::new();
    for (key, rule) in &expect.flags {
        let Some(spec) = lookup(grammar, key) else {
            continue; // rejected by `validate`
        };
        let given = actual.parsed.flags.get(spec.long);
        let got = match given {
            None => "absent".to_string(),
            Some(_) if spec.kind == FlagKind::Switch => "present".to_string(),
            Some(_) if spec.kind == FlagKind::Repeated => {
                quote_list(&actual.parsed.values(spec.long))
            }
            Some(_) => actual
                .parsed
                .value(spec.long)
                .map_or("present without a value".to_string(), quote),
        };
        let (ok, expected) = match rule {
            FlagRule::Present(true) => (given.is_some(), "present".to_string()),
            FlagRule::Present(false) => (given.is_none(), "absent".to_string()),
            FlagRule::Value(v) if spec.kind == FlagKind::Repeated => (
                actual.parsed.values(spec.long) == [v.as_str()],
                quote_list(&[v]),
            ),
            FlagRule::Value(v) => (actual.parsed.value(spec.long) == Some(v.as_str()), quote(v)),
        };
        if !ok {
            out.push(format!(
                "expect.flags.{key}: expected {expected}, got {got}"
            ));
        }
    }
    if let Some(want) = &expect.prompt {
        if actual.prompt != Some(want.as_str()) {
            let got = actual
                .prompt
                .map_or("no prompt (no piped stdin and no message)".into(), quote);
            out.push(format!(
                "expect.prompt: expected {}, got {got}",
                quote(want)
            ));
        }
    }
    if let Some(want) = &expect.argv_messages {
        if &actual.parsed.messages != want {
            out.push(format!(
                "expect.argv_messages: expected {}, got {}",
                quote_list(want),
                quote_list(&actual.parsed.messages)
            ));
        }
    }
    for var in &expect.env {
        match env(var) {
            Some(v) if !v.is_empty() => {}
            Some(_) => out.push(format!(
                "expect.env.{var}: expected set and non-empty, got empty"
            )),
            None => out.push(format!(
                "expect.env.{var}: expected set and non-empty, got unset"
            )),
        }
    }
    for (i, secret) in expect.never_in_argv.iter().enumerate() {
        let (value, what) = match secret {
            Secret::Env(var) => (env(var).unwrap_or_default(), format!("the value of ${var}")),
            Secret::Literal(s) => (s.clone(), format!("the literal {}", quote(s))),
        };
        if value.is_empty() {
            continue; // nothing that could leak
        }
        if let Some(pos) = actual.argv.iter().position(|a| a.contains(&value)) {
            // Never print a secret's value.
            out.push(format!(
                "expect.never_in_argv[{i}]: expected {what} nowhere in argv, got it in argv[{}]",
                pos + 1
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn g() -> Grammar {
        Grammar::for_version("0.87.1").unwrap()
    }

    fn run(
        expect: &Expect,
        argv: &[&str],
        stdin: Option<&str>,
        env: &[(&str, &str)],
    ) -> Vec<String> {
        let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
        let parsed = g().parse(&argv).unwrap();
        let prompt = pi_grammar::join_prompt(stdin, &parsed.messages);
        let env: BTreeMap<String, String> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        check(
            expect,
            &g(),
            &Actual {
                argv: &argv,
                parsed: &parsed,
                prompt: prompt.as_deref(),
            },
            &|k| env.get(k).cloned(),
        )
    }

    fn flags(pairs: &[(&str, FlagRule)]) -> Expect {
        Expect {
            flags: pairs
                .iter()
                .map(|(k, r)| (k.to_string(), r.clone()))
                .collect(),
            ..Expect::default()
        }
    }

    #[test]
    fn flags_by_long_name_satisfied_by_short_alias() {
        let e = flags(&[
            ("model", FlagRule::Value("fake-model".into())),
            ("tools", FlagRule::Value("read".into())),
            ("no-session", FlagRule::Present(true)),
            ("offline", FlagRule::Present(false)),
        ]);
        assert!(run(
            &e,
            &["--model", "fake-model", "-t", "read", "--no-session"],
            None,
            &[]
        )
        .is_empty());
        assert_eq!(
            run(&e, &["--model", "gpt-4o", "--offline"], None, &[]),
            vec![
                "expect.flags.model: expected \"fake-model\", got \"gpt-4o\"",
                "expect.flags.no-session: expected present, got absent",
                "expect.flags.offline: expected absent, got present",
                "expect.flags.tools: expected \"read\", got absent",
            ]
        );
    }

    #[test]
    fn prompt_messages_env_and_secrets() {
        let e = Expect {
            prompt: Some("hello world".into()),
            argv_messages: Some(vec![]),
            env: vec!["KEY".into(), "EMPTY".into(), "MISSING".into()],
            never_in_argv: vec![Secret::Env("KEY".into()), Secret::Literal("sk-lit".into())],
            ..Expect::default()
        };
        let got = run(
            &e,
            &["--api-key", "xx-secret-xx", "--model", "sk-lit"],
            Some("hello world"),
            &[("KEY", "secret"), ("EMPTY", "")],
        );
        assert_eq!(
            got,
            vec![
                "expect.env.EMPTY: expected set and non-empty, got empty",
                "expect.env.MISSING: expected set and non-empty, got unset",
                "expect.never_in_argv[0]: expected the value of $KEY nowhere in argv, got it in argv[2]",
                "expect.never_in_argv[1]: expected the literal \"sk-lit\" nowhere in argv, got it in argv[4]",
            ]
        );
        assert!(!got.iter().any(|m| m.contains("xx-secret-xx")));
        let got = run(
            &e,
            &["hi"],
            None,
            &[("KEY", "k"), ("EMPTY", "e"), ("MISSING", "m")],
        );
        assert_eq!(
            got,
            vec![
                "expect.prompt: expected \"hello world\", got \"hi\"",
                "expect.argv_messages: expected [], got [\"hi\"]",
            ]
        );
    }

    #[test]
    fn invalid_expectations() {
        let g73 = Grammar::for_version("0.73.1").unwrap();
        let e = flags(&[("exclude-tools", FlagRule::Value("bash".into()))]);
        assert_eq!(
            validate(&e, &g73).unwrap_err(),
            "header field `expect.flags.exclude-tools`: pi 0.73.1 has no flag --exclude-tools"
        );
        assert!(validate(&e, &g()).is_ok());
        let e = flags(&[("no-session", FlagRule::Value("yes".into()))]);
        assert!(validate(&e, &g()).unwrap_err().contains("takes no value"));
        let e = flags(&[("--model", FlagRule::Value("m".into()))]);
        assert_eq!(
            validate(&e, &g()).unwrap_err(),
            "header field `expect.flags.--model`: keys are long flag names without dashes (`model`)"
        );
    }
}
