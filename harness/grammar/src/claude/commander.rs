//! How Claude Code's argument parser (commander) reads argv, with its messages: known
//! options take their values as they come (a refused value, a missing one and `--version`
//! end the parse there); an argument that looks like an option and is not one is kept, and
//! with it everything after; then `-h`/`--help` among those prints the help, and the first
//! of them is `error: unknown option 'X'`, with commander's suggestion of a listed option
//! spelled alike. The behaviour was measured on the real CLI (see the tests and
//! `scripts/claude-grammar.sh`).

use std::cmp::Ordering;
use std::collections::VecDeque;

use super::data::{ClaudeOption, OptionKind, Release};
use super::{error, Parsed, Stop};

/// commander's test for "looks like an option": two characters or more, the first `-`.
fn maybe_option(arg: &str) -> bool {
    arg.len() > 1 && arg.starts_with('-')
}

/// The option spelled `flag` (`-p`, `--print`); the help option is not among them (commander
/// looks for it among the unknown arguments).
fn find<'r>(release: &'r Release, flag: &str) -> Option<&'r ClaudeOption> {
    release
        .options
        .iter()
        .find(|o| o.kind != OptionKind::Help && o.is(flag))
}

/// Commander's stage: argv to options and operands, or what the CLI prints instead.
pub(super) fn parse(release: &'static Release, argv: &[String]) -> Result<Parsed, Stop> {
    let mut args: VecDeque<String> = argv.iter().cloned().collect();
    let mut parsed = Parsed::default();
    let mut unknown: Vec<String> = Vec::new();
    let mut to_unknown = false;
    let mut variadic: Option<&ClaudeOption> = None;
    while let Some(arg) = args.pop_front() {
        if arg == "--" {
            let dest = if to_unknown {
                unknown.push(arg);
                &mut unknown
            } else {
                &mut parsed.prompt
            };
            dest.extend(args.drain(..));
            break;
        }
        if let Some(opt) = variadic {
            if !maybe_option(&arg) {
                take(release, &mut parsed, opt, Some(arg))?;
                continue;
            }
        }
        variadic = None;
        if maybe_option(&arg) {
            if let Some(opt) = find(release, &arg) {
                let value = match opt.kind {
                    OptionKind::Value | OptionKind::Variadic => match args.pop_front() {
                        Some(v) => Some(v),
                        None => {
                            return Err(error(format!(
                                "error: option '{}' argument missing\n",
                                opt.flags
                            )))
                        }
                    },
                    OptionKind::Optional | OptionKind::OptionalVariadic => match args.front() {
                        Some(next) if !maybe_option(next) => args.pop_front(),
                        _ => None,
                    },
                    _ => None,
                };
                take(release, &mut parsed, opt, value)?;
                variadic = opt.kind.variadic().then_some(opt);
                continue;
            }
        }
        // `-abc`: a known short flag and what follows it (its value, or more short flags).
        let mut chars = arg.chars();
        if let (Some('-'), Some(c), rest) = (chars.next(), chars.next(), chars.as_str()) {
            if c != '-' && !rest.is_empty() {
                if let Some(opt) = find(release, &format!("-{c}")) {
                    if opt.kind.takes_value() {
                        take(release, &mut parsed, opt, Some(rest.to_string()))?;
                    } else {
                        take(release, &mut parsed, opt, None)?;
                        args.push_front(format!("-{rest}"));
                    }
                    continue;
                }
            }
        }
        // `--name=value` for an option that takes a value.
        if let Some((name, value)) = arg.split_once('=') {
            if name.len() > 2 && name.starts_with("--") {
                if let Some(opt) = find(release, name).filter(|o| o.kind.takes_value()) {
                    take(release, &mut parsed, opt, Some(value.to_string()))?;
                    continue;
                }
            }
        }
        to_unknown |= maybe_option(&arg);
        if to_unknown {
            unknown.push(arg);
        } else {
            parsed.prompt.push(arg);
        }
    }
    let help = release.options.iter().find(|o| o.kind == OptionKind::Help);
    if help.is_some_and(|h| unknown.iter().any(|a| h.is(a))) {
        return Err(Stop {
            stdout: release.help.to_string(),
            stderr: String::new(),
            code: 0,
        });
    }
    if let Some(first) = unknown.first() {
        return Err(error(format!(
            "error: unknown option '{first}'{}\n",
            suggestion(release, first)
        )));
    }
    Ok(parsed)
}

