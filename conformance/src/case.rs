//! One case per cassette: finding the cassettes below a directory ([`discover`]), naming
//! each case after its path ([`case_name`]), and deriving its request document from the
//! cassette's header ([`case_of`]): pi's flags by meaning, a session, dummy environment
//! values, an idle cancel for a run that hangs, the client steps of an RPC or Claude Code
//! recording, a Codex recording's `codex` command line. Pure: nothing here runs a process.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use pi_cassette::two_way::{ClientAction, ClientStep};
use pi_cassette::{FlagRule, Header};

use crate::outline::Outline;
use crate::request::{PiDoc, RequestDoc, RpcStep, SessionDoc, REQUEST_VERSION};

/// Idle time after which a case whose cassette ends in `hang` is cancelled.
pub const CANCEL_IDLE_MS: u64 = 500;

/// The client actions of a two-way cassette, as request steps (ids dropped).
pub fn rpc_steps(steps: &[ClientStep]) -> Vec<RpcStep> {
    steps
        .iter()
        .cloned()
        .map(|s| {
            let mut step = RpcStep {
                after_stdout_lines: s.after_stdout_lines,
                send: None,
                send_raw: None,
                close_stdin: None,
                signal: None,
            };
            match s.action {
                ClientAction::Line(json) => {
                    let mut v: Value = serde_json::from_str(&json).unwrap_or(Value::Null);
                    if let Some(o) = v.as_object_mut() {
                        o.remove("id");
                    }
                    step.send = Some(v);
                }
                ClientAction::Raw(t) => step.send_raw = Some(t),
                ClientAction::Close => step.close_stdin = Some(true),
                ClientAction::Signal(sig) => step.signal = Some(sig),
            }
            step
        })
        .collect()
}

/// One case of the suite.
#[derive(Debug, Clone)]
pub struct Case {
    /// The case name: the cassette's path below the cassettes directory, without
    /// `.cassette.jsonl[.gz|.zst]` (`recorded/text_only.pi87`).
    pub name: String,
    /// The cassette file.
    pub cassette: PathBuf,
    /// The request without run-specific values (cassette path, dirs).
    pub request: RequestDoc,
}

/// The case name of a cassette path under `root`.
pub fn case_name(root: &Path, path: &Path) -> String {
    let rel = path.strip_prefix(root).unwrap_or(path);
    let s = rel.to_string_lossy();
    pi_cassette::input::without_compression_suffix(&s)
        .trim_end_matches(".cassette.jsonl")
        .to_string()
}

/// Every cassette under `root`, sorted; one that is not a regular file (a FIFO, a device,
/// a link to one), or whose file name is not UTF-8, is refused.
pub fn cassette_files(root: &Path) -> Result<Vec<PathBuf>, String> {
    let mut found = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let entries = std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        for entry in entries {
            let path = entry.map_err(|e| format!("{}: {e}", dir.display()))?.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.file_name().is_some_and(|n| {
                n.to_str().is_none()
                    && pi_cassette::input::is_cassette_file_name(&n.to_string_lossy())
            }) {
                // A case is named by its file: a name that is not UTF-8 cannot name one
                // (before, such a cassette was left out without a word).
                return Err(format!(
                    "{:?}: a cassette whose file name is not UTF-8 (a case is named by its file): rename it",
                    path.as_os_str()
                ));
            } else if path
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(pi_cassette::input::is_cassette_file_name)
            {
                // A FIFO would block the run until some writer came; a device never ends.
                if let Some(kind) = pi_cassette::input::not_a_regular_file(&path) {
                    return Err(format!("{}: {kind}, not a cassette file", path.display()));
                }
                found.push(path);
            }
        }
    }
    found.sort();
    Ok(found)
}

