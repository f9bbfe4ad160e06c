//! The reference provider: one attempt at running pi, as a stream of normalized messages.
//!
//! It owns the I/O half of the product: building pi's command line for the pi version at
//! hand ([`crate::argv`]), spawning pi under the supervisor ([`crate::spawn`]; see
//! [`crate::supervisor`] for why a separate process), feeding stdout to the pure
//! [`pi_wire::mapper::Mapper`], keeping a bounded, redacted stderr tail
//! ([`crate::stderr_tail`]), enforcing the output cap and timeout, and cancelling in order
//! (SIGTERM, grace, SIGKILL of everything below pi): [`crate::run`]. This module is the
//! caller's side: [`Provider::execute`] starts the run as a task and hands back its
//! messages as a [`Stream`]. The stream always ends with exactly one terminal message;
//! nothing here panics or returns an `Err` for a failed run. Retrying is the caller's
//! business ([`crate::retry`]).

use futures_core::Stream;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::request::{ProviderOptions, Request};
use crate::run::Run;
use pi_wire::message::Message;

/// Runs pi once per [`Provider::execute`] call.
#[derive(Debug, Clone, Default)]
pub struct Provider {
    opts: ProviderOptions,
}

impl Provider {
    /// A provider that runs pi with these options.
    pub fn new(opts: ProviderOptions) -> Self {
        Provider { opts }
    }

    /// The options each run uses.
    pub fn options(&self) -> &ProviderOptions {
        &self.opts
    }

    /// Run pi once. The returned stream yields every normalized message and ends with exactly
    /// one terminal message. Cancelling `cancel` (or dropping the stream) stops pi and every
    /// process below it. Must be called inside a tokio runtime.
    pub fn execute(
        &self,
        request: Request,
        cancel: CancellationToken,
    ) -> impl Stream<Item = Message> + Send + 'static {
        let (tx, rx) = mpsc::channel(BATCHES_AHEAD);
        let opts = self.opts.clone();
        tokio::spawn(async move {
            let mut run = Run::new(opts, tx);
            run.go(request, cancel).await;
        });
        Batched {
            rx,
            current: Vec::new().into_iter(),
        }
    }
}

/// Batches of messages the run may get ahead of its consumer. A batch is what one read of
/// pi's stdout mapped to (at most [`STDOUT_PIPE_BYTES`](crate::run::STDOUT_PIPE_BYTES) of input), so this bounds what
/// waits; one channel operation per batch rather than per message.
const BATCHES_AHEAD: usize = 4;

/// The run's batches, one message at a time.
struct Batched {
    rx: mpsc::Receiver<Vec<Message>>,
    current: std::vec::IntoIter<Message>,
}

impl Stream for Batched {
    type Item = Message;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Message>> {
        loop {
            if let Some(m) = self.current.next() {
                return std::task::Poll::Ready(Some(m));
            }
            match self.rx.poll_recv(cx) {
                std::task::Poll::Ready(Some(batch)) => self.current = batch.into_iter(),
                std::task::Poll::Ready(None) => return std::task::Poll::Ready(None),
                std::task::Poll::Pending => return std::task::Poll::Pending,
            }
        }
    }
}

/// Collect a whole run (test and tool convenience).
pub async fn collect(stream: impl Stream<Item = Message>) -> Vec<Message> {
    use tokio_stream::StreamExt;
    let mut out = Vec::new();
    let mut s = std::pin::pin!(stream);
    while let Some(m) = s.next().await {
        out.push(m);
    }
    out
}
