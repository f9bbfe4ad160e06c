//! Codex's command line against what the real 0.169.0 printed (measured with
//! `CODEX_HOME=DIR codex ARGS </dev/null`; its stderr from the `error:` line on).

use super::*;

fn argv(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| s.to_string()).collect()
}

const EXEC_USAGE: &str =
    "Usage: codex exec [OPTIONS] [PROMPT]\n       codex exec [OPTIONS] <COMMAND> [ARGS]\n";

fn stop(a: &[&str]) -> Stop {
    Codex::latest().parse(&argv(a)).expect_err("refused")
}

#[test]
fn an_unknown_option_is_clap_s_error_with_its_tip_and_exit_2() {
    let s = stop(&["exec", "--bogus", "hi"]);
    assert_eq!(s.code, 2);
    assert_eq!(s.stdout, "");
    assert_eq!(
        s.stderr,
        format!("error: unexpected argument '--bogus' found\n\n  tip: to pass '--bogus' as a value, use '-- --bogus'\n\n{EXEC_USAGE}\nFor more information, try '--help'.\n")
    );
    let s = stop(&["exec", "--modle", "x", "hi"]);
    assert_eq!(
        s.stderr,
        format!("error: unexpected argument '--modle' found\n\n  tip: a similar argument exists: '--model'\n\n{EXEC_USAGE}\nFor more information, try '--help'.\n")
    );
    let s = stop(&["exec", "--jsn", "hi"]);
    assert!(
        s.stderr
            .contains("tip: a similar argument exists: '--json'"),
        "{}",
        s.stderr
    );
    let s = stop(&["exec", "-x"]);
    assert!(s.stderr.starts_with(
        "error: unexpected argument '-x' found\n\n  tip: to pass '-x' as a value, use '-- -x'\n"
    ));
    // `--full-auto` is gone in 0.169.0.
    assert_eq!(stop(&["exec", "--full-auto", "hi"]).code, 2);
    // An exec option before `exec`.
    let s = stop(&["--json", "exec", "hi"]);
    assert_eq!(
        s.stderr,
        "error: unexpected argument '--json' found\n\n  tip: 'exec --json' exists\n\nUsage: codex [OPTIONS] [PROMPT]\n       codex [OPTIONS] <COMMAND> [ARGS]\n\nFor more information, try '--help'.\n"
    );
    // `exec resume` has no --sandbox.
    let s = stop(&["exec", "resume", "-s", "read-only", "x"]);
    assert!(s
        .stderr
        .contains("Usage: codex exec resume [OPTIONS] [SESSION_ID] [PROMPT]\n"));
}

#[test]
fn values_missing_refused_or_repeated_are_clap_s_errors() {
    let missing = "error: a value is required for '--model <MODEL>' but none was supplied\n\nFor more information, try '--help'.\n";
    assert_eq!(stop(&["exec", "-m"]).stderr, missing);
    assert_eq!(stop(&["exec", "--model"]).stderr, missing);
    assert_eq!(stop(&["exec", "-m", "--json", "hi"]).stderr, missing);
    // An unknown option where the value would be is refused as unknown.
    assert!(stop(&["exec", "-m", "-x", "hi"]).stderr.starts_with(
        "error: unexpected argument '-x' found\n\n  tip: to pass '-x' as a value, use '-- -x'\n"
    ));
    assert_eq!(
        stop(&["exec", "-s", "bogus", "hi"]).stderr,
        "error: invalid value 'bogus' for '--sandbox <SANDBOX_MODE>'\n  [possible values: read-only, workspace-write, danger-full-access]\n\nFor more information, try '--help'.\n"
    );
    assert_eq!(
        stop(&["exec", "--json", "--json", "hi"]).stderr,
        format!("error: the argument '--json' cannot be used multiple times\n\n{EXEC_USAGE}\nFor more information, try '--help'.\n")
    );
    assert!(stop(&["exec", "-m", "a", "-m", "b", "hi"])
        .stderr
        .starts_with("error: the argument '--model <MODEL>' cannot be used multiple times\n"));
    assert_eq!(
        stop(&["exec", "--json=1", "hi"]).stderr,
        format!("error: unexpected value '1' for '--json' found; no more were expected\n\n{EXEC_USAGE}\nFor more information, try '--help'.\n")
    );
    assert_eq!(
        stop(&["exec", "hi", "there"]).stderr,
        format!("error: unexpected argument 'there' found\n\n{EXEC_USAGE}\nFor more information, try '--help'.\n")
    );
}

