//! `run --rpc`: one prompt through an RPC session, as the same stream of normalized messages
//! a json-mode run gives.

use futures_core::Stream;
use tokio::sync::mpsc;
use tokio_stream::StreamExt;
use tokio_util::sync::CancellationToken;

use pi_provider::rpc::RpcSession;
use pi_provider::{ProviderOptions, Request};
use pi_wire::message::{FailureReason, Message};

/// One prompt through an RPC session, as a stream: the session started, the prompt sent,
/// its run's messages, then the session shut down. A cancel shuts the session down at
/// once; the run then ends `terminal.cancelled`.
pub(super) fn rpc_run(
    options: ProviderOptions,
    request: Request,
    cancel: CancellationToken,
) -> impl Stream<Item = Message> {
    let (tx, rx) = mpsc::channel(256);
    tokio::spawn(async move {
        let prompt = request.prompt.clone();
        let failed = |reason, message| {
            Message::TerminalFailed(pi_provider::message::Failure {
                reason,
                message,
                exit: None,
                stderr_tail: None,
                invalid_lines: Vec::new(),
                invalid_lines_dropped: 0,
            })
        };
        let session = tokio::select! {
            s = RpcSession::start(options, request) => match s {
                Ok(s) => s,
                Err(f) => {
                    let _ = tx.send(Message::TerminalFailed(f)).await;
                    return;
                }
            },
            _ = cancel.cancelled() => {
                let _ = tx.send(Message::TerminalCancelled { exit: None }).await;
                return;
            }
        };
        let mut run = match session.prompt(&prompt).await {
            Ok(r) => r,
            Err(e) => {
                let exit = session.shutdown().await;
                let _ = tx
                    .send(match failed(FailureReason::InvalidRequest, e.to_string()) {
                        Message::TerminalFailed(mut f) => {
                            f.exit = exit;
                            Message::TerminalFailed(f)
                        }
                        m => m,
                    })
                    .await;
                return;
            }
        };
        loop {
            tokio::select! {
                m = run.next() => match m {
                    Some(m) => {
                        let _ = tx.send(m).await;
                    }
                    None => break,
                },
                _ = cancel.cancelled() => break,
            }
        }
        // Settled, or cancelled: shut the session down while the rest of the run drains.
        let rest = async {
            while let Some(m) = run.next().await {
                let _ = tx.send(m).await;
            }
        };
        let _ = tokio::join!(session.shutdown(), rest);
    });
    tokio_stream::wrappers::ReceiverStream::new(rx)
}
