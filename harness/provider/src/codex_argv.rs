//! Codex's command line for a request ([`codex_argv`]): `codex exec --json`, the prompt on
//! stdin (`-`), the model and provider as flags and `-c` overrides, a resumed thread as
//! `exec resume` (by its id, or the most recent one: [`LAST_THREAD`]). What Codex has no
//! flag for is refused, naming the field. Pure: no I/O.

use crate::request::Request;

/// The session id that resumes Codex's most recent thread (`codex exec resume --last`)
/// rather than one named by its id: for a caller that did not keep the id of the run it
/// continues.
pub const LAST_THREAD: &str = "--last";

/// `codex` arguments for this request (the prompt is not in them: it goes on stdin, read
/// because the prompt argument is `-`). Sandbox and approval policy come from the
/// caller's `CODEX_HOME/config.toml` (pass `CODEX_HOME` in [`Request::env`]).
pub fn codex_argv(req: &Request) -> Result<Vec<String>, String> {
    let unsupported = [
        ("no_session", req.no_session),
        ("tools", req.tools.is_some()),
        ("exclude_tools", !req.exclude_tools.is_empty()),
        ("system_prompt", req.system_prompt.is_some()),
        ("append_system_prompt", !req.append_system_prompt.is_empty()),
        ("approval", req.approval.is_some()),
    ];
    if let Some((field, _)) = unsupported.iter().find(|(_, set)| *set) {
        return Err(format!(
            "Codex has no flag for the request's {field}: leave it unset (Codex takes such settings from CODEX_HOME/config.toml)"
        ));
    }
    let mut argv: Vec<String> = vec!["exec".into()];
    let last = req.session.as_ref().is_some_and(|s| s.id == LAST_THREAD);
    if let Some(s) = &req.session {
        if s.id.is_empty() || (s.id.starts_with('-') && !last) {
            return Err(format!("Codex thread id {:?} is not valid", s.id));
        }
        if !s.resume {
            return Err(format!(
                "Codex names a new thread itself: a session {:?} can only be resumed (resume: true)",
                s.id
            ));
        }
        argv.push("resume".into());
        if last {
            argv.push(LAST_THREAD.into());
        }
    }
    argv.extend(["--json".into(), "--skip-git-repo-check".into()]);
    if let Some(m) = &req.model {
        argv.extend(["--model".into(), m.clone()]);
    }
    if let Some(p) = &req.provider {
        if !is_bare_key(p) {
            return Err(format!(
                "provider {p:?} is not a Codex model provider id (letters, digits, '_' and '-')"
            ));
        }
        argv.extend(["-c".into(), format!("model_provider={p:?}")]);
    }
    if let Some(level) = &req.thinking {
        const EFFORTS: [&str; 5] = ["minimal", "low", "medium", "high", "xhigh"];
        if !EFFORTS.contains(&level.as_str()) {
            return Err(format!(
                "thinking level {level:?} is not a Codex reasoning effort ({})",
                EFFORTS.join(", ")
            ));
        }
        argv.extend(["-c".into(), format!("model_reasoning_effort={level:?}")]);
    }
    if let Some(s) = req.session.as_ref().filter(|_| !last) {
        // The thread id as a positional argument (one starting with `-`, which would read
        // as an option, was refused above).
        argv.push(s.id.clone());
    }
    argv.push("-".into());
    Ok(argv)
}

/// A TOML bare key: what a provider id in `[model_providers.ID]` can be without quotes.
fn is_bare_key(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::SessionRef;

    fn argv(req: Request) -> Vec<String> {
        codex_argv(&req).unwrap()
    }

    #[test]
    fn the_prompt_goes_on_stdin_and_the_model_and_provider_as_flags() {
        assert_eq!(
            argv(Request::default()),
            ["exec", "--json", "--skip-git-repo-check", "-"]
        );
        let req = Request {
            model: Some("gpt-5.1-codex".into()),
            provider: Some("openai".into()),
            thinking: Some("high".into()),
            ..Request::default()
        };
        assert_eq!(
            argv(req),
            [
                "exec",
                "--json",
                "--skip-git-repo-check",
                "--model",
                "gpt-5.1-codex",
                "-c",
                "model_provider=\"openai\"",
                "-c",
                "model_reasoning_effort=\"high\"",
                "-"
            ]
        );
    }

    #[test]
    fn a_resumed_thread_is_exec_resume_with_its_id() {
        let req = Request {
            session: Some(SessionRef {
                id: "0199a213-81c0-7800-8aa1-bbab2a035a53".into(),
                dir: None,
                resume: true,
            }),
            ..Request::default()
        };
        assert_eq!(
            argv(req),
            [
                "exec",
                "resume",
                "--json",
                "--skip-git-repo-check",
                "0199a213-81c0-7800-8aa1-bbab2a035a53",
                "-"
            ]
        );
    }

    #[test]
    fn the_last_thread_is_exec_resume_last_and_the_prompt_still_on_stdin() {
        let req = Request {
            session: Some(SessionRef {
                id: LAST_THREAD.into(),
                dir: None,
                resume: true,
            }),
            model: Some("m".into()),
            ..Request::default()
        };
        assert_eq!(
            argv(req),
            [
                "exec",
                "resume",
                "--last",
                "--json",
                "--skip-git-repo-check",
                "--model",
                "m",
                "-"
            ]
        );
        let new = Request {
            session: Some(SessionRef {
                id: LAST_THREAD.into(),
                dir: None,
                resume: false,
            }),
            ..Request::default()
        };
        assert!(codex_argv(&new)
            .unwrap_err()
            .contains("can only be resumed"));
    }

    #[test]
    fn what_codex_has_no_flag_for_is_refused_by_name() {
        let err = |req: Request| codex_argv(&req).unwrap_err();
        assert!(err(Request {
            tools: Some(vec!["bash".into()]),
            ..Request::default()
        })
        .starts_with("Codex has no flag for the request's tools"));
        assert!(err(Request {
            no_session: true,
            ..Request::default()
        })
        .contains("no_session"));
        assert!(err(Request {
            thinking: Some("max".into()),
            ..Request::default()
        })
        .contains("not a Codex reasoning effort"));
        assert!(err(Request {
            provider: Some("my provider\"".into()),
            ..Request::default()
        })
        .contains("not a Codex model provider id"));
        assert!(err(Request {
            session: Some(SessionRef {
                id: "x".into(),
                dir: None,
                resume: false
            }),
            ..Request::default()
        })
        .contains("can only be resumed"));
        assert!(err(Request {
            session: Some(SessionRef {
                id: "--all".into(),
                dir: None,
                resume: true
            }),
            ..Request::default()
        })
        .contains("not valid"));
    }
}
