//! An RPC case through the reference provider: each client step once pi has written its
//! number of stdout lines, the runs its prompts start drained in the order they were sent.

use std::io::Write;

use pi_provider::{ProviderOptions, Request};
use pi_wire::message::Message;

use crate::request::RpcStep;

/// Run an RPC case with the reference provider's [`RpcSession`](pi_provider::rpc::RpcSession):
/// each step once pi has written its number of stdout lines; every run a prompt starts goes
/// to `out` (one JSON line per message, run after run in the order the prompts were sent: pi
/// runs one prompt at a time, and the order two runs' streams are drained in must not depend
/// on scheduling); a refused prompt adds nothing. After the last step (or pi's exit) the
/// session is shut down and the runs drained. Returns the messages written.
pub async fn provider_run_rpc(
    req: Request,
    steps: &[RpcStep],
    opts: ProviderOptions,
    mut out: impl Write,
) -> std::io::Result<Vec<Message>> {
    use pi_provider::rpc::RpcSession;
    use tokio_stream::StreamExt as _;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Message>();
    let session = match RpcSession::start(opts, req).await {
        Ok(s) => s,
        Err(f) => {
            let _ = tx.send(Message::TerminalFailed(f));
            drop(tx);
            return write_all_messages(&mut rx, &mut out).await;
        }
    };
    let mut runs = Vec::new();
    let mut closed = false;
    for step in steps {
        if !session.wait_stdout_lines(step.after_stdout_lines).await {
            break; // pi's stdout closed first: nothing more to do
        }
        if let Some(cmd) = step.send.as_ref().filter(|c| !c.is_object()) {
            // Not a command object (`[1,2]`): written as it is; pi answers without an id.
            let _ = session.send_raw(&cmd.to_string()).await;
        } else if let Some(cmd) = &step.send {
            if cmd["type"] == "prompt" && cmd.get("streamingBehavior").is_none() {
                let text = cmd["message"].as_str().unwrap_or("").to_string();
                if let Ok(mut stream) = session.prompt(&text).await {
                    runs.push(tokio::spawn(async move {
                        let mut messages = Vec::new();
                        while let Some(m) = stream.next().await {
                            messages.push(m);
                        }
                        messages
                    }));
                }
            } else {
                // Its answer may come late (an abort answers after the run closes).
                let s = session.clone();
                let cmd = cmd.clone();
                tokio::spawn(async move {
                    let _ = s.command(cmd).await;
                });
            }
        } else if let Some(raw) = &step.send_raw {
            let _ = session.send_raw(raw).await;
        } else if step.close_stdin == Some(true) {
            closed = true;
            break;
        } else if let Some(sig) = &step.signal {
            if let Ok(sig) = sig.parse::<nix::sys::signal::Signal>() {
                let _ = session.signal(sig).await;
            }
        }
    }
    let mut done = Vec::new();
    if !closed {
        // Let the runs end on their own (settled, or pi gone after a signal) before the
        // session is shut down under them.
        for r in runs.drain(..) {
            done.push(r.await.unwrap_or_default());
        }
    }
    session.shutdown().await;
    for r in runs {
        done.push(r.await.unwrap_or_default());
    }
    for m in done.into_iter().flatten() {
        let _ = tx.send(m);
    }
    drop(tx);
    write_all_messages(&mut rx, &mut out).await
}

/// Write every message `rx` yields to `out`, one JSON line each (flushed per line).
async fn write_all_messages(
    rx: &mut tokio::sync::mpsc::UnboundedReceiver<Message>,
    out: &mut impl Write,
) -> std::io::Result<Vec<Message>> {
    let mut seen = Vec::new();
    while let Some(m) = rx.recv().await {
        serde_json::to_writer(&mut *out, &m)?;
        out.write_all(b"\n")?;
        out.flush()?;
        seen.push(m);
    }
    Ok(seen)
}
