//! Codex's options as data: read from the help texts the CLI prints (`data/codex/VERSION/`,
//! written by `scripts/codex-grammar.sh`), so the help is the grammar: every option's
//! spellings, whether it takes a value (`<MODEL>`) or several (`<FILE>...`), the values
//! clap names (`[possible values: ...]`), the positional arguments, the subcommands and
//! the usage lines clap quotes in its errors.

/// One option of one command, as its help line shows it (`-m, --model <MODEL>`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodexOption {
    /// The short flag (`-m`), if any.
    pub short: Option<char>,
    /// The long name without dashes (`model`).
    pub long: String,
    /// The value's placeholder (`MODEL`, `key=value`); `None` for a switch.
    pub value_name: Option<String>,
    /// Takes one or more values in a row (`<FILE>...`).
    pub multiple: bool,
    /// The values clap takes and names when it refuses one; empty when the value is free.
    pub choices: Vec<String>,
    /// May be given more than once (`-c`, `--enable`: the help's "(repeatable)" and the
    /// options clap collects into lists, measured).
    pub repeatable: bool,
}

impl CodexOption {
    /// How clap names it in its messages: `--model <MODEL>`, `--json`.
    pub fn display(&self) -> String {
        match &self.value_name {
            Some(v) => format!("--{} <{v}>", self.long),
            None => format!("--{}", self.long),
        }
    }

    /// Does the option take a value?
    pub fn takes_value(&self) -> bool {
        self.value_name.is_some()
    }
}

/// One command's line (`codex`, `codex exec`, `codex exec resume`), read from its help.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandSpec {
    /// Its options, in the help's order.
    pub options: Vec<CodexOption>,
    /// Its positional arguments' names, in order (`PROMPT`; `SESSION_ID`, `PROMPT`).
    pub positionals: Vec<String>,
    /// Its subcommands: each name with its aliases (`exec`, `e`).
    pub subcommands: Vec<Vec<String>>,
    /// The `Usage:` lines clap repeats under some errors, without the trailing newline.
    pub usage: String,
}

/// Options clap collects into lists, whatever their help says (measured: `-c a=1 -c b=2`,
/// `--enable x --enable y` are taken; `-m a -m b` is refused).
const REPEATABLE: &[&str] = &["config", "enable", "disable", "image", "add-dir"];

impl CommandSpec {
    /// Read a command's `--help` text.
    pub fn from_help(help: &str) -> CommandSpec {
        let mut spec = CommandSpec {
            options: Vec::new(),
            positionals: Vec::new(),
            subcommands: Vec::new(),
            usage: String::new(),
        };
        let mut section = "";
        let mut in_values = false;
        for line in help.lines() {
            if let Some(rest) = line.strip_prefix("Usage: ") {
                spec.usage = format!("Usage: {rest}");
                section = "usage";
                continue;
            }
            if section == "usage" && line.starts_with("       ") {
                spec.usage.push('\n');
                spec.usage.push_str(line);
                continue;
            }
            if !line.starts_with(' ') && line.ends_with(':') {
                section = match line {
                    "Commands:" => "commands",
                    "Arguments:" => "arguments",
                    "Options:" => "options",
                    _ => "",
                };
                continue;
            }
            match section {
                "commands" => read_command(line, &mut spec.subcommands),
                "arguments" => {
                    let t = line.trim_start();
                    if line.starts_with("  ") && !line.starts_with("    ") {
                        let name = t.split_whitespace().next().unwrap_or("");
                        let name =
                            name.trim_matches(|c| c == '[' || c == ']' || c == '<' || c == '>');
                        spec.positionals.push(name.to_string());
                    }
                }
                "options" => {
                    if let Some(o) = read_option(line) {
                        spec.options.push(o);
                        in_values = false;
                        continue;
                    }
                    let Some(last) = spec.options.last_mut() else {
                        continue;
                    };
                    let t = line.trim();
                    if let Some(list) = t
                        .strip_prefix("[possible values: ")
                        .and_then(|r| r.strip_suffix(']'))
                    {
                        last.choices = list.split(", ").map(str::to_string).collect();
                    } else if t == "Possible values:" {
                        in_values = true;
                    } else if in_values {
                        if let Some(v) = t.strip_prefix("- ").and_then(|r| r.split(':').next()) {
                            last.choices.push(v.trim().to_string());
                        }
                    }
                }
                _ => {}
            }
        }
        spec
    }

    /// The option named `long` (without dashes).
    pub fn long(&self, long: &str) -> Option<&CodexOption> {
        self.options.iter().find(|o| o.long == long)
    }

    /// The option whose short flag is `c`.
    pub fn short(&self, c: char) -> Option<&CodexOption> {
        self.options.iter().find(|o| o.short == Some(c))
    }

    /// The subcommand `name` names (by its name or an alias): its first name.
    pub fn subcommand(&self, name: &str) -> Option<&str> {
        self.subcommands
            .iter()
            .find(|names| names.iter().any(|n| n == name))
            .map(|names| names[0].as_str())
    }
}

/// `  exec   Run Codex non-interactively [aliases: e]`.
fn read_command(line: &str, out: &mut Vec<Vec<String>>) {
    if !line.starts_with("  ") || line.starts_with("   ") {
        return;
    }
    let t = line.trim();
    let Some(name) = t.split_whitespace().next() else {
        return;
    };
    let mut names = vec![name.to_string()];
    if let Some(start) = t.find("[aliases: ") {
        let rest = &t[start + "[aliases: ".len()..];
        let list = rest.split(']').next().unwrap_or("");
        names.extend(list.split(", ").map(str::to_string));
    }
    out.push(names);
}

/// An option's line: `  -m, --model <MODEL>` or `      --json` (in a short help, the
/// description may follow on the same line after two spaces).
fn read_option(line: &str) -> Option<CodexOption> {
    if !line.starts_with("  -") && !line.starts_with("      --") {
        return None;
    }
    let head = line.trim_start().split("  ").next().unwrap_or("");
    let (short, rest) = match head.strip_prefix('-') {
        Some(r) if !r.starts_with('-') => {
            let c = r.chars().next()?;
            (Some(c), r[c.len_utf8()..].trim_start_matches(", "))
        }
        _ => (None, head),
    };
    let rest = rest.strip_prefix("--")?;
    let mut parts = rest.splitn(2, ' ');
    let long = parts.next()?.to_string();
    let (value_name, multiple) = match parts.next() {
        Some(v) => {
            let multiple = v.ends_with("...");
            let v = v.trim_end_matches("...");
            let v = v.trim_start_matches('<').trim_end_matches('>');
            (Some(v.to_string()), multiple)
        }
        None => (None, false),
    };
    Some(CodexOption {
        short,
        repeatable: multiple || REPEATABLE.contains(&long.as_str()),
        long,
        value_name,
        multiple,
        choices: Vec::new(),
    })
}

/// Whether the option named `long` may be given more than once.
pub(crate) fn is_repeatable(long: &str) -> bool {
    REPEATABLE.contains(&long)
}
