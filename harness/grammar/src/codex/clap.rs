//! argv read as Codex's parser (clap) reads it, with clap's exact errors (measured on
//! 0.169.0: all exit 2, nothing on stdout, the message on stderr): an unknown argument
//! (with its tip: a similar option by Jaro similarity above 0.7 as clap's, the same option
//! of a subcommand, or how to pass it as a value), a missing value, a value not among the
//! choices, an option given twice, a value given to a switch, a positional too many.
//! `--help`, `-h` and `--version` stop the parse as clap does, with the text on stdout.

use std::collections::BTreeMap;

use super::options::{CodexOption, CommandSpec};
use super::{Command, Parsed, Stop};

const MORE: &str = "\nFor more information, try '--help'.\n";

/// The texts one release answers with: each command's spec, help texts and version lines.
pub(super) struct Texts<'a> {
    pub(super) top: &'a CommandSpec,
    pub(super) exec: &'a CommandSpec,
    pub(super) resume: &'a CommandSpec,
    pub(super) top_help: &'a str,
    pub(super) exec_help: &'a str,
    pub(super) exec_short_help: &'a str,
    pub(super) resume_help: &'a str,
    pub(super) version_line: &'a str,
    pub(super) exec_version_line: &'a str,
}

/// What one command's part of argv gave.
#[derive(Default)]
struct Level {
    options: BTreeMap<String, Vec<String>>,
    positionals: Vec<String>,
    sub: Option<(String, usize)>,
}

fn error(body: String, usage: Option<&str>) -> Stop {
    let mut stderr = format!("error: {body}\n");
    if let Some(u) = usage {
        stderr.push('\n');
        stderr.push_str(u);
        stderr.push('\n');
    }
    stderr.push_str(MORE);
    Stop {
        stdout: String::new(),
        stderr,
        code: 2,
    }
}

fn out(stdout: &str) -> Stop {
    Stop {
        stdout: stdout.to_string(),
        stderr: String::new(),
        code: 0,
    }
}

/// Jaro similarity of two strings (clap's `did_you_mean` keeps candidates above 0.7).
pub(crate) fn jaro(a: &str, b: &str) -> f64 {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    if a.is_empty() && b.is_empty() {
        return 1.0;
    }
    if a.is_empty() || b.is_empty() {
        return 0.0;
    }
    let window = (a.len().max(b.len()) / 2).saturating_sub(1);
    let mut b_used = vec![false; b.len()];
    let mut a_matches = Vec::new();
    for (i, ca) in a.iter().enumerate() {
        let lo = i.saturating_sub(window);
        let hi = (i + window + 1).min(b.len());
        for j in lo..hi {
            if !b_used[j] && b[j] == *ca {
                b_used[j] = true;
                a_matches.push(*ca);
                break;
            }
        }
    }
    let m = a_matches.len();
    if m == 0 {
        return 0.0;
    }
    let b_matches: Vec<char> = b
        .iter()
        .zip(&b_used)
        .filter(|(_, u)| **u)
        .map(|(c, _)| *c)
        .collect();
    let transpositions = a_matches
        .iter()
        .zip(&b_matches)
        .filter(|(x, y)| x != y)
        .count()
        / 2;
    let m = m as f64;
    (m / a.len() as f64 + m / b.len() as f64 + (m - transpositions as f64) / m) / 3.0
}

/// clap's tip for an unknown `--name`: a similar option of this command, the same option
/// of a subcommand, else how to pass it as a value.
fn unknown_long(spec: &CommandSpec, subs: &[(&str, &CommandSpec)], arg: &str) -> Stop {
    let name = arg.trim_start_matches("--");
    let name = name.split('=').next().unwrap_or(name);
    let mut best: Option<(f64, &str)> = None;
    for o in &spec.options {
        let score = jaro(name, &o.long);
        if score > 0.7 && best.map_or(true, |(b, _)| score > b) {
            best = Some((score, &o.long));
        }
    }
    let tip = if let Some((_, long)) = best {
        format!("a similar argument exists: '--{long}'")
    } else if let Some((sub, _)) = subs.iter().find(|(_, s)| s.long(name).is_some()) {
        format!("'{sub} --{name}' exists")
    } else {
        format!("to pass '{arg}' as a value, use '-- {arg}'")
    };
    error(
        format!("unexpected argument '{arg}' found\n\n  tip: {tip}"),
        Some(&spec.usage),
    )
}