/// The case of one cassette: its request document, derived from the header (and the
/// client's steps, for a two-way cassette).
pub fn case_of(root: &Path, path: &Path, c: &Outline) -> Case {
    let name = case_name(root, path);
    let h = &c.header;
    let flag = |k: &str| h.expect.flags.get(k);
    let string = |k: &str| match flag(k) {
        Some(FlagRule::Value(v)) => Some(v.clone()),
        _ => None,
    };
    match h.agent() {
        pi_grammar::Agent::Claude => return claude_case(name, path, c),
        pi_grammar::Agent::Codex => return codex_case(name, path, c),
        pi_grammar::Agent::Gemini => return gemini_case(name, path, c),
        pi_grammar::Agent::Pi => {}
    }
    // What the recording ran with, by meaning: an implementation passes these as flags.
    let effective =
        h.pi.grammar()
            .map(|g| pi_cassette::matching::expected(&h.expect, &g))
            .unwrap_or_default();
    let thinking = effective
        .thinking
        .clone()
        .filter(|t| t != pi_grammar::DEFAULT_THINKING);
    let tools = effective.tools.clone().filter(|t| {
        let mut d: Vec<&str> = pi_grammar::DEFAULT_TOOLS.to_vec();
        d.sort_unstable();
        t.iter().map(String::as_str).ne(d)
    });
    let session = match (string("session-id"), flag("session")) {
        (Some(id), _) => Some(SessionDoc {
            id,
            dir: None,
            resume: true,
        }),
        (None, Some(rule)) if !matches!(rule, FlagRule::Present(false)) => Some(SessionDoc {
            id: h.scenario.name.replace('_', "-"),
            dir: Some("<DIR>/sessions".into()),
            resume: true,
        }),
        _ => None,
    };
    let mut env = replay_env(h);
    // pi's settings and sessions stay in the case's dir.
    env.insert("PI_CODING_AGENT_DIR".into(), "<DIR>/agent".into());
    let rpc = h.mode.is_some().then(|| rpc_steps(&c.steps));
    // An RPC case's prompts are in its steps; `prompt` names the first, for logs.
    let first_prompt = rpc.as_ref().and_then(|steps| {
        steps.iter().find_map(|s| {
            let v = s.send.as_ref()?;
            (v["type"] == "prompt").then(|| v["message"].as_str().map(str::to_string))?
        })
    });
    let request = RequestDoc {
        version: REQUEST_VERSION,
        case: name.clone(),
        prompt: first_prompt
            .or_else(|| h.expect.prompt.clone())
            .unwrap_or_else(|| "hi".into()),
        pi: PiDoc {
            version: h.pi.version.clone(),
        },
        provider: effective.provider.clone(),
        model: effective.model.clone(),
        no_session: matches!(flag("no-session"), Some(FlagRule::Present(true))),
        session,
        thinking,
        tools,
        exclude_tools: Vec::new(),
        env,
        cwd: Some("<DIR>".into()),
        cancel_after_idle_ms: (c.hangs && rpc.is_none()).then_some(CANCEL_IDLE_MS),
        rpc,
        agent: None,
        argv: None,
        stdin: None,
        approval: None,
    };
    Case {
        name,
        cassette: path.to_path_buf(),
        request,
    }
}

/// A Claude Code case: the recording's options as argv, its host's lines as steps.
fn claude_case(name: String, path: &Path, c: &Outline) -> Case {
    let h = &c.header;
    let mut argv = h.expect.claude_argv();
    let in_argv = h.expect.argv_messages.clone().unwrap_or_default();
    if !in_argv.is_empty() {
        argv.push("--".into());
        argv.extend(in_argv.iter().cloned());
    }
    let env = replay_env(h);
    let steps = rpc_steps(&c.steps);
    let prompt = steps
        .iter()
        .find_map(|s| {
            let v = s.send.as_ref()?;
            (v["type"] == "user").then(|| v["message"]["content"].as_str().map(str::to_string))?
        })
        .or_else(|| in_argv.first().cloned())
        .unwrap_or_else(|| "hi".into());
    Case {
        request: RequestDoc {
            version: REQUEST_VERSION,
            case: name.clone(),
            prompt,
            pi: PiDoc {
                version: h.pi.version.clone(),
            },
            provider: None,
            model: None,
            no_session: false,
            session: None,
            thinking: None,
            tools: None,
            exclude_tools: Vec::new(),
            env,
            cwd: Some("<DIR>".into()),
            cancel_after_idle_ms: None,
            rpc: Some(steps),
            agent: Some("claude".into()),
            argv: Some(argv),
            stdin: (h.expect.stdin == Some(pi_cassette::StdinKind::Terminal))
                .then(|| "terminal".into()),
            approval: None,
        },
        name,
        cassette: path.to_path_buf(),
    }
}

