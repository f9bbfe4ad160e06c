//! The scripted LLM server against hostile or careless clients: bogus chunk sizes, idle
//! connections, large chunked bodies, bodies over the limit. Each test is a raw TCP client,
//! so what the server writes (or fails to write) is seen byte for byte.

use std::net::SocketAddr;
use std::time::Duration;

use pi_recorder::llm_script::Script;
use pi_recorder::llm_server::{Limits, LlmServer, ServerOptions, MAX_BODY_BYTES, MAX_HEAD_BYTES};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// How long any one exchange may take before the test calls it a hang. Generous: a
/// healthy server answers every request here in well under a second, even in a debug
/// build on a loaded machine.
const HANG: Duration = Duration::from_secs(60);

fn script() -> Script {
    Script::parse(r#"{"turns":[{"text":["ok"]}],"after_last":"repeat_last"}"#).unwrap()
}

async fn start() -> LlmServer {
    LlmServer::start(script(), ServerOptions::default())
        .await
        .unwrap()
}

async fn start_with(script_text: &str, limits: Limits) -> LlmServer {
    LlmServer::start_with_limits(
        Script::parse(script_text).unwrap(),
        ServerOptions::default(),
        limits,
    )
    .await
    .unwrap()
}

fn head(extra: &str) -> String {
    format!("POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n{extra}\r\n")
}

fn chat_body(content: &str) -> String {
    serde_json::json!({"model": "fake-model", "stream": true,
        "messages": [{"role": "user", "content": content}]})
    .to_string()
}

/// Read until the server closes; `None` when that takes longer than `within`.
async fn read_all(s: &mut TcpStream, within: Duration) -> Option<Vec<u8>> {
    let mut raw = Vec::new();
    match tokio::time::timeout(within, s.read_to_end(&mut raw)).await {
        Ok(Ok(_)) => Some(raw),
        // A reset after the answer still leaves the answer read so far.
        Ok(Err(_)) => Some(raw),
        Err(_) => None,
    }
}

/// The status code of a raw HTTP response (`None` when nothing, or no status line, came).
fn status(raw: &[u8]) -> Option<u16> {
    let text = std::str::from_utf8(raw.get(..raw.len().min(64))?).ok()?;
    text.strip_prefix("HTTP/1.1 ")?.get(..3)?.parse().ok()
}

/// A well-formed chat request with a content-length body; the raw response.
async fn post(addr: SocketAddr, content: &str, within: Duration) -> Option<Vec<u8>> {
    let mut s = TcpStream::connect(addr).await.unwrap();
    let body = chat_body(content);
    let req = format!(
        "{}{body}",
        head(&format!("Content-Length: {}\r\n", body.len()))
    );
    s.write_all(req.as_bytes()).await.unwrap();
    read_all(&mut s, within).await
}

async fn assert_still_serving(server: &LlmServer, content: &str) {
    let raw = post(server.addr(), content, HANG)
        .await
        .expect("the server answers");
    assert_eq!(status(&raw), Some(200), "{}", String::from_utf8_lossy(&raw));
    assert!(String::from_utf8_lossy(&raw).contains("data: [DONE]"));
    assert!(server.requests().iter().any(|r| r.mentions(content)));
}

#[tokio::test]
async fn a_chunk_size_near_u64_max_gets_a_4xx_and_the_server_keeps_serving() {
    let server = start().await;
    let mut s = TcpStream::connect(server.addr()).await.unwrap();
    let req = format!(
        "{}fffffffffffffffe\r\nabc\r\n0\r\n\r\n",
        head("Transfer-Encoding: chunked\r\n")
    );
    s.write_all(req.as_bytes()).await.unwrap();
    // The client has nothing more to send: the body can never be complete.
    s.shutdown().await.unwrap();
    let raw = read_all(&mut s, HANG).await.expect("the server answers");
    let code = status(&raw);
    assert!(
        code.is_some_and(|c| (400..500).contains(&c)),
        "expected a 4xx, got {:?}",
        String::from_utf8_lossy(&raw)
    );
    assert!(
        server.requests().is_empty(),
        "an unread request is not logged"
    );
    assert_still_serving(&server, "after the bogus chunk").await;
    server.shutdown().await;
}

#[tokio::test]
async fn seventy_idle_connections_do_not_starve_a_request() {
    let server = start().await;
    let mut idle = Vec::new();
    for i in 0..72 {
        let mut s = TcpStream::connect(server.addr()).await.unwrap();
        if i % 8 == 0 {
            // Some start a request head and never finish it.
            s.write_all(b"POST /v1/chat/completions HTTP/1.1\r\nHo")
                .await
                .unwrap();
        }
        idle.push(s);
    }
    let raw = post(
        server.addr(),
        "behind the idle ones",
        Duration::from_secs(5),
    )
    .await
    .expect("a request behind 72 idle connections is answered within seconds");
    assert_eq!(status(&raw), Some(200));
    assert_eq!(server.requests().len(), 1);
    drop(idle);
    server.shutdown().await;
}

#[tokio::test]
async fn a_16_mib_body_in_1_kib_chunks_is_accepted_and_logged() {
    let server = start().await;
    let content = "x".repeat(16 << 20);
    let body = chat_body(&content);
    let mut framed = Vec::with_capacity(body.len() + body.len() / 1024 * 8 + 64);
    for piece in body.as_bytes().chunks(1024) {
        framed.extend_from_slice(format!("{:x}\r\n", piece.len()).as_bytes());
        framed.extend_from_slice(piece);
        framed.extend_from_slice(b"\r\n");
    }
    framed.extend_from_slice(b"0\r\n\r\n");
    let mut s = TcpStream::connect(server.addr()).await.unwrap();
    s.write_all(head("Transfer-Encoding: chunked\r\n").as_bytes())
        .await
        .unwrap();
    // The pieces go out as the client produces them: 1 KiB chunk after 1 KiB chunk.
    for part in framed.chunks(64 * 1024) {
        s.write_all(part).await.unwrap();
    }
    let raw = read_all(&mut s, HANG).await.expect("the server answers");
    assert_eq!(status(&raw), Some(200), "{}", String::from_utf8_lossy(&raw));
    let reqs = server.requests();
    assert_eq!(reqs.len(), 1);
    assert_eq!(
        reqs[0].messages[0]["content"].as_str().map(str::len),
        Some(content.len())
    );
    server.shutdown().await;
}

#[tokio::test]
async fn a_declared_body_over_the_limit_gets_413() {
    let server = start().await;
    let mut s = TcpStream::connect(server.addr()).await.unwrap();
    let req = head(&format!("Content-Length: {}\r\n", MAX_BODY_BYTES + 1));
    s.write_all(req.as_bytes()).await.unwrap();
    s.write_all(b"{\"model\":").await.unwrap();
    let raw = read_all(&mut s, HANG).await.expect("the server answers");
    assert_eq!(status(&raw), Some(413), "{}", String::from_utf8_lossy(&raw));
    let json = &raw[raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4..];
    let v: Value = serde_json::from_slice(json).unwrap();
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("too large"),
        "{v}"
    );
    assert!(server.requests().is_empty());
    assert_still_serving(&server, "after the declared large body").await;
    server.shutdown().await;
}

