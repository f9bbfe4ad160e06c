//! `pi-harness cassette relax`: loosen a cassette by name, not by hand. The fields given
//! join the header's `expect.irrelevant`, so a replay stops comparing them (a cassette
//! recorded under one model replays under another); the records are kept as they were.
//! Also the value parser of `record --ignore` ([`ignorable`]).

use std::path::PathBuf;

use pi_cassette::input::Compression;
use pi_cassette::matching::IGNORABLE;

use crate::error::CliError;
use crate::exit::EXIT_OK;

/// Command-line arguments of `pi-harness cassette relax`.
#[derive(Debug, clap::Args)]
#[command(after_help = RELAX_EXAMPLE)]
pub struct RelaxArgs {
    /// The cassette (`.cassette.jsonl`, or `.gz`); rewritten in place unless --out.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// A field a replay stops comparing (several after one --ignore, or repeated): provider,
    /// model, thinking, tools, prompt, session, env (the variables the recording needed
    /// set), stdin (a Claude Code host's stdin, a terminal or a pipe), or another effective
    /// field (mode, system_prompt, follow_ups, ...). At replay only, without rewriting the
    /// file: FAKE_PI_IGNORE=model,env (the test helpers' ignore option sets it).
    #[arg(long, required = true, num_args = 1.., value_name = "FIELD", value_parser = ignorable)]
    pub ignore: Vec<String>,
    /// Write the relaxed cassette here instead of replacing FILE.
    #[arg(long, value_name = "OUT")]
    pub out: Option<PathBuf>,
}

const RELAX_EXAMPLE: &str = "Example:
  pi-harness cassette relax my.cassette.jsonl --ignore provider model
  pi-harness cassette show my.cassette.jsonl   # says: not compared  provider, model";

/// A field name `--ignore` accepts (see [`IGNORABLE`]), or the one-line reason it is not one.
pub fn ignorable(name: &str) -> Result<String, String> {
    if IGNORABLE.contains(&name) {
        Ok(name.to_string())
    } else {
        Err(format!(
            "{name:?} is not a field a cassette can ignore (known: {})",
            IGNORABLE.join(", ")
        ))
    }
}

/// `pi-harness cassette relax`: its exit status.
pub fn run_relax(args: &RelaxArgs) -> i32 {
    let out = args.out.as_ref().unwrap_or(&args.file);
    // Written as it was read: compressed as it was (by its magic), or as --out's name says.
    let kind = match &args.out {
        Some(o) => Compression::for_name(o),
        None => Compression::of_file(&args.file),
    };
    // A record at a time, never the whole cassette; replacing FILE itself is safe (the copy
    // is put in place by rename once whole).
    let mut added = Vec::new();
    let header = match pi_cassette::rewrite_header(&args.file, out, kind, |h| {
        added = h.expect.ignore(&args.ignore);
    }) {
        Ok(h) => h,
        Err(e) => return CliError::usage(e.to_string()).report(),
    };
    let now = header.expect.irrelevant.join(", ");
    if added.is_empty() {
        eprintln!("{}: already ignores {now}; unchanged", out.display());
    } else {
        eprintln!(
            "{}: a replay no longer compares {} (ignored now: {now})",
            out.display(),
            added.join(", ")
        );
    }
    EXIT_OK
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_added_once_and_checked_by_name() {
        let mut e = pi_cassette::Expect {
            irrelevant: vec!["tools".into()],
            ..pi_cassette::Expect::default()
        };
        let added = e.ignore(&["model".into(), "tools".into(), "model".into()]);
        assert_eq!(added, vec!["model".to_string()]);
        assert_eq!(e.irrelevant, vec!["tools", "model"]);
        assert!(ignorable("env").is_ok());
        assert!(ignorable("colour").unwrap_err().contains("known: mode"));
    }
}