fn unknown_short(spec: &CommandSpec, flag: &str) -> Stop {
    error(
        format!("unexpected argument '{flag}' found\n\n  tip: to pass '{flag}' as a value, use '-- {flag}'"),
        Some(&spec.usage),
    )
}

/// Record `values` for `opt`, refusing a second use of a single option and a value outside
/// the choices.
fn take(
    level: &mut Level,
    spec: &CommandSpec,
    opt: &CodexOption,
    values: Vec<String>,
) -> Result<(), Stop> {
    for v in &values {
        if !opt.choices.is_empty() && !opt.choices.contains(v) {
            return Err(error(
                format!(
                    "invalid value '{v}' for '{}'\n  [possible values: {}]",
                    opt.display(),
                    opt.choices.join(", ")
                ),
                None,
            ));
        }
    }
    let entry = level.options.entry(opt.long.clone()).or_default();
    if !opt.repeatable && !entry.is_empty() {
        return Err(error(
            format!(
                "the argument '{}' cannot be used multiple times",
                opt.display()
            ),
            Some(&spec.usage),
        ));
    }
    entry.extend(values);
    Ok(())
}

/// The value(s) of a value-taking option whose value did not come inline: the next
/// argument (not one that looks like an option), and for `<X>...` every following one up
/// to one that does. An option next is clap's "value required"; an unknown one next is
/// refused as unknown first (measured: `-m --json` vs `-m -x`).
fn next_values(
    spec: &CommandSpec,
    subs: &[(&str, &CommandSpec)],
    args: &[String],
    i: &mut usize,
    opt: &CodexOption,
) -> Result<Vec<String>, Stop> {
    let looks_like_option = |a: &str| a.starts_with('-') && a.len() > 1;
    match args.get(*i + 1) {
        Some(a) if !looks_like_option(a) => {
            *i += 1;
            let mut values = vec![a.clone()];
            if opt.multiple {
                while let Some(a) = args.get(*i + 1).filter(|a| !looks_like_option(a)) {
                    *i += 1;
                    values.push(a.clone());
                }
            }
            Ok(values)
        }
        Some(a) if a != "--" && !known(spec, a) => Err(match a.strip_prefix("--") {
            Some(_) => unknown_long(spec, subs, a),
            None => unknown_short(
                spec,
                &a[..a.char_indices().nth(2).map_or(a.len(), |(n, _)| n)],
            ),
        }),
        _ => Err(error(
            format!(
                "a value is required for '{}' but none was supplied",
                opt.display()
            ),
            None,
        )),
    }
}

/// Is `arg` (`--name`, `--name=v`, `-x...`) an option of `spec` (help and version too)?
fn known(spec: &CommandSpec, arg: &str) -> bool {
    match arg.strip_prefix("--") {
        Some(body) => {
            let name = body.split('=').next().unwrap_or(body);
            matches!(name, "help" | "version") || spec.long(name).is_some()
        }
        None => arg[1..]
            .chars()
            .next()
            .is_some_and(|c| c == 'h' || c == 'V' || spec.short(c).is_some()),
    }
}

/// Read one command's part of `args` from `start`; stops at a subcommand's name. `help`:
/// (long help, short help); `version`: its `--version` line, if it has one.
fn level(
    spec: &CommandSpec,
    subs: &[(&str, &CommandSpec)],
    args: &[String],
    start: usize,
    help: (&str, &str),
    version: Option<&str>,
) -> Result<Level, Stop> {
    let mut level = Level::default();
    let mut i = start;
    let mut dashdash = false;
    while i < args.len() {
        let arg = &args[i];
        if dashdash || arg == "-" || !arg.starts_with('-') {
            if !dashdash && level.positionals.is_empty() {
                if let Some(sub) = spec.subcommand(arg) {
                    level.sub = Some((sub.to_string(), i + 1));
                    return Ok(level);
                }
            }
            if level.positionals.len() >= spec.positionals.len() {
                return Err(error(
                    format!("unexpected argument '{arg}' found"),
                    Some(&spec.usage),
                ));
            }
            level.positionals.push(arg.clone());
        } else if arg == "--" {
            dashdash = true;
        } else if let Some(body) = arg.strip_prefix("--") {
            let (name, inline) = match body.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (body, None),
            };
            if name == "help" {
                return Err(out(help.0));
            }
            if name == "version" && version.is_some() {
                return Err(out(version.unwrap_or_default()));
            }
            let Some(opt) = spec.long(name) else {
                return Err(unknown_long(spec, subs, arg));
            };
            let values = match (opt.takes_value(), inline) {
                (true, Some(v)) => vec![v],
                (true, None) => next_values(spec, subs, args, &mut i, opt)?,
                (false, Some(v)) => {
                    return Err(error(
                        format!(
                            "unexpected value '{v}' for '{}' found; no more were expected",
                            opt.display()
                        ),
                        Some(&spec.usage),
                    ))
                }
                (false, None) => vec![String::new()],
            };
            take(&mut level, spec, opt, values)?;
        } else {
            short_cluster(spec, subs, args, &mut i, &mut level, help, version)?;
        }
        i += 1;
    }
    Ok(level)
}