#[tokio::test]
async fn a_chunked_body_over_the_limit_gets_413() {
    let server = start().await;
    let mut s = TcpStream::connect(server.addr()).await.unwrap();
    s.write_all(head("Transfer-Encoding: chunked\r\n").as_bytes())
        .await
        .unwrap();
    let (mut rd, mut wr) = s.into_split();
    // Send more than the limit in 1 MiB chunks while reading the answer: the server answers
    // as soon as the limit is passed, and the writer may then find the connection closed.
    let writer = tokio::spawn(async move {
        let chunk = vec![b'x'; 1 << 20];
        for _ in 0..=(MAX_BODY_BYTES >> 20) + 1 {
            let mut frame = format!("{:x}\r\n", chunk.len()).into_bytes();
            frame.extend_from_slice(&chunk);
            frame.extend_from_slice(b"\r\n");
            if wr.write_all(&frame).await.is_err() {
                return;
            }
        }
        let _ = wr.write_all(b"0\r\n\r\n").await;
    });
    let mut raw = Vec::new();
    let _ = tokio::time::timeout(HANG, rd.read_to_end(&mut raw))
        .await
        .expect("the server answers");
    assert_eq!(
        status(&raw),
        Some(413),
        "{}",
        String::from_utf8_lossy(&raw[..raw.len().min(200)])
    );
    writer.await.unwrap();
    assert!(server.requests().is_empty());
    assert_still_serving(&server, "after the chunked large body").await;
    server.shutdown().await;
}

#[tokio::test]
async fn a_head_over_the_limit_gets_431() {
    let server = start().await;
    let mut s = TcpStream::connect(server.addr()).await.unwrap();
    let req = head(&format!(
        "X-Padding: {}\r\nContent-Length: 2\r\n",
        "p".repeat(MAX_HEAD_BYTES)
    ));
    s.write_all(req.as_bytes()).await.unwrap();
    s.write_all(b"{}").await.unwrap();
    let raw = read_all(&mut s, HANG).await.expect("the server answers");
    assert_eq!(status(&raw), Some(431), "{}", String::from_utf8_lossy(&raw));
    assert!(server.requests().is_empty());
    assert_still_serving(&server, "after the large head").await;
    server.shutdown().await;
}

