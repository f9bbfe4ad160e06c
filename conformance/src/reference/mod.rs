//! The reference implementation: the reference provider run on a request document, the
//! same path any implementation takes (`pi-harness provider-run` reads the document and
//! writes normalized JSONL). A json-mode case runs here ([`provider_run_request`], with the
//! idle cancel); an RPC case drives an [`RpcSession`](pi_provider::rpc::RpcSession)
//! ([`rpc`]); a Claude Code case runs `claude` and maps its stream-json ([`claude`]).

mod claude;
mod rpc;

use std::io::{Read, Write};
use std::path::Path;
use std::time::Duration;

use pi_provider::{Provider, ProviderOptions, Request};
use pi_wire::message::Message;

use crate::capability::CAPABILITIES;
use crate::implementation::PROTOCOL_VERSION;
use crate::request::{to_provider_request, RequestDoc, REQUEST_VERSION};

pub use claude::reference_run_claude;
pub use rpc::provider_run_rpc;

/// The reference's name in the handshake and the report.
pub const REFERENCE_NAME: &str = "pi-harness provider-run (reference)";

/// Run the reference provider on a request document (see [`provider_run_request`]).
pub async fn provider_run(
    doc: &RequestDoc,
    opts: ProviderOptions,
    out: impl Write,
) -> std::io::Result<Vec<Message>> {
    let req = to_provider_request(doc)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    match req.agent {
        // The provider does not run Claude Code (yet): the reference drives it here.
        pi_grammar::Agent::Claude => {
            let claude = pi_provider::which(req.agent.name());
            return reference_run_claude(doc, claude.as_deref(), out).await;
        }
        pi_grammar::Agent::Pi | pi_grammar::Agent::Codex | pi_grammar::Agent::Gemini => {}
    }
    if let Some(steps) = &doc.rpc {
        return provider_run_rpc(req, steps, opts, out).await;
    }
    provider_run_request(
        req,
        doc.cancel_after_idle_ms.map(Duration::from_millis),
        opts,
        out,
    )
    .await
}

/// Run the reference provider, writing each message as one JSON line to `out` (flushed per
/// line), and return the messages. With `idle`, the run is cancelled once no message has
/// come for that long after the first one.
pub async fn provider_run_request(
    req: Request,
    idle: Option<Duration>,
    opts: ProviderOptions,
    mut out: impl Write,
) -> std::io::Result<Vec<Message>> {
    use tokio_stream::StreamExt as _;
    let cancel = tokio_util::sync::CancellationToken::new();
    let mut stream = std::pin::pin!(Provider::new(opts).execute(req, cancel.clone()));
    let mut seen = Vec::new();
    loop {
        let next = match idle {
            Some(d) if !seen.is_empty() && !cancel.is_cancelled() => {
                match tokio::time::timeout(d, stream.next()).await {
                    Ok(m) => m,
                    Err(_) => {
                        cancel.cancel();
                        continue;
                    }
                }
            }
            _ => stream.next().await,
        };
        let Some(m) = next else { break };
        serde_json::to_writer(&mut out, &m)?;
        out.write_all(b"\n")?;
        out.flush()?;
        seen.push(m);
    }
    Ok(seen)
}

/// `pi-harness provider-run [FILE]`: read a request document (`file`, else `stdin`), run the
/// reference provider, write normalized JSONL to `stdout`. (`--capabilities` prints
/// [`reference_capabilities`] instead.)
pub fn provider_run_main(
    file: Option<&Path>,
    mut stdin: impl Read,
    stdout: impl Write,
) -> Result<(), String> {
    let text = match file {
        Some(p) => std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))?,
        None => {
            let mut s = String::new();
            stdin
                .read_to_string(&mut s)
                .map_err(|e| format!("stdin: {e}"))?;
            s
        }
    };
    let doc: RequestDoc = serde_json::from_str(&text)
        .map_err(|e| format!("request document: {e} (see conformance/README.md)"))?;
    if doc.version != REQUEST_VERSION {
        return Err(format!(
            "request document version {}: this provider-run reads version {REQUEST_VERSION}",
            doc.version
        ));
    }
    doc.agent()?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    rt.block_on(provider_run(&doc, ProviderOptions::default(), stdout))
        .map_err(|e| format!("stdout: {e}"))?;
    Ok(())
}

/// The handshake answer of the reference provider.
pub fn reference_capabilities() -> String {
    serde_json::json!({
        "protocol": PROTOCOL_VERSION,
        "name": REFERENCE_NAME,
        "capabilities": CAPABILITIES,
    })
    .to_string()
}