/// `-m X`, `-mX`, `-m=X`, and switches (`-h`, `-V`) clustered.
fn short_cluster(
    spec: &CommandSpec,
    subs: &[(&str, &CommandSpec)],
    args: &[String],
    i: &mut usize,
    level: &mut Level,
    help: (&str, &str),
    version: Option<&str>,
) -> Result<(), Stop> {
    let arg = args[*i].clone();
    let body = &arg[1..];
    for (at, c) in body.char_indices() {
        if c == 'h' {
            return Err(out(help.1));
        }
        if c == 'V' {
            if let Some(v) = version {
                return Err(out(v));
            }
        }
        let Some(opt) = spec.short(c) else {
            return Err(unknown_short(spec, &format!("-{c}")));
        };
        if !opt.takes_value() {
            take(level, spec, opt, vec![String::new()])?;
            continue;
        }
        let rest = &body[at + c.len_utf8()..];
        let values = if rest.is_empty() {
            next_values(spec, subs, args, i, opt)?
        } else {
            vec![rest.strip_prefix('=').unwrap_or(rest).to_string()]
        };
        return take(level, spec, opt, values);
    }
    Ok(())
}

/// Read `argv` (without the program name) as `codex` does.
pub(super) fn parse(t: &Texts, argv: &[String]) -> Result<Parsed, Stop> {
    let top = level(
        t.top,
        &[("exec", t.exec)],
        argv,
        0,
        (t.top_help, t.top_help),
        Some(t.version_line),
    )?;
    let mut options = top.options;
    let Some((sub, at)) = top.sub else {
        return Ok(Parsed {
            command: Command::Interactive,
            options,
            prompt: top.positionals.first().cloned(),
            session_id: None,
        });
    };
    if sub != "exec" {
        return Ok(Parsed {
            command: Command::Other(sub),
            options,
            prompt: None,
            session_id: None,
        });
    }
    let exec = level(
        t.exec,
        &[("resume", t.resume)],
        argv,
        at,
        (t.exec_help, t.exec_short_help),
        Some(t.exec_version_line),
    )?;
    merge(&mut options, exec.options);
    match exec.sub {
        None => Ok(Parsed {
            command: Command::Exec,
            options,
            prompt: exec.positionals.first().cloned(),
            session_id: None,
        }),
        Some((name, at)) if name == "resume" => {
            let resume = level(
                t.resume,
                &[],
                argv,
                at,
                (t.resume_help, t.resume_help),
                None,
            )?;
            merge(&mut options, resume.options);
            let mut pos = resume.positionals.into_iter();
            let (mut session_id, mut prompt) = (pos.next(), pos.next());
            // With `--last`, the one positional is the prompt (measured: `resume --last hi`).
            if options.contains_key("last") && prompt.is_none() {
                prompt = session_id.take();
            }
            Ok(Parsed {
                command: Command::ExecResume,
                options,
                prompt,
                session_id,
            })
        }
        Some((name, _)) => Ok(Parsed {
            command: Command::Other(format!("exec {name}")),
            options,
            prompt: None,
            session_id: None,
        }),
    }
}

/// A subcommand's options over the top level's: lists appended (the top level's `-c`
/// first), single values replaced.
fn merge(into: &mut BTreeMap<String, Vec<String>>, from: BTreeMap<String, Vec<String>>) {
    for (k, v) in from {
        let repeatable = super::options::is_repeatable(&k);
        let e = into.entry(k).or_default();
        if repeatable {
            e.extend(v);
        } else {
            *e = v;
        }
    }
}
