//! pi's command line as fake-pi applies it, stage by stage (the grammar is `pi_cli`).
//!
//! Real pi answers some command lines before reading stdin (parse errors, `--version`,
//! session flag checks, `--help`) and others only after (unknown long flags). [`before_stdin`]
//! runs the first group and says either "go on" or "finish now with this output".

use pi_grammar::{AppMode, Grammar, ParsedArgs, Stream};

/// Output to write, then exit with `code`.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Finish {
    pub(crate) stdout: String,
    pub(crate) stderr: String,
    pub(crate) code: i32,
}

impl Finish {
    fn on(stream: Stream, text: String, mut stderr: String, code: i32) -> Finish {
        match stream {
            Stream::Stdout => Finish {
                stdout: text,
                stderr,
                code,
            },
            Stream::Stderr => {
                stderr.push_str(&text);
                Finish {
                    stdout: String::new(),
                    stderr,
                    code,
                }
            }
        }
    }
}

/// Go on with the parsed command line (after printing `warnings` to stderr), or finish.
pub(crate) enum Next {
    Run {
        parsed: ParsedArgs,
        mode: AppMode,
        warnings: String,
    },
    Finish(Finish),
}

/// Everything pi does with argv before it reads stdin.
pub(crate) fn before_stdin(
    grammar: &Grammar,
    argv: &[String],
    stdin_tty: bool,
    stdout_tty: bool,
) -> Next {
    let parsed = match grammar.parse(argv) {
        Ok(p) => p,
        Err(e) => {
            return Next::Finish(Finish {
                stdout: String::new(),
                stderr: e.stderr,
                code: e.exit_code,
            })
        }
    };
    let warnings = parsed.warnings_text();
    let mode = parsed.app_mode(stdin_tty, stdout_tty, grammar);
    if parsed.has("--version") {
        let text = format!("{}\n", grammar.claimed());
        return Next::Finish(Finish::on(grammar.version_stream(mode), text, warnings, 0));
    }
    if let Err(e) = parsed.validate() {
        return Next::Finish(Finish {
            stdout: String::new(),
            stderr: warnings + &e.stderr,
            code: e.exit_code,
        });
    }
    if parsed.has("--help") {
        let stream = grammar.help_stream(&parsed, mode);
        let stderr = warnings + &grammar.help_preamble(&parsed);
        return Next::Finish(Finish::on(stream, grammar.help_text(), stderr, 0));
    }
    Next::Run {
        parsed,
        mode,
        warnings,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finish(version: &str, argv: &[&str], stdin_tty: bool) -> Finish {
        let g = Grammar::for_version(version).unwrap();
        let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
        match before_stdin(&g, &argv, stdin_tty, false) {
            Next::Finish(f) => f,
            Next::Run { .. } => panic!("expected to finish"),
        }
    }

    #[test]
    fn version_streams() {
        let f = finish("0.73.1", &["--version"], false);
        assert_eq!(
            (f.stdout.as_str(), f.stderr.as_str(), f.code),
            ("", "0.73.1\n", 0)
        );
        let f = finish("0.73.1", &["--version"], true);
        assert_eq!((f.stdout.as_str(), f.stderr.as_str()), ("0.73.1\n", ""));
        let f = finish(
            "0.87.1",
            &["--thinking", "x", "--version", "--bogus"],
            false,
        );
        assert_eq!(f.stdout, "0.87.1\n");
        assert!(f
            .stderr
            .starts_with("Warning: Invalid thinking level \"x\""));
    }

    #[test]
    fn errors_before_stdin() {
        let f = finish("0.87.1", &["--session-id", "a!"], false);
        assert_eq!(f.code, 1);
        assert!(f.stderr.starts_with("Error: Session id must be"));
        let f = finish("0.73.1", &["-x"], false);
        assert_eq!(
            (f.stderr.as_str(), f.code),
            ("Error: Unknown option: -x\n", 1)
        );
    }
}
