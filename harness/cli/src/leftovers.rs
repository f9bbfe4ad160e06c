//! `pi-harness leftovers`: the language-neutral leftover check, around a whole test command
//! (`-- CMD ARGS...`, as a child subreaper: [`pi_procs::watch`]) or inside a test (`--marker
//! VALUE`: the live processes whose environment carries `NAME=VALUE`, never this process or
//! one of its ancestors). Command-line glue only; the process logic is in `pi-procs`.

use std::process::Command;
use std::time::Duration;

use pi_procs::watch;

use crate::exit::{EXIT_FAILED, EXIT_OK};
use crate::{parse_duration, CliError};

/// The variable `--marker` looks in unless `--var` says otherwise (the one the test kit sets).
pub const DEFAULT_VAR: &str = "PI_HARNESS_TEST_MARKER";
/// `--grace` by default: a process killed a moment ago gets this long to finish dying.
pub const DEFAULT_GRACE: Duration = Duration::from_millis(500);

/// Command-line arguments of `pi-harness leftovers`.
#[derive(Debug, Clone, clap::Args)]
#[command(after_help = HELP)]
pub struct LeftoversArgs {
    /// How long processes get to finish by themselves before they count as left over:
    /// after CMD exits, or in marker mode before the verdict [default: 500ms; the check
    /// returns as soon as nothing is left].
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub grace: Option<Duration>,
    /// Report the leftovers of CMD but leave them running (the exit status is still 1).
    #[arg(long, conflicts_with = "marker")]
    pub keep: bool,
    /// Marker mode: report the live processes whose environment holds NAME=VALUE.
    #[arg(long, value_name = "VALUE", conflicts_with = "command")]
    pub marker: Option<String>,
    /// Marker mode: the environment variable NAME [default: PI_HARNESS_TEST_MARKER].
    #[arg(
        long,
        value_name = "NAME",
        requires = "marker",
        conflicts_with = "command"
    )]
    pub var: Option<String>,
    /// Marker mode: also SIGKILL the processes found.
    #[arg(long, requires = "marker", conflicts_with = "command")]
    pub kill: bool,
    /// The command to run, after `--`: its stdin, stdout and stderr are pi-harness's.
    #[arg(
        last = true,
        value_name = "CMD ARGS",
        required_unless_present = "marker"
    )]
    pub command: Vec<String>,
}

const HELP: &str = "Two modes.