/// The option takes `value` (`None`: given without one): checked, then kept; `--version`
/// stops the parse with the version.
fn take(
    release: &Release,
    parsed: &mut Parsed,
    opt: &ClaudeOption,
    value: Option<String>,
) -> Result<(), Stop> {
    if opt.kind == OptionKind::Version {
        return Err(Stop {
            stdout: release.version_line.to_string(),
            stderr: String::new(),
            code: 0,
        });
    }
    if let Some(v) = &value {
        if !opt.takes(v) {
            return Err(error(format!(
                "error: option '{}' argument '{v}' is invalid. {}\n",
                opt.flags,
                opt.refusal()
            )));
        }
    }
    parsed
        .options
        .entry(opt.name().to_string())
        .or_default()
        .push(value.unwrap_or_default());
    Ok(())
}

/// Commander's `(Did you mean ...?)` line for an unknown `--flag`: the options the help
/// lists whose long flag is at most 3 edits away and more than 40% alike, the closest ones,
/// in locale order.
fn suggestion(release: &Release, flag: &str) -> String {
    let Some(word) = flag.strip_prefix("--") else {
        return String::new();
    };
    let word: Vec<char> = word.chars().collect();
    let mut best = 3;
    let mut similar: Vec<&str> = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    for opt in release.options.iter().filter(|o| o.shown) {
        let Some(long) = opt.longs.last() else {
            continue;
        };
        let candidate = &long[2..];
        if candidate.chars().count() <= 1 || seen.contains(&candidate) {
            continue;
        }
        seen.push(candidate);
        let c: Vec<char> = candidate.chars().collect();
        let distance = edit_distance(&word, &c);
        let length = word.len().max(c.len());
        if (length - distance.min(length)) as f64 / length as f64 <= 0.4 {
            continue;
        }
        match distance.cmp(&best) {
            Ordering::Less => {
                best = distance;
                similar = vec![candidate];
            }
            Ordering::Equal => similar.push(candidate),
            Ordering::Greater => {}
        }
    }
    similar.sort_by(|a, b| locale_order(a, b));
    match similar.as_slice() {
        [] => String::new(),
        [one] => format!("\n(Did you mean --{one}?)"),
        many => {
            let list: Vec<String> = many.iter().map(|s| format!("--{s}")).collect();
            format!("\n(Did you mean one of {}?)", list.join(", "))
        }
    }
}

/// Damerau-Levenshtein distance (optimal string alignment), as commander counts it.
fn edit_distance(a: &[char], b: &[char]) -> usize {
    let mut d: Vec<Vec<usize>> = (0..=a.len())
        .map(|i| (0..=b.len()).map(|j| if i == 0 { j } else { i }).collect())
        .collect();
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            d[i][j] = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d[i][j] = d[i][j].min(d[i - 2][j - 2] + 1);
            }
        }
    }
    d[a.len()][b.len()]
}

/// JavaScript's `localeCompare` on option names, near enough: punctuation before digits
/// before letters, letters without regard to case first, then lower case first.
fn locale_order(a: &str, b: &str) -> Ordering {
    fn primary(c: char) -> (u8, char) {
        match c {
            c if c.is_ascii_digit() => (1, c),
            c if c.is_alphabetic() => (2, c.to_ascii_lowercase()),
            c => (0, c),
        }
    }
    let pa = a.chars().map(primary);
    let pb = b.chars().map(primary);
    pa.cmp(pb).then_with(|| {
        let lower_first = |s: &str| s.chars().map(|c| c.is_uppercase()).collect::<Vec<_>>();
        lower_first(a).cmp(&lower_first(b))
    })
}
