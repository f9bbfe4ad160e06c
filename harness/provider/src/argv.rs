//! pi's command line for a request: the grammar of the pi version at hand
//! ([`grammar_for`]), checked against what that version accepts, in json mode
//! ([`build_argv`]) or in RPC mode ([`rpc_argv`]). Pure: no I/O.

use pi_grammar::{is_valid_session_id, Grammar, DEFAULT_TOOLS};

use crate::request::Request;

/// pi's command-line grammar for this version: the exact one for a pinned version, else
/// the nearest older pinned one (see `pi_grammar::Grammar::nearest`).
pub fn grammar_for(version: &str) -> Grammar {
    Grammar::nearest(version)
}

/// Thinking levels pi accepts, by version.
pub fn thinking_levels(version: &str) -> Vec<&'static str> {
    grammar_for(version).thinking_levels()
}

/// pi's command line for this request and version (the prompt is not in it: it goes on stdin).
pub fn build_argv(req: &Request, version: &str) -> Result<Vec<String>, String> {
    if req.approval.is_some() {
        return Err(
            "pi has no approval mode: leave the request's approval unset (it is Gemini CLI's)"
                .into(),
        );
    }
    let grammar = grammar_for(version);
    let has_session_id = grammar.has_flag("--session-id");
    let has_exclude = grammar.has_flag("--exclude-tools");
    if req.provider.is_some()
        && req.model.is_none()
        && grammar.has(pi_grammar::Feature::ProviderRequiresModel)
    {
        return Err(format!(
            "pi {version} refuses --provider without --model: give a model too, or neither (pi then takes its default from settings.json)"
        ));
    }
    let mut argv: Vec<String> = vec!["--mode".into(), "json".into()];
    fn push(argv: &mut Vec<String>, flag: &str, value: &str) {
        argv.push(flag.into());
        argv.push(value.into());
    }
    if let Some(p) = &req.provider {
        push(&mut argv, "--provider", p);
    }
    if let Some(m) = &req.model {
        push(&mut argv, "--model", m);
    }
    if let Some(level) = &req.thinking {
        let levels = thinking_levels(version);
        if !levels.contains(&level.as_str()) {
            return Err(format!(
                "thinking level {level:?} is not accepted by pi {version} (accepted: {})",
                levels.join(", ")
            ));
        }
        push(&mut argv, "--thinking", level);
    }
    if req.no_session && req.session.is_some() {
        return Err("a request cannot both name a session and ask for no session".into());
    }
    if let Some(s) = &req.session {
        if !is_valid_session_id(&s.id) {
            return Err(format!(
                "session id {:?} is not valid: letters, digits, '.', '_' and '-', starting and ending with a letter or digit",
                s.id
            ));
        }
        if has_session_id {
            push(&mut argv, "--session-id", &s.id);
        } else {
            let dir = s.dir.as_ref().ok_or_else(|| {
                format!("pi {version} has no --session-id: the request must give a session dir for --session <dir>/<id>.jsonl")
            })?;
            push(
                &mut argv,
                "--session",
                &dir.join(format!("{}.jsonl", s.id)).to_string_lossy(),
            );
        }
    }
    if req.no_session {
        argv.push("--no-session".into());
    }
    let excluded: Vec<&str> = req.exclude_tools.iter().map(String::as_str).collect();
    let check_tools = |list: &[&str]| -> Result<(), String> {
        match list.iter().find(|t| t.is_empty() || t.contains(',')) {
            Some(bad) => Err(format!("tool name {bad:?} is not valid")),
            None => Ok(()),
        }
    };
    check_tools(&excluded)?;
    match (&req.tools, has_exclude) {
        (Some(tools), true) => {
            let list: Vec<&str> = tools.iter().map(String::as_str).collect();
            check_tools(&list)?;
            push(&mut argv, "--tools", &list.join(","));
        }
        (Some(tools), false) => {
            let list: Vec<&str> = tools
                .iter()
                .map(String::as_str)
                .filter(|t| !excluded.contains(t))
                .collect();
            check_tools(&list)?;
            if list.is_empty() {
                argv.push("--no-tools".into());
            } else {
                push(&mut argv, "--tools", &list.join(","));
            }
        }
        (None, false) if !excluded.is_empty() => {
            let list: Vec<&str> = DEFAULT_TOOLS
                .iter()
                .copied()
                .filter(|t| !excluded.contains(t))
                .collect();
            if list.is_empty() {
                argv.push("--no-tools".into());
            } else {
                push(&mut argv, "--tools", &list.join(","));
            }
        }
        _ => {}
    }
    if has_exclude && !excluded.is_empty() {
        push(&mut argv, "--exclude-tools", &excluded.join(","));
    }
    if let Some(sp) = &req.system_prompt {
        push(&mut argv, "--system-prompt", sp);
    }
    for a in &req.append_system_prompt {
        push(&mut argv, "--append-system-prompt", a);
    }
    if let Some(key) = &req.api_key {
        if !key.value.is_empty() && argv.iter().any(|a| a.contains(&key.value)) {
            return Err("the API key appears in an argument; it may only travel in its environment variable".into());
        }
    }
    Ok(argv)
}

