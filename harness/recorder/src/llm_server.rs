//! The scripted LLM server: OpenAI chat-completions and Anthropic messages streaming on loopback.
//!
//! This module owns the socket side: a small HTTP/1.1 handler on tokio (one request per
//! connection, `connection: close`, SSE bodies sent with chunked transfer encoding so a
//! scripted cut is a real transport error), the request counter that picks the script's
//! turn, and the request log (memory and JSONL file). What to answer is decided by
//! [`crate::llm_script`]. The server binds 127.0.0.1 only, caps header and body sizes and
//! concurrent connections, and stops when its [`LlmServer`] handle is shut down or dropped.

use std::io::Write as _;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::llm_script::{self, Api, Reply, Script, StreamEnd};

/// Largest request head accepted.
pub const MAX_HEAD_BYTES: usize = 64 * 1024;
/// Largest request body accepted.
pub const MAX_BODY_BYTES: usize = 64 * 1024 * 1024;
/// Most connections served at once.
pub const MAX_CONNECTIONS: usize = 64;
/// Requests kept in memory (the file log, when asked for, keeps every one).
pub const MAX_LOGGED_IN_MEMORY: usize = 1000;

/// How to start the server.
#[derive(Debug, Clone, Default)]
pub struct ServerOptions {
    /// Port on 127.0.0.1; 0 picks a free one.
    pub port: u16,
    /// Append one JSON line per request here.
    pub log_path: Option<PathBuf>,
}

/// One request as the server saw it (the request log's line).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LoggedRequest {
    /// 1-based, in arrival order of complete requests.
    pub index: usize,
    pub method: String,
    pub path: String,
    /// Which script turn answered (0-based); absent when none did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turn: Option<usize>,
    /// HTTP status answered.
    pub status: u16,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The request's `messages` array, as received.
    pub messages: Value,
    /// Anthropic's top-level `system`, when sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system: Option<Value>,
    /// Names of the tools offered to the model.
    pub tools: Vec<String>,
    /// Whether an API key header (`authorization` or `x-api-key`) came with it. The key
    /// itself is never logged.
    pub has_api_key: bool,
}

impl LoggedRequest {
    /// True when `text` occurs in any message of this request (as JSON string content).
    pub fn mentions(&self, text: &str) -> bool {
        mentions(&self.messages, text) || self.system.as_ref().is_some_and(|s| mentions(s, text))
    }
}

fn mentions(v: &Value, text: &str) -> bool {
    match v {
        Value::String(s) => s.contains(text),
        Value::Array(a) => a.iter().any(|x| mentions(x, text)),
        Value::Object(o) => o.values().any(|x| mentions(x, text)),
        _ => false,
    }
}

struct Shared {
    script: Script,
    counter: AtomicUsize,
    log: Mutex<Vec<LoggedRequest>>,
    log_file: Option<Mutex<std::fs::File>>,
}

