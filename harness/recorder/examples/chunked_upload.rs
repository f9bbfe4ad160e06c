//! Measure how the scripted LLM server copes with a large request body sent in small
//! chunked pieces (the chunked decoder must be linear in the body size).
//!
//! ```text
//! cargo run -p pi-recorder --example chunked_upload -- 16      # MiB of body, 1 KiB chunks
//! /usr/bin/time -f '%U s user %S s sys %e s wall' target/debug/examples/chunked_upload 40
//! ```
//!
//! Prints the body size, the chunk size and the wall time from the first body byte to the
//! end of the answer. The client and the server share the process, so the process's CPU
//! time (as `time` reports it) is the server's decoding plus a linear client part.

// A measuring program: its result is what it prints.
#![allow(clippy::print_stdout)]

use std::time::Instant;

use pi_recorder::llm_script::Script;
use pi_recorder::llm_server::{LlmServer, ServerOptions};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn main() {
    let mut args = std::env::args().skip(1);
    let mib: usize = args.next().map_or(16, |a| a.parse().expect("MiB of body"));
    let piece: usize = args
        .next()
        .map_or(1024, |a| a.parse().expect("chunk bytes"));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let script = Script::parse(r#"{"turns":[{"text":["ok"]}]}"#).unwrap();
        let server = LlmServer::start(script, ServerOptions::default())
            .await
            .unwrap();
        let body = serde_json::json!({"model": "m", "stream": true,
            "messages": [{"role": "user", "content": "x".repeat(mib << 20)}]})
        .to_string();
        let mut framed = Vec::with_capacity(body.len() + body.len() / piece * 8 + 64);
        for p in body.as_bytes().chunks(piece) {
            framed.extend_from_slice(format!("{:x}\r\n", p.len()).as_bytes());
            framed.extend_from_slice(p);
            framed.extend_from_slice(b"\r\n");
        }
        framed.extend_from_slice(b"0\r\n\r\n");
        let mut s = tokio::net::TcpStream::connect(server.addr()).await.unwrap();
        s.write_all(
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n",
        )
        .await
        .unwrap();
        let t = Instant::now();
        for part in framed.chunks(64 * 1024) {
            s.write_all(part).await.unwrap();
        }
        let mut raw = Vec::new();
        s.read_to_end(&mut raw).await.unwrap();
        let took = t.elapsed();
        let status = String::from_utf8_lossy(&raw[..raw.len().min(12)]).into_owned();
        println!(
            "{} bytes in {piece}-byte chunks: {status:?} after {:.2} s; logged {}",
            body.len(),
            took.as_secs_f64(),
            server.requests().len()
        );
        server.shutdown().await;
    });
}
