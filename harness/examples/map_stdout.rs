//! Map a captured pi stdout file to the normalized stream, one JSON message a line.
//!
//! `cargo run -p pi-harness --example map_stdout -- FILE [exit-code]`

use pi_harness::mapper::{map_all, MapperOptions, StreamEnd};
use pi_harness::message::ExitInfo;

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("usage: map_stdout FILE [exit-code]");
    let code: i32 = args.next().map_or(0, |c| c.parse().expect("exit code"));
    let data = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let end = StreamEnd::eof(Some(ExitInfo {
        code: Some(code),
        signal: None,
    }));
    for m in map_all(&data, end, MapperOptions::default()) {
        println!("{}", serde_json::to_string(&m).expect("messages serialize"));
    }
}
