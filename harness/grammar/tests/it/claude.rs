//! Claude Code's grammar against its data and against what the real CLI printed (each
//! literal message below is the real one, measured on 2.1.330 and 2.1.332): every option of
//! every release is taken with a valid value and refuses a bogus choice with commander's
//! message; hidden values and options are taken; `--help`/`--version` print the release's
//! text; versions without data fall back to the nearest earlier release.

use pi_grammar::claude::{known_versions, Claude, OptionKind, Stop};

/// The argument the real CLI is probed with (`scripts/claude-grammar.sh`): commander names
/// the first unknown option only once it has read everything else, so this one's complaint
/// alone means the rest was taken.
const PROBE: &str = "--pi-harness-probe-a";

fn argv(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

fn stop(cc: &Claude, args: &[&str]) -> Stop {
    match cc.parse(&argv(args), true) {
        Ok(p) => panic!("{args:?} parsed: {p:?}"),
        Err(s) => s,
    }
}

/// Did the parser take `args` (the probe the only complaint)?
fn took(cc: &Claude, args: &[&str]) -> Result<(), String> {
    let mut with_probe = args.to_vec();
    with_probe.push(PROBE);
    let s = stop(cc, &with_probe);
    let want = format!("error: unknown option '{PROBE}'\n");
    if (s.stdout.as_str(), s.stderr.as_str(), s.code) == ("", want.as_str(), 1) {
        Ok(())
    } else {
        Err(format!("{args:?}: {s:?}"))
    }
}

/// A value the option takes.
fn valid(cc: &Claude, flag: &str) -> String {
    let opt = cc.option(flag).unwrap();
    match opt.choices.first() {
        Some(c) => c.clone(),
        None => "1".into(),
    }
}

fn releases() -> Vec<Claude> {
    let v = known_versions();
    assert!(v.contains(&"2.1.330") && v.contains(&"2.1.332"), "{v:?}");
    v.iter().map(|v| Claude::for_version(v).unwrap()).collect()
}

#[test]
fn every_option_is_taken_and_a_bogus_choice_is_refused_with_the_real_message() {
    for cc in releases() {
        let mut errors = Vec::new();
        let mut choices = 0;
        for opt in cc.options() {
            let long = opt.longs[0].as_str();
            let flags: Vec<&str> = opt
                .short
                .iter()
                .chain(&opt.longs)
                .map(String::as_str)
                .collect();
            for flag in flags {
                let v = valid(&cc, flag);
                let tries: Vec<Vec<&str>> = match opt.kind {
                    OptionKind::Help | OptionKind::Version => continue,
                    OptionKind::Switch => vec![vec![flag]],
                    OptionKind::Value | OptionKind::Variadic => vec![vec![flag, &v]],
                    OptionKind::Optional | OptionKind::OptionalVariadic => {
                        vec![vec![flag], vec![flag, &v]]
                    }
                };
                for args in tries {
                    if let Err(e) = took(&cc, &args) {
                        errors.push(e);
                    }
                }
            }
            for v in &opt.accepts {
                if let Err(e) = took(&cc, &[long, v]) {
                    errors.push(format!("hidden value: {e}"));
                }
            }
            if !opt.choices.is_empty() {
                choices += 1;
                let s = stop(&cc, &[&format!("{long}=pi-harness-bogus")]);
                let want = format!(
                    "error: option '{}' argument 'pi-harness-bogus' is invalid. Allowed choices are {}.\n",
                    opt.flags,
                    opt.choices.join(", ")
                );
                if s.stderr != want || s.code != 1 || !s.stdout.is_empty() {
                    errors.push(format!("{long} bogus: {s:?}"));
                }
                // The choices named are the help's, when the help lists the option.
                if opt.shown {
                    let quoted: Vec<String> =
                        opt.choices.iter().map(|c| format!("\"{c}\"")).collect();
                    let help = cc
                        .help_text()
                        .split_whitespace()
                        .collect::<Vec<_>>()
                        .join(" ");
                    let listed = format!("(choices: {}", quoted.join(", "));
                    if !help.contains(&listed) {
                        errors.push(format!("{long}: the help does not list {listed}"));
                    }
                }
            }
        }
        assert!(errors.is_empty(), "{}: {errors:#?}", cc.version());
        assert!(cc.options().len() > 100 && choices >= 8, "{}", cc.version());
    }
}

#[test]
fn permission_mode_default_is_taken() {
    for cc in releases() {
        let p = cc
            .parse(
                &argv(&[
                    "-p",
                    "--input-format",
                    "stream-json",
                    "--output-format",
                    "stream-json",
                    "--verbose",
                    "--permission-mode",
                    "default",
                ]),
                false,
            )
            .unwrap();
        assert_eq!(p.value("permission-mode"), Some("default"));
        // Still not a choice the parser names.
        assert_eq!(
            stop(&cc, &["--permission-mode", "sometimes"]).stderr,
            "error: option '--permission-mode <mode>' argument 'sometimes' is invalid. Allowed choices are acceptEdits, auto, bypassPermissions, manual, dontAsk, plan.\n"
        );
    }
}

#[test]
fn the_real_parser_s_messages() {
    for cc in releases() {
        let err = |args: &[&str]| stop(&cc, args).stderr;
        // Hidden options, with their checks.
        assert!(took(&cc, &["--max-turns", "3"]).is_ok());
        assert!(took(&cc, &["--permission-prompt-tool", "stdio"]).is_ok());
        assert_eq!(
            err(&["--max-turns", "x"]),
            "error: option '--max-turns <turns>' argument 'x' is invalid. must be a number\n"
        );
        assert_eq!(
            err(&["--max-turns"]),
            "error: option '--max-turns <turns>' argument missing\n"
        );
        assert_eq!(
            err(&["--max-budget-usd", "0"]),
            "error: option '--max-budget-usd <amount>' argument '0' is invalid. --max-budget-usd must be a number greater than 0\n"
        );
        assert_eq!(
            err(&["-p", "--allowedTools"]),
            "error: option '--allowedTools, --allowed-tools <tools...>' argument missing\n"
        );
        // Unknown options, with commander's suggestions.
        assert_eq!(
            err(&["--verbos"]),
            "error: unknown option '--verbos'\n(Did you mean --verbose?)\n"
        );
        assert_eq!(
            err(&["--vers"]),
            "error: unknown option '--vers'\n(Did you mean one of --verbose, --version?)\n"
        );
        assert_eq!(
            err(&["--allowedtools"]),
            "error: unknown option '--allowedtools'\n(Did you mean --allowed-tools?)\n"
        );
        assert_eq!(
            err(&["--print=1"]),
            "error: unknown option '--print=1'\n(Did you mean --print?)\n"
        );
        assert_eq!(err(&["-pZ"]), "error: unknown option '-Z'\n");
        assert_eq!(err(&["-p=1"]), "error: unknown option '-=1'\n");
        assert_eq!(err(&["--x", "--y"]), "error: unknown option '--x'\n");
        // Optional values, inline values, short flags with their values.
        assert!(took(&cc, &["-dhooks", "--resume", "--debug=api", "-rabc"]).is_ok());
        assert!(took(&cc, &["--prompt-suggestions", "On"]).is_ok());
        // `--version` prints as soon as it is read; a bad value before it is an error.
        let version = |args: &[&str]| stop(&cc, args).stdout;
        assert_eq!(version(&["--x", "--version"]), cc.version_line());
        assert_eq!(version(&["-pv"]), cc.version_line());
        assert_eq!(
            err(&["--permission-mode", "bogus", "--version"]),
            "error: option '--permission-mode <mode>' argument 'bogus' is invalid. Allowed choices are acceptEdits, auto, bypassPermissions, manual, dontAsk, plan.\n"
        );
        // `--help` is looked for among the unknown arguments: after `--` it is the prompt.
        assert_eq!(stop(&cc, &["--x", "-h"]).stdout, cc.help_text());
        assert!(cc.parse(&argv(&["-p", "--", "--help"]), true).is_ok());
    }
}

#[test]
fn help_and_version_are_the_release_s_own_text() {
    for cc in releases() {
        let help = stop(&cc, &["--help"]);
        assert_eq!((help.stdout.as_str(), help.code), (cc.help_text(), 0));
        assert!(help
            .stdout
            .starts_with("Usage: claude [options] [command] [prompt]\n"));
        assert!(help.stdout.contains("\n  --include-hook-events "));
        assert_eq!(help.stdout.lines().count(), 313);
        let version = stop(&cc, &["--version"]);
        assert_eq!(version.stdout, format!("{} (Claude Code)\n", cc.version()));
    }
}

#[test]
fn a_version_without_data_is_read_as_the_nearest_earlier_release() {
    assert!(Claude::for_version("2.1.331").is_none());
    assert_eq!(Claude::nearest("2.1.331").version(), "2.1.330");
    assert_eq!(Claude::nearest("2.1.332").version(), "2.1.332");
    assert_eq!(
        Claude::nearest("2.1.332 (Claude Code)").version(),
        "2.1.332"
    );
    assert_eq!(
        Claude::nearest("3.0.0").version(),
        Claude::latest().version()
    );
    // Older than every release, or no version: the oldest.
    assert_eq!(Claude::nearest("1.0.0").version(), known_versions()[0]);
    assert_eq!(Claude::nearest("").version(), known_versions()[0]);
}

#[test]
fn a_release_newer_than_every_measured_one_borrows_the_newest() {
    let newest = Claude::latest();
    let cc = Claude::unverified("2.1.340").expect("newer than every measured release");
    assert_eq!(cc.borrowed(), Some(newest.version()));
    assert_eq!(cc.version(), newest.version());
    assert_eq!(cc.claimed_version(), "2.1.340");
    assert_eq!(cc.options().len(), newest.options().len());
    // `--version` answers as the newer release, in the measured release's words.
    let v = cc.parse(&["--version".to_string()], false).unwrap_err();
    assert_eq!(v.stdout, "2.1.340 (Claude Code)\n");
    assert_eq!(v.code, 0);
    assert_eq!(
        Claude::measured_or_newer("2.1.340 (Claude Code)").and_then(|c| c.borrowed()),
        Some(newest.version())
    );
    assert_eq!(Claude::for_version("2.1.332").unwrap().borrowed(), None);
    for not_newer in ["2.1.332", "2.1.331", "2.1.1", "garbage", "2.2"] {
        assert!(Claude::unverified(not_newer).is_none(), "{not_newer}");
    }
    assert!(Claude::measured_or_newer("2.1.331").is_none());
}
