//! The matching contract's unit tests.

#[test]
fn a_long_value_is_shown_where_it_differs_not_whole() {
    let long = "x".repeat(50_000_000);
    let m = super::Mismatch {
        field: "expect.prompt".into(),
        expected: format!("{long}a"),
        actual: format!("{long}b"),
    };
    let text = m.to_string();
    assert!(text.len() < 600, "{} bytes", text.len());
    assert!(
        text.contains("(they differ from byte 50000000)"),
        "{}",
        &text[..200]
    );
    assert!(text.contains("xa (50000001 bytes)") && text.contains("xb (50000001 bytes)"));
    let short = super::Mismatch {
        field: "f".into(),
        expected: "\"a\"".into(),
        actual: "\"b\"".into(),
    };
    assert_eq!(short.to_string(), "f: expected \"a\", got \"b\"");
}

use super::*;
use std::collections::BTreeMap;

fn g(v: &str) -> Grammar {
    Grammar::for_version(v).unwrap()
}

struct Env(BTreeMap<String, String>);

fn run(
    version: &str,
    expect: &Expect,
    argv: &[&str],
    stdin: Option<&str>,
    settings: &AgentSettings,
    env: &[(&str, &str)],
) -> Vec<String> {
    let grammar = g(version);
    let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
    let parsed = grammar.parse(&argv).unwrap();
    let env = Env(env
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect());
    let lookup = |k: &str| env.0.get(k).cloned();
    let call = Call {
        argv: &argv,
        parsed: &parsed,
        mode: parsed.app_mode(false, false, &grammar),
        stdin,
        settings,
        agent_dir: "/agent",
        session: SessionUse::New,
        env: &lookup,
    };
    check(expect, &grammar, &call)
        .iter()
        .map(ToString::to_string)
        .collect()
}

fn legacy() -> Expect {
    let mut flags = BTreeMap::new();
    flags.insert("mode".into(), FlagRule::Value("json".into()));
    flags.insert("provider".into(), FlagRule::Value("fake".into()));
    flags.insert("model".into(), FlagRule::Value("fake-model".into()));
    flags.insert("no-session".into(), FlagRule::Present(true));
    Expect {
        flags,
        prompt: Some("List the files.".into()),
        argv_messages: Some(vec!["List the files.".into()]),
        ..Expect::default()
    }
}

fn with_defaults() -> AgentSettings {
    AgentSettings {
        default_provider: Some("fake".into()),
        default_model: Some("fake-model".into()),
        ..AgentSettings::default()
    }
}

#[test]
fn syntax_does_not_matter() {
    let e = legacy();
    let none = AgentSettings::default();
    // As recorded.
    let rec = [
        "--mode",
        "json",
        "--provider",
        "fake",
        "--model",
        "fake-model",
        "--no-session",
        "List the files.",
    ];
    assert!(run("0.87.1", &e, &rec, None, &none, &[]).is_empty());
    // Reordered, prompt on stdin, sessions on, model from settings.json.
    let client = ["--session-dir", "/tmp/s", "--mode", "json"];
    assert_eq!(
        run(
            "0.87.1",
            &e,
            &client,
            Some("List the files."),
            &with_defaults(),
            &[]
        ),
        Vec::<String>::new()
    );
}

