//! The documented differences between pi 0.73.1, 0.87.1 and 1.5.2 in the normalized stream
//! of the same scenario (see `conformance/README.md`, "Cross-version"). [`normalize`] removes
//! exactly these and nothing else; [`DIFFERENCES`] names them for the report.

use serde_json::Value;

/// Each allowed difference: a short name and why it exists.
pub const DIFFERENCES: &[(&str, &str)] = &[
    (
        "error-text",
        "pi's error strings differ: 0.73.1 `500 upstream boom`, 0.87.1 `500: {\"code\":null,...}` \
         (retry.scheduled.error, terminal.failed.message)",
    ),
    (
        "resumed-session-id",
        "0.73.1 has no --session-id: a resumed session is named by its file, whose id differs \
         from the one 0.87.1 is given (session.resumed.session_id)",
    ),
    (
        "tool-update-pieces",
        "0.87.1 streams a tool's output in more partial updates; the last update of each tool \
         is the same (intermediate tool.update messages)",
    ),
    (
        "tool-result-fields",
        "pi 1.x adds `structuredContent` to tool results (bash: output, exit_code, truncated, \
         wall_time_seconds) and `isError` inside a failed one, and drops `details` from a failing \
         bash result (tool.completed.result, tool.failed.error)",
    ),
    (
        "parallel-tool-order",
        "events of parallel tools interleave differently; within a run of consecutive \
         tool.update/tool.completed/tool.failed messages the order per tool id is kept",
    ),
];

/// A stream with the allowed differences taken out.
pub fn normalize(msgs: &[Value]) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    for (i, m) in msgs.iter().enumerate() {
        let mut m = m.clone();
        let ty = m["type"].as_str().unwrap_or("").to_string();
        if let Some(o) = m.as_object_mut() {
            match ty.as_str() {
                "retry.scheduled" => {
                    o.remove("error");
                }
                "terminal.failed" => {
                    o.remove("message");
                }
                "session.resumed" => {
                    o.remove("session_id");
                }
                "tool.completed" | "tool.failed" => {
                    let key = if ty == "tool.completed" {
                        "result"
                    } else {
                        "error"
                    };
                    if let Some(r) = o.get_mut(key).and_then(Value::as_object_mut) {
                        r.remove("structuredContent");
                        r.remove("isError");
                        if r.get("details") == Some(&Value::Object(Default::default())) {
                            r.remove("details");
                        }
                    }
                }
                _ => {}
            }
        }
        // Keep a tool.update only when it is the last update of its id before the tool ends.
        if ty == "tool.update" {
            let id = &m["id"];
            let later = msgs[i + 1..]
                .iter()
                .take_while(|n| {
                    !(n["id"] == *id
                        && matches!(n["type"].as_str(), Some("tool.completed" | "tool.failed")))
                })
                .any(|n| n["type"] == "tool.update" && n["id"] == *id);
            if later {
                continue;
            }
        }
        out.push(m);
    }
    // Within runs of tool progress messages, order by tool id (stable).
    let is_progress = |v: &Value| {
        matches!(
            v["type"].as_str(),
            Some("tool.update" | "tool.completed" | "tool.failed")
        )
    };
    let mut i = 0;
    while i < out.len() {
        let mut j = i;
        while j < out.len() && is_progress(&out[j]) {
            j += 1;
        }
        if j > i {
            out[i..j].sort_by(|a, b| {
                a["id"]
                    .as_str()
                    .unwrap_or("")
                    .cmp(b["id"].as_str().unwrap_or(""))
            });
            i = j;
        } else {
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn intermediate_updates_go_but_the_last_stays() {
        let s = vec![
            json!({"type":"tool.call","id":"a"}),
            json!({"type":"tool.update","id":"a","partial":1}),
            json!({"type":"tool.update","id":"a","partial":2}),
            json!({"type":"tool.completed","id":"a","result":3}),
        ];
        let n = normalize(&s);
        assert_eq!(n.len(), 3);
        assert_eq!(n[1]["partial"], 2);
    }

    #[test]
    fn text_is_not_normalized() {
        let a = vec![json!({"type":"assistant","text":"x"})];
        let b = vec![json!({"type":"assistant","text":"y"})];
        assert_ne!(normalize(&a), normalize(&b));
    }
}