Around a command (`-- CMD ARGS...`): pi-harness becomes a child subreaper
(PR_SET_CHILD_SUBREAPER), so every process CMD starts that gets orphaned (double-forked,
setsid, detached, stdio closed: invisible to cargo-nextest's leak detection) is reparented
to pi-harness instead of init. When CMD exits, its descendants get --grace to finish; every
one still alive is reported on stderr, one line each:

  leftover: PID COMMAND LINE (session S, parent P)

then stopped and SIGKILLed (process groups too, when a group holds nothing else) and
reaped, unless --keep; in rounds until pi-harness has no child left, so that one that forks
while it is killed is caught too (the last line then says they were evasive). SIGINT, SIGTERM and SIGHUP sent to pi-harness are forwarded to CMD (CMD stays in
pi-harness's process group, so Ctrl-C at a terminal reaches it directly), and the check still
runs when CMD has exited. pi-harness itself and its ancestors are never reported or killed.

Marker mode (`--marker VALUE [--var NAME]`), for a check inside a test: scans
/proc/*/environ for NAME=VALUE and reports every live process carrying it, the same way
(nothing is left once three looks in a row find none).
pi-harness itself and its ancestors never count, even when the marker is in their own
environment (the test runner's, typically). With --kill they are also SIGKILLed.

Examples:
  pi-harness leftovers -- cargo test --workspace
  pi-harness leftovers --grace 2s -- npm test
  pi-harness leftovers --keep -- ./run-integration-tests.sh   # report, do not kill
  PI_HARNESS_TEST_MARKER=run-42 pi-harness leftovers -- pytest
  pi-harness leftovers --marker run-42                       # inside a test, at its end
  pi-harness leftovers --marker \"$MY_MARKER\" --var MY_MARKER --kill

Exit status: around a command, 1 when anything was left over, else CMD's own status
(128+N when CMD was killed by signal N); in marker mode, 1 when a marked process is alive,
else 0; 2 for a usage error (bad flag or duration, CMD that cannot be started).";

/// Run `pi-harness leftovers`; returns the exit status.
pub fn leftovers_command(args: LeftoversArgs) -> i32 {
    match args.marker {
        Some(value) => marker_mode(
            args.var.as_deref().unwrap_or(DEFAULT_VAR),
            &value,
            args.grace.unwrap_or(DEFAULT_GRACE),
            args.kill,
        ),
        None => command_mode(
            &args.command,
            args.grace.unwrap_or(DEFAULT_GRACE),
            args.keep,
        ),
    }
}

fn command_mode(command: &[String], grace: Duration, keep: bool) -> i32 {
    let Some((program, rest)) = command.split_first() else {
        return CliError::usage("no command given: pi-harness leftovers -- CMD ARGS...").report();
    };
    let mut cmd = Command::new(program);
    cmd.args(rest);
    let opts = watch::Options {
        grace,
        keep,
        ..watch::Options::default()
    };
    let outcome = match watch::run(&mut cmd, &opts) {
        Ok(o) => o,
        Err(e) => return CliError::usage(format!("cannot run {program:?}: {e}")).report(),
    };
    for p in &outcome.leftovers {
        eprintln!("leftover: {}", p.describe());
    }
    if outcome.leftovers.is_empty() && !outcome.evasive {
        return outcome.ending.status();
    }
    let what = match outcome.leftovers.len() {
        0 => "processes that no look caught alive".to_string(),
        1 => "1 process".to_string(),
        n => format!("{n} processes"),
    };
    let fate = if outcome.killed && outcome.unkillable.is_empty() {
        "killed".to_string()
    } else if outcome.killed {
        format!("killed, but still alive: {:?}", outcome.unkillable)
    } else if opts.keep {
        "left running (--keep)".to_string()
    } else {
        "still there".to_string()
    };
    let when = if outcome.interrupted {
        format!(
            "when a signal cut the grace period short (`{program}` {})",
            outcome.ending
        )
    } else {
        format!(
            "{} after `{program}` {}",
            duration_text(grace),
            outcome.ending
        )
    };
    eprintln!(
        "pi-harness leftovers: {what} still running {when}; {fate}{}",
        evasive_text(outcome.evasive)
    );
    EXIT_FAILED
}

/// What a report adds when the leftovers were evasive.
fn evasive_text(evasive: bool) -> &'static str {
    if evasive {
        " (evasive: new ones kept starting while they were being killed or looked for)"
    } else {
        ""
    }
}

fn marker_mode(var: &str, value: &str, grace: Duration, kill: bool) -> i32 {
    if var.is_empty() || var.contains('=') || var.contains('\0') {
        return CliError::usage(format!(
            "--var {var:?}: an environment variable name (no '=')"
        ))
        .report();
    }
    if value.is_empty() {
        return CliError::usage(format!(
            "--marker: the value is empty (it would match every process with an empty {var})"
        ))
        .report();
    }
    let Some(found) = marked_after(var, value, grace) else {
        return EXIT_OK;
    };
    for p in &found {
        eprintln!("leftover: {}", p.describe());
    }
    let what = if found.len() == 1 {
        "1 process".to_string()
    } else {
        format!("{} processes", found.len())
    };
    if kill {
        let swept = pi_procs::sweep_marked(var, value);
        // The sweep looks again: it also catches processes forked meanwhile.
        for p in swept
            .found
            .iter()
            .filter(|k| !found.iter().any(|f| f.pid == k.pid))
        {
            eprintln!("leftover: {}", p.describe());
        }
        eprintln!(
            "pi-harness leftovers: {what} with {var}={value} alive; killed{}",
            evasive_text(swept.evasive)
        );
    } else {
        eprintln!("pi-harness leftovers: {what} with {var}={value} alive");
    }
    EXIT_FAILED
}

/// The marked processes still alive after at most `grace`, looked for until
/// [`QUIET_LOOKS`](pi_procs::sweep::QUIET_LOOKS) looks in a row find none (one look can
/// miss a process that forks and exits at once): `None` when they did, else the last ones
/// seen.
fn marked_after(var: &str, value: &str, grace: Duration) -> Option<Vec<pi_procs::ProcInfo>> {
    let end = std::time::Instant::now() + grace;
    let mut quiet = 0;
    let mut seen = Vec::new();
    loop {
        let found = pi_procs::marked(var, value);
        if found.is_empty() {
            quiet += 1;
            if quiet >= pi_procs::sweep::QUIET_LOOKS {
                return None;
            }
        } else {
            quiet = 0;
            seen = found;
        }
        if std::time::Instant::now() >= end && !seen.is_empty() {
            return Some(seen);
        }
        std::thread::sleep(Duration::from_millis(if quiet > 0 { 2 } else { 10 }));
    }
}

/// `500ms`, `2s`, `1.5s`: a duration as `--grace` takes it.
fn duration_text(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 {
        format!("{ms}ms")
    } else if ms % 1000 == 0 {
        format!("{}s", ms / 1000)
    } else {
        format!("{:.1}s", d.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_as_typed() {
        assert_eq!(duration_text(Duration::from_millis(500)), "500ms");
        assert_eq!(duration_text(Duration::ZERO), "0ms");
        assert_eq!(duration_text(Duration::from_secs(2)), "2s");
        assert_eq!(duration_text(Duration::from_millis(1500)), "1.5s");
    }
}
