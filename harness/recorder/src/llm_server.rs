//! The scripted LLM server: OpenAI chat completions, OpenAI Responses, Anthropic messages
//! and Google's Gemini API (`generateContent`, `streamGenerateContent`) on loopback.
//!
//! This module owns the socket side: HTTP/1.1 on hyper (one request per connection,
//! `connection: close`, SSE bodies sent with chunked transfer encoding so a scripted cut is
//! a real transport error), the request counter that picks the script's turn, and the
//! request log (memory and JSONL file; what a request asks is read by `request`). What to
//! answer is decided by [`crate::llm_script`].
//!
//! The server binds 127.0.0.1 only and bounds what one careless or hostile client can cost
//! ([`Limits`]): a connection that has not sent its whole request head within
//! [`HEAD_TIMEOUT`] is closed; a body must arrive within [`BODY_TIMEOUT`] (else 408) and
//! hold at most [`MAX_BODY_BYTES`] (else 413); heads are capped at [`MAX_HEAD_BYTES`]
//! (431). At most [`MAX_CONNECTIONS`] connections are served at once, and when all are taken
//! and another client connects, the ones still waiting for their request head are closed
//! first, so idle connections never starve a real request. The server stops when its
//! [`LlmServer`] handle is shut down or dropped.

use std::convert::Infallible;
use std::future::Future;
use std::io::Write as _;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use http_body_util::{BodyExt as _, Either, Full, LengthLimitError, Limited};
use hyper::body::{Body, Bytes, Frame, Incoming};
use hyper::header::{HeaderName, HeaderValue};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde::Serialize;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

mod request;

use crate::llm_script::{self, Piece, Reply, Script, StreamEnd};
use crate::Notices;
use request::Route;

/// Largest request head accepted (hyper answers 431 above it).
pub const MAX_HEAD_BYTES: usize = 64 * 1024;
/// Largest request body accepted (413 above it).
pub const MAX_BODY_BYTES: usize = 64 * 1024 * 1024;
/// Most connections served at once; when all are taken, idle ones make room (see the
/// module documentation).
pub const MAX_CONNECTIONS: usize = 64;
/// Requests kept in memory (the file log, when asked for, keeps every one).
pub const MAX_LOGGED_IN_MEMORY: usize = 1000;
/// How long a new connection may take to send its whole request head before it is closed.
/// Clients on loopback send it at once; this ends connections that never will.
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the whole request body may take once the head is in (then 408). Loopback moves
/// [`MAX_BODY_BYTES`] in well under a second, even in a debug build.
pub const BODY_TIMEOUT: Duration = Duration::from_secs(30);
/// After answering, how long the server keeps reading (and discarding) what the client
/// still sends before it closes: closing with unread input resets the connection, which can
/// destroy the answer (a 413 sent while the client is still uploading) before it is read.
pub const LINGER: Duration = Duration::from_secs(2);

/// The server's bounds on what one client may cost. [`Limits::default`] holds the
/// constants above; tests shorten the timeouts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// See [`HEAD_TIMEOUT`].
    pub head_timeout: Duration,
    /// See [`BODY_TIMEOUT`].
    pub body_timeout: Duration,
    /// See [`MAX_BODY_BYTES`].
    pub max_body_bytes: usize,
    /// See [`MAX_CONNECTIONS`]; at least 1.
    pub max_connections: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            head_timeout: HEAD_TIMEOUT,
            body_timeout: BODY_TIMEOUT,
            max_body_bytes: MAX_BODY_BYTES,
            max_connections: MAX_CONNECTIONS,
        }
    }
}

/// How to start the server.
#[derive(Debug, Clone, Default)]
pub struct ServerOptions {
    /// Port on 127.0.0.1; 0 picks a free one.
    pub port: u16,
    /// Append one JSON line per request here.
    pub log_path: Option<PathBuf>,
    /// Where problems that do not stop the server go (an accept that failed, a request-log
    /// line that could not be written), one line each; dropped by default.
    pub warnings: Notices,
}

