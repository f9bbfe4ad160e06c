//! Where the library's lines for the user go while a long operation runs: the recorder's
//! progress, the corpus's result per scenario, the LLM server's warnings. The library never
//! prints; its caller passes [`Notices`] (the CLI's print each line on stderr, tests collect
//! or drop them).

use std::fmt;
use std::sync::Arc;

/// A receiver of one-line notices (each without its `\n`), shared by the tasks of an
/// operation; cloning it shares the receiver. [`Notices::default`] drops every line.
#[derive(Clone, Default)]
pub struct Notices(Option<Arc<Receiver>>);

/// What receives the lines.
type Receiver = dyn Fn(&str) + Send + Sync;

impl Notices {
    /// Notices handed to `receive`, one call per line.
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    ///
    /// let seen = Arc::new(Mutex::new(Vec::new()));
    /// let notices = pi_recorder::Notices::new({
    ///     let seen = Arc::clone(&seen);
    ///     move |line| seen.lock().unwrap().push(line.to_string())
    /// });
    /// notices.line("pi-harness record hello: 2.0 s, 12 stdout lines, 0.0 MB");
    /// assert_eq!(seen.lock().unwrap().len(), 1);
    /// ```
    pub fn new(receive: impl Fn(&str) + Send + Sync + 'static) -> Notices {
        Notices(Some(Arc::new(receive)))
    }

    /// Notices nobody reads: every line is dropped.
    pub fn ignore() -> Notices {
        Notices(None)
    }

    /// Pass one line (without its `\n`) to the receiver.
    pub fn line(&self, text: &str) {
        if let Some(receive) = &self.0 {
            receive(text);
        }
    }
}

impl fmt::Debug for Notices {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_some() {
            "Notices(received)"
        } else {
            "Notices(ignored)"
        })
    }
}
