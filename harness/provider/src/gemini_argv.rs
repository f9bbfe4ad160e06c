//! Gemini CLI's command line for a request ([`gemini_argv`]): `--output-format stream-json`,
//! the model (`--model`) and approval mode (`--approval-mode`) as flags, and no prompt in
//! argv: it goes on stdin, which Gemini CLI reads as the whole prompt when it is not a
//! terminal and no `--prompt` is given. What Gemini CLI has no flag for is refused, naming
//! the field. Pure: no I/O.

use crate::request::Request;

/// The approval modes `--approval-mode` takes (0.61.0): `yolo` runs every tool unasked,
/// the only way a headless run uses tools that ask first (settings cannot say `yolo`).
pub const GEMINI_APPROVAL_MODES: [&str; 4] = ["default", "auto_edit", "yolo", "plan"];

/// `gemini` arguments for this request. Settings such as `general.maxAttempts` come from
/// the caller's `$HOME/.gemini/settings.json` (pass `HOME` in [`Request::env`]).
pub fn gemini_argv(req: &Request) -> Result<Vec<String>, String> {
    let unsupported = [
        ("provider", req.provider.is_some()),
        ("session", req.session.is_some()),
        ("no_session", req.no_session),
        ("thinking", req.thinking.is_some()),
        ("tools", req.tools.is_some()),
        ("exclude_tools", !req.exclude_tools.is_empty()),
        ("system_prompt", req.system_prompt.is_some()),
        ("append_system_prompt", !req.append_system_prompt.is_empty()),
    ];
    if let Some((field, _)) = unsupported.iter().find(|(_, set)| *set) {
        return Err(format!(
            "Gemini CLI has no flag for the request's {field}: leave it unset (Gemini CLI takes such settings from $HOME/.gemini/settings.json)"
        ));
    }
    let mut argv: Vec<String> = vec!["--output-format".into(), "stream-json".into()];
    if let Some(m) = &req.model {
        if m.is_empty() || m.starts_with('-') {
            return Err(format!("model {m:?} is not a Gemini model name"));
        }
        argv.extend(["--model".into(), m.clone()]);
    }
    if let Some(mode) = &req.approval {
        if !GEMINI_APPROVAL_MODES.contains(&mode.as_str()) {
            return Err(format!(
                "approval mode {mode:?} is not one of Gemini CLI's ({})",
                GEMINI_APPROVAL_MODES.join(", ")
            ));
        }
        argv.extend(["--approval-mode".into(), mode.clone()]);
    }
    Ok(argv)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::SessionRef;

    #[test]
    fn the_prompt_goes_on_stdin_and_the_model_and_approval_as_flags() {
        assert_eq!(
            gemini_argv(&Request::default()).unwrap(),
            ["--output-format", "stream-json"]
        );
        let req = Request {
            model: Some("gemini-2.5-flash".into()),
            approval: Some("yolo".into()),
            prompt: "-p is not a flag here".into(),
            ..Request::default()
        };
        assert_eq!(
            gemini_argv(&req).unwrap(),
            [
                "--output-format",
                "stream-json",
                "--model",
                "gemini-2.5-flash",
                "--approval-mode",
                "yolo"
            ]
        );
    }

    #[test]
    fn what_gemini_has_no_flag_for_is_refused_by_name() {
        let cases: [(Request, &str); 5] = [
            (
                Request {
                    provider: Some("google".into()),
                    ..Request::default()
                },
                "the request's provider",
            ),
            (
                Request {
                    session: Some(SessionRef {
                        id: "latest".into(),
                        dir: None,
                        resume: true,
                    }),
                    ..Request::default()
                },
                "the request's session",
            ),
            (
                Request {
                    thinking: Some("high".into()),
                    ..Request::default()
                },
                "the request's thinking",
            ),
            (
                Request {
                    approval: Some("never".into()),
                    ..Request::default()
                },
                "approval mode \"never\" is not one of Gemini CLI's (default, auto_edit, yolo, plan)",
            ),
            (
                Request {
                    model: Some("--yolo".into()),
                    ..Request::default()
                },
                "model \"--yolo\" is not a Gemini model name",
            ),
        ];
        for (req, want) in cases {
            let err = gemini_argv(&req).unwrap_err();
            assert!(err.contains(want), "{err}");
        }
    }
}