#[test]
fn version_and_help_are_the_measured_texts() {
    let cx = Codex::latest();
    assert_eq!(cx.version_line(), "codex-cli 0.169.0\n");
    assert_eq!(stop(&["--version"]).stdout, "codex-cli 0.169.0\n");
    assert_eq!(stop(&["exec", "-V"]).stdout, "codex-cli-exec 0.169.0\n");
    let help = stop(&["exec", "--help"]);
    assert_eq!((help.code, help.stdout.as_str()), (0, cx.exec_help()));
    assert!(stop(&["exec", "-h"])
        .stdout
        .contains("  [PROMPT]  Initial instructions"));
    let newer = Codex::unverified("0.170.2").expect("newer");
    assert_eq!(newer.version_line(), "codex-cli 0.170.2\n");
    assert_eq!(
        newer
            .parse(&argv(&["exec", "--version"]))
            .unwrap_err()
            .stdout,
        "codex-cli-exec 0.170.2\n"
    );
}

#[test]
fn the_options_come_from_the_help_texts() {
    let cx = Codex::latest();
    let shown = cx
        .exec_help()
        .lines()
        .filter(|l| l.starts_with("  -") || l.starts_with("      --"))
        .count();
    assert_eq!(cx.exec_options().len(), shown);
    let model = cx.option("model").expect("model");
    assert_eq!((model.short, model.takes_value()), (Some('m'), true));
    assert_eq!(cx.option("json").map(CodexOption::takes_value), Some(false));
    assert_eq!(
        cx.option("sandbox").unwrap().choices,
        ["read-only", "workspace-write", "danger-full-access"]
    );
    assert!(cx.option("image").unwrap().multiple);
    assert!(cx.option("config").unwrap().repeatable);
    assert!(cx.option("last").is_some(), "exec resume's --last");
}

#[test]
fn argv_spellings_mean_the_same() {
    let cx = Codex::latest();
    for a in [
        &["exec", "-m", "M", "--sandbox", "read-only", "hi"][..],
        &["exec", "-mM", "-s=read-only", "hi"],
        &["exec", "--model=M", "-sread-only", "--", "hi"],
        &["-m", "M", "e", "-s", "read-only", "hi"],
    ] {
        let p = cx
            .parse(&argv(a))
            .unwrap_or_else(|s| panic!("{a:?}: {}", s.stderr));
        assert_eq!(p.command, Command::Exec, "{a:?}");
        assert_eq!(
            (p.value("model"), p.value("sandbox")),
            (Some("M"), Some("read-only")),
            "{a:?}"
        );
        assert_eq!(p.prompt.as_deref(), Some("hi"), "{a:?}");
    }
    // `-i` takes every value up to the next option (measured: `exec -i a b` reads stdin).
    let p = cx.parse(&argv(&["exec", "-i", "a", "b"])).unwrap();
    assert_eq!(
        (p.values("image"), p.prompt.clone()),
        (vec!["a", "b"], None)
    );
    // The top level's -c first, then exec's.
    let p = cx
        .parse(&argv(&["-c", "a=1", "exec", "-c", "b=2", "hi"]))
        .unwrap();
    assert_eq!(p.values("config"), ["a=1", "b=2"]);
    let p = cx
        .parse(&argv(&["exec", "resume", "--last", "hi"]))
        .unwrap();
    assert_eq!(
        (p.command, p.session_id, p.prompt.as_deref()),
        (Command::ExecResume, None, Some("hi"))
    );
    let p = cx.parse(&argv(&["exec", "resume", "ID", "hi"])).unwrap();
    assert_eq!(
        (p.session_id.as_deref(), p.prompt.as_deref()),
        (Some("ID"), Some("hi"))
    );
}