/// A running server. Dropping it stops the server and every open connection.
pub struct LlmServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    cancel: CancellationToken,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl LlmServer {
    /// Bind 127.0.0.1 and start serving `script`. Must be called inside a tokio runtime.
    pub async fn start(script: Script, opts: ServerOptions) -> std::io::Result<LlmServer> {
        let listener = TcpListener::bind(("127.0.0.1", opts.port)).await?;
        let addr = listener.local_addr()?;
        let log_file = match &opts.log_path {
            Some(p) => Some(Mutex::new(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(p)
                    .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", p.display())))?,
            )),
            None => None,
        };
        let shared = Arc::new(Shared {
            script,
            counter: AtomicUsize::new(0),
            log: Mutex::new(Vec::new()),
            log_file,
        });
        let cancel = CancellationToken::new();
        let task = tokio::spawn(accept_loop(listener, shared.clone(), cancel.clone()));
        Ok(LlmServer {
            addr,
            shared,
            cancel,
            task: Some(task),
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT` (append `/v1` for OpenAI-style `baseUrl`).
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The requests logged so far (the first [`MAX_LOGGED_IN_MEMORY`]).
    pub fn requests(&self) -> Vec<LoggedRequest> {
        self.shared.log.lock().expect("log lock").clone()
    }

    /// Stop accepting, close every connection, and wait for the tasks to end.
    pub async fn shutdown(mut self) {
        self.cancel.cancel();
        if let Some(t) = self.task.take() {
            let _ = t.await;
        }
    }
}

impl Drop for LlmServer {
    fn drop(&mut self) {
        self.cancel.cancel();
        if let Some(t) = self.task.take() {
            t.abort();
        }
    }
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>, cancel: CancellationToken) {
    let limit = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let mut conns = JoinSet::new();
    loop {
        let permit = tokio::select! {
            _ = cancel.cancelled() => break,
            p = limit.clone().acquire_owned() => match p { Ok(p) => p, Err(_) => break },
        };
        let accepted = tokio::select! {
            _ = cancel.cancelled() => break,
            a = listener.accept() => a,
        };
        // Reap finished connection tasks so the set stays small.
        while conns.try_join_next().is_some() {}
        match accepted {
            Ok((stream, _)) => {
                let shared = shared.clone();
                let cancel = cancel.clone();
                conns.spawn(async move {
                    let _permit = permit;
                    tokio::select! {
                        _ = cancel.cancelled() => {}
                        _ = serve_connection(stream, &shared) => {}
                    }
                });
            }
            Err(e) => {
                eprintln!("pi-harness serve-llm: accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }
    conns.shutdown().await;
}

/// A parsed request head.
#[derive(Debug, PartialEq, Eq)]
pub struct Head {
    pub method: String,
    pub path: String,
    /// Header names lower-cased.
    pub headers: Vec<(String, String)>,
}

impl Head {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Parse a request head (everything before the blank line).
pub fn parse_head(raw: &[u8]) -> Result<Head, String> {
    let text = std::str::from_utf8(raw).map_err(|_| "request head is not UTF-8".to_string())?;
    let mut lines = text.split("\r\n");
    let first = lines.next().unwrap_or_default();
    let mut parts = first.split(' ');
    let (Some(method), Some(path), Some(version)) = (parts.next(), parts.next(), parts.next())
    else {
        return Err(format!("bad request line {first:?}"));
    };
    if !version.starts_with("HTTP/1.") {
        return Err(format!("unsupported protocol {version:?}"));
    }
    let mut headers = Vec::new();
    for line in lines {
        if line.is_empty() {
            continue;
        }
        let Some((k, v)) = line.split_once(':') else {
            return Err(format!("bad header line {line:?}"));
        };
        headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
    }
    Ok(Head {
        method: method.to_string(),
        path: path.to_string(),
        headers,
    })
}

/// Decode a complete chunked body; `None` while more bytes are needed.
pub fn decode_chunked(buf: &[u8]) -> Result<Option<Vec<u8>>, String> {
    let mut out = Vec::new();
    let mut pos = 0;
    loop {
        let Some(eol) = find(&buf[pos..], b"\r\n") else {
            return Ok(None);
        };
        let size_text = std::str::from_utf8(&buf[pos..pos + eol]).map_err(|_| "bad chunk size")?;
        let size_text = size_text.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size_text, 16)
            .map_err(|_| format!("bad chunk size {size_text:?}"))?;
        pos += eol + 2;
        if size == 0 {
            // Trailers (none expected) end with an empty line.
            return Ok(find(&buf[pos..], b"\r\n").map(|_| out));
        }
        if buf.len() < pos + size + 2 {
            return Ok(None);
        }
        out.extend_from_slice(&buf[pos..pos + size]);
        if out.len() > MAX_BODY_BYTES {
            return Err("request body too large".into());
        }
        pos += size + 2;
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

async fn read_request(stream: &mut TcpStream) -> Result<Option<(Head, Vec<u8>)>, String> {
    let mut buf = Vec::with_capacity(8192);
    let mut chunk = [0u8; 16384];
    let head_end = loop {
        if let Some(i) = find(&buf, b"\r\n\r\n") {
            break i;
        }
        if buf.len() > MAX_HEAD_BYTES {
            return Err("request head too large".into());
        }
        let n = stream.read(&mut chunk).await.map_err(|e| e.to_string())?;
        if n == 0 {
            return if buf.is_empty() {
                Ok(None)
            } else {
                Err("connection closed inside the request head".into())
            };
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = parse_head(&buf[..head_end])?;
    let mut body = buf.split_off(head_end + 4);
    let chunked = head
        .header("transfer-encoding")
        .is_some_and(|v| v.to_ascii_lowercase().contains("chunked"));
    if chunked {
        loop {
            if let Some(b) = decode_chunked(&body)? {
                return Ok(Some((head, b)));
            }
            if body.len() > MAX_BODY_BYTES + 1024 {
                return Err("request body too large".into());
            }
            let n = stream.read(&mut chunk).await.map_err(|e| e.to_string())?;
            if n == 0 {
                return Err("connection closed inside a chunked body".into());
            }
            body.extend_from_slice(&chunk[..n]);
        }
    }
    let len: usize = match head.header("content-length") {
        Some(v) => v.parse().map_err(|_| format!("bad content-length {v:?}"))?,
        None => 0,
    };
    if len > MAX_BODY_BYTES {
        return Err(format!("request body of {len} bytes is too large"));
    }
    while body.len() < len {
        let n = stream.read(&mut chunk).await.map_err(|e| e.to_string())?;
        if n == 0 {
            return Err("connection closed inside the body".into());
        }
        body.extend_from_slice(&chunk[..n]);
    }
    body.truncate(len);
    Ok(Some((head, body)))
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        408 => "Request Timeout",
        413 => "Payload Too Large",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        529 => "Overloaded",
        _ => "Error",
    }
}

async fn write_simple(
    stream: &mut TcpStream,
    status: u16,
    headers: &[(String, String)],
    body: &[u8],
) {
    let mut out = format!(
        "HTTP/1.1 {status} {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
        reason(status),
        body.len()
    );
    for (k, v) in headers {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    out.push_str("\r\n");
    let mut bytes = out.into_bytes();
    bytes.extend_from_slice(body);
    let _ = stream.write_all(&bytes).await;
    let _ = stream.shutdown().await;
}

async fn serve_connection(mut stream: TcpStream, shared: &Shared) {
    let _ = stream.set_nodelay(true);
    let (head, body) = match read_request(&mut stream).await {
        Ok(Some(r)) => r,
        Ok(None) => return,
        Err(e) => {
            let body =
                serde_json::json!({"error": {"message": format!("pi-harness serve-llm: {e}")}});
            write_simple(&mut stream, 400, &[], body.to_string().as_bytes()).await;
            return;
        }
    };
    // Route on the path without its query (pi 0.87.1 posts `/v1/messages?beta=true`).
    let route = head.path.split('?').next().unwrap_or_default();
    let api = if route.ends_with("/chat/completions") {
        Some(Api::OpenAi)
    } else if route.ends_with("/messages") {
        Some(Api::Anthropic)
    } else {
        None
    };
    let parsed: Option<Value> = serde_json::from_slice(&body).ok();
    let has_api_key = head.header("authorization").is_some() || head.header("x-api-key").is_some();
    let index = shared.counter.fetch_add(1, Ordering::SeqCst);
    let mut entry = LoggedRequest {
        index: index + 1,
        method: head.method.clone(),
        path: head.path.clone(),
        turn: None,
        status: 0,
        model: parsed
            .as_ref()
            .and_then(|v| v.get("model"))
            .and_then(Value::as_str)
            .map(str::to_string),
        messages: parsed
            .as_ref()
            .and_then(|v| v.get("messages"))
            .cloned()
            .unwrap_or(Value::Null),
        system: parsed.as_ref().and_then(|v| v.get("system")).cloned(),
        tools: parsed
            .as_ref()
            .and_then(|v| v.get("tools"))
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|t| {
                        t.pointer("/function/name")
                            .or_else(|| t.get("name"))
                            .and_then(Value::as_str)
                            .map(str::to_string)
                    })
                    .collect()
            })
            .unwrap_or_default(),
        has_api_key,
    };
    let reply = match (api, &parsed, head.method.as_str()) {
        (Some(api), Some(_), "POST") => match shared.script.turn_for(index) {
            Some((turn_index, turn)) => {
                entry.turn = Some(turn_index);
                llm_script::render(turn, api, entry.model.as_deref().unwrap_or("fake-model"), index + 1)
            }
            None => llm_script::exhausted_reply(api, index, shared.script.capacity().unwrap_or(0)),
        },
        (Some(_), None, "POST") => Reply::Error {
            status: 400,
            headers: vec![],
            body: br#"{"error":{"message":"pi-harness serve-llm: request body is not JSON"}}"#.to_vec(),
            first_byte_delay_ms: 0,
        },
        _ => Reply::Error {
            status: 404,
            headers: vec![],
            body: format!(
                r#"{{"error":{{"message":"pi-harness serve-llm: no route for {} {} (POST /v1/chat/completions or /v1/messages)"}}}}"#,
                head.method,
                head.path.escape_default()
            )
            .into_bytes(),
            first_byte_delay_ms: 0,
        },
    };
    entry.status = match &reply {
        Reply::Error { status, .. } => *status,
        Reply::Stream { .. } => 200,
    };
    log_request(shared, entry);
    match reply {
        Reply::Error {
            status,
            headers,
            body,
            first_byte_delay_ms,
        } => {
            sleep_ms(first_byte_delay_ms).await;
            write_simple(&mut stream, status, &headers, &body).await;
        }
        Reply::Stream {
            headers,
            pieces,
            first_byte_delay_ms,
            end,
        } => {
            sleep_ms(first_byte_delay_ms).await;
            let mut out = String::from(
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\ntransfer-encoding: chunked\r\nconnection: close\r\n",
            );
            for (k, v) in &headers {
                out.push_str(&format!("{k}: {v}\r\n"));
            }
            out.push_str("\r\n");
            if stream.write_all(out.as_bytes()).await.is_err() {
                return;
            }
            for p in pieces {
                sleep_ms(p.delay_ms).await;
                let mut frame = format!("{:x}\r\n", p.bytes.len()).into_bytes();
                frame.extend_from_slice(&p.bytes);
                frame.extend_from_slice(b"\r\n");
                if stream.write_all(&frame).await.is_err() {
                    return;
                }
                let _ = stream.flush().await;
            }
            match end {
                StreamEnd::Complete => {
                    let _ = stream.write_all(b"0\r\n\r\n").await;
                    let _ = stream.shutdown().await;
                }
                StreamEnd::Cut => {
                    // Drop without the terminating chunk: the client sees the body end early.
                    let _ = stream.shutdown().await;
                }
                StreamEnd::Stall => {
                    // Silent until the client hangs up (or the server stops).
                    let mut sink = [0u8; 1024];
                    while let Ok(n) = stream.read(&mut sink).await {
                        if n == 0 {
                            break;
                        }
                    }
                }
            }
        }
    }
}

async fn sleep_ms(ms: u64) {
    if ms > 0 {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
}

fn log_request(shared: &Shared, entry: LoggedRequest) {
    if let Some(f) = &shared.log_file {
        let mut line = serde_json::to_vec(&entry).expect("a logged request serializes");
        line.push(b'\n');
        let mut f = f.lock().expect("log file lock");
        if let Err(e) = f.write_all(&line) {
            eprintln!("pi-harness serve-llm: cannot write the request log: {e}");
        }
    }
    let mut log = shared.log.lock().expect("log lock");
    if log.len() < MAX_LOGGED_IN_MEMORY {
        log.push(entry);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_head_and_chunked_bodies() {
        let h = parse_head(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 2")
            .unwrap();
        assert_eq!(h.method, "POST");
        assert_eq!(h.header("content-length"), Some("2"));
        assert!(parse_head(b"GARBAGE")
            .unwrap_err()
            .contains("bad request line"));
        assert_eq!(
            decode_chunked(b"3\r\nabc\r\n0\r\n\r\n").unwrap(),
            Some(b"abc".to_vec())
        );
        assert_eq!(decode_chunked(b"3\r\nab").unwrap(), None);
        assert!(decode_chunked(b"zz\r\n")
            .unwrap_err()
            .contains("bad chunk size"));
    }
}
