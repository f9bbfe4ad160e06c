//! The small option syntaxes of `pi-harness cassette import`: `--flag NAME=VALUE`,
//! `--absent-flag NAME`, `--redaction PLACEHOLDER=MEANING`, `--argv-messages JSON`, signal
//! names and numbers, `--on-sigterm cleanup-exit:143`, `--dialect`, and the `expect`
//! section built from them. Every failure is an [`ImportError::Usage`].

use super::error::ImportError;
use crate::{Dialect, Expect, FlagRule, Secret, SignalAction, SIGNAL_NAMES};

/// Strip leading dashes from a flag name (`--mode` and `mode` name the same flag).
fn flag_name(s: &str) -> Result<String, ImportError> {
    let name = s.trim_start_matches('-');
    if name.is_empty() || name.contains(char::is_whitespace) {
        return Err(ImportError::Usage(format!("bad flag name {s:?}")));
    }
    Ok(name.to_string())
}

/// `NAME=VALUE` (present with that value) or `NAME` (a switch that must be present).
pub fn parse_flag_rule(s: &str) -> Result<(String, FlagRule), ImportError> {
    match s.split_once('=') {
        Some((name, value)) => Ok((flag_name(name)?, FlagRule::Value(value.to_string()))),
        None => Ok((flag_name(s)?, FlagRule::Present(true))),
    }
}

/// `NAME`: a flag that must be absent.
pub fn parse_absent_flag(s: &str) -> Result<(String, FlagRule), ImportError> {
    Ok((flag_name(s)?, FlagRule::Present(false)))
}

/// `PLACEHOLDER=WHAT IT REPLACED`.
pub fn parse_redaction(s: &str) -> Result<(String, String), ImportError> {
    match s.split_once('=') {
        Some((p, what)) if !p.is_empty() => Ok((p.to_string(), what.to_string())),
        _ => Err(ImportError::Usage(format!(
            "--redaction expects PLACEHOLDER=MEANING (for example '<SESSION_ID>=session uuid'), found {s:?}"
        ))),
    }
}

/// A JSON array of strings, for `--argv-messages`.
pub fn parse_argv_messages(s: &str) -> Result<Vec<String>, ImportError> {
    serde_json::from_str::<Vec<String>>(s).map_err(|e| {
        ImportError::Usage(format!(
            "--argv-messages expects a JSON array of strings (for example '[]' or '[\"list files\"]'): {e}"
        ))
    })
}

/// `SIGTERM`, `TERM` or `15` -> `SIGTERM` (only names a cassette may use).
pub fn parse_signal_name(s: &str) -> Result<String, ImportError> {
    let upper = s.to_ascii_uppercase();
    let name = if let Ok(n) = s.parse::<i32>() {
        signal_name_of_number(n).map(str::to_string)
    } else if upper.starts_with("SIG") {
        Some(upper)
    } else {
        Some(format!("SIG{upper}"))
    };
    match name {
        Some(n) if SIGNAL_NAMES.contains(&n.as_str()) => Ok(n),
        _ => Err(ImportError::Usage(format!(
            "unknown signal {s:?}; expected one of {}",
            SIGNAL_NAMES.join(", ")
        ))),
    }
}

fn signal_name_of_number(n: i32) -> Option<&'static str> {
    Some(match n {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        6 => "SIGABRT",
        7 => "SIGBUS",
        9 => "SIGKILL",
        10 => "SIGUSR1",
        11 => "SIGSEGV",
        12 => "SIGUSR2",
        13 => "SIGPIPE",
        14 => "SIGALRM",
        15 => "SIGTERM",
        _ => return None,
    })
}

/// `die`, `ignore`, `cleanup-exit:CODE` or `exit:CODE`.
pub fn parse_signal_action(s: &str) -> Result<SignalAction, ImportError> {
    let bad = || {
        ImportError::Usage(format!(
            "bad signal action {s:?}; expected die, ignore, cleanup-exit:CODE or exit:CODE"
        ))
    };
    let code = |c: &str| -> Result<i32, ImportError> {
        match c.parse::<i32>() {
            Ok(n) if (0..=255).contains(&n) => Ok(n),
            _ => Err(bad()),
        }
    };
    match s.split_once(':') {
        None if s == "die" => Ok(SignalAction::Die),
        None if s == "ignore" => Ok(SignalAction::Ignore),
        Some(("cleanup-exit" | "cleanup_exit", c)) => {
            Ok(SignalAction::CleanupExit { code: code(c)? })
        }
        Some(("exit", c)) => Ok(SignalAction::Exit { code: code(c)? }),
        _ => Err(bad()),
    }
}

