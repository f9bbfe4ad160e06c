//! The conformance suite's runner: every cassette a case, any implementation in any
//! language driven through fake-pi, its normalized stream compared with the expected one.
//!
//! [`conform`] owns the language-neutral contract (`conformance/README.md`): one case per
//! cassette, the request document an implementation reads on stdin, the capability
//! handshake (a case needing a capability the implementation does not claim is skipped,
//! not failed), running the implementation with fake-pi as its `pi`, the comparison with
//! volatile fields ignored, and the report with a command that reproduces each failure.
//! [`cross_version`] lists the documented differences between pi versions' streams of the
//! same conversation. `pi-harness conform` is the command-line face of this crate.
//!
//! ```
//! use conformance::conform::compare;
//! use serde_json::json;
//!
//! let expected = vec![
//!     json!({"type": "assistant", "text": "Hello"}),
//!     json!({"type": "terminal.completed", "stop_reason": "stop"}),
//! ];
//! let actual = vec![
//!     json!({"type": "assistant", "text": "Hallo"}),
//!     json!({"type": "terminal.completed", "stop_reason": "stop"}),
//! ];
//! let diffs = compare(&expected, &actual);
//! assert_eq!(diffs.len(), 1);
//! assert_eq!(diffs[0].path, "[0].text");
//! assert_eq!(diffs[0].expected, Some(json!("Hello")));
//! assert!(compare(&expected, &expected).is_empty());
//! ```

pub mod bundle;
pub mod collect;
pub mod conform;
pub mod cross_version;
