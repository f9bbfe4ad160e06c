//! The grammar read against what real pi does: flags per version, stage 1 parsing, the
//! later checks, output streams, subcommands.

use super::*;

fn v(version: &str) -> Grammar {
    Grammar::for_version(version).unwrap()
}
fn args(s: &[&str]) -> Vec<String> {
    s.iter().map(|a| a.to_string()).collect()
}
fn parse(version: &str, s: &[&str]) -> Result<ParsedArgs, Rejection> {
    v(version).parse(&args(s))
}
fn err(version: &str, s: &[&str]) -> String {
    parse(version, s).unwrap_err().stderr
}

#[test]
fn versions() {
    assert!(Grammar::for_version("0.73.1").is_some());
    assert!(Grammar::for_version("0.87.1").is_some());
    assert!(Grammar::for_version("1.5.2").is_some());
    assert!(Grammar::for_version("0.80.0").is_none());
    assert_eq!(v("0.87.1").version(), "0.87.1");
}

#[test]
fn flags_per_version() {
    for f in [
        "--session-id",
        "--exclude-tools",
        "-xt",
        "--name",
        "-n",
        "--approve",
        "-na",
        "--tui-mode",
        "--use-theme",
    ] {
        assert!(!v("0.73.1").has_flag(f), "{f}");
        assert!(v("0.87.1").has_flag(f), "{f}");
    }
    for f in [
        "--mode",
        "-p",
        "--print",
        "--provider",
        "--model",
        "--session",
        "--no-session",
        "--thinking",
        "--tools",
        "-t",
        "--no-tools",
        "-nt",
        "--append-system-prompt",
        "--system-prompt",
        "--offline",
        "--version",
        "-v",
        "--help",
        "-h",
    ] {
        assert!(v("0.73.1").has_flag(f), "{f}");
        assert!(v("0.87.1").has_flag(f), "{f}");
    }
    assert_eq!(v("0.73.1").flag("-t").unwrap().long, "--tools");
    assert_eq!(v("0.87.1").flag("--tools").unwrap().kind, FlagKind::Value);
    assert_eq!(v("0.73.1").thinking_levels().last(), Some(&"xhigh"));
    assert_eq!(v("0.87.1").thinking_levels().last(), Some(&"max"));
}

#[test]
fn typical_command_line() {
    let p = parse(
        "0.87.1",
        &[
            "--mode",
            "json",
            "-p",
            "--provider",
            "fake",
            "--model",
            "fake-model",
            "--no-session",
            "-t",
            "read,bash",
            "hello",
        ],
    )
    .unwrap();
    assert_eq!(p.value("--mode"), Some("json"));
    assert!(p.has("--print"));
    assert!(p.has("--no-session"));
    assert_eq!(p.value("--tools"), Some("read,bash"));
    assert_eq!(p.messages, args(&["hello"]));
    assert!(p.unknown_flags.is_empty() && p.warnings.is_empty());
}

#[test]
fn print_swallows_the_next_plain_argument() {
    let p = parse("0.73.1", &["-p", "hi", "there"]).unwrap();
    assert_eq!(p.messages, args(&["hi", "there"]));
    // `---x` counts as a message after -p; `@f` and `-x` do not.
    assert_eq!(
        parse("0.73.1", &["-p", "---x"]).unwrap().messages,
        args(&["---x"])
    );
    let p = parse("0.73.1", &["-p", "@f.md"]).unwrap();
    assert_eq!(
        (p.messages.len(), p.file_args.clone()),
        (0, args(&["f.md"]))
    );
    assert_eq!(err("0.73.1", &["-p", "-x"]), "Error: Unknown option: -x\n");
    // Not after -p, `---x` is an unknown long flag named `-x`.
    assert_eq!(
        parse("0.73.1", &["---x"]).unwrap().unknown_flags,
        vec![("-x".to_string(), None)]
    );
}

#[test]
fn double_dash_on_each_version() {
    let p = parse("0.87.1", &["-p", "--", "-y", "@a", "--model"]).unwrap();
    assert_eq!(p.messages, args(&["-y", "--model"]));
    assert_eq!(p.file_args, args(&["a"]));
    assert!(!p.has("--model"));
    // 0.73.1: `--` is an unknown flag with an empty name, swallowing a plain next arg.
    let p = parse("0.73.1", &["--", "hello"]).unwrap();
    assert_eq!(p.unknown_flags, vec![(String::new(), Some("hello".into()))]);
    assert_eq!(
        p.unknown_flags_error().unwrap().stderr,
        "Error: Unknown option: --\n"
    );
    assert_eq!(err("0.73.1", &["--", "-x"]), "Error: Unknown option: -x\n");
}

