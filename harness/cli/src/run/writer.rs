//! `run`'s stdout, written by a task of its own (batched, non-blocking on a pipe), so that a
//! reader that stalls never delays the handling of a signal.

use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::io::AsyncWriteExt;
use tokio::sync::{mpsc, Notify};
use tokio_util::sync::CancellationToken;

/// Bytes gathered into one write of stdout, at most (unless one message is longer).
const BATCH_BYTES: usize = 1 << 20;
/// stdout, written by its own task so that a reader that stalls never delays signal handling.
pub(super) struct Output {
    tx: mpsc::UnboundedSender<Vec<u8>>,
    pending: Arc<AtomicUsize>,
    pub(super) drained: Arc<Notify>,
    /// Ends with whether a write failed (nobody reads stdout any more).
    task: tokio::task::JoinHandle<bool>,
}

impl Output {
    /// Start the writer; a write error (nobody reads any more) cancels the run.
    pub(super) fn spawn(cancel: CancellationToken) -> Output {
        let (tx, mut rx) = mpsc::unbounded_channel::<Vec<u8>>();
        let pending = Arc::new(AtomicUsize::new(0));
        let drained = Arc::new(Notify::new());
        let (p, d) = (pending.clone(), drained.clone());
        let task = tokio::spawn(async move {
            let mut out: Pin<Box<dyn tokio::io::AsyncWrite + Send>> = match stdout_pipe() {
                Some(pipe) => Box::pin(pipe),
                None => Box::pin(tokio::io::stdout()),
            };
            let mut broken = false;
            let mut batch = Vec::new();
            while let Some(text) = rx.recv().await {
                // Everything queued by now goes out in one write and one flush (each write
                // of tokio's stdout is a trip to a blocking thread); a message is still
                // written as soon as nothing more is ready.
                batch.clear();
                batch.extend_from_slice(&text);
                let mut taken = 1;
                while batch.len() < BATCH_BYTES {
                    match rx.try_recv() {
                        Ok(more) => {
                            batch.extend_from_slice(&more);
                            taken += 1;
                        }
                        Err(_) => break,
                    }
                }
                if !broken {
                    let written = async {
                        out.write_all(&batch).await?;
                        out.flush().await
                    }
                    .await;
                    if written.is_err() {
                        broken = true;
                        cancel.cancel();
                    }
                }
                p.fetch_sub(taken, Ordering::AcqRel);
                d.notify_one();
            }
            broken
        });
        Output {
            tx,
            pending,
            drained,
            task,
        }
    }

    pub(super) fn pending(&self) -> usize {
        self.pending.load(Ordering::Acquire)
    }

    pub(super) fn write(&self, text: Vec<u8>) {
        if !text.is_empty() {
            self.pending.fetch_add(1, Ordering::AcqRel);
            if self.tx.send(text).is_err() {
                self.pending.fetch_sub(1, Ordering::AcqRel);
            }
        }
    }

    /// Close the queue and wait until everything queued was written; true when a write
    /// failed (stdout closed).
    pub(super) async fn finish(self) -> bool {
        drop(self.tx);
        self.task.await.unwrap_or(true)
    }
}

/// stdout as a pipe of our own that never blocks, when stdout is a pipe: the pipe opened
/// again through `/proc/self/fd/1`, which gives a new open file description, so setting it
/// non-blocking changes nothing for anyone else who shares stdout (a shell, a sibling).
/// Written from the runtime's own thread, where tokio's stdout takes every write to a
/// blocking thread (a thread started for the first, a hand-off for each). `None` for
/// anything else (a terminal, a file, a socket) or when that cannot be done.
fn stdout_pipe() -> Option<tokio::net::unix::pipe::Sender> {
    use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
    let fd1 = std::path::Path::new("/proc/self/fd/1");
    let before = std::fs::metadata(fd1).ok()?;
    if !before.file_type().is_fifo() {
        return None;
    }
    let file = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(fd1)
        .ok()?;
    let after = file.metadata().ok()?;
    // The same pipe, not something that replaced fd 1 in between.
    if (after.dev(), after.ino()) != (before.dev(), before.ino()) {
        return None;
    }
    tokio::net::unix::pipe::Sender::from_file(file).ok()
}
