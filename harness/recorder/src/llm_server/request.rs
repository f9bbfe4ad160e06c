//! What a request asks, read from its head and body: which wire it came in on (the route)
//! and the request log's fields (model, messages, system, tools, whether a key came with it).
//!
//! Each wire names these in its own place: OpenAI chat completions and Anthropic send
//! `model`, `messages` and `tools` in the body (Anthropic's `system` beside them); the
//! Responses API sends `input` and `instructions`; Google's Gemini API names the model in the
//! path (`/v1beta/models/M:streamGenerateContent`), sends `contents`, `systemInstruction`
//! and `tools[].functionDeclarations`, and its key as `x-goog-api-key` or the `key` query
//! parameter. Pure: no I/O.

use hyper::http::request::Parts;
use hyper::Uri;
use serde_json::Value;

use crate::llm_script::Api;

/// The wire a request path names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Route {
    /// One of the wires a script renders with [`crate::llm_script::render`].
    Api(Api),
    /// Google's Gemini API: `:streamGenerateContent` (`stream`) or `:generateContent`.
    Gemini {
        /// Whether the answer streams (SSE) or comes whole (one JSON body).
        stream: bool,
    },
}

/// The route of a path (without its query: pi 0.87.1 posts `/v1/messages?beta=true`).
pub(super) fn route(path: &str) -> Option<Route> {
    if path.ends_with("/chat/completions") {
        Some(Route::Api(Api::OpenAi))
    } else if path.ends_with("/responses") {
        Some(Route::Api(Api::Responses))
    } else if path.ends_with("/messages") {
        Some(Route::Api(Api::Anthropic))
    } else if path.ends_with(":streamGenerateContent") {
        Some(Route::Gemini { stream: true })
    } else if path.ends_with(":generateContent") {
        Some(Route::Gemini { stream: false })
    } else {
        None
    }
}

/// The request log's fields of one request.
pub(super) struct Asked {
    /// The path and query as logged (a `key` query parameter's value replaced).
    pub path: String,
    pub model: Option<String>,
    pub messages: Value,
    pub system: Option<Value>,
    pub tools: Vec<String>,
    pub has_api_key: bool,
}

