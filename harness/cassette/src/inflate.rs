//! A compressed input (gzip or zstd) decoded on a thread of its own, beside the reader that
//! takes the text.
//!
//! A compressed cassette is read as fast as the slower of the two: decoding (zlib-rs
//! inflates about 1.6 GB/s here; zstd decodes a recorded cassette faster still) and whatever
//! consumes the lines (fake-pi checking and writing records). On one thread they add up; on
//! two they overlap.
//!
//! The compressed bytes are still read on the caller's thread (the input may borrow, as
//! `Cassette::parse` lends a slice, and a file shared with the caller, as fake-pi's is, must
//! not be read behind its back), in chunks handed to the thread through a bounded queue;
//! the thread hands back buffers of text through another bounded queue, and the reader
//! gives the emptied ones back. So at most [`IN_QUEUE`] + 2 compressed chunks and
//! [`OUT_QUEUE`] + 3 text buffers exist at once, whatever the size of the input.
//!
//! The byte cap (`input::Capped`) and the decoder's errors (a bad CRC, a truncated
//! stream, the input's own error) are met on the thread, in the order of the text, and
//! reported by the read that reaches them with the same error as on one thread; the reads
//! after an error see the end (as they do from the decoder after a bad CRC). The thread
//! never waits on anything but the two queues: dropping the reader closes them, and the
//! drop waits for the thread, which then ends within one buffer of work. The thread blocks
//! every signal, so a program that takes its signals on a thread of its own (`sigwait`, as
//! fake-pi does) still gets them all. When the process may run on one CPU only, or no
//! thread can be started, the caller's thread inflates, as before.

use std::io::{self, BufRead, Read};
use std::sync::mpsc::{self, Receiver, Sender, SyncSender, TryRecvError, TrySendError};
use std::thread::JoinHandle;

#[cfg(test)]
mod tests;

/// Bytes of compressed input read at a time.
const IN_CHUNK: usize = 64 << 10;
/// Compressed chunks waiting for the thread (besides the one it inflates).
const IN_QUEUE: usize = 2;
/// Bytes of text per buffer, at most.
const OUT_CHUNK: usize = 256 << 10;
/// Bytes of text in the first buffer; each new one is twice the last, up to [`OUT_CHUNK`]
/// (a reader that takes only the first lines, as fake-pi's look at the header does, leaves
/// less inflated for nothing).
const FIRST_CHUNK: usize = 16 << 10;
/// Buffers of text waiting for the reader (besides the one it reads and the one being filled).
const OUT_QUEUE: usize = 4;

/// What the thread sends the reader.
enum Out {
    /// A buffer and how many of its bytes are text.
    Text(Vec<u8>, usize),
    /// The thread has inflated every compressed byte it was given and waits for more.
    Hungry,
    /// The decoder (or the byte cap) failed; nothing follows.
    Failed(io::Error),
    /// The end of the text; nothing follows.
    End,
}

/// The compressed input as the thread sees it: the chunks the reader sent.
struct Feed {
    chunks: Receiver<io::Result<Vec<u8>>>,
    /// Where the thread says it is hungry.
    out: SyncSender<Out>,
    chunk: Vec<u8>,
    pos: usize,
}

impl Read for Feed {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = {
            let have = self.fill_buf()?;
            let n = have.len().min(buf.len());
            buf[..n].copy_from_slice(&have[..n]);
            n
        };
        self.consume(n);
        Ok(n)
    }
}

impl BufRead for Feed {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        while self.pos == self.chunk.len() {
            let next = match self.chunks.try_recv() {
                Ok(c) => c,
                // Nothing queued: say so (the reader may be busy and not reading ahead), then wait.
                Err(TryRecvError::Empty) => {
                    if self.out.send(Out::Hungry).is_err() {
                        return Err(io::Error::other("the reader is gone"));
                    }
                    match self.chunks.recv() {
                        Ok(c) => c,
                        Err(_) => return Ok(&[]),
                    }
                }
                // The reader closed the queue: the end of the compressed input.
                Err(TryRecvError::Disconnected) => return Ok(&[]),
            };
            self.chunk = next?;
            self.pos = 0;
        }
        Ok(&self.chunk[self.pos..])
    }

    fn consume(&mut self, n: usize) {
        self.pos = (self.pos + n).min(self.chunk.len());
    }
}

/// The thread: inflate into the emptied buffers (or new ones) until the end or an error.
fn inflate(mut text: impl Read, out: SyncSender<Out>, emptied: Receiver<Vec<u8>>) {
    let mut size = FIRST_CHUNK;
    loop {
        let mut buf = match emptied.try_recv() {
            Ok(b) if b.len() >= size => b,
            _ => vec![0; size],
        };
        size = (size * 2).min(OUT_CHUNK);
        let msg = loop {
            match text.read(&mut buf) {
                Ok(0) => break Out::End,
                Ok(n) => break Out::Text(buf, n),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => break Out::Failed(e),
            }
        };
        let last = !matches!(msg, Out::Text(..));
        if out.send(msg).is_err() || last {
            return;
        }
    }
}

/// The reader's side: [`BufRead`] over the thread's buffers of text.
pub(crate) struct Inflating<'a> {
    raw: Box<dyn Read + Send + 'a>,
    /// Compressed chunks to the thread; `None` once the input ended (or failed).
    chunks: Option<SyncSender<io::Result<Vec<u8>>>>,
    /// A chunk read that did not fit in the queue yet.
    pending: Option<io::Result<Vec<u8>>>,
    text: Option<Receiver<Out>>,
    emptied: Sender<Vec<u8>>,
    buf: Vec<u8>,
    len: usize,
    pos: usize,
    /// The thread said its last (end or error): reads see the end.
    done: bool,
    thread: Option<JoinHandle<()>>,
}