#[test]
fn equals_forms_are_unknown_flags() {
    for version in KNOWN_VERSIONS {
        let p = parse(version, &["--model=x", "hi"]).unwrap();
        assert_eq!(
            p.unknown_flags,
            vec![("model".to_string(), Some("x".into()))]
        );
        assert_eq!(p.messages, args(&["hi"]));
        assert_eq!(
            p.unknown_flags_error().unwrap().stderr,
            "Error: Unknown option: --model\n"
        );
    }
}

#[test]
fn unknown_long_flags_take_a_plain_value_and_are_reported_together() {
    let p = parse(
        "0.87.1",
        &["--bogus", "val", "--other", "-p", "msg", "--bogus", "@f"],
    )
    .unwrap();
    assert_eq!(
        p.unknown_flags,
        vec![("bogus".to_string(), None), ("other".to_string(), None)]
    );
    assert_eq!(p.messages, args(&["msg"]));
    assert_eq!(p.file_args, args(&["f"]));
    assert_eq!(
        p.unknown_flags_error().unwrap(),
        Rejection {
            stderr: "Error: Unknown options: --bogus, --other\n".into(),
            exit_code: 1
        }
    );
}

#[test]
fn version_missing_flags_are_unknown() {
    let p = parse(
        "0.73.1",
        &["--session-id", "abc", "--exclude-tools", "bash"],
    )
    .unwrap();
    assert_eq!(
        p.unknown_flags_error().unwrap().stderr,
        "Error: Unknown options: --session-id, --exclude-tools\n"
    );
    assert_eq!(
        err("0.73.1", &["-xt", "bash"]),
        "Error: Unknown option: -xt\n"
    );
    let p = parse("0.87.1", &["--session-id", "abc", "-xt", "bash"]).unwrap();
    assert_eq!(p.value("--session-id"), Some("abc"));
    assert_eq!(p.value("--exclude-tools"), Some("bash"));
}

#[test]
fn value_flags_at_the_end_fall_through() {
    assert_eq!(
        parse("0.73.1", &["--provider"])
            .unwrap()
            .unknown_flags_error()
            .unwrap()
            .stderr,
        "Error: Unknown option: --provider\n"
    );
    assert_eq!(err("0.87.1", &["-t"]), "Error: Unknown option: -t\n");
    assert_eq!(
        parse("0.73.1", &["--mode"])
            .unwrap()
            .unknown_flags_error()
            .unwrap()
            .stderr,
        "Error: Unknown option: --mode\n"
    );
    assert_eq!(
        err("0.87.1", &["--mode"]),
        "Error: --mode requires text, json, or rpc\n"
    );
    assert_eq!(err("0.87.1", &["-n"]), "Error: --name requires a value\n");
    // A value flag takes the next argument even if it looks like a flag.
    assert_eq!(
        parse("0.73.1", &["--model", "--x"])
            .unwrap()
            .value("--model"),
        Some("--x")
    );
}

#[test]
fn mode_values() {
    assert_eq!(
        err("0.87.1", &["--mode", "bad"]),
        "Error: Invalid mode \"bad\". Valid values: text, json, rpc\n"
    );
    let p = parse("0.73.1", &["--mode", "bad", "hi"]).unwrap();
    assert!(!p.has("--mode"));
    assert_eq!(p.messages, args(&["hi"]));
}

#[test]
fn thinking_levels_warn_and_are_dropped() {
    let p = parse("0.73.1", &["--thinking", "max"]).unwrap();
    assert!(!p.has("--thinking"));
    assert_eq!(
        p.warnings_text(),
        "Warning: Invalid thinking level \"max\". Valid values: off, minimal, low, medium, high, xhigh\n"
    );
    assert_eq!(
        parse("0.87.1", &["--thinking", "max"])
            .unwrap()
            .value("--thinking"),
        Some("max")
    );
    // Warnings printed before an error are part of the error output.
    assert_eq!(
        err("0.87.1", &["--thinking", "x", "-q"]),
        "Warning: Invalid thinking level \"x\". Valid values: off, minimal, low, medium, high, xhigh, max\nError: Unknown option: -q\n"
    );
}

#[test]
fn short_options_and_dash() {
    assert_eq!(err("0.73.1", &["-"]), "Error: Unknown option: -\n");
    assert_eq!(
        err("0.87.1", &["-x", "-y"]),
        "Error: Unknown option: -x\nError: Unknown option: -y\n"
    );
}

#[test]
fn repeated_and_last_wins() {
    let p = parse(
        "0.73.1",
        &[
            "--model",
            "a",
            "--model",
            "b",
            "--append-system-prompt",
            "x",
            "--append-system-prompt",
            "y",
        ],
    )
    .unwrap();
    assert_eq!(p.value("--model"), Some("b"));
    assert_eq!(p.values("--append-system-prompt"), vec!["x", "y"]);
}

