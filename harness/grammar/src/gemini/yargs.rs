//! Gemini CLI's argv as its parser (yargs, strict) reads it, measured on 0.61.0: the options
//! from the help text (`-m, --model ... [string]`, `[boolean]`, `[array]`, `[choices: ...]`);
//! `--long VALUE`, `--long=VALUE`, `-x VALUE`, short clusters (`-yd`: each letter an option,
//! the last one takes the next argument), `--no-X` for a boolean, `--` ending the options;
//! the positional `query..` words joined by spaces. What it prints instead of running, in
//! its order: `--help`/`--version` (stdout, exit 0, whatever else is wrong), then a missing
//! value (`Not enough arguments following: m`), unknown options (`Unknown argument: x` /
//! `Unknown arguments: x, y`), a value outside the choices (`Invalid values:` ...), then the
//! CLI's own checks (`-y` with `--approval-mode`; a positional query with `-p`): each the
//! message then the help, on stderr, exit 1.

use std::collections::BTreeMap;

/// How an option takes its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `[boolean]`: a switch (`true`/`false` may follow).
    Boolean,
    /// `[string]`: one value.
    String,
    /// `[array]`: the following non-option words.
    Array,
}

/// One option as the help lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeminiOption {
    /// The short letter (`m` of `-m`).
    pub short: Option<char>,
    /// The long name without dashes (`model`).
    pub long: String,
    /// How it takes its value.
    pub kind: Kind,
    /// `[choices: "a", "b"]`: the values allowed (empty: any).
    pub choices: Vec<String>,
}

/// The options listed under `Options:` in a help text.
pub fn options_from_help(help: &str) -> Vec<GeminiOption> {
    let mut out = Vec::new();
    let mut inside = false;
    for line in help.lines() {
        if line == "Options:" {
            inside = true;
            continue;
        }
        let t = line.trim_start();
        if !inside || !t.starts_with('-') {
            continue;
        }
        let (short, rest) = match t.strip_prefix('-').and_then(|r| r.split_once(", --")) {
            Some((s, r)) if s.chars().count() == 1 => (s.chars().next(), r),
            _ => (None, t.trim_start_matches('-')),
        };
        let long = rest
            .split_whitespace()
            .next()
            .unwrap_or_default()
            .to_string();
        let kind = if line.contains("[boolean]") {
            Kind::Boolean
        } else if line.contains("[array]") {
            Kind::Array
        } else {
            Kind::String
        };
        let choices = line
            .split_once("[choices: ")
            .and_then(|(_, c)| c.split_once(']'))
            .map(|(c, _)| {
                c.split(", ")
                    .map(|v| v.trim_matches('"').to_string())
                    .collect()
            })
            .unwrap_or_default();
        out.push(GeminiOption {
            short,
            long,
            kind,
            choices,
        });
    }
    out
}

/// A command line as Gemini read it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Parsed {
    /// Every option given, by long name without dashes, with its values in order (a switch:
    /// `true` or `false`).
    pub options: BTreeMap<String, Vec<String>>,
    /// The positional words (`query..`), in order.
    pub query: Vec<String>,
}

impl Parsed {
    /// Was the option named `long` given?
    pub fn has(&self, long: &str) -> bool {
        self.options.contains_key(long)
    }

    /// The option's last value.
    pub fn value(&self, long: &str) -> Option<&str> {
        self.options
            .get(long)
            .and_then(|v| v.last())
            .map(String::as_str)
    }

    /// A switch given and not `false`.
    pub fn on(&self, long: &str) -> bool {
        self.value(long).is_some_and(|v| v != "false")
    }

    /// The prompt on the command line: `-p/--prompt`, else the positional query joined by
    /// spaces.
    pub fn prompt_arg(&self) -> Option<String> {
        match self.value("prompt") {
            Some(p) => Some(p.to_string()),
            None if !self.query.is_empty() => Some(self.query.join(" ")),
            None => None,
        }
    }

    /// Headless (`-p`, or a query with stdin not a terminal, as the CLI decides).
    pub fn headless(&self, stdin_tty: bool) -> bool {
        self.has("prompt") || !stdin_tty
    }
}

/// What the CLI prints instead of running, and its exit status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stop {
    /// On stdout (`--help`, `--version`).
    pub stdout: String,
    /// On stderr (the errors, each followed by the help).
    pub stderr: String,
    /// 0 for help and version, 1 for the errors.
    pub code: i32,
}

/// The state of a parse: the options, what went wrong first of each kind.
struct State<'a> {
    options: &'a [GeminiOption],
    parsed: Parsed,
    missing: Option<String>,
    unknown: Vec<String>,
}

