//! fake-pi as Claude Code: a `stream-json` cassette (header `mode: "stream-json"`) makes
//! fake-pi behave like the Claude Code CLI it was recorded from.
//!
//! The command line is read as the recorded release of the CLI reads it
//! ([`pi_grammar::claude`], chosen by the header's `claude.version`, or the newest measured
//! release before it: its option errors and checks, with its exact messages and exit 1;
//! `--version` and `--help` print that release's own text); then it is compared with
//! the recording's (`expect.flags`: every option the recording had, with its value, and no
//! other); `ANTHROPIC_API_KEY` must be set as the CLI needs it, and every other variable of
//! `expect.env` too (the CLI would run on, differently: without `CLAUDE_CODE_MAX_RETRIES` it
//! retries ten times), with no secret of `expect.never_in_argv` in argv. Then the two-way replay runs
//! exactly as for pi's RPC mode ([`crate::client`], [`crate::replay`]) under the
//! stream-json rules of [`pi_cassette::two_way::Protocol::StreamJson`]: the host's lines
//! are checked (user messages, `control_response`s to permission prompts: allow vs deny,
//! and `control_request`s whose `request_id` is echoed in the CLI's answer), and what does
//! not match is exit 99 with one line per difference. The recorded session id becomes the
//! host's `--session-id` or a fresh UUID; the recording's directories become this run's.

use std::fs::File;
use std::io::{IsTerminal, Write};
use std::path::Path;

use pi_cassette::{FlagRule, Header, StdinKind};
use pi_grammar::claude;

use crate::exit::{self, fail};
use crate::{client, environ, hints, replay, session, signals, source, values};

/// The variable the CLI takes its key from.
const API_KEY: &str = "ANTHROPIC_API_KEY";

/// Replay the stream-json cassette `file` (at `path`, header `header`) for `argv`.
pub(crate) fn run(
    header: &Header,
    argv: &[String],
    path: &Path,
    file: &File,
    speed: Option<&str>,
) -> i32 {
    let stdout_tty = std::io::stdout().is_terminal();
    let cli = header
        .pi
        .claude()
        .unwrap_or_else(|| claude::Claude::nearest(&header.pi.version));
    let parsed = match cli.parse(argv, stdout_tty) {
        Ok(p) => p,
        Err(stop) => {
            let mut out = std::io::stdout().lock();
            if out
                .write_all(stop.stdout.as_bytes())
                .and_then(|()| out.flush())
                .is_err()
            {
                return exit::STDOUT_CLOSED;
            }
            let _ = std::io::stderr().write_all(stop.stderr.as_bytes());
            hints::after_claude_refusal(header, &cli, argv, &stop.stderr);
            return stop.code;
        }
    };
    let mut mismatches = mismatches(header, &parsed);
    // The rest of the environment the recording needs (without the key, the CLI itself
    // says it is not logged in, below), and no secret in argv.
    let env = |k: &str| std::env::var(k).ok();
    mismatches.extend(
        pi_cassette::matching::environment(&header.expect, &env, argv)
            .into_iter()
            .filter(|m| m.field != format!("expect.env.{API_KEY}"))
            .map(|m| m.to_string()),
    );
    // A terminal is answered at once; a pipe is read to its end first (the CLI waits).
    let recorded_stdin = header.expect.stdin.unwrap_or(StdinKind::Pipe);
    let stdin = StdinKind::of_stdin();
    let stdin_matters = !header.expect.irrelevant.iter().any(|f| f == "stdin");
    if stdin != recorded_stdin && stdin_matters {
        mismatches.push(format!(
            "stdin: the recording's was {}, this call's is {} (the CLI {})",
            recorded_stdin.describe(),
            stdin.describe(),
            match stdin {
                StdinKind::Terminal => "answers a terminal at once instead of reading it",
                StdinKind::Pipe => "reads a pipe to its end before it answers",
            }
        ));
    }
    if !mismatches.is_empty() {
        return crate::relax::mismatched(&mismatches, &format!("cassette {}", path.display()));
    }
    if std::env::var_os(API_KEY).map_or(true, |k| k.is_empty()) {
        // What the CLI prints without a key (measured with `-p hi`).
        println!("Not logged in · Please run /login");
        return exit::CLAUDE_NOT_LOGGED_IN;
    }
    let speed = match replay::Speed::parse(speed) {
        Ok(s) => s,
        Err(e) => return fail(exit::MISUSE, e),
    };
    if let Err(e) = signals::block() {
        return fail(exit::MISUSE, format!("cannot block signals: {e}"));
    }
    if let Err(e) = signals::start(header.process.clone()) {
        return fail(exit::MISUSE, format!("cannot start the signal thread: {e}"));
    }
    let wait = match environ::rpc_wait() {
        Ok(w) => w,
        Err(e) => return fail(exit::MISUSE, e),
    };
    let ahead = match client::client_signals(path, file) {
        Ok(a) => a,
        Err(e) => return fail(exit::INVALID_CASSETTE, format!("invalid cassette: {e}")),
    };
    // A terminal is never read: the CLI took its prompt from argv.
    let client = match client::Client::start(
        wait,
        pi_cassette::two_way::Protocol::StreamJson,
        ahead,
        stdin == StdinKind::Pipe,
    ) {
        Ok(c) => c,
        Err(e) => return fail(exit::MISUSE, format!("cannot read stdin: {e}")),
    };
    let requests =
        match client::RequestLog::open(std::env::var("FAKE_PI_REQUEST_LOG").ok().as_deref()) {
            Ok(r) => r,
            Err(e) => return fail(exit::MISUSE, format!("FAKE_PI_REQUEST_LOG: {e}")),
        };
    let cwd = std::env::current_dir()
        .map(|d| d.to_string_lossy().into_owned())
        .unwrap_or_else(|_| ".".into());
    let session_id = parsed
        .value("session-id")
        .map(str::to_string)
        .unwrap_or_else(values::uuid_v4);
    let home = std::env::var("HOME").unwrap_or_default();
    let tmp = std::env::temp_dir().to_string_lossy().into_owned();
    let keep_recorded = std::env::var("FAKE_PI_VALUES").is_ok_and(|v| v == "recorded");
    let values = if keep_recorded {
        None
    } else {
        values::Values::from_pairs(
            header.redactions.keys(),
            &[
                ("<SESSION_ID>", &session_id),
                ("<CWD>", &cwd),
                ("<HOME>", &home),
                ("<TMP>", &tmp),
            ],
        )
    };
    let session = session::Session::new(
        session::Plan::Ephemeral {
            id: Some(session_id.clone()),
        },
        None,
        &cwd,
    );
    let mut hooks = replay::Hooks {
        session,
        meta: session::SessionMeta {
            provider: None,
            model: None,
            thinking: None,
        },
        values,
        recorded_session_id: None,
        session_line_done: true,
        client: Some(client),
        requests,
    };
    let mut records = match source::from_start(path, file) {
        Ok(r) => r,
        Err(e) => return exit::cassette_failure(e),
    };
    replay::run(&mut records, path, speed, &mut hooks)
}