/// Read what the request `head` with the JSON body `parsed` (if it is JSON) asks.
pub(super) fn asked(head: &Parts, parsed: Option<&Value>) -> Asked {
    let gemini = matches!(route(head.uri.path()), Some(Route::Gemini { .. }));
    let field = |names: &[&str]| parsed.and_then(|v| names.iter().find_map(|n| v.get(*n)).cloned());
    let model = if gemini {
        gemini_model(head.uri.path())
    } else {
        field(&["model"]).and_then(|m| m.as_str().map(str::to_string))
    };
    let tools = field(&["tools"])
        .and_then(|t| t.as_array().cloned())
        .unwrap_or_default();
    let tools = tools
        .iter()
        .flat_map(
            |t| match t.get("functionDeclarations").and_then(Value::as_array) {
                Some(decls) => decls.iter().collect(),
                None => vec![t],
            },
        )
        .filter_map(|t| {
            t.pointer("/function/name")
                .or_else(|| t.get("name"))
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .collect();
    let has_api_key = ["authorization", "x-api-key", "x-goog-api-key"]
        .iter()
        .any(|h| head.headers.contains_key(*h))
        || query_key(&head.uri).is_some();
    Asked {
        path: logged_path(&head.uri),
        model,
        messages: field(&["messages", "input", "contents"]).unwrap_or(Value::Null),
        system: field(&["system", "instructions", "systemInstruction"]),
        tools,
        has_api_key,
    }
}

/// The model of a Gemini path: the last segment before its `:method`
/// (`/v1beta/models/gemini-2.5-flash:generateContent` → `gemini-2.5-flash`).
fn gemini_model(path: &str) -> Option<String> {
    let (before, _) = path.rsplit_once(':')?;
    let model = before.rsplit('/').next()?;
    (!model.is_empty()).then(|| model.to_string())
}

/// The `key` query parameter (Google's API key), if there is one.
fn query_key(uri: &Uri) -> Option<&str> {
    uri.query()?.split('&').find_map(|p| p.strip_prefix("key="))
}

/// The path and query to log: a `key` query parameter keeps its name, its value is replaced
/// by `REDACTED` (the key itself is never logged).
fn logged_path(uri: &Uri) -> String {
    let Some(query) = uri.query() else {
        return uri.to_string();
    };
    let query: Vec<&str> = query
        .split('&')
        .map(|p| {
            if p.starts_with("key=") {
                "key=REDACTED"
            } else {
                p
            }
        })
        .collect();
    format!("{}?{}", uri.path(), query.join("&"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(uri: &str, headers: &[(&str, &str)]) -> Parts {
        let mut b = hyper::Request::post(uri);
        for (k, v) in headers {
            b = b.header(*k, *v);
        }
        b.body(()).unwrap().into_parts().0
    }

    #[test]
    fn a_gemini_request_logs_the_path_s_model_contents_declarations_and_key() {
        let body = serde_json::json!({
            "contents": [{"role": "user", "parts": [{"text": "say hi"}]}],
            "systemInstruction": {"role": "user", "parts": [{"text": "You are terse."}]},
            "tools": [{"functionDeclarations": [{"name": "run_shell_command"}, {"name": "read_file"}]},
                      {"googleSearch": {}}],
            "generationConfig": {"thinkingConfig": {"includeThoughts": true}},
        });
        let h = head(
            "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
            &[("x-goog-api-key", "secret")],
        );
        assert_eq!(route(h.uri.path()), Some(Route::Gemini { stream: true }));
        let a = asked(&h, Some(&body));
        assert_eq!(a.model.as_deref(), Some("gemini-2.5-flash"));
        assert_eq!(a.messages, body["contents"]);
        assert_eq!(a.system.as_ref(), Some(&body["systemInstruction"]));
        assert_eq!(a.tools, ["run_shell_command", "read_file"]);
        assert!(a.has_api_key);
        assert_eq!(
            a.path,
            "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
        );

        // The key as a query parameter counts, and is not logged; a `model` in the body
        // does not override the path's.
        let h = head(
            "/v1beta/models/gemini-2.0-pro:generateContent?key=secret&x=1",
            &[],
        );
        assert_eq!(route(h.uri.path()), Some(Route::Gemini { stream: false }));
        let a = asked(&h, Some(&serde_json::json!({"model": "other"})));
        assert!(a.has_api_key);
        assert_eq!(a.model.as_deref(), Some("gemini-2.0-pro"));
        assert_eq!(
            a.path,
            "/v1beta/models/gemini-2.0-pro:generateContent?key=REDACTED&x=1"
        );
        assert!(!a.path.contains("secret"));
        let a = asked(&head("/v1beta/models/m:generateContent", &[]), None);
        assert!(!a.has_api_key);
        assert_eq!(a.messages, Value::Null);
    }

    #[test]
    fn the_other_wires_keep_their_fields() {
        let body = serde_json::json!({"model": "gpt-x", "input": [1], "instructions": "be",
            "tools": [{"type": "function", "function": {"name": "bash"}}, {"name": "read"}]});
        let h = head("/v1/responses", &[("authorization", "Bearer k")]);
        assert_eq!(route(h.uri.path()), Some(Route::Api(Api::Responses)));
        let a = asked(&h, Some(&body));
        assert_eq!(a.model.as_deref(), Some("gpt-x"));
        assert_eq!(a.messages, serde_json::json!([1]));
        assert_eq!(a.system, Some(serde_json::json!("be")));
        assert_eq!(a.tools, ["bash", "read"]);
        assert!(a.has_api_key);
        assert_eq!(route("/v1/messages"), Some(Route::Api(Api::Anthropic)));
        assert_eq!(route("/v1/models"), None);
        assert_eq!(gemini_model("/v1beta/models/:generateContent"), None);
    }
}