/// `snapshot+delta`, `delta-only` or `snapshot-only`.
pub fn parse_dialect(s: &str) -> Result<Dialect, ImportError> {
    match s {
        "snapshot+delta" => Ok(Dialect::SnapshotDelta),
        "delta-only" => Ok(Dialect::DeltaOnly),
        "snapshot-only" => Ok(Dialect::SnapshotOnly),
        _ => Err(ImportError::Usage(format!(
            "unknown dialect {s:?}; expected snapshot+delta, delta-only or snapshot-only"
        ))),
    }
}

/// Build the `expect` section from the command line's pieces.
pub fn build_expect(
    flags: &[String],
    absent_flags: &[String],
    prompt: Option<String>,
    argv_messages: Option<&str>,
    env: Vec<String>,
    secret_env: Vec<String>,
) -> Result<Expect, ImportError> {
    let mut expect = Expect {
        prompt,
        env,
        ..Expect::default()
    };
    for s in flags {
        let (name, rule) = parse_flag_rule(s)?;
        if expect.flags.insert(name.clone(), rule).is_some() {
            return Err(ImportError::Usage(format!("flag {name:?} given twice")));
        }
    }
    for s in absent_flags {
        let (name, rule) = parse_absent_flag(s)?;
        if expect.flags.insert(name.clone(), rule).is_some() {
            return Err(ImportError::Usage(format!(
                "flag {name:?} is both required and forbidden"
            )));
        }
    }
    if let Some(a) = argv_messages {
        expect.argv_messages = Some(parse_argv_messages(a)?);
    }
    for name in secret_env {
        if name.is_empty() {
            return Err(ImportError::Usage("--secret-env NAME is empty".into()));
        }
        if !expect.env.contains(&name) {
            expect.env.push(name.clone());
        }
        expect.never_in_argv.push(Secret::Env(name));
    }
    Ok(expect)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn option_syntaxes() {
        assert_eq!(
            parse_flag_rule("--mode=json").unwrap(),
            ("mode".into(), FlagRule::Value("json".into()))
        );
        assert_eq!(
            parse_flag_rule("no-session").unwrap(),
            ("no-session".into(), FlagRule::Present(true))
        );
        assert_eq!(
            parse_absent_flag("--session-id").unwrap(),
            ("session-id".into(), FlagRule::Present(false))
        );
        assert!(parse_flag_rule("--=x").is_err());
        assert_eq!(parse_signal_name("term").unwrap(), "SIGTERM");
        assert_eq!(parse_signal_name("9").unwrap(), "SIGKILL");
        assert_eq!(parse_signal_name("SIGINT").unwrap(), "SIGINT");
        assert!(parse_signal_name("99").is_err());
        assert_eq!(
            parse_signal_action("cleanup-exit:143").unwrap(),
            SignalAction::CleanupExit { code: 143 }
        );
        assert_eq!(parse_signal_action("ignore").unwrap(), SignalAction::Ignore);
        assert!(parse_signal_action("exit:300").is_err());
        assert!(parse_signal_action("explode").is_err());
        assert_eq!(parse_argv_messages("[]").unwrap(), Vec::<String>::new());
        assert!(parse_argv_messages("list files").is_err());
        assert_eq!(
            parse_redaction("<HOME>=home directory").unwrap(),
            ("<HOME>".into(), "home directory".into())
        );
        assert!(parse_redaction("nothing").is_err());
    }

    #[test]
    fn expect_from_pieces() {
        let e = build_expect(
            &["--mode=json".into(), "print".into()],
            &["session-id".into()],
            Some("hi".into()),
            Some("[\"hi\"]"),
            vec!["HOME".into()],
            vec!["FAKE_API_KEY".into()],
        )
        .unwrap();
        assert_eq!(e.flags["mode"], FlagRule::Value("json".into()));
        assert_eq!(e.flags["print"], FlagRule::Present(true));
        assert_eq!(e.flags["session-id"], FlagRule::Present(false));
        assert_eq!(e.argv_messages.as_deref(), Some(&["hi".to_string()][..]));
        assert_eq!(e.env, ["HOME", "FAKE_API_KEY"]);
        assert_eq!(e.never_in_argv, [Secret::Env("FAKE_API_KEY".into())]);
        let dup = build_expect(
            &["mode=json".into()],
            &["mode".into()],
            None,
            None,
            vec![],
            vec![],
        );
        assert!(dup
            .unwrap_err()
            .to_string()
            .contains("both required and forbidden"));
    }
}