#[test]
fn effective_values_come_from_flags_then_overrides_then_config_then_defaults() {
    let cx = Codex::latest();
    let layer = |name: &str, kv: &[(&str, &str)]| Layer {
        name: name.into(),
        values: kv
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    };
    let config = layer(
        "config.toml",
        &[
            ("model", "C"),
            ("sandbox_mode", "workspace-write"),
            ("model_provider", "fake"),
        ],
    );
    let over = layer("-c", &[("model", "O")]);
    let p = cx.parse(&argv(&["exec", "hi"])).unwrap();
    let e = effective(&p, &[config.clone(), over.clone()]);
    assert_eq!(
        (e.model.value.as_deref(), &e.model.source),
        (Some("O"), &Source::Layer("-c".into()))
    );
    assert_eq!(e.sandbox.value.as_deref(), Some("workspace-write"));
    assert_eq!(e.provider.value.as_deref(), Some("fake"));
    assert_eq!(
        e.approval,
        Resolved {
            value: Some("never".into()),
            source: Source::Default
        }
    );
    assert_eq!(e.session, "new");
    let p = cx
        .parse(&argv(&[
            "exec",
            "-m",
            "F",
            "--dangerously-bypass-approvals-and-sandbox",
            "hi",
        ]))
        .unwrap();
    let e = effective(&p, &[config, over]);
    assert_eq!(
        (
            e.model.value.as_deref(),
            e.model.source.to_string().as_str()
        ),
        (Some("F"), "flag --model")
    );
    assert_eq!(e.sandbox.value.as_deref(), Some("danger-full-access"));
    let e = effective(&p, &[]);
    assert_eq!(
        (e.provider.value.as_deref(), e.provider.source.clone()),
        (Some("openai"), Source::Default)
    );
    assert_eq!(
        split_override("hi"),
        Err("Invalid override (missing '='): hi".into())
    );
    assert_eq!(
        split_override(" model = \"x\""),
        Ok(("model".into(), " \"x\"".into()))
    );
    assert_eq!(literal_override(" 'o3' "), "o3");
}

#[test]
fn the_prompt_comes_from_argv_stdin_or_both() {
    let cx = Codex::latest();
    let p = |a: &[&str]| cx.parse(&argv(a)).unwrap();
    let none = cx.prompt(&p(&["exec"]), true).unwrap_err();
    assert_eq!((none.code, none.stderr.as_str()), (1, "No prompt provided. Either specify one as an argument or pipe the prompt into stdin.\n"));
    assert_eq!(
        cx.prompt(&p(&["exec"]), false),
        Ok(PromptPlan::Stdin { announce: true })
    );
    assert_eq!(
        cx.prompt(&p(&["exec", "-"]), false),
        Ok(PromptPlan::Stdin { announce: false })
    );
    let both = cx.prompt(&p(&["exec", "hi"]), false).unwrap();
    assert_eq!(join_prompt(&both, ""), Some("hi".into()));
    assert_eq!(
        join_prompt(&both, "x"),
        Some("hi\n\n<stdin>\nx\n</stdin>".into())
    );
    assert_eq!(
        join_prompt(&PromptPlan::Stdin { announce: true }, " \n"),
        None
    );
}

#[test]
fn jaro_is_clap_s_similarity() {
    assert!((clap::jaro("martha", "marhta") - 0.944).abs() < 0.001);
    assert_eq!(clap::jaro("", "x"), 0.0);
}

/// Every release of Codex's row in the registry has its texts, in the row's order.
#[test]
fn each_pinned_release_has_its_texts() {
    assert_eq!(super::TEXTS.len(), super::RELEASES.len());
    for (t, r) in super::TEXTS.iter().zip(super::RELEASES) {
        assert_eq!(t.version.trim(), format!("codex-cli {r}"));
    }
}
