//! The Gemini CLI cassettes of the corpus (`cassettes/gemini/`) through Gemini's mapper
//! (`pi_wire::gemini`), for `mapper_snapshots`: each mapped with the end its recording
//! reached (a run stopped mid-tool ends as the header's `process` says for the signal its
//! notes name: `codex_corpus::codex_end`, which reads only the header), and the stream
//! invariants checked on the output: the assistant text is the answer chunks of the stdout
//! joined, and a `result` of status `error` is a failure whatever the exit code, each read
//! from the stdout independently of the mapper (serde_json).

use pi_cassette::Cassette;
use pi_wire::mapper::MapperOptions;
use pi_wire::message::Message;
use serde_json::Value;

use pi_testkit::invariants::check_structure;

use crate::codex_corpus::codex_end;

/// Map a Gemini CLI cassette's stdout and check the invariants above.
pub fn map_and_check_gemini(c: &Cassette) -> Result<Vec<Message>, String> {
    let stdout = c.stdout_bytes();
    let out = pi_wire::gemini::map_all(&stdout, codex_end(c), MapperOptions::default());
    check_structure(&out)?;
    let events: Vec<Value> = stdout
        .split(|b| *b == b'\n')
        .filter_map(|l| serde_json::from_slice(l).ok())
        .collect();
    let chunks: String = events
        .iter()
        .filter(|e| e["type"] == "message" && e["role"] == "assistant")
        .filter_map(|e| e["content"].as_str())
        .collect();
    let got: String = out
        .iter()
        .filter_map(|m| match m {
            Message::Assistant { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    if got != chunks {
        return Err(format!("assistant text {got:?}, answer chunks {chunks:?}"));
    }
    let failed_result = events
        .iter()
        .any(|e| e["type"] == "result" && e["status"] == "error");
    let failed = matches!(out.last(), Some(Message::TerminalFailed(_)));
    if failed_result && !failed {
        return Err(format!(
            "a result of status error, but the stream ends {:?}",
            out.last().map(Message::kind)
        ));
    }
    Ok(out)
}