/// One request as the server saw it (the request log's line).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LoggedRequest {
    /// 1-based, in arrival order of complete requests.
    pub index: usize,
    /// The HTTP method.
    pub method: String,
    /// The request path and query (`/v1/chat/completions`, `/v1/responses`, `/v1/messages`,
    /// `/v1beta/models/M:streamGenerateContent?alt=sse`; a `key` parameter's value is
    /// logged as `REDACTED`).
    pub path: String,
    /// Which script turn answered (0-based); absent when none did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turn: Option<usize>,
    /// HTTP status answered.
    pub status: u16,
    /// The `model` the client asked for (Gemini: the model of the path).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The request's `messages` array (the Responses API's `input`, Gemini's `contents`), as
    /// received.
    pub messages: Value,
    /// Anthropic's top-level `system` (the Responses API's `instructions`, Gemini's
    /// `systemInstruction`), when sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system: Option<Value>,
    /// Names of the tools offered to the model (Gemini: of its `functionDeclarations`).
    pub tools: Vec<String>,
    /// Whether an API key came with it (an `authorization`, `x-api-key` or `x-goog-api-key`
    /// header, or a `key` query parameter). The key itself is never logged.
    pub has_api_key: bool,
    /// A model request the script had no answer left for (answered 500). Not in the log.
    #[serde(skip)]
    pub exhausted: bool,
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
    warnings: Notices,
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
        LlmServer::start_with_limits(script, opts, Limits::default()).await
    }

    /// [`LlmServer::start`] with other [`Limits`] than the default ones.
    pub async fn start_with_limits(
        script: Script,
        opts: ServerOptions,
        limits: Limits,
    ) -> std::io::Result<LlmServer> {
        let listener = TcpListener::bind(("127.0.0.1", opts.port))
            .await
            .map_err(|e| {
                std::io::Error::new(
                    e.kind(),
                    format!("cannot listen on 127.0.0.1:{}: {e}", opts.port),
                )
            })?;
        let addr = listener.local_addr()?;
        let log_file = match &opts.log_path {
            Some(p) => Some(Mutex::new(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(p)
                    .map_err(|e| {
                        std::io::Error::new(
                            e.kind(),
                            format!("cannot open the request log {}: {e}", p.display()),
                        )
                    })?,
            )),
            None => None,
        };
        let shared = Arc::new(Shared {
            script,
            counter: AtomicUsize::new(0),
            log: Mutex::new(Vec::new()),
            log_file,
            warnings: opts.warnings,
        });
        let cancel = CancellationToken::new();
        let limits = Limits {
            max_connections: limits.max_connections.max(1),
            ..limits
        };
        let task = tokio::spawn(accept_loop(
            listener,
            shared.clone(),
            limits,
            cancel.clone(),
        ));
        Ok(LlmServer {
            addr,
            shared,
            cancel,
            task: Some(task),
        })
    }

    /// The address it listens on (127.0.0.1 and its port).
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

async fn accept_loop(
    listener: TcpListener,
    shared: Arc<Shared>,
    limits: Limits,
    cancel: CancellationToken,
) {
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    // Wakes the connections still waiting for their request head: every slot is taken and
    // another client wants one.
    let make_room = Arc::new(Notify::new());
    let mut conns = JoinSet::new();
    'accept: loop {
        let accepted = tokio::select! {
            _ = cancel.cancelled() => break,
            a = listener.accept() => a,
        };
        // Reap finished connection tasks so the set stays small.
        while conns.try_join_next().is_some() {}
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(e) => {
                shared
                    .warnings
                    .line(&format!("warning: serve-llm: accept failed: {e}"));
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        let slot = match slots.clone().try_acquire_owned() {
            Ok(slot) => slot,
            // All taken: idle connections make room; busy ones (a body being read, an answer
            // being streamed, a scripted stall) keep theirs. Asked again while waiting, for
            // connections accepted just before that had not started listening yet.
            Err(_) => loop {
                make_room.notify_waiters();
                tokio::select! {
                    _ = cancel.cancelled() => break 'accept,
                    s = slots.clone().acquire_owned() => match s {
                        Ok(slot) => break slot,
                        Err(_) => break 'accept,
                    },
                    _ = tokio::time::sleep(Duration::from_millis(100)) => {}
                }
            },
        };
        conns.spawn(serve_connection(
            stream,
            shared.clone(),
            limits,
            make_room.clone(),
            slot,
        ));
    }
    // Dropping the tasks closes every connection, stalled streams included.
    conns.shutdown().await;
}