impl State<'_> {
    fn set(&mut self, name: &str, value: String) {
        let known = self.options.iter().any(|o| o.long == name);
        if !known && !self.unknown.iter().any(|u| u == name) {
            self.unknown.push(name.to_string());
        }
        self.parsed
            .options
            .entry(name.to_string())
            .or_default()
            .push(value);
    }

    fn kind(&self, long: &str) -> Option<Kind> {
        self.options.iter().find(|o| o.long == long).map(|o| o.kind)
    }

    fn long_of(&self, c: char) -> String {
        self.options
            .iter()
            .find(|o| o.short == Some(c))
            .map_or(c.to_string(), |o| o.long.clone())
    }

    /// The option `name` given as `shown` (`m` or `model`), taking its value from `rest`.
    fn take(&mut self, name: &str, shown: &str, rest: &[String], i: &mut usize) {
        match self.kind(name) {
            Some(Kind::Boolean) => {
                let v = match rest.get(*i).map(String::as_str) {
                    Some(b @ ("true" | "false")) => {
                        *i += 1;
                        b.to_string()
                    }
                    _ => "true".to_string(),
                };
                self.set(name, v);
            }
            Some(Kind::Array) => {
                let start = *i;
                while rest.get(*i).is_some_and(|a| !a.starts_with('-')) {
                    *i += 1;
                }
                if *i == start {
                    self.set(name, String::new());
                }
                for v in &rest[start..*i] {
                    self.set(name, v.clone());
                }
            }
            Some(Kind::String) => match rest.get(*i) {
                Some(v) if !v.starts_with('-') || v == "-" => {
                    *i += 1;
                    self.set(name, v.clone());
                }
                _ => {
                    self.missing.get_or_insert_with(|| shown.to_string());
                    self.set(name, String::new());
                }
            },
            None => self.set(name, "true".into()),
        }
    }
}

/// Read `argv` with `options`; see the module's comment for the order of the answers.
pub fn parse(
    options: &[GeminiOption],
    help: &str,
    version: &str,
    argv: &[String],
) -> Result<Parsed, Stop> {
    let mut st = State {
        options,
        parsed: Parsed::default(),
        missing: None,
        unknown: Vec::new(),
    };
    let mut i = 0;
    while i < argv.len() {
        let arg = &argv[i];
        i += 1;
        if arg == "--" {
            st.parsed.query.extend(argv[i..].iter().cloned());
            break;
        }
        if let Some(long) = arg.strip_prefix("--") {
            if let Some((name, v)) = long.split_once('=') {
                st.set(name, v.to_string());
            } else if let Some(neg) = long
                .strip_prefix("no-")
                .filter(|n| st.kind(n) == Some(Kind::Boolean))
            {
                st.set(neg, "false".into());
            } else {
                st.take(long, long, argv, &mut i);
            }
        } else if arg.len() > 1 && arg.starts_with('-') && arg != "-" {
            let letters: Vec<char> = arg[1..].chars().collect();
            for (j, c) in letters.iter().enumerate() {
                let name = st.long_of(*c);
                if j + 1 == letters.len() {
                    st.take(&name, &c.to_string(), argv, &mut i);
                } else {
                    // Inside a cluster yargs gives a letter its empty default and moves on.
                    let v = if st.kind(&name) == Some(Kind::Boolean) {
                        "true"
                    } else {
                        ""
                    };
                    st.set(&name, v.to_string());
                }
            }
        } else {
            st.parsed.query.push(arg.clone());
        }
    }
    let fail = |message: String| Stop {
        stdout: String::new(),
        stderr: format!("{message}\n{help}"),
        code: 1,
    };
    let p = st.parsed;
    if p.on("help") {
        return Err(Stop {
            stdout: help.to_string(),
            stderr: String::new(),
            code: 0,
        });
    }
    if p.on("version") {
        return Err(Stop {
            stdout: version.to_string(),
            stderr: String::new(),
            code: 0,
        });
    }
    if let Some(m) = st.missing {
        return Err(fail(format!("Not enough arguments following: {m}")));
    }
    match st.unknown.as_slice() {
        [] => {}
        [one] => return Err(fail(format!("Unknown argument: {one}"))),
        many => return Err(fail(format!("Unknown arguments: {}", many.join(", ")))),
    }
    for o in options.iter().filter(|o| !o.choices.is_empty()) {
        if let Some(bad) = p
            .options
            .get(&o.long)
            .and_then(|vs| vs.iter().find(|v| !o.choices.contains(v)))
        {
            let choices: Vec<String> = o.choices.iter().map(|c| format!("\"{c}\"")).collect();
            return Err(fail(format!(
                "Invalid values:\n  Argument: {}, Given: \"{bad}\", Choices: {}",
                o.long,
                choices.join(", ")
            )));
        }
    }
    if p.on("yolo") && p.has("approval-mode") {
        return Err(fail("Cannot use both --yolo (-y) and --approval-mode together. Use --approval-mode=yolo instead.".into()));
    }
    if p.has("prompt") && !p.query.is_empty() {
        return Err(fail(
            "Cannot use both a positional prompt and the --prompt (-p) flag together".into(),
        ));
    }
    Ok(p)
}