/// The options of Claude Code that carry a field a cassette may ignore
/// (`expect.irrelevant`): not compared when it does.
const IGNORABLE_OPTIONS: &[(&str, &[&str])] = &[
    ("model", &["model", "fallback-model"]),
    (
        "tools",
        &[
            "tools",
            "allowedTools",
            "allowed-tools",
            "disallowedTools",
            "disallowed-tools",
        ],
    ),
    (
        "thinking",
        &[
            "effort",
            "thinking",
            "max-thinking-tokens",
            "thinking-display",
        ],
    ),
];

/// Whether `expect.irrelevant` leaves Claude Code's option `name` uncompared.
fn ignored_option(header: &Header, name: &str) -> bool {
    header.expect.irrelevant.iter().any(|field| {
        IGNORABLE_OPTIONS
            .iter()
            .any(|(f, options)| f == field && options.contains(&name))
    })
}

/// How the command line differs from the recording's: an option the recording had that is
/// missing or has another value, or one it did not have (options of the fields the
/// cassette ignores aside).
fn mismatches(header: &Header, parsed: &claude::Parsed) -> Vec<String> {
    let mut out = Vec::new();
    for (name, rule) in &header.expect.flags {
        if ignored_option(header, name) {
            continue;
        }
        match rule {
            FlagRule::Present(true) if !parsed.has(name) => out.push(format!(
                "the recording ran with --{name}; this call has none"
            )),
            FlagRule::Present(false) if parsed.has(name) => {
                out.push(format!("--{name}: the recording ran without it"))
            }
            FlagRule::Value(want) => match parsed.flag_value(name) {
                None => out.push(format!(
                    "the recording ran with --{name} {want}; this call has none"
                )),
                Some(got) if got != *want => out.push(format!(
                    "--{name}: expected {want:?} (as recorded), got {got:?}"
                )),
                Some(_) => {}
            },
            _ => {}
        }
    }
    // The prompt in argv (after the options, or after `--`) goes to the model as recorded.
    let prompt_relevant = !header.expect.irrelevant.iter().any(|f| f == "prompt");
    if let Some(want) = header
        .expect
        .argv_messages
        .as_ref()
        .filter(|_| prompt_relevant)
    {
        if parsed.prompt != *want {
            // Never shown: a secret the recording names (its own mismatch says where).
            let secrets: Vec<String> = header
                .expect
                .never_in_argv
                .iter()
                .filter_map(|s| match s {
                    pi_cassette::Secret::Env(var) => std::env::var(var).ok(),
                    pi_cassette::Secret::Literal(v) => Some(v.clone()),
                })
                .filter(|v| !v.is_empty())
                .collect();
            let got: Vec<String> = parsed
                .prompt
                .iter()
                .map(|m| {
                    secrets.iter().fold(m.clone(), |m, secret| {
                        m.replace(secret.as_str(), "<SECRET>")
                    })
                })
                .collect();
            out.push(format!(
                "the prompt in argv: expected {} (as recorded), got {}",
                serde_json::json!(want),
                serde_json::json!(got)
            ));
        }
    }
    for name in parsed.options.keys() {
        if !ignored_option(header, name)
            && !header
                .expect
                .flags
                .keys()
                .any(|k| claude::canonical(k) == *name)
        {
            out.push(format!(
                "--{name}: the recording ran without it (it changes what the CLI does)"
            ));
        }
    }
    out
}