/// One connection: one request, one answer, then close.
async fn serve_connection(
    stream: TcpStream,
    shared: Arc<Shared>,
    limits: Limits,
    make_room: Arc<Notify>,
    slot: OwnedSemaphorePermit,
) {
    let _ = stream.set_nodelay(true);
    let head_seen = Arc::new(Notify::new());
    let service = {
        let head_seen = head_seen.clone();
        hyper::service::service_fn(move |req| {
            head_seen.notify_one();
            let answer: Pin<Box<dyn Future<Output = _> + Send>> =
                Box::pin(answer(req, shared.clone(), limits));
            answer
        })
    };
    let mut conn = hyper::server::conn::http1::Builder::new()
        .keep_alive(false)
        .auto_date_header(false)
        .max_header_size(MAX_HEAD_BYTES)
        .serve_connection(TokioIo::new(stream), service);
    // Run the connection without letting hyper close the socket: it comes back for the
    // lingering close, whatever the outcome (an answer, a malformed request hyper answered
    // itself, a client that went away, a scripted cut).
    let head_in = tokio::select! {
        biased;
        _ = std::future::poll_fn(|cx| conn.poll_without_shutdown(cx)) => false,
        _ = head_seen.notified() => true,
        // Idle: no request head in time, or room is needed for another client.
        _ = tokio::time::sleep(limits.head_timeout) => return,
        _ = make_room.notified() => return,
    };
    if head_in {
        let _ = std::future::poll_fn(|cx| conn.poll_without_shutdown(cx)).await;
    }
    drop(slot);
    linger(conn.into_parts().io.into_inner()).await;
}

/// Close the connection: send FIN (the end of the answer; for a scripted cut, the end
/// before the terminating chunk), then read and discard what the client still sends (for at
/// most [`LINGER`]) so that the close does not reset the connection.
async fn linger(mut stream: TcpStream) {
    let _ = stream.shutdown().await;
    let mut sink = vec![0u8; 16 * 1024];
    let _ = tokio::time::timeout(LINGER, async {
        while let Ok(n) = stream.read(&mut sink).await {
            if n == 0 {
                break;
            }
        }
    })
    .await;
}

/// What the server writes back: a complete JSON body, or a scripted SSE stream.
type ReplyBody = Either<Full<Bytes>, StreamBody>;

/// Read the request body whole, within the limits; the error is the status and message to
/// answer with.
async fn read_body(body: Incoming, limits: &Limits) -> Result<Bytes, (u16, String)> {
    let too_large = || {
        (
            413,
            format!(
                "request body too large (the limit is {} bytes)",
                limits.max_body_bytes
            ),
        )
    };
    if body.size_hint().lower() > limits.max_body_bytes as u64 {
        return Err(too_large());
    }
    let collect = Limited::new(body, limits.max_body_bytes).collect();
    match tokio::time::timeout(limits.body_timeout, collect).await {
        Ok(Ok(collected)) => Ok(collected.to_bytes()),
        Ok(Err(e)) if e.is::<LengthLimitError>() => Err(too_large()),
        Ok(Err(e)) => Err((400, format!("cannot read the request body: {e}"))),
        Err(_) => Err((
            408,
            format!(
                "request body not received within {} s",
                limits.body_timeout.as_secs_f64()
            ),
        )),
    }
}