/// A Codex case: `codex` run with the recording's `exec` options (`exec resume --last` for a
/// resumed thread), the prompt after `--` (or `-`, stdin, when the recording piped it), in a
/// `CODEX_HOME` of the case's dir whose `config.toml` (written by
/// [`crate::case_dir::prepare`]) makes the call mean what the recording meant; the provider
/// and model as the recording resolved them; an idle cancel for a run that hangs.
fn codex_case(name: String, path: &Path, c: &Outline) -> Case {
    let h = &c.header;
    let resumed = h.expect.session == Some(pi_cassette::SessionUse::Resumed);
    let mut argv = vec!["exec".to_string()];
    if resumed {
        // Which thread is not recorded (an id is redacted): the most recent one, the only
        // one a fresh CODEX_HOME can have.
        argv.extend(["resume".into(), pi_provider::LAST_THREAD.into()]);
    }
    let cli =
        h.pi.codex()
            .unwrap_or_else(pi_grammar::codex::Codex::latest);
    // An option recorded only as present had a value the recorder redacted (a path): it
    // cannot be given again, and what it meant is in `effective` and the case's config.
    let redacted = |flag: &str| cli.option(flag).is_some_and(|o| o.value_name.is_some());
    // `--last` is already there, after `resume`.
    let skipped = |flag: &str| redacted(flag) || (resumed && flag == "last");
    for (flag, rule) in &h.expect.flags {
        match rule {
            FlagRule::Present(true) if !skipped(flag) => argv.push(format!("--{flag}")),
            FlagRule::Value(v) => argv.extend([format!("--{flag}"), v.clone()]),
            _ => {}
        }
    }
    let in_argv = h.expect.argv_messages.clone().unwrap_or_default();
    if in_argv.is_empty() {
        argv.push("-".into());
    } else {
        argv.push("--".into());
        argv.extend(in_argv.iter().cloned());
    }
    let effective = h.expect.effective.clone().unwrap_or_default();
    let mut env = replay_env(h);
    env.insert("CODEX_HOME".into(), format!("<DIR>/{CODEX_HOME_DIR}"));
    Case {
        request: RequestDoc {
            version: REQUEST_VERSION,
            case: name.clone(),
            prompt: h
                .expect
                .prompt
                .clone()
                .or_else(|| in_argv.first().cloned())
                .unwrap_or_else(|| "hi".into()),
            pi: PiDoc {
                version: h.pi.version.clone(),
            },
            provider: effective.provider,
            model: effective.model,
            no_session: false,
            session: resumed.then(|| SessionDoc {
                id: pi_provider::LAST_THREAD.into(),
                dir: None,
                resume: true,
            }),
            thinking: None,
            tools: None,
            exclude_tools: Vec::new(),
            env,
            cwd: Some("<DIR>".into()),
            cancel_after_idle_ms: c.hangs.then_some(CANCEL_IDLE_MS),
            rpc: None,
            agent: Some("codex".into()),
            argv: Some(argv),
            stdin: None,
            approval: None,
        },
        name,
        cassette: path.to_path_buf(),
    }
}

/// The case of a Gemini CLI cassette: the recorded options given again, the prompt by
/// `--prompt`, with `GEMINI_CLI_HOME` (where Gemini CLI looks for `.gemini/settings.json`
/// instead of `HOME`) a directory of the case dir.
fn gemini_case(name: String, path: &Path, c: &Outline) -> Case {
    let h = &c.header;
    let mut argv = Vec::new();
    for (flag, rule) in &h.expect.flags {
        match rule {
            FlagRule::Present(true) => argv.push(format!("--{flag}")),
            FlagRule::Value(v) => argv.extend([format!("--{flag}"), v.clone()]),
            _ => {}
        }
    }
    let in_argv = h.expect.argv_messages.clone().unwrap_or_default();
    let prompt = h
        .expect
        .prompt
        .clone()
        .or_else(|| in_argv.first().cloned())
        .unwrap_or_else(|| "hi".into());
    argv.extend(["--prompt".to_string(), prompt.clone()]);
    let effective = h.expect.effective.clone().unwrap_or_default();
    let approval = effective.approval.clone().filter(|a| a != "default");
    let mut env = replay_env(h);
    env.insert("GEMINI_CLI_HOME".into(), format!("<DIR>/{GEMINI_HOME_DIR}"));
    Case {
        request: RequestDoc {
            version: REQUEST_VERSION,
            case: name.clone(),
            prompt,
            pi: PiDoc {
                version: h.pi.version.clone(),
            },
            provider: effective.provider,
            model: effective.model,
            no_session: false,
            session: None,
            thinking: None,
            tools: None,
            exclude_tools: Vec::new(),
            env,
            cwd: Some("<DIR>".into()),
            cancel_after_idle_ms: c.hangs.then_some(CANCEL_IDLE_MS),
            rpc: None,
            agent: Some("gemini".into()),
            argv: Some(argv),
            stdin: None,
            approval,
        },
        name,
        cassette: path.to_path_buf(),
    }
}

/// The directory of a Gemini CLI case's dir that is its `GEMINI_CLI_HOME`.
pub const GEMINI_HOME_DIR: &str = "gemini-home";

/// The directory of a Codex case's dir that is its `CODEX_HOME`.
pub const CODEX_HOME_DIR: &str = "codex-home";

