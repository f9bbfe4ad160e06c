//! The scripted RPC client `pi-harness record --client-script FILE` drives `pi --mode rpc`
//! with: the script (parsed and checked here, pure) and the run (pi's stdin written and
//! closed, signals sent, every stdout line and stderr chunk timed).
//!
//! A script is a JSON array of steps (or `{"steps": [...]}`), run in order. Each step waits
//! for its trigger, then `delay_ms`, then does one thing:
//!
//! ```json
//! [
//!   {"when": "start", "send": {"id": "p1", "type": "prompt", "message": "write slowly"}},
//!   {"when": {"type": "message_update", "delta": "text_delta", "n": 2},
//!    "send": {"id": "s1", "type": "steer", "message": "change course"}},
//!   {"when": {"type": "agent_settled"}, "close_stdin": true}
//! ]
//! ```
//!
//! | `when` | fires |
//! |---|---|
//! | absent | right after the previous step |
//! | `"start"` | at once (pi buffers what comes before it is ready) |
//! | `{"type": T, "n": K, "delta": D, "id": I}` | once K stdout records (from pi's start) had `type` T; `delta`: also `assistantMessageEvent.type` D (pi) or `event.delta.type` D (Claude Code's `stream_event`); `id`: also that `id` |
//! | `{"idle_ms": N}` | once no stdout line came for N ms |
//!
//! Actions: `"send": COMMAND` (written as one compact JSON line), `"raw": "TEXT"` (written as
//! is, then `\n`: a malformed command), `"close_stdin": true`, `"signal": "SIGTERM"` (or
//! SIGINT, SIGHUP). After the last step the recorder waits for pi to exit (up to the
//! recording's timeout). `{TMP}` and `{CWD}` in the script name the run's directories;
//! `{REQUEST_ID}` in a `send` is the `request_id` of the last `control_request` the agent
//! wrote (Claude Code's permission prompts: the answer must echo it).

use std::path::Path;
use std::time::Duration;

use nix::sys::signal::Signal;
use serde_json::Value;

/// When a step fires.
#[derive(Debug, Clone, PartialEq)]
pub enum When {
    /// Right after the previous step (`when` absent).
    Previous,
    /// At once (`"start"`).
    Start,
    /// Once `n` stdout records from the start had this `type` (and `delta`, `id`).
    Event {
        /// The record's `type`.
        kind: String,
        /// How many such records (at least 1).
        n: usize,
        /// Also `assistantMessageEvent.type` (pi) or `event.delta.type` (Claude Code).
        delta: Option<String>,
        /// Also this `id`.
        id: Option<Value>,
    },
    /// Once no stdout line came for this long (`{"idle_ms": N}`).
    Idle(Duration),
}

/// What a step does.
#[derive(Debug, Clone, PartialEq)]
pub enum Act {
    /// Write this line (no `\n` inside) and a `\n`.
    Line(String),
    /// Close the CLI's stdin.
    CloseStdin,
    /// Send the CLI this signal.
    Signal(Signal),
}

/// One step of a client script.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// What it waits for.
    pub when: When,
    /// How long it then waits (`delay_ms`).
    pub delay: Duration,
    /// What it then does.
    pub act: Act,
}

/// A parsed client script.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientScript {
    /// The steps, run in order.
    pub steps: Vec<Step>,
}

impl ClientScript {
    /// Read and parse a script file; errors name the file (and the step).
    pub fn load(path: &Path) -> Result<ClientScript, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
        ClientScript::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Parse a script; errors name the step (`steps[2].when`) and what is wrong.
    pub fn parse(text: &str) -> Result<ClientScript, String> {
        let v: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
        let steps = match &v {
            Value::Array(a) => a,
            Value::Object(o) if o.len() == 1 && o.get("steps").is_some_and(Value::is_array) => {
                o["steps"].as_array().expect("checked")
            }
            _ => return Err("expected an array of steps (or {\"steps\": [...]})".into()),
        };
        if steps.is_empty() {
            return Err("no steps".into());
        }
        let steps = steps
            .iter()
            .enumerate()
            .map(|(i, s)| step(s).map_err(|e| format!("steps[{i}]{e}")))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(ClientScript { steps })
    }

    /// `{TMP}` and `{CWD}` replaced in every line the script sends.
    pub fn substituted(&self, tmp: &str, cwd: &str) -> ClientScript {
        let mut s = self.clone();
        for step in &mut s.steps {
            if let Act::Line(l) = &mut step.act {
                *l = l.replace("{TMP}", tmp).replace("{CWD}", cwd);
            }
        }
        s
    }
}