/// The service: read the request, log it, answer as the script says.
async fn answer(
    req: Request<Incoming>,
    shared: Arc<Shared>,
    limits: Limits,
) -> Result<Response<ReplyBody>, Infallible> {
    let (head, body) = req.into_parts();
    let body = match read_body(body, &limits).await {
        Ok(body) => body,
        // Not a complete request: not logged, and no script turn used.
        Err((status, message)) => {
            let body = serde_json::json!({"error": {"message": format!("pi-harness serve-llm: {message}")}});
            return Ok(respond(Reply::Error {
                status,
                headers: vec![],
                body: body.to_string().into_bytes(),
                first_byte_delay_ms: 0,
            })
            .await);
        }
    };
    let method = head.method.as_str();
    let route = request::route(head.uri.path());
    let parsed: Option<Value> = serde_json::from_slice(&body).ok();
    let asked = request::asked(&head, parsed.as_ref());
    let index = shared.counter.fetch_add(1, Ordering::SeqCst);
    let mut entry = LoggedRequest {
        index: index + 1,
        method: method.to_string(),
        path: asked.path,
        turn: None,
        status: 0,
        model: asked.model,
        messages: asked.messages,
        system: asked.system,
        tools: asked.tools,
        has_api_key: asked.has_api_key,
        exhausted: false,
    };
    let model = entry.model.as_deref().unwrap_or("fake-model");
    let reply = match (route, &parsed, method) {
        (Some(route), Some(_), "POST") => match shared.script.turn_for(index) {
            Some((turn_index, turn)) => {
                entry.turn = Some(turn_index);
                match route {
                    Route::Api(api) => llm_script::render(turn, api, model, index + 1),
                    Route::Gemini { stream } => {
                        llm_script::render_gemini(turn, model, index + 1, stream)
                    }
                }
            }
            None => {
                entry.exhausted = true;
                let capacity = shared.script.capacity().unwrap_or(0);
                match route {
                    Route::Api(api) => llm_script::exhausted_reply(api, index, capacity),
                    Route::Gemini { .. } => llm_script::exhausted_gemini_reply(index, capacity),
                }
            }
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
                r#"{{"error":{{"message":"pi-harness serve-llm: no route for {} {} (POST /v1/chat/completions, /v1/responses, /v1/messages, or /v1beta/models/MODEL:streamGenerateContent or :generateContent)"}}}}"#,
                method,
                entry.path.escape_default()
            )
            .into_bytes(),
            first_byte_delay_ms: 0,
        },
    };
    entry.status = match &reply {
        Reply::Error { status, .. } => *status,
        Reply::Stream { .. } | Reply::Json { .. } => 200,
    };
    log_request(&shared, entry);
    Ok(respond(reply).await)
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

/// The HTTP response for a reply, after the reply's first-byte delay.
async fn respond(reply: Reply) -> Response<ReplyBody> {
    let (status, content_type, extra, body, delay) = match reply {
        Reply::Error {
            status,
            headers,
            body,
            first_byte_delay_ms,
        } => (
            status,
            "application/json",
            headers,
            Either::Left(Full::new(Bytes::from(body))),
            first_byte_delay_ms,
        ),
        Reply::Json {
            headers,
            pieces,
            first_byte_delay_ms,
            end,
        } => (
            200,
            "application/json",
            headers,
            Either::Right(StreamBody::new(pieces, end)),
            first_byte_delay_ms,
        ),
        Reply::Stream {
            headers,
            pieces,
            first_byte_delay_ms,
            end,
        } => (
            200,
            "text/event-stream",
            headers,
            Either::Right(StreamBody::new(pieces, end)),
            first_byte_delay_ms,
        ),
    };
    sleep_ms(delay).await;
    let mut response = Response::new(body);
    // Scripts are checked for 2xx-5xx statuses; anything else would be a bug here.
    *response.status_mut() =
        StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    response
        .extensions_mut()
        .insert(hyper::ext::ReasonPhrase::from_static(
            reason(status).as_bytes(),
        ));
    let headers = response.headers_mut();
    headers.insert("content-type", HeaderValue::from_static(content_type));
    if content_type == "text/event-stream" {
        headers.insert("cache-control", HeaderValue::from_static("no-cache"));
    }
    headers.insert("connection", HeaderValue::from_static("close"));
    for (k, v) in extra {
        // Scripts are checked for valid header names and values, so none is dropped here.
        if let (Ok(k), Ok(v)) = (
            HeaderName::from_bytes(k.as_bytes()),
            HeaderValue::from_bytes(v.as_bytes()),
        ) {
            headers.append(k, v);
        }
    }
    response
}

/// A scripted SSE body: each piece after its delay and in a write of its own (hyper writes
/// out what it holds whenever the body is not ready, and this body is never ready twice in
/// a row), then the scripted end.
///
/// - complete: the end of the body, so hyper sends the terminating chunk;
/// - cut: an error, so hyper drops the connection without the terminating chunk;
/// - stall: never ready again; the connection stays open, silent, until the client hangs
///   up (hyper watches the read side for that) or the server stops.
pub struct StreamBody {
    pieces: std::collections::VecDeque<Piece>,
    end: StreamEnd,
    delay: Option<Pin<Box<tokio::time::Sleep>>>,
    /// Whether the body has been not-ready since its last frame (the head counts as one).
    flushed: bool,
}