#[test]
fn list_models_optional_value() {
    assert_eq!(
        parse("0.73.1", &["--list-models", "gpt"])
            .unwrap()
            .value("--list-models"),
        Some("gpt")
    );
    let p = parse("0.73.1", &["--list-models", "-p"]).unwrap();
    assert!(p.has("--list-models") && p.has("--print"));
}

#[test]
fn session_id_validation() {
    assert!(is_valid_session_id("a"));
    assert!(is_valid_session_id("run-1.2_x"));
    for bad in ["", "-a", "a-", "bad!id", "a b", "é"] {
        assert!(!is_valid_session_id(bad), "{bad}");
    }
    for bad in [
        "x/../../../../tmp/x/victim.cassette",
        "/tmp/abs",
        "..",
        "a\0b",
        "a/b",
        &"a".repeat(MAX_SESSION_ID_BYTES + 1),
    ] {
        assert!(!is_file_safe_session_id(bad), "{bad}");
    }
    assert!(is_file_safe_session_id(&"a".repeat(MAX_SESSION_ID_BYTES)));
    assert!(is_file_safe_session_id(
        "019d8a2e-1f3c-7000-8000-0123456789ab"
    ));
    let e = parse("0.87.1", &["--session-id", "bad!id"])
        .unwrap()
        .validate()
        .unwrap_err();
    assert_eq!(e.stderr, "Error: Session id must be non-empty, contain only alphanumeric characters, '-', '_', and '.', and start and end with an alphanumeric character\n");
    let e = parse("0.87.1", &["--session-id", "ok", "--session", "s", "-c"])
        .unwrap()
        .validate()
        .unwrap_err();
    assert_eq!(
        e.stderr,
        "Error: --session-id cannot be combined with --session, --continue\n"
    );
    let e = parse("0.73.1", &["--fork", "f", "--no-session"])
        .unwrap()
        .validate()
        .unwrap_err();
    assert_eq!(
        e.stderr,
        "Error: --fork cannot be combined with --no-session\n"
    );
}

#[test]
fn output_streams() {
    let g73 = v("0.73.1");
    let g87 = v("0.87.1");
    let plain = parse("0.73.1", &["--version"]).unwrap();
    assert_eq!(plain.app_mode(true, true, &g73), AppMode::Interactive);
    assert_eq!(plain.app_mode(false, true, &g73), AppMode::Print);
    assert_eq!(plain.app_mode(true, false, &g73), AppMode::Interactive);
    assert_eq!(plain.app_mode(true, false, &g87), AppMode::Print);
    assert_eq!(g73.version_stream(AppMode::Interactive), Stream::Stdout);
    assert_eq!(g73.version_stream(AppMode::Print), Stream::Stderr);
    assert_eq!(g87.version_stream(AppMode::Json), Stream::Stdout);
    assert_eq!(g87.help_stream(&plain, AppMode::Print), Stream::Stdout);
    assert_eq!(g73.help_stream(&plain, AppMode::Print), Stream::Stderr);
    let json = parse("0.87.1", &["--mode", "json", "--help"]).unwrap();
    assert_eq!(json.app_mode(true, true, &g87), AppMode::Json);
    assert_eq!(g87.help_stream(&json, AppMode::Json), Stream::Stderr);
}

#[test]
fn commands() {
    assert_eq!(v("0.87.1").command(&args(&["auth", "x"])), Some("auth"));
    assert_eq!(v("0.73.1").command(&args(&["auth"])), None);
    assert_eq!(
        v("0.73.1").command(&args(&["install", "x"])),
        Some("install")
    );
    assert_eq!(v("0.73.1").command(&args(&["hello", "install"])), None);
}

#[test]
fn pi_1_5_2_is_0_87_1_plus_no_mcp() {
    let g152 = v("1.5.2");
    let g87 = v("0.87.1");
    let f152: Vec<&str> = g152.flags().map(|f| f.long).collect();
    let mut f87: Vec<&str> = g87.flags().map(|f| f.long).collect();
    f87.push("--no-mcp");
    let mut sorted = f152.clone();
    sorted.sort();
    f87.sort();
    assert_eq!(sorted, f87);
    assert_eq!(g152.thinking_levels(), g87.thinking_levels());
    assert_eq!(g152.command(&args(&["mcp", "list"])), Some("mcp"));
    assert_eq!(g87.command(&args(&["mcp"])), None);
    assert_eq!(g152.wire_dialect(), WireDialect::DeltaOnly);
    assert_eq!(v("0.73.1").wire_dialect(), WireDialect::SnapshotDelta);
    // 0.87.1 and 0.73.1 do not know --no-mcp: an unknown option after stdin.
    let p = parse("0.87.1", &["--no-mcp"]).unwrap();
    assert_eq!(
        g87.runtime_errors(&p).unwrap().stderr,
        "Error: Unknown option: --no-mcp\n"
    );
    assert!(g152
        .runtime_errors(&parse("1.5.2", &["--no-mcp"]).unwrap())
        .is_none());
}