fn step(v: &Value) -> Result<Step, String> {
    let Value::Object(o) = v else {
        return Err(": a step is an object".into());
    };
    const ACTIONS: &[&str] = &["send", "raw", "close_stdin", "signal"];
    for k in o.keys() {
        if !ACTIONS.contains(&k.as_str()) && k != "when" && k != "delay_ms" {
            return Err(format!(
                ".{k}: unknown field (a step has when, delay_ms and one of {})",
                ACTIONS.join(", ")
            ));
        }
    }
    let present: Vec<&str> = ACTIONS
        .iter()
        .copied()
        .filter(|k| o.contains_key(*k))
        .collect();
    let act = match present.as_slice() {
        ["send"] => {
            let line = serde_json::to_string(&o["send"]).expect("a value serializes");
            Act::Line(line)
        }
        ["raw"] => match &o["raw"] {
            Value::String(s) if !s.contains('\n') => Act::Line(s.clone()),
            _ => return Err(".raw: one line of text, without \\n".into()),
        },
        ["close_stdin"] => match &o["close_stdin"] {
            Value::Bool(true) => Act::CloseStdin,
            _ => return Err(".close_stdin: must be true".into()),
        },
        ["signal"] => {
            let name = o["signal"].as_str().unwrap_or("");
            let name = if name.starts_with("SIG") {
                name.to_string()
            } else {
                format!("SIG{name}")
            };
            match name.as_str() {
                "SIGTERM" | "SIGINT" | "SIGHUP" => Act::Signal(name.parse().expect("known")),
                _ => {
                    return Err(format!(
                        ".signal: {} is not one pi answers (SIGTERM, SIGINT, SIGHUP)",
                        o["signal"]
                    ))
                }
            }
        }
        [] => return Err(format!(": no action (one of {})", ACTIONS.join(", "))),
        many => {
            return Err(format!(
                ": several actions ({}); one per step",
                many.join(", ")
            ))
        }
    };
    let delay = match o.get("delay_ms") {
        None => Duration::ZERO,
        Some(v) => Duration::from_millis(
            v.as_u64()
                .filter(|ms| *ms <= 600_000)
                .ok_or(".delay_ms: a whole number of milliseconds, at most 600000")?,
        ),
    };
    let when = match o.get("when") {
        None => When::Previous,
        Some(Value::String(s)) if s == "start" => When::Start,
        Some(Value::Object(w)) if w.contains_key("idle_ms") => {
            if w.len() != 1 {
                return Err(".when: idle_ms stands alone".into());
            }
            let ms = w["idle_ms"]
                .as_u64()
                .filter(|ms| *ms > 0 && *ms <= 600_000)
                .ok_or(".when.idle_ms: a whole number of milliseconds from 1 to 600000")?;
            When::Idle(Duration::from_millis(ms))
        }
        Some(Value::Object(w)) => {
            for k in w.keys() {
                if !["type", "n", "delta", "id"].contains(&k.as_str()) {
                    return Err(format!(
                        ".when.{k}: unknown (type, n, delta, id; or idle_ms)"
                    ));
                }
            }
            let kind = w
                .get("type")
                .and_then(Value::as_str)
                .filter(|t| !t.is_empty())
                .ok_or(".when.type: the stdout record type to wait for")?;
            let n = match w.get("n") {
                None => 1,
                Some(n) => n
                    .as_u64()
                    .filter(|n| *n >= 1)
                    .ok_or(".when.n: a count from 1")? as usize,
            };
            let delta = match w.get("delta") {
                None => None,
                Some(Value::String(d)) => Some(d.clone()),
                Some(_) => return Err(".when.delta: a string".into()),
            };
            When::Event {
                kind: kind.to_string(),
                n,
                delta,
                id: w.get("id").cloned(),
            }
        }
        Some(other) => {
            return Err(format!(
                ".when: \"start\", {{\"type\": ...}} or {{\"idle_ms\": N}}, not {other}"
            ))
        }
    };
    Ok(Step { when, delay, act })
}

/// Counts stdout records against `When::Event` triggers.
#[derive(Debug, Default)]
pub struct Seen {
    lines: Vec<Value>,
}

impl Seen {
    /// Note one stdout line (a line that is not JSON counts as a record of no type).
    pub fn push(&mut self, line: &[u8]) {
        self.lines
            .push(serde_json::from_slice(line).unwrap_or(Value::Null));
    }