/// The error a cut stream ends with.
#[derive(Debug, thiserror::Error)]
#[error("scripted cut: the stream ends without its terminating chunk")]
pub struct ScriptedCut;

impl StreamBody {
    /// A body that writes `pieces`, each after its delay, then ends as `end` says.
    pub fn new(pieces: Vec<Piece>, end: StreamEnd) -> StreamBody {
        StreamBody {
            pieces: pieces.into(),
            end,
            delay: None,
            flushed: false,
        }
    }
}

impl Body for StreamBody {
    type Data = Bytes;
    type Error = ScriptedCut;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, ScriptedCut>>> {
        let this = &mut *self;
        if !this.flushed {
            // Not ready once: hyper writes out the previous frame (or the head) first.
            this.flushed = true;
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        let Some(piece) = this.pieces.front_mut() else {
            return match this.end {
                StreamEnd::Complete => Poll::Ready(None),
                StreamEnd::Cut => Poll::Ready(Some(Err(ScriptedCut))),
                StreamEnd::Stall => Poll::Pending,
            };
        };
        if piece.delay_ms > 0 {
            let delay = this.delay.get_or_insert_with(|| {
                Box::pin(tokio::time::sleep(Duration::from_millis(piece.delay_ms)))
            });
            if delay.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            this.delay = None;
        }
        let piece = this.pieces.pop_front().expect("a piece is there");
        this.flushed = false;
        Poll::Ready(Some(Ok(Frame::data(Bytes::from(piece.bytes)))))
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
            shared.warnings.line(&format!(
                "warning: serve-llm: cannot write the request log: {e}"
            ));
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

    struct Noop;
    impl std::task::Wake for Noop {
        fn wake(self: Arc<Self>) {}
    }

    fn piece(bytes: &[u8]) -> Piece {
        Piece {
            delay_ms: 0,
            bytes: bytes.to_vec(),
        }
    }

    /// Poll until the body yields something; returns it and how many polls were not ready.
    fn next(
        body: &mut StreamBody,
        cx: &mut Context<'_>,
    ) -> (usize, Option<Result<Bytes, ScriptedCut>>) {
        let mut pending = 0;
        for _ in 0..10 {
            match Pin::new(&mut *body).poll_frame(cx) {
                Poll::Pending => pending += 1,
                Poll::Ready(f) => {
                    return (pending, f.map(|r| r.map(|f| f.into_data().unwrap())));
                }
            }
        }
        panic!("the body never became ready");
    }

    #[test]
    fn each_piece_is_its_own_write_and_the_end_follows_the_script() {
        let waker = std::task::Waker::from(Arc::new(Noop));
        let mut cx = Context::from_waker(&waker);
        // "é" split in two pieces, as `split_utf8` renders it: the body is not ready between
        // them, so hyper writes the first half out before it ever sees the second.
        let e = "é".as_bytes();
        let mut body = StreamBody::new(vec![piece(&e[..1]), piece(&e[1..])], StreamEnd::Complete);
        let (pending, first) = next(&mut body, &mut cx);
        assert_eq!((pending, first.unwrap().unwrap().as_ref()), (1, &e[..1]));
        let (pending, second) = next(&mut body, &mut cx);
        assert_eq!((pending, second.unwrap().unwrap().as_ref()), (1, &e[1..]));
        let (pending, end) = next(&mut body, &mut cx);
        assert!(pending == 1 && end.is_none());

        let mut body = StreamBody::new(vec![piece(b"a")], StreamEnd::Cut);
        assert!(next(&mut body, &mut cx).1.unwrap().is_ok());
        assert!(next(&mut body, &mut cx).1.unwrap().is_err());

        let mut body = StreamBody::new(vec![piece(b"a")], StreamEnd::Stall);
        assert!(next(&mut body, &mut cx).1.unwrap().is_ok());
        for _ in 0..5 {
            assert!(Pin::new(&mut body).poll_frame(&mut cx).is_pending());
        }
    }

    #[test]
    fn statuses_keep_their_reason_phrases() {
        assert_eq!(reason(529), "Overloaded");
        assert_eq!(reason(413), "Payload Too Large");
        assert_eq!(reason(418), "Error");
    }
}