#[tokio::test]
async fn connections_without_a_complete_head_are_closed_after_the_head_timeout() {
    let limits = Limits {
        head_timeout: Duration::from_millis(300),
        ..Limits::default()
    };
    let server = start_with(r#"{"turns":[{"text":["ok"]}]}"#, limits).await;
    let mut silent = TcpStream::connect(server.addr()).await.unwrap();
    let mut partial = TcpStream::connect(server.addr()).await.unwrap();
    partial
        .write_all(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n")
        .await
        .unwrap();
    for s in [&mut silent, &mut partial] {
        let raw = read_all(s, HANG)
            .await
            .expect("the server closes the idle connection");
        assert!(raw.is_empty(), "{}", String::from_utf8_lossy(&raw));
    }
    assert!(server.requests().is_empty());
    assert_still_serving(&server, "after the idle ones").await;
    server.shutdown().await;
}

#[tokio::test]
async fn a_body_that_stops_coming_gets_408() {
    let limits = Limits {
        body_timeout: Duration::from_millis(300),
        ..Limits::default()
    };
    let server = start_with(r#"{"turns":[{"text":["ok"]}]}"#, limits).await;
    // A declared length that never arrives, and a chunk size that never can.
    for req in [
        format!("{}{{\"model\":", head("Content-Length: 100\r\n")),
        format!(
            "{}fffffffffffffffe\r\nabc\r\n0\r\n\r\n",
            head("Transfer-Encoding: chunked\r\n")
        ),
    ] {
        let mut s = TcpStream::connect(server.addr()).await.unwrap();
        s.write_all(req.as_bytes()).await.unwrap();
        let raw = read_all(&mut s, HANG).await.expect("the server answers");
        assert_eq!(status(&raw), Some(408), "{}", String::from_utf8_lossy(&raw));
    }
    assert!(server.requests().is_empty());
    assert_still_serving(&server, "after the slow bodies").await;
    server.shutdown().await;
}

/// Send a request for a stalled stream; returns the connection once the first event is in.
async fn stalled(addr: SocketAddr) -> TcpStream {
    let mut s = TcpStream::connect(addr).await.unwrap();
    let body = chat_body("stall");
    s.write_all(
        format!(
            "{}{body}",
            head(&format!("Content-Length: {}\r\n", body.len()))
        )
        .as_bytes(),
    )
    .await
    .unwrap();
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&seen).contains("data: ") {
        let n = tokio::time::timeout(HANG, s.read(&mut buf))
            .await
            .expect("the stream starts")
            .unwrap();
        assert!(n > 0, "the stalled stream closed early");
        seen.extend_from_slice(&buf[..n]);
    }
    s
}

#[tokio::test]
async fn idle_connections_make_room_but_busy_ones_keep_theirs() {
    let limits = Limits {
        max_connections: 2,
        ..Limits::default()
    };
    let server = start_with(
        r#"{"turns":[{"text":["a","b"],"stall_after":1},{"text":["ok"]}],"after_last":"repeat_last"}"#,
        limits,
    )
    .await;
    let mut stall = stalled(server.addr()).await;
    let mut idle = TcpStream::connect(server.addr()).await.unwrap();
    // Both slots are taken (the stall busy, the other idle): the next request gets the
    // idle one's slot at once, and the stall goes on.
    assert_still_serving(&server, "in the idle one's slot").await;
    let raw = read_all(&mut idle, HANG)
        .await
        .expect("the idle connection is closed");
    assert!(raw.is_empty());
    let mut buf = [0u8; 16];
    assert!(
        tokio::time::timeout(Duration::from_millis(300), stall.read(&mut buf))
            .await
            .is_err(),
        "the stalled stream stays open and silent"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn a_client_hanging_up_on_a_stall_frees_its_slot() {
    let limits = Limits {
        max_connections: 1,
        ..Limits::default()
    };
    let server = start_with(
        r#"{"turns":[{"text":["a","b"],"stall_after":1},{"text":["ok"]}],"after_last":"repeat_last"}"#,
        limits,
    )
    .await;
    let stall = stalled(server.addr()).await;
    drop(stall);
    // The only slot comes back once the server sees the hang-up.
    assert_still_serving(&server, "after the hang-up").await;
    server.shutdown().await;
}