    /// True once `when` (an event trigger) holds over everything seen.
    pub fn fired(&self, when: &When) -> bool {
        let When::Event { kind, n, delta, id } = when else {
            return true;
        };
        let count = self
            .lines
            .iter()
            .filter(|v| v.get("type").and_then(Value::as_str) == Some(kind.as_str()))
            .filter(|v| {
                delta.as_ref().map_or(true, |d| {
                    v["assistantMessageEvent"]["type"].as_str() == Some(d.as_str())
                        || v["event"]["delta"]["type"].as_str() == Some(d.as_str())
                })
            })
            .filter(|v| id.as_ref().map_or(true, |i| v.get("id") == Some(i)))
            .count();
        count >= *n
    }

    /// The `request_id` of the last `control_request` seen (a JSON string's contents).
    pub fn last_request_id(&self) -> Option<&str> {
        self.lines
            .iter()
            .rev()
            .find(|v| v.get("type").and_then(Value::as_str) == Some("control_request"))
            .and_then(|v| v["request_id"].as_str())
    }

    /// `line` with `{REQUEST_ID}` replaced (Err when there is none to echo).
    pub fn fill(&self, line: &str) -> Result<String, String> {
        if !line.contains("{REQUEST_ID}") {
            return Ok(line.to_string());
        }
        let id = self
            .last_request_id()
            .ok_or("`{REQUEST_ID}`: the agent wrote no control_request yet")?;
        let quoted = Value::from(id).to_string();
        Ok(line.replace("{REQUEST_ID}", &quoted[1..quoted.len() - 1]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_script_parses_into_steps() {
        let s = ClientScript::parse(
            r#"[{"when":"start","send":{"type":"prompt","message":"hi {CWD}"}},
                {"when":{"type":"message_update","delta":"text_delta","n":2},"delay_ms":5,"raw":"not json"},
                {"when":{"idle_ms":300},"close_stdin":true},
                {"signal":"TERM"}]"#,
        )
        .unwrap();
        assert_eq!(s.steps.len(), 4);
        assert_eq!(s.steps[1].delay, Duration::from_millis(5));
        assert_eq!(s.steps[2].when, When::Idle(Duration::from_millis(300)));
        assert_eq!(s.steps[3].when, When::Previous);
        assert_eq!(s.steps[3].act, Act::Signal(Signal::SIGTERM));
        let s = s.substituted("/t", "/t/work");
        assert_eq!(
            s.steps[0].act,
            Act::Line(r#"{"message":"hi /t/work","type":"prompt"}"#.into())
        );
    }

    #[test]
    fn bad_scripts_name_the_step() {
        for (text, want) in [
            ("{}", "expected an array"),
            ("[]", "no steps"),
            (r#"[{"when":"start"}]"#, "steps[0]: no action"),
            (r#"[{"send":{},"raw":"x"}]"#, "steps[0]: several actions"),
            (r#"[{"send":{}},{"signal":"KILL"}]"#, "steps[1].signal"),
            (r#"[{"raw":"a\nb"}]"#, "steps[0].raw"),
            (
                r#"[{"when":{"type":"x","n":0},"send":{}}]"#,
                "steps[0].when.n",
            ),
            (r#"[{"when":"later","send":{}}]"#, "steps[0].when"),
            (r#"[{"sned":{}}]"#, "steps[0].sned: unknown field"),
        ] {
            let e = ClientScript::parse(text).unwrap_err();
            assert!(e.contains(want), "{text}: {e}");
        }
    }

    #[test]
    fn event_triggers_count_matching_records() {
        let mut seen = Seen::default();
        let when = When::Event {
            kind: "message_update".into(),
            n: 2,
            delta: Some("text_delta".into()),
            id: None,
        };
        seen.push(br#"{"type":"message_update","assistantMessageEvent":{"type":"text_start"}}"#);
        seen.push(br#"{"type":"message_update","assistantMessageEvent":{"type":"text_delta"}}"#);
        assert!(!seen.fired(&when));
        seen.push(b"not json");
        seen.push(br#"{"type":"message_update","assistantMessageEvent":{"type":"text_delta"}}"#);
        assert!(seen.fired(&when));
        let by_id = When::Event {
            kind: "response".into(),
            n: 1,
            delta: None,
            id: Some(Value::from("p1")),
        };
        assert!(!seen.fired(&by_id));
        seen.push(br#"{"id":"p1","type":"response"}"#);
        assert!(seen.fired(&by_id));
    }
}
