//! The cassette format: a recorded pi run, read, checked, written, imported and redacted.
//!
//! A cassette (`*.cassette.jsonl`, optionally gzipped) is one JSON header line (pi's
//! version and wire dialect, the scenario, what the caller must send, how the process
//! answers signals, placeholders, provenance) followed by timed records: stdout lines,
//! stderr chunks, child processes, and exactly one ending (`exit`, `signal` or `hang`). The
//! format is specified in `cassettes/FORMAT.md` with a JSON Schema beside it.
//!
//! - the data model, reader and writer ([`Cassette`], [`CassetteReader`] for streaming, with
//!   [`CassetteReader::next_ref`] lending records whose JSON payloads are not copied,
//!   [`CassetteError`] naming `file:line`);
//! - [`lint`]: every check a committed cassette must pass, secrets included;
//! - [`matching`]: the matching contract: whether a call of pi means what the recording
//!   meant (effective values, not syntax);
//! - [`import`]: a captured pi stdout to a cassette, proven by replaying it byte for byte;
//!   [`import_rpc`]: an RPC client's transcript to a two-way (version 2) cassette;
//! - [`two_way`]: the client side of a two-way cassette (does a client's line match the
//!   recorded one; a response with the client's own id);
//! - [`redact`]: run-specific values to stable placeholders.
//!
//! Replaying is fake-pi's job and mapping pi-wire's; this crate does neither.
//!
//! ```
//! use std::path::Path;
//! use pi_cassette::{Action, Cassette};
//!
//! let text = r#"{"format":"pi-cassette","version":1,"pi":{"version":"0.87.1","dialect":"delta-only"},"scenario":{"name":"hi","description":"one line"},"origin":{"kind":"hand-made","timing":"synthetic"}}
//! {"dt_ms":0,"stdout":{"type":"agent_start"}}
//! {"dt_ms":12.5,"stderr":"warn\n"}
//! {"dt_ms":0,"exit":0}
//! "#;
//! let c = Cassette::parse(Path::new("hi.cassette.jsonl"), text.as_bytes()).unwrap();
//! assert_eq!(c.header.pi.version, "0.87.1");
//! assert_eq!(c.stdout_bytes(), b"{\"type\":\"agent_start\"}\n");
//! assert_eq!(c.stderr_bytes(), b"warn\n");
//! assert_eq!(c.ending(), &Action::Exit(0));
//!
//! // A bad record is refused with the file, the line and the field.
//! let bad = text.replace(r#""dt_ms":12.5"#, r#""dt_ms":"12""#);
//! let e = Cassette::parse(Path::new("hi.cassette.jsonl"), bad.as_bytes()).unwrap_err();
//! assert!(e.to_string().starts_with("hi.cassette.jsonl:3:"), "{e}");
//! ```

mod error;
pub mod import;
pub mod import_rpc;
mod inflate;
pub mod input;
pub mod lint;
pub mod matching;
mod model;
pub mod output;
mod parse;
mod raw;
mod reader;
pub mod redact;
mod shape;
pub mod two_way;
mod write;

pub use error::{CassetteError, Location};
pub use input::Limits;
pub use model::{
    is_verbatim_json, two_way_modes, Action, ActionRef, Bytes, Cassette, ClientLine, Dialect,
    EffectiveExpect, Expect, FlagRule, Form, Grandchild, Header, Origin, OriginKind, PiSource,
    ProcessBehaviour, Record, RecordRef, Scenario, Secret, SessionUse, SignalAction, Spawn,
    StdinKind, TimingKind, Unverified, CLIENT_SIGNALS, FORMAT_NAME, FORMAT_VERSION,
    FORMAT_VERSION_TWO_WAY, MAX_DT_MS, SIGNAL_NAMES,
};
pub use parse::{is_header_line, parse_record_line};
pub use reader::{read_lines, CassetteReader, DEFAULT_MAX_HELD_BYTES, MAX_HELD_ENV};
pub use redact::FIXED_UUID_PREFIX;
pub use write::{rewrite_header, RewriteError};
