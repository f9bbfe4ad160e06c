//! Unit tests of `run`: the plan built from the arguments (and what it refuses), the exit
//! status of each terminal message.

use super::*;
use clap::Parser;

#[derive(Parser)]
struct Wrap {
    #[command(flatten)]
    run: RunArgs,
}

fn args(extra: &[&str]) -> RunArgs {
    let mut argv = vec!["x"];
    argv.extend_from_slice(extra);
    Wrap::try_parse_from(argv).map(|w| w.run).unwrap()
}

fn sh() -> String {
    "/bin/sh".into()
}

#[test]
fn plan_builds_the_request() {
    std::env::set_var("PI_HARNESS_SUPERVISOR", "/bin/true");
    let a = args(&[
        "--pi",
        &sh(),
        "--pi-version",
        "0.87.1",
        "--model",
        "m",
        "--provider",
        "p",
        "--session-id",
        "s1",
        "--exclude-tools",
        "bash,edit",
        "--thinking",
        "high",
        "--timeout",
        "2s",
        "--retry",
        "2",
        "--env",
        "A=1",
        "--api-key-env",
        "MY_KEY",
        "--json",
        "hello",
    ]);
    let p = plan(
        a,
        |k| (k == "MY_KEY").then(|| "sk-1".to_string()),
        || unreachable!(),
    )
    .unwrap();
    let r = &p.request;
    assert_eq!(r.prompt, "hello");
    assert_eq!(r.exclude_tools, ["bash", "edit"]);
    assert_eq!(r.session.as_ref().map(|s| s.id.as_str()), Some("s1"));
    assert_eq!(
        r.api_key
            .as_ref()
            .map(|k| (k.env_var.as_str(), k.value.as_str())),
        Some(("MY_KEY", "sk-1"))
    );
    assert_eq!(r.env, [("A".to_string(), "1".to_string())]);
    assert_eq!(r.timeout, Some(Duration::from_secs(2)));
    assert_eq!(p.retry.map(|r| r.max_attempts), Some(3));
    assert!(p.json);
}

#[test]
fn plan_names_what_is_wrong() {
    std::env::set_var("PI_HARNESS_SUPERVISOR", "/bin/true");
    let e = plan(
        args(&["--pi", "/no/such/pi", "x"]),
        |_| None,
        || unreachable!(),
    )
    .unwrap_err();
    assert_eq!(e.message, "--bin /no/such/pi: no such file");
    assert_eq!(e.code, EXIT_USAGE);
    let e = plan(
        args(&["--bin", "no-such-pi-anywhere", "x"]),
        |_| None,
        || unreachable!(),
    )
    .unwrap_err();
    assert_eq!(
        e.message,
        "--bin no-such-pi-anywhere: no such file (not on PATH either)"
    );
    // A bare name is found on PATH.
    let p = plan(args(&["--pi", "sh", "x"]), |_| None, || unreachable!()).unwrap();
    assert!(p.request.pi_path.unwrap().is_absolute());
    let e = plan(args(&["--pi", "/", "x"]), |_| None, || unreachable!()).unwrap_err();
    assert!(e.message.contains("is a directory"), "{}", e.message);
    let e = plan(
        args(&["--pi", &sh(), "--api-key-env", "NOPE", "x"]),
        |_| None,
        || unreachable!(),
    )
    .unwrap_err();
    assert_eq!(
        e.message,
        "--api-key-env NOPE: the variable is not set in pi-harness's environment"
    );
    let e = plan(args(&["--pi", &sh(), "-"]), |_| None, || Ok("  \n".into())).unwrap_err();
    assert_eq!(e.message, "the prompt is empty");
    let p = plan(
        args(&["--pi", &sh(), "-"]),
        |_| None,
        || Ok("-from stdin".into()),
    )
    .unwrap();
    assert_eq!(p.request.prompt, "-from stdin");
}