#[test]
fn meaning_does() {
    let e = legacy();
    let none = AgentSettings::default();
    let base = [
        "--mode",
        "json",
        "--provider",
        "fake",
        "--model",
        "fake-model",
        "List the files.",
    ];
    let with = |extra: &[&str]| -> Vec<String> {
        let mut argv: Vec<&str> = extra.to_vec();
        argv.extend_from_slice(&base);
        run("0.87.1", &e, &argv, None, &none, &[])
    };
    assert_eq!(
        with(&["--tools", "read"]),
        vec!["expect.effective.tools: expected [\"bash\", \"edit\", \"read\", \"write\"], got [\"read\"]"]
    );
    assert_eq!(
        with(&["--no-builtin-tools"]),
        vec!["expect.effective.tools: expected [\"bash\", \"edit\", \"read\", \"write\"], got []"]
    );
    assert_eq!(
        with(&["--thinking", "high"]),
        vec!["expect.effective.thinking: expected \"medium\", got \"high\""]
    );
    assert_eq!(
        with(&["--append-system-prompt", "be brief"]),
        vec!["expect.effective.append_system_prompt: expected [], got [\"be brief\"]"]
    );
    // No model flags and nothing in the agent dir: pi would not pick fake/fake-model.
    let got = run(
        "0.87.1",
        &e,
        &["--mode", "json", "List the files."],
        None,
        &none,
        &[],
    );
    assert_eq!(got.len(), 2, "{got:?}");
    assert!(
        got[0].starts_with(
            "expect.effective.model: expected \"fake-model\", got none (from no --model"
        ),
        "{got:?}"
    );
    // A different prompt, and a follow-up that was not recorded.
    let got = with(&["again"]);
    assert_eq!(
        got,
        vec![
            "expect.follow_ups: expected [], got [\"List the files.\"]",
            "expect.prompt: expected \"List the files.\", got \"again\""
        ]
    );
}

#[test]
fn irrelevant_fields_and_syntax_opt_in() {
    let mut e = legacy();
    e.irrelevant = vec!["tools".into()];
    let none = AgentSettings::default();
    let argv = [
        "--tools",
        "read",
        "--mode",
        "json",
        "--provider",
        "fake",
        "--model",
        "fake-model",
        "List the files.",
    ];
    assert!(run("0.87.1", &e, &argv, None, &none, &[]).is_empty());
    e.syntax = true;
    assert_eq!(
        run("0.87.1", &e, &argv, None, &none, &[]),
        vec!["expect.flags.no-session: expected present, got absent"]
    );
    let got = run(
        "0.87.1",
        &e,
        &[
            "--mode",
            "json",
            "--provider",
            "fake",
            "--model",
            "fake-model",
            "--no-session",
        ],
        Some("List the files."),
        &none,
        &[],
    );
    assert_eq!(
        got,
        vec!["expect.argv_messages: expected [\"List the files.\"], got []"]
    );
}

#[test]
fn env_and_secrets() {
    let e = Expect {
        env: vec!["KEY".into(), "EMPTY".into(), "MISSING".into()],
        never_in_argv: vec![Secret::Env("KEY".into()), Secret::Literal("sk-lit".into())],
        ..Expect::default()
    };
    let got = run(
        "0.87.1",
        &e,
        &["--api-key", "xx-secret-value-xx", "--model", "sk-lit"],
        None,
        &AgentSettings::default(),
        &[("KEY", "secret-value"), ("EMPTY", "")],
    );
    assert_eq!(
        got,
        vec![
            "expect.env.EMPTY: expected set and non-empty, got empty",
            "expect.env.MISSING: expected set and non-empty, got unset",
            "expect.never_in_argv[0]: expected the value of $KEY nowhere in argv, got it in argv[2]",
            "expect.never_in_argv[1]: expected the literal secret (not shown) nowhere in argv, got it in argv[4]",
        ]
    );
}

#[test]
fn env_ignored_leaves_the_secrets_checked() {
    let e = Expect {
        env: vec!["MISSING".into()],
        never_in_argv: vec![Secret::Literal("sk-lit".into())],
        irrelevant: vec!["env".into()],
        ..Expect::default()
    };
    assert!(validate(&e, &g("0.87.1")).is_ok());
    let got = run(
        "0.87.1",
        &e,
        &["--model", "sk-lit"],
        None,
        &AgentSettings::default(),
        &[],
    );
    assert_eq!(
        got,
        vec!["expect.never_in_argv[0]: expected the literal secret (not shown) nowhere in argv, got it in argv[2]"]
    );
}

