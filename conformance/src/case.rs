//! One case per cassette: finding the cassettes below a directory ([`discover`]), naming
//! each case after its path ([`case_name`]), and deriving its request document from the
//! cassette's header ([`case_of`]): pi's flags by meaning, a session, dummy environment
//! values, an idle cancel for a run that hangs, the client steps of an RPC or Claude Code
//! recording. Pure: nothing here runs a process.

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
/// a link to one) is refused.
pub fn cassette_files(root: &Path) -> Result<Vec<PathBuf>, String> {
    let mut found = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let entries = std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        for entry in entries {
            let path = entry.map_err(|e| format!("{}: {e}", dir.display()))?.path();
            if path.is_dir() {
                dirs.push(path);
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
    if h.is_claude() {
        return claude_case(name, path, c);
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
        },
        name,
        cassette: path.to_path_buf(),
    }
}

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
}
