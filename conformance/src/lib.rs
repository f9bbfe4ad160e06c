//! The conformance suite's runner: every cassette a case, any implementation in any
//! language driven through fake-pi, its normalized stream compared with the expected one.
//!
//! [`conform`] runs the suite as `pi-harness conform` does, from pieces that each own one
//! part of the language-neutral contract (`conformance/README.md`):
//!
//! - [`request`]: the request document an implementation reads on stdin;
//! - [`case`]: one case per cassette, its request derived from the header;
//! - [`capability`]: what a case needs and what a claim skips;
//! - [`case_dir`]: a case's temp dir (cassette copy, fake-pi as `pi`, a seeded session);
//! - [`reference`]: the reference provider on a request document (`pi-harness provider-run`);
//! - [`implementation`]: the capability handshake and one case run of any implementation, its
//!   output kept within a budget ([`collect`]);
//! - [`compare`]: stream against stream, volatile fields ignored;
//! - [`verdict`]: the verdict on one case;
//! - [`report`]: the report's text, with a command that reproduces a failure;
//! - [`shown`]: how a field difference and a word of a command line are shown;
//! - [`junit`]: the JUnit XML report and `--partition`'s shards, for CI;
//! - [`expected`]: the expected stream files;
//! - [`fake_pi`]: where fake-pi is;
//! - [`bundle`]: the suite embedded in the binary; [`names`]: a cassette's name in the one form every tool takes;
//! - [`cross_version`]: the documented differences between pi versions' streams of the
//!   same conversation.
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
pub mod capability;
pub mod case;
pub mod case_dir;
pub mod compare;
pub mod conform;
pub mod cross_version;
pub mod expected;
pub mod fake_pi;
pub mod implementation;
pub mod junit;
pub mod names;
pub mod outline;
pub mod reference;
pub mod report;
pub mod request;
pub mod shown;
pub mod verdict;

pub use implementation::collect;