/// pi's command line for an RPC session: json mode's, in `--mode rpc`.
pub fn rpc_argv(req: &Request, version: &str) -> Result<Vec<String>, String> {
    let mut argv = build_argv(req, version)?;
    if let Some(m) = argv.iter().position(|a| a == "--mode") {
        argv[m + 1] = "rpc".into();
    }
    Ok(argv)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::{ApiKey, SessionRef};

    fn req() -> Request {
        Request {
            provider: Some("fake".into()),
            model: Some("fake-model".into()),
            ..Request::default()
        }
    }

    #[test]
    fn argv_for_each_version() {
        let mut r = req();
        r.session = Some(SessionRef {
            id: "abc-1".into(),
            dir: Some("/tmp/s".into()),
            resume: true,
        });
        r.exclude_tools = vec!["bash".into()];
        r.thinking = Some("high".into());
        assert_eq!(
            build_argv(&r, "0.87.1").unwrap().join(" "),
            "--mode json --provider fake --model fake-model --thinking high --session-id abc-1 --exclude-tools bash"
        );
        assert_eq!(
            build_argv(&r, "0.73.1").unwrap().join(" "),
            "--mode json --provider fake --model fake-model --thinking high --session /tmp/s/abc-1.jsonl --tools read,edit,write"
        );
    }

    #[test]
    fn argv_rejects_what_pi_would_reject() {
        let mut r = req();
        r.thinking = Some("max".into());
        assert!(build_argv(&r, "0.87.1").is_ok());
        assert!(build_argv(&r, "0.73.1")
            .unwrap_err()
            .contains("not accepted by pi 0.73.1"));
        let mut r = req();
        r.session = Some(SessionRef {
            id: "-bad".into(),
            dir: None,
            resume: false,
        });
        assert!(build_argv(&r, "0.87.1")
            .unwrap_err()
            .contains("session id \"-bad\""));
        r.session.as_mut().unwrap().id = "good".into();
        assert!(build_argv(&r, "0.73.1")
            .unwrap_err()
            .contains("has no --session-id"));
        let mut r = req();
        r.model = Some("sk-secret".into());
        r.api_key = Some(ApiKey {
            env_var: "OPENAI_API_KEY".into(),
            value: "sk-secret".into(),
        });
        assert!(build_argv(&r, "0.87.1")
            .unwrap_err()
            .contains("API key appears"));
    }

    #[test]
    fn excluding_every_default_tool_on_073_means_no_tools() {
        let mut r = req();
        r.exclude_tools = DEFAULT_TOOLS.iter().map(|s| s.to_string()).collect();
        assert!(build_argv(&r, "0.73.1")
            .unwrap()
            .contains(&"--no-tools".to_string()));
    }

    #[test]
    fn built_argv_is_accepted_by_the_grammar_of_each_version() {
        let mut r = req();
        r.thinking = Some("low".into());
        r.exclude_tools = vec!["bash".into()];
        r.tools = Some(vec!["read".into(), "bash".into(), "grep".into()]);
        r.system_prompt = Some("-starts with a dash".into());
        r.append_system_prompt = vec!["@not a file".into()];
        for version in pi_grammar::KNOWN_VERSIONS {
            let mut r = r.clone();
            r.session = Some(SessionRef {
                id: "s-1".into(),
                dir: Some("/tmp".into()),
                resume: false,
            });
            let argv = build_argv(&r, version).unwrap();
            let g = grammar_for(version);
            let parsed = g
                .parse(&argv)
                .unwrap_or_else(|e| panic!("{version}: {}", e.stderr));
            parsed
                .validate()
                .unwrap_or_else(|e| panic!("{version}: {}", e.stderr));
            assert!(g.runtime_errors(&parsed).is_none(), "{version}: {argv:?}");
            assert!(
                parsed.messages.is_empty(),
                "{version}: the prompt must not be in argv: {argv:?}"
            );
            assert_eq!(parsed.value("--system-prompt"), Some("-starts with a dash"));
            assert_eq!(parsed.value("--thinking"), Some("low"));
        }
    }

    #[test]
    fn unpinned_versions_use_the_nearest_older_grammar() {
        assert_eq!(grammar_for("0.80.0").version(), "0.73.1");
        assert_eq!(grammar_for("0.99.2").version(), "0.87.1");
        assert_eq!(grammar_for("1.7.0").version(), "1.5.2");
        assert_eq!(grammar_for("0.1.0").version(), "0.73.1");
        assert_eq!(grammar_for("garbage").version(), "0.73.1");
    }

    #[test]
    fn provider_without_model_is_refused_where_pi_refuses_it() {
        let r = Request {
            provider: Some("fake".into()),
            ..Request::default()
        };
        assert!(build_argv(&r, "0.87.1").is_ok());
        let e = build_argv(&r, "1.5.2").unwrap_err();
        assert!(e.contains("--provider without --model"), "{e}");
    }
}