impl<'a> Inflating<'a> {
    /// Start inflating `raw` (which starts with gzip's magic bytes) through `decoder` on a
    /// thread of its own: `decoder` turns the compressed input into text (a gzip decoder,
    /// with the byte cap on top). When no thread can be started, or the process may run on
    /// one CPU only, `raw` is given back and the caller inflates on its own thread.
    pub(crate) fn start<D, F>(
        raw: Box<dyn Read + Send + 'a>,
        decoder: F,
    ) -> Result<Self, Box<dyn Read + Send + 'a>>
    where
        D: Read,
        F: FnOnce(Box<dyn BufRead + Send>) -> D + Send + 'static,
    {
        // One CPU (affinity, a cgroup quota): two threads could only take turns.
        if std::thread::available_parallelism().map_or(true, |n| n.get() < 2) {
            return Err(raw);
        }
        let (chunk_tx, chunk_rx) = mpsc::sync_channel(IN_QUEUE);
        let (out_tx, out_rx) = mpsc::sync_channel(OUT_QUEUE);
        let (emptied_tx, emptied_rx) = mpsc::channel();
        let feed = Feed {
            chunks: chunk_rx,
            out: out_tx.clone(),
            chunk: Vec::new(),
            pos: 0,
        };
        let thread = spawn_without_signals(move || {
            inflate(decoder(Box::new(feed)), out_tx, emptied_rx);
        });
        match thread {
            Ok(thread) => Ok(Inflating {
                raw,
                chunks: Some(chunk_tx),
                pending: None,
                text: Some(out_rx),
                emptied: emptied_tx,
                buf: Vec::new(),
                len: 0,
                pos: 0,
                done: false,
                thread: Some(thread),
            }),
            Err(_) => Err(raw),
        }
    }

    /// Queue compressed chunks for the thread until its queue is full or the input ends.
    fn feed(&mut self) {
        while let Some(chunks) = &self.chunks {
            let chunk = match self.pending.take() {
                Some(c) => c,
                None => read_chunk(&mut self.raw),
            };
            if matches!(&chunk, Ok(c) if c.is_empty()) {
                // The end of the input: closing the queue says so.
                self.chunks = None;
                return;
            }
            let failed = chunk.is_err();
            match chunks.try_send(chunk) {
                // Nothing is read after an error of the input.
                Ok(()) if failed => self.chunks = None,
                Ok(()) => {}
                Err(TrySendError::Full(chunk)) => {
                    self.pending = Some(chunk);
                    return;
                }
                Err(TrySendError::Disconnected(_)) => self.chunks = None,
            }
        }
    }

    /// The next buffer of text from the thread (feeding it on the way); false at the end.
    fn next_text(&mut self) -> io::Result<bool> {
        loop {
            if self.done {
                return Ok(false);
            }
            self.feed();
            let Some(text) = &self.text else {
                return Ok(false);
            };
            let Ok(msg) = text.recv() else {
                self.done = true;
                return Err(io::Error::other("the decoder's thread stopped"));
            };
            match msg {
                Out::Text(buf, len) => {
                    let old = std::mem::replace(&mut self.buf, buf);
                    if !old.is_empty() {
                        let _ = self.emptied.send(old);
                    }
                    (self.len, self.pos) = (len, 0);
                    return Ok(true);
                }
                Out::Hungry => {}
                Out::Failed(e) => {
                    self.done = true;
                    return Err(e);
                }
                Out::End => self.done = true,
            }
        }
    }
}

/// One chunk of the compressed input (empty at its end).
fn read_chunk(raw: &mut dyn Read) -> io::Result<Vec<u8>> {
    let mut chunk = vec![0; IN_CHUNK];
    loop {
        match raw.read(&mut chunk) {
            Ok(n) => {
                chunk.truncate(n);
                return Ok(chunk);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

impl Read for Inflating<'_> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let n = {
            let have = self.fill_buf()?;
            let n = have.len().min(out.len());
            out[..n].copy_from_slice(&have[..n]);
            n
        };
        self.consume(n);
        Ok(n)
    }
}

impl BufRead for Inflating<'_> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        if self.pos == self.len && !self.next_text()? {
            return Ok(&[]);
        }
        Ok(&self.buf[self.pos..self.len])
    }

    fn consume(&mut self, n: usize) {
        self.pos = (self.pos + n).min(self.len);
    }
}

impl Drop for Inflating<'_> {
    fn drop(&mut self) {
        // Closing both queues ends the thread: its next send fails, its wait for input
        // sees the end.
        self.chunks = None;
        self.text = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Start `f` on a thread that blocks every signal (it never handles one; a signal sent to
/// the process goes to a thread that does).
fn spawn_without_signals(f: impl FnOnce() + Send + 'static) -> io::Result<JoinHandle<()>> {
    // SAFETY: sigset_t is plain data, filled by sigfillset; pthread_sigmask only reads
    // `all` and writes `old`. The thread inherits the mask in force when it is created, so
    // it is blocked here around the spawn and put back after.
    unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_BLOCK, &all, &mut old);
        let thread = std::thread::Builder::new()
            .name("pi-gunzip".into())
            .spawn(f);
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        thread
    }
}