#[test]
fn exit_codes() {
    use pi_wire::message::Failure;
    let failed = |reason| {
        Message::TerminalFailed(Failure {
            reason,
            message: String::new(),
            exit: None,
            stderr_tail: None,
            invalid_lines: vec![],
            invalid_lines_dropped: 0,
        })
    };
    assert_eq!(exit_code(&Message::TerminalCancelled { exit: None }), 130);
    assert_eq!(exit_code(&failed(FailureReason::Timeout)), 1);
    assert_eq!(exit_code(&failed(FailureReason::InvalidRequest)), 2);
    assert_eq!(
        exit_code(&Message::TerminalCompleted {
            stop_reason: "stop".into(),
            usage: Default::default()
        }),
        0
    );
}

#[test]
fn plan_for_codex_refuses_what_codex_cannot_be_asked_as_a_usage_error() {
    std::env::set_var("PI_HARNESS_SUPERVISOR", "/bin/true");
    let p = plan(
        args(&[
            "--agent",
            "codex",
            "--pi",
            &sh(),
            "--model",
            "gpt-5.1-codex",
            "hi",
        ]),
        |_| None,
        || unreachable!(),
    )
    .unwrap();
    assert_eq!(p.request.agent, Agent::Codex);
    assert_eq!(p.request.model.as_deref(), Some("gpt-5.1-codex"));
    let err = |extra: &[&str]| {
        let mut argv = vec!["--agent", "codex", "--pi", "/bin/sh"];
        argv.extend_from_slice(extra);
        plan(args(&argv), |_| None, || unreachable!())
            .unwrap_err()
            .to_string()
    };
    assert!(err(&["--tools", "bash", "hi"]).contains("Codex has no flag for the request's tools"));
    assert!(err(&["--rpc", "hi"]).contains("--rpc is pi's RPC mode"));
    // Every registered agent is a value; one the provider does not run is refused by name.
    let claude = plan(
        args(&["--agent", "claude", "--bin", "/bin/sh", "hi"]),
        |_| None,
        || unreachable!(),
    )
    .unwrap_err()
    .to_string();
    assert_eq!(
        claude,
        "--agent claude: the provider runs pi, Codex and Gemini CLI, not Claude Code"
    );
    let unknown = Wrap::try_parse_from(["x", "--agent", "opencode", "hi"])
        .err()
        .unwrap()
        .to_string();
    let names = pi_grammar::Agent::names();
    assert!(
        unknown.contains("invalid value 'opencode' for '--agent <AGENT>'")
            && unknown.contains(&format!("[possible values: {names}]")),
        "{unknown}"
    );
}

#[test]
fn plan_for_gemini_takes_its_approval_mode_and_refuses_what_it_cannot_be_asked() {
    let p = plan(
        args(&[
            "--agent",
            "gemini",
            "--pi",
            &sh(),
            "--model",
            "gemini-2.5-flash",
            "--approval-mode",
            "yolo",
            "hi",
        ]),
        |_| None,
        || unreachable!(),
    )
    .unwrap();
    assert_eq!(p.request.agent, Agent::Gemini);
    assert_eq!(p.request.approval.as_deref(), Some("yolo"));
    let err = |agent: &str, extra: &[&str]| {
        let mut argv = vec!["--agent", agent, "--pi", "/bin/sh"];
        argv.extend_from_slice(extra);
        plan(args(&argv), |_| None, || unreachable!())
            .unwrap_err()
            .to_string()
    };
    assert!(err("gemini", &["--thinking", "high", "hi"])
        .contains("Gemini CLI has no flag for the request's thinking"));
    assert!(err("gemini", &["--approval-mode", "never", "hi"])
        .contains("approval mode \"never\" is not one of Gemini CLI's"));
    assert!(err("gemini", &["--rpc", "hi"])
        .contains("--rpc is pi's RPC mode: Gemini CLI runs one-way only"));
    assert!(err("pi", &["--approval-mode", "yolo", "hi"])
        .contains("--approval-mode is Gemini CLI's (--agent gemini): pi has none"));
    assert!(err("codex", &["--approval-mode", "yolo", "hi"])
        .contains("Codex has no flag for the request's approval"));
}