/// The environment every case gives its CLI: a dummy value for each variable the recording
/// needed, and fake-pi replaying the case's cassette copy at instant speed.
fn replay_env(h: &Header) -> BTreeMap<String, String> {
    let mut env = BTreeMap::new();
    for var in &h.expect.env {
        env.insert(var.clone(), format!("conformance-{}", var.to_lowercase()));
    }
    env.insert("FAKE_PI_CASSETTE".into(), "<CASSETTE>".into());
    env.insert("FAKE_PI_SPEED".into(), "0".into());
    // The expected streams hold the recorder's placeholders (`<SESSION_ID>`): replay them
    // as recorded rather than as realistic values.
    env.insert("FAKE_PI_VALUES".into(), "recorded".into());
    env
}

/// Every case under `root` (json-mode runs and RPC sessions), each cassette read as an
/// [`Outline`] (one line at a time, its output not kept).
pub fn discover(root: &Path) -> Result<Vec<Case>, String> {
    cassette_files(root)?
        .into_iter()
        .map(|p| Ok(case_of(root, &p, &Outline::read(&p)?)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::instantiate;

    #[test]
    fn case_names_keep_the_directory() {
        let root = Path::new("/c");
        assert_eq!(
            case_name(
                root,
                Path::new("/c/recorded/long_answer.pi73.cassette.jsonl.zst")
            ),
            "recorded/long_answer.pi73"
        );
        assert_eq!(
            case_name(root, Path::new("/c/auth_401.pi73.cassette.jsonl")),
            "auth_401.pi73"
        );
    }

    /// A Codex cassette's header (`session`: `new` or `resumed`).
    fn codex_case_of(session: &str, flags: &str, argv_messages: &str) -> Case {
        let text = format!(
            concat!(
                r#"{{"format":"pi-cassette","version":1,"codex":{{"version":"0.169.0","dialect":"exec-json"}},"#,
                r#""scenario":{{"name":"c","description":"d"}},"expect":{{"flags":{{{}}},"prompt":"go","#,
                r#""argv_messages":{},"env":["MY_API_KEY"],"effective":{{"mode":"exec","provider":"my","#,
                r#""model":"m1","sandbox":"read-only","approval":"never"}},"session":"{}"}},"#,
                r#""origin":{{"kind":"hand-made","timing":"synthetic"}}}}"#,
                "\n",
                r#"{{"dt_ms":0,"hang":true}}"#,
                "\n"
            ),
            flags, argv_messages, session
        );
        let path = Path::new("/c/codex/c.cx0169.cassette.jsonl");
        let c = pi_cassette::Cassette::parse(path, text.as_bytes()).unwrap();
        case_of(Path::new("/c"), path, &Outline::of(&c))
    }

    #[test]
    fn a_codex_case_is_the_recorded_exec_in_a_codex_home_of_its_own() {
        let case = codex_case_of(
            "new",
            r#""json":true,"model":"m1","skip-git-repo-check":true"#,
            r#"["go"]"#,
        );
        let r = &case.request;
        assert_eq!(r.agent.as_deref(), Some("codex"));
        assert_eq!(
            r.argv.as_deref().unwrap(),
            [
                "exec",
                "--json",
                "--model",
                "m1",
                "--skip-git-repo-check",
                "--",
                "go"
            ]
        );
        assert_eq!(
            (r.prompt.as_str(), r.provider.as_deref(), r.model.as_deref()),
            ("go", Some("my"), Some("m1"))
        );
        assert_eq!(r.env["CODEX_HOME"], "<DIR>/codex-home");
        assert_eq!(r.env["MY_API_KEY"], "conformance-my_api_key");
        assert_eq!(r.env["FAKE_PI_CASSETTE"], "<CASSETTE>");
        assert_eq!((r.session.as_ref(), r.rpc.as_ref()), (None, None));
        assert_eq!(r.cancel_after_idle_ms, Some(CANCEL_IDLE_MS));
        // A prompt piped on stdin: `-`. An option whose value was redacted is left out.
        let piped = codex_case_of("new", r#""cd":true,"json":true"#, "[]");
        assert_eq!(piped.request.argv.unwrap(), ["exec", "--json", "-"]);
    }

    #[test]
    fn a_resumed_codex_thread_is_exec_resume_last() {
        for flags in [r#""json":true,"last":true"#, r#""json":true"#] {
            let r = codex_case_of("resumed", flags, r#"["go"]"#).request;
            assert_eq!(
                r.argv.as_deref().unwrap(),
                ["exec", "resume", "--last", "--json", "--", "go"],
                "{flags}"
            );
            let s = r.session.expect("a session");
            assert_eq!((s.id.as_str(), s.resume), (pi_provider::LAST_THREAD, true));
        }
    }

    #[test]
    fn the_request_comes_from_the_header() {
        let text = concat!(
            r#"{"format":"pi-cassette","version":1,"pi":{"version":"0.73.1","dialect":"snapshot+delta"},"#,
            r#""scenario":{"name":"s_x","description":"d"},"expect":{"flags":{"mode":"json","model":"m","#,
            r#""provider":"p","session":true,"thinking":"high","tools":"read,write"},"prompt":"go","#,
            r#""argv_messages":["go"],"env":["OPENAI_API_KEY"]},"origin":{"kind":"hand-made","timing":"synthetic"}}"#,
            "\n",
            r#"{"dt_ms":0,"hang":true}"#,
            "\n"
        );
        let path = Path::new("/c/faults/s_x.pi73.cassette.jsonl");
        let c = pi_cassette::Cassette::parse(path, text.as_bytes()).unwrap();
        let case = case_of(Path::new("/c"), path, &Outline::of(&c));
        let r = &case.request;
        assert_eq!(case.name, "faults/s_x.pi73");
        assert_eq!((r.prompt.as_str(), r.pi.version.as_str()), ("go", "0.73.1"));
        assert_eq!(
            (r.provider.as_deref(), r.model.as_deref()),
            (Some("p"), Some("m"))
        );
        assert_eq!(r.thinking.as_deref(), Some("high"));
        // Tools by meaning: the effective set, when it is not pi's default.
        assert_eq!(r.tools, Some(vec!["read".to_string(), "write".to_string()]));
        assert!(r.exclude_tools.is_empty());
        let s = r.session.as_ref().expect("a session");
        assert_eq!(
            (s.id.as_str(), s.dir.as_deref(), s.resume),
            ("s-x", Some("<DIR>/sessions"), true)
        );
        assert_eq!(r.env["OPENAI_API_KEY"], "conformance-openai_api_key");
        assert_eq!(r.cancel_after_idle_ms, Some(CANCEL_IDLE_MS));
        let filled = instantiate(r, Path::new("/t/case.cassette.jsonl"), Path::new("/t"));
        assert_eq!(filled.env["FAKE_PI_CASSETTE"], "/t/case.cassette.jsonl");
        assert_eq!(filled.cwd.as_deref(), Some("/t"));
        assert_eq!(filled.session.unwrap().dir.as_deref(), Some("/t/sessions"));
    }

    #[test]
    fn a_gemini_case_is_the_recorded_options_with_the_prompt_and_a_home_of_its_own() {
        let text = concat!(
            r#"{"format":"pi-cassette","version":1,"gemini":{"version":"0.61.0","dialect":"gemini-stream-json"},"#,
            r#""scenario":{"name":"g","description":"d"},"expect":{"flags":{"output-format":"stream-json","#,
            r#""model":"gemini-2.5-flash","yolo":true},"argv_messages":["go"],"prompt":"go","env":["GEMINI_API_KEY"],"#,
            r#""effective":{"mode":"stream-json","model":"gemini-2.5-flash","approval":"yolo","max_attempts":2},"session":"new"},"#,
            r#""origin":{"kind":"hand-made","timing":"synthetic"}}"#,
            "\n",
            r#"{"dt_ms":0,"exit":0}"#,
            "\n"
        );
        let path = Path::new("/c/gemini/g.gm061.cassette.jsonl");
        let c = pi_cassette::Cassette::parse(path, text.as_bytes()).unwrap();
        let case = case_of(Path::new("/c"), path, &Outline::of(&c));
        let r = &case.request;
        assert_eq!(r.agent.as_deref(), Some("gemini"));
        assert_eq!(
            r.argv.as_deref().unwrap(),
            [
                "--model",
                "gemini-2.5-flash",
                "--output-format",
                "stream-json",
                "--yolo",
                "--prompt",
                "go"
            ]
        );
        assert_eq!(
            (r.prompt.as_str(), r.model.as_deref(), r.approval.as_deref()),
            ("go", Some("gemini-2.5-flash"), Some("yolo"))
        );
        assert_eq!(r.env["GEMINI_CLI_HOME"], "<DIR>/gemini-home");
        assert_eq!(r.env["GEMINI_API_KEY"], "conformance-gemini_api_key");
        assert_eq!(r.cancel_after_idle_ms, None);
        // What only settings can say goes in the case HOME's settings.json.
        assert_eq!(
            crate::case_dir::gemini_settings_json(&c.header.expect),
            "{\"general\":{\"maxAttempts\":2}}\n"
        );
    }
}