#[test]
fn tools_values_are_checked_from_1_1_0() {
    // Measured on real 1.5.2 (exact stderr, exit 1, before stdin).
    assert_eq!(
        err("1.5.2", &["--tools", "read,+bash", "hi"]),
        "Error: --tools: tool names cannot be mixed with +name or -name entries\n"
    );
    assert_eq!(
        err("1.5.2", &["-t", "+re*"]),
        "Error: -t: +name and -name entries take exact tool names, not patterns: +re*\n"
    );
    // Modifiers alone, names alone, patterns in names, blanks: fine.
    for ok in [
        "+codemode,-write",
        "read,bash",
        "re*",
        " read , ,bash",
        "-bash",
    ] {
        let p = parse("1.5.2", &["--tools", ok]).unwrap();
        assert_eq!(p.value("--tools"), Some(ok), "{ok}");
    }
    // 0.87.1 takes every value as a list of literal names.
    assert_eq!(
        parse("0.87.1", &["--tools", "read,+bash"])
            .unwrap()
            .value("--tools"),
        Some("read,+bash")
    );
}

#[test]
fn provider_requires_model_after_stdin_from_1_0_0() {
    let g = v("1.5.2");
    let p = parse("1.5.2", &["--provider", "fake", "hi"]).unwrap();
    assert_eq!(
        g.runtime_errors(&p).unwrap().stderr,
        "Error: --provider requires --model (for example: --provider fake --model <pattern>)\n"
    );
    // `--model=x` leaves --model unset: both errors, the unknown option first.
    let p = parse("1.5.2", &["--provider", "fake", "--model=x", "hi"]).unwrap();
    assert_eq!(
        g.runtime_errors(&p).unwrap().stderr,
        "Error: Unknown option: --model\nError: --provider requires --model (for example: --provider fake --model <pattern>)\n"
    );
    assert!(g
        .runtime_errors(&parse("1.5.2", &["--provider", "fake", "--model", "m"]).unwrap())
        .is_none());
    let g87 = v("0.87.1");
    assert!(g87
        .runtime_errors(&parse("0.87.1", &["--provider", "fake"]).unwrap())
        .is_none());
    // --help reports them first on 1.5.2 only.
    let p = parse("1.5.2", &["--provider", "fake", "--help", "--bogus"]).unwrap();
    assert_eq!(
        g.help_preamble(&p),
        "Error: Unknown option: --bogus\nError: --provider requires --model (for example: --provider fake --model <pattern>)\n"
    );
    assert_eq!(
        g87.help_preamble(&parse("0.87.1", &["--help", "--bogus"]).unwrap()),
        ""
    );
}

#[test]
fn unpinned_versions() {
    assert!(Grammar::for_version("1.5.1").is_none());
    assert!(Grammar::for_version("1.5").is_none());
    assert_eq!(Grammar::nearest("1.5.1").version(), "0.87.1");
    assert_eq!(Grammar::nearest("2.0.0").version(), "1.5.2");
}

#[test]
fn help_lists_version_flags() {
    assert!(v("0.87.1")
        .help_text()
        .contains("--exclude-tools, -xt <value>"));
    assert!(!v("0.73.1").help_text().contains("--exclude-tools"));
}

#[test]
fn a_release_newer_than_every_pinned_one_borrows_the_newest_grammar() {
    let g = Grammar::unverified("1.6.0").expect("newer than 1.5.2");
    assert_eq!(g.borrowed(), Some("1.5.2"));
    assert_eq!(g.version(), "1.5.2");
    assert_eq!(g.claimed(), Version::new(1, 6, 0));
    let newest = v("1.5.2");
    assert!(g.flags().eq(newest.flags()), "the flags are 1.5.2's");
    assert_eq!(g.thinking_levels(), newest.thinking_levels());
    // It answers --version (and heads its help) as the release it stands for.
    assert!(g.help_text().starts_with("pi 1.6.0 (fake-pi stand-in)"));
    assert_eq!(Grammar::pinned_or_newer("1.6.0"), Some(g));
    assert_eq!(Grammar::pinned_or_newer("1.5.2"), Some(newest));
    assert_eq!(newest.borrowed(), None);
    // Pinned, older, in between and unreadable versions are not unverified.
    for not_newer in ["1.5.2", "1.5.1", "0.80.0", "0.1.0", "garbage", "1.6"] {
        assert_eq!(Grammar::unverified(not_newer), None, "{not_newer}");
    }
    assert_eq!(Grammar::pinned_or_newer("0.80.0"), None);
    assert_eq!(Grammar::pinned_or_newer("0.1.0"), None);
}
