//! The grammar's verdicts against the real Claude Code CLI's, when `PI_HARNESS_REAL_CLAUDE`
//! names its binary (CI sets it to `scripts/install-claude.sh`'s; without it the test says
//! so and passes). Each command line is run offline (HOME and cwd a temp dir, no environment
//! but PATH, stdin empty) three ways and must print the same stdout, stderr and exit status
//! as the grammar of the binary's release says:
//! - with `--version` after it (commander prints the version when it reads it, unless a
//!   value before it was refused or missing);
//! - with an unknown option after it (commander complains of the first unknown option once
//!   it has read everything else, so that complaint alone means the rest was taken);
//! - as it is, for the lines the CLI refuses before it runs (its own `Error: ...` checks).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use pi_grammar::claude::{Claude, OptionKind};

const PROBE: &str = "--pi-harness-probe-a";

/// The hand-picked lines: hidden values and options, bad values, misspellings, short and
/// inline forms, the CLI's own checks.
const LINES: &[&[&str]] = &[
    &[],
    &["-p", "--permission-mode", "default"],
    &["--permission-mode", "bogus"],
    &["--permission-mode=plan", "hi"],
    &["--max-turns", "3"],
    &["--max-turns", "x"],
    &["--max-turns"],
    &["--max-turns", "--version"],
    &["--max-budget-usd", "0"],
    &["--max-budget-usd", "1.5"],
    &["--task-budget", "1.5"],
    &["--task-budget", "0x10"],
    &["--input-format", "xml"],
    &["--output-format", "yaml"],
    &["--verbos"],
    &["--vers"],
    &["--allowedtools"],
    &["--print=1"],
    &["-pZ"],
    &["-p=1"],
    &["-x", "-p"],
    &["--allowedTools", "Bash", "Edit", "hi"],
    &["--allowed-tools"],
    &["-dhooks", "-rabc"],
    &["--resume", "--verbose"],
    &["--prompt-suggestions", "On"],
    &["--prompt-suggestions=maybe"],
    &["--include-hook-events", "--no-session-persistence"],
    &["--session-persistence"],
    &["--system-prompt-snapshot", "of"],
    &["--permission-prompts", "nobody"],
    &["--thinking", "x"],
    &["--x", "--permission-mode", "bogus"],
    &["-h"],
    &["--x", "--help"],
    &["-p", "--output-format", "stream-json", "hi"],
    &["-p", "--input-format", "stream-json"],
    &["-p", "--include-partial-messages", "hi"],
    &[
        "-p",
        "--output-format",
        "stream-json",
        "--verbose",
        "--replay-user-messages",
        "hi",
    ],
    &["-p", "--session-id", "not-a-uuid", "hi"],
];

/// Options whose real verdict depends on the machine, not the parser: as root the CLI
/// refuses to skip permissions, and `--bg` first asks whether the directory is trusted.
const MACHINE_DEPENDENT: &[&str] = &[
    "--dangerously-skip-permissions",
    "--allow-dangerously-skip-permissions",
    "--bg",
    "--background",
];

/// A value each option with a check of the CLI's own takes (the data marks the check
/// `custom` and the grammar takes any value; `--effort` warns of a value it ignores).
const GOOD_VALUES: &[(&str, &str)] = &[
    ("--autocompact", "auto"),
    ("--setting-sources", "user"),
    ("--settings", "{}"),
    ("--initialize-fields", "settings"),
    ("--effort", "high"),
];

struct Real {
    bin: PathBuf,
    home: PathBuf,
}

impl Real {
    fn run(&self, args: &[String]) -> (String, String, i32) {
        let out = Command::new(&self.bin)
            .args(args)
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("HOME", &self.home)
            .current_dir(&self.home)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
            out.status.code().unwrap_or(-1),
        )
    }
}

fn grammar(cc: &Claude, args: &[String]) -> Option<(String, String, i32)> {
    // The real CLI's stdout is a pipe here: not a terminal.
    cc.parse(args, false)
        .err()
        .map(|s| (s.stdout, s.stderr, s.code))
}

/// Every option with a valid value, and each with choices with a bogus one.
fn table(cc: &Claude) -> Vec<Vec<String>> {
    let mut lines = Vec::new();
    for opt in cc.options() {
        let flag = opt.longs[0].clone();
        if MACHINE_DEPENDENT.contains(&flag.as_str()) {
            continue;
        }
        let good = GOOD_VALUES
            .iter()
            .find(|(f, _)| *f == flag)
            .map(|(_, v)| v.to_string());
        let valid = opt
            .choices
            .first()
            .cloned()
            .or(good)
            .unwrap_or_else(|| "1".into());
        match opt.kind {
            OptionKind::Help | OptionKind::Version => {}
            OptionKind::Switch | OptionKind::Optional | OptionKind::OptionalVariadic => {
                lines.push(vec![flag.clone()])
            }
            OptionKind::Value | OptionKind::Variadic => lines.push(vec![flag.clone(), valid]),
        }
        if !opt.choices.is_empty() {
            lines.push(vec![format!("{flag}=pi-harness-bogus")]);
        }
        for v in &opt.accepts {
            lines.push(vec![flag.clone(), v.clone()]);
        }
    }
    lines
}

#[test]
fn the_grammar_says_what_the_real_cli_says() {
    let Some(bin) = std::env::var_os("PI_HARNESS_REAL_CLAUDE") else {
        println!(
            "note: PI_HARNESS_REAL_CLAUDE is not set: the real Claude Code parity test is skipped"
        );
        return;
    };
    let home = std::env::temp_dir().join(format!("pi-grammar-real-claude-{}", std::process::id()));
    std::fs::create_dir_all(&home).unwrap();
    let real = Real {
        bin: Path::new(&bin).to_path_buf(),
        home: home.clone(),
    };
    let (version_line, _, _) = real.run(&["--version".into()]);
    let cc = Claude::for_version(&version_line).unwrap_or_else(|| {
        panic!("no data for {version_line:?}: run scripts/claude-grammar.sh on it and commit")
    });
    assert_eq!(version_line, cc.version_line());
    let help = real.run(&["--help".into()]);
    assert_eq!(help, (cc.help_text().to_string(), String::new(), 0));
    let mut lines: Vec<Vec<String>> = LINES
        .iter()
        .map(|l| l.iter().map(|s| s.to_string()).collect())
        .collect();
    let hand_picked = lines.len();
    lines.extend(table(&cc));
    let mut differences = Vec::new();
    let mut compare = |args: Vec<String>| {
        let want = grammar(&cc, &args);
        let got = real.run(&args);
        // The grammar takes the line (a variadic option took `--version` as its value): the
        // real CLI must not refuse it while parsing (it runs, and stops for want of input).
        let parser_refused = got.1.lines().any(|l| l.starts_with("error: "));
        let same = match &want {
            Some(w) => *w == got,
            None => !parser_refused,
        };
        if !same {
            differences.push(format!("{args:?}\n  real:    {got:?}\n  grammar: {want:?}"));
        }
    };
    for (i, line) in lines.into_iter().enumerate() {
        for tail in ["--version", PROBE] {
            let mut args = line.clone();
            args.push(tail.to_string());
            compare(args);
        }
        // As it is, when the grammar says the CLI refuses it before it runs.
        if i < hand_picked && grammar(&cc, &line).is_some() {
            compare(line);
        }
    }
    let _ = std::fs::remove_dir_all(&home);
    assert!(
        differences.is_empty(),
        "{} (Claude Code {}):\n{}",
        differences.len(),
        cc.version(),
        differences.join("\n")
    );
}