#[test]
fn invalid_expectations() {
    let mut flags = BTreeMap::new();
    flags.insert("exclude-tools".to_string(), FlagRule::Value("bash".into()));
    let e = Expect {
        flags,
        ..Expect::default()
    };
    assert_eq!(
        validate(&e, &g("0.73.1")).unwrap_err(),
        "header field `expect.flags.exclude-tools`: pi 0.73.1 has no flag --exclude-tools"
    );
    assert!(validate(&e, &g("0.87.1")).is_ok());
    let e = Expect {
        irrelevant: vec!["colour".into()],
        ..Expect::default()
    };
    assert!(validate(&e, &g("0.87.1"))
        .unwrap_err()
        .contains("\"colour\" is not a field a cassette can ignore"));
    let e = Expect {
        effective: Some(EffectiveExpect {
            thinking: Some("max".into()),
            ..EffectiveExpect::default()
        }),
        ..Expect::default()
    };
    assert!(validate(&e, &g("0.73.1"))
        .unwrap_err()
        .contains("no thinking level \"max\""));
}

#[test]
fn every_effective_field_env_and_stdin_can_be_ignored() {
    let mut want: Vec<&str> = FIELDS.to_vec();
    want.push("env");
    want.push("stdin");
    assert_eq!(IGNORABLE, &want[..]);
}

/// A dummy key of one letter (`GEMINI_API_KEY=x`, as the CLIs' docs suggest for a local
/// server) is inside `exec` and inside most prompts: a short value counts only as a whole
/// argument or after `=` (it gave exit 99 on any call before).
#[test]
fn a_short_secret_is_found_only_as_a_whole_argument() {
    let e = Expect {
        never_in_argv: vec![Secret::Env("KEY".into())],
        ..Expect::default()
    };
    let call = |argv: &[&str]| {
        run(
            "0.87.1",
            &e,
            argv,
            None,
            &AgentSettings::default(),
            &[("KEY", "x")],
        )
    };
    assert_eq!(
        call(&["--mode", "json", "-p", "fix the next bug"]),
        Vec::<String>::new()
    );
    let leaked = [
        "expect.never_in_argv[0]: expected the value of $KEY nowhere in argv, got it in argv[2]",
    ];
    assert_eq!(call(&["--api-key", "x"]), leaked);
    assert_eq!(
        call(&["--api-key=x", "--mode", "json"]),
        [leaked[0].replace("argv[2]", "argv[1]")]
    );
    // Eight bytes and more: anywhere in an argument, as before.
    assert!(super::secret_in_arg(
        "--header=Bearer sk-12345678",
        "sk-12345678"
    ));
    assert!(!super::secret_in_arg("--mode", ""));
}

/// A key a caller put in the wrong place (as the prompt, the model, a flag's value, a
/// follow-up) is shown by no mismatch line, whichever field it lands in.
#[test]
fn a_secret_is_masked_in_every_mismatch() {
    let key = "sk-live-5ecret-0123456789";
    let mut flags = BTreeMap::new();
    flags.insert("thinking".to_string(), FlagRule::Value("low".into()));
    let e = Expect {
        prompt: Some("hello".into()),
        follow_ups: Some(vec![]),
        flags,
        syntax: true,
        effective: Some(EffectiveExpect {
            model: Some("fake-model".into()),
            ..EffectiveExpect::default()
        }),
        never_in_argv: vec![Secret::Env("KEY".into())],
        ..Expect::default()
    };
    let got = run(
        "0.87.1",
        &e,
        &[
            "--model",
            &format!("fake/{key}"),
            "--thinking",
            &format!("{key}x"),
            &format!("say {key}"),
            key,
        ],
        None,
        &AgentSettings::default(),
        &[("KEY", key)],
    );
    let fields: Vec<&str> = got.iter().map(|l| l.split(':').next().unwrap()).collect();
    for field in [
        "expect.effective.model",
        "expect.prompt",
        "expect.follow_ups",
        "expect.flags.thinking",
        "expect.never_in_argv[0]",
    ] {
        assert!(fields.contains(&field), "{field} not in {got:#?}");
    }
    for line in &got {
        assert!(!line.contains(key), "{line}");
    }
    assert!(got.iter().any(|l| l.contains("[REDACTED]")), "{got:#?}");
}
