//! Map pi's stdout to the normalized stream and print it, one JSON message a line.
//!
//! `cargo run -p pi-wire --example map_stdout -- FILE [exit-code]`
//!
//! FILE is a captured stdout (the run is taken to have ended with `exit-code`, default 0)
//! or a cassette (`*.cassette.jsonl[.zst|.gz]`: its stdout, ended as its final record says;
//! a `hang` is shown as a cancellation).

// A program whose output is the stream: it prints.
#![allow(clippy::print_stdout)]

use pi_cassette::{Action, Cassette};
use pi_wire::mapper::{map_all, EndCause, MapperOptions, StreamEnd};
use pi_wire::message::ExitInfo;

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("usage: map_stdout FILE [exit-code]");
    let (data, end) = if path.contains(".cassette.jsonl") {
        let c = Cassette::load(path.as_ref()).unwrap_or_else(|e| panic!("{e}"));
        let exit = |code, signal| Some(ExitInfo { code, signal });
        let end = match c.ending() {
            Action::Exit(code) => StreamEnd::eof(exit(Some(*code), None)),
            Action::Signal(sig) => StreamEnd::eof(exit(None, Some(sig.clone()))),
            _ => StreamEnd {
                exit: None,
                stderr_tail: None,
                cause: EndCause::Cancelled,
            },
        };
        (c.stdout_bytes(), end)
    } else {
        let code: i32 = args.next().map_or(0, |c| c.parse().expect("exit code"));
        let data = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let end = StreamEnd::eof(Some(ExitInfo {
            code: Some(code),
            signal: None,
        }));
        (data, end)
    };
    for m in map_all(&data, end, MapperOptions::default()) {
        println!("{}", serde_json::to_string(&m).expect("messages serialize"));
    }
}
