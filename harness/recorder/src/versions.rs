//! The version report: what changed for an integrator between the pinned pi versions,
//! generated from the recordings and from pi's command line as data (`pi_grammar`), never
//! typed by hand. `pi-harness pi-versions` writes it to `docs/pi-versions.md`;
//! `scripts/pi-versions.sh` re-records the corpus first.
//!
//! From the recordings (`<scenario>.<tag>.cassette.jsonl[.zst]` for every scenario recorded
//! on more than one version): the event types each version writes, the fields of each
//! event (and of the messages and tool results inside them) that some version has and
//! another lacks, and how each scenario ends (exit code or signal, last stop reason, the
//! answer to a signal). From the grammar: the flags, thinking levels, commands and
//! behaviours that differ.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use pi_cassette::{Action, Cassette, CassetteError, SignalAction};
use pi_grammar::{Grammar, Version, KNOWN_VERSIONS};
use serde_json::Value;

/// Why the report could not be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum VersionsError {
    /// The recordings' directory could not be read.
    #[error("reading {}", path.display())]
    ReadDir {
        /// The directory.
        path: PathBuf,
        /// The failure.
        #[source]
        source: std::io::Error,
    },
    /// A recording cannot be read (the message names the file and line).
    #[error("{0}")]
    Cassette(CassetteError),
}

/// What one recording shows.
#[derive(Default)]
struct Seen {
    /// event type -> count
    events: BTreeMap<String, usize>,
    /// "event.field" / "event.message.field" / "tool result.field" paths
    fields: BTreeSet<String>,
    ending: String,
    stop: String,
}

/// Every key of `v` (an object) as `prefix.key`.
fn keys_into(prefix: &str, v: &Value, out: &mut BTreeSet<String>) {
    if let Some(o) = v.as_object() {
        for k in o.keys() {
            out.insert(format!("{prefix}.{k}"));
        }
    }
}

/// What a recording shows: its events, fields, ending and last stop reason.
fn look(c: &Cassette) -> Seen {
    let mut s = Seen::default();
    let mut stop = String::from("-");
    for line in c.stdout_bytes().split(|&b| b == b'\n') {
        let Ok(v) = serde_json::from_slice::<Value>(line) else {
            continue;
        };
        let Some(ty) = v["type"].as_str() else {
            continue;
        };
        *s.events.entry(ty.to_string()).or_default() += 1;
        keys_into(ty, &v, &mut s.fields);
        let role = v["message"]["role"].as_str().unwrap_or("");
        if !role.is_empty() && matches!(ty, "message_start" | "message_end") {
            keys_into(
                &format!("{ty}({role}).message"),
                &v["message"],
                &mut s.fields,
            );
            if let Some(u) = v["message"]["usage"].get("cost") {
                keys_into(
                    &format!("{ty}({role}).message.usage.cost"),
                    u,
                    &mut s.fields,
                );
            }
        }
        if ty == "tool_execution_end" {
            keys_into("tool_execution_end.result", &v["result"], &mut s.fields);
        }
        if ty == "message_end" && role == "assistant" {
            if let Some(r) = v["message"]["stopReason"].as_str() {
                stop = r.to_string();
            }
        }
    }
    s.stop = stop;
    s.ending = match c.ending() {
        Action::Exit(code) => format!("exit {code}"),
        Action::Signal(sig) => format!("killed by {sig}"),
        _ => {
            let p = &c.header.process;
            let answer = |a: &SignalAction| match a {
                SignalAction::Die => "dies".to_string(),
                SignalAction::Ignore => "ignores".to_string(),
                SignalAction::CleanupExit { code } => format!("kills tools, exit {code}"),
                SignalAction::CleanupDie => "kills tools, dies".to_string(),
                SignalAction::KillChildrenDie => "kills the tools' shells, dies".to_string(),
                SignalAction::Exit { code } => format!("exit {code}"),
            };
            let notes = c.header.origin.notes.as_deref().unwrap_or("");
            if notes.contains("SIGINT") {
                format!("SIGINT: {}", answer(&p.on_sigint))
            } else {
                format!("SIGTERM: {}", answer(&p.on_sigterm))
            }
        }
    };
    s
}

/// The report for the recordings in `dir`.
pub fn report(dir: &Path) -> Result<String, VersionsError> {
    let versions: Vec<Version> = KNOWN_VERSIONS
        .iter()
        .filter_map(|v| Version::parse(v))
        .collect();
    let seen = recordings(dir)?;
    let table = Table {
        versions: &versions,
    };
    let mut out = String::new();
    // Writing into a String cannot fail.
    let _ = write_report(&mut out, &table, &seen);
    Ok(out)
}

/// scenario -> version -> what its recording in `dir` showed.
fn recordings(dir: &Path) -> Result<BTreeMap<String, BTreeMap<Version, Seen>>, VersionsError> {
    let mut seen: BTreeMap<String, BTreeMap<Version, Seen>> = BTreeMap::new();
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .map_err(|source| VersionsError::ReadDir {
            path: dir.to_path_buf(),
            source,
        })?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.contains(".cassette.jsonl"))
        })
        .collect();
    files.sort();
    for path in files {
        let c = Cassette::load_held(&path).map_err(VersionsError::Cassette)?;
        let Some(v) = Version::parse(&c.header.pi.version) else {
            continue;
        };
        seen.entry(c.header.scenario.name.clone())
            .or_default()
            .insert(v, look(&c));
    }
    Ok(seen)
}

/// The report's tables: one column per pinned version.
struct Table<'a> {
    versions: &'a [Version],
}

impl Table<'_> {
    /// The header row and its separator.
    fn header(&self) -> String {
        format!(
            "| |{}\n|---|{}\n",
            self.versions
                .iter()
                .map(|v| format!(" {v} |"))
                .collect::<String>(),
            "---|".repeat(self.versions.len())
        )
    }

    /// A row's cells, one per version.
    fn col(&self, f: &dyn Fn(Version) -> String) -> String {
        self.versions
            .iter()
            .map(|v| format!(" {} |", f(*v)))
            .collect()
    }
}

/// The whole report.
fn write_report(
    out: &mut String,
    table: &Table<'_>,
    seen: &BTreeMap<String, BTreeMap<Version, Seen>>,
) -> std::fmt::Result {
    writeln!(
        out,
        "# pi versions: what changed for an integrator\n\n\
         Generated by `pi-harness pi-versions` from the recorded corpus (`cassettes/recorded/`, \
         {} scenarios) and from pi's command line as data (`harness/grammar`); do not edit by \
         hand. `scripts/pi-versions.sh` re-records the corpus from real pi first. Pinned \
         versions: {}.\n",
        seen.len(),
        KNOWN_VERSIONS.join(", ")
    )?;
    command_line(out, table)?;
    events(out, table, seen)?;
    endings(out, table, seen)
}

/// Flags, thinking levels, subcommands and behaviours that differ between the versions.
fn command_line(out: &mut String, table: &Table<'_>) -> std::fmt::Result {
    let header = table.header();
    let grammars: Vec<Grammar> = KNOWN_VERSIONS
        .iter()
        .filter_map(|v| Grammar::for_version(v))
        .collect();
    writeln!(
        out,
        "## Command line\n\nFlags that some pinned version lacks:\n"
    )?;
    out.push_str(&header);
    let mut all_flags: BTreeSet<&str> = BTreeSet::new();
    for g in &grammars {
        all_flags.extend(g.flags().map(|f| f.long));
    }
    for f in &all_flags {
        let have: Vec<bool> = grammars.iter().map(|g| g.has_flag(f)).collect();
        if have.iter().all(|h| *h) {
            continue;
        }
        let short = grammars
            .iter()
            .find_map(|g| g.flag(f).and_then(|s| s.short))
            .map(|s| format!(" ({s})"))
            .unwrap_or_default();
        writeln!(
            out,
            "| `{f}`{short} |{}",
            table.col(&|v| {
                let g = Grammar::for_version(&v.to_string()).expect("known");
                if g.has_flag(f) { "yes" } else { "no" }.to_string()
            })
        )?;
    }
    writeln!(
        out,
        "| thinking levels |{}",
        table.col(&|v| Grammar::for_version(&v.to_string())
            .expect("known")
            .thinking_levels()
            .join(", "))
    )?;
    writeln!(
        out,
        "| subcommands |{}",
        table.col(&|v| {
            pi_grammar::COMMANDS
                .iter()
                .filter(|(_, since)| *since <= v)
                .map(|(c, _)| *c)
                .collect::<Vec<_>>()
                .join(", ")
        })
    )?;
    writeln!(out, "\nBehaviours (with the release that brought each):\n")?;
    out.push_str(&header);
    for (feature, since) in pi_grammar::FEATURES {
        writeln!(
            out,
            "| {feature:?} (since {since}) |{}",
            table.col(&|v| if v >= *since { "yes" } else { "no" }.to_string())
        )?;
    }
    Ok(())
}

/// The event types and fields seen on the wire, in the scenarios recorded on more than one
/// version.
fn events(
    out: &mut String,
    table: &Table<'_>,
    seen: &BTreeMap<String, BTreeMap<Version, Seen>>,
) -> std::fmt::Result {
    let header = table.header();
    let mut events: BTreeMap<String, BTreeSet<Version>> = BTreeMap::new();
    let mut fields: BTreeMap<String, BTreeSet<Version>> = BTreeMap::new();
    let mut multi = 0;
    for per in seen.values() {
        if per.len() < 2 {
            continue;
        }
        multi += 1;
        for (v, s) in per {
            for e in s.events.keys() {
                events.entry(e.clone()).or_default().insert(*v);
            }
            for f in &s.fields {
                fields.entry(f.clone()).or_default().insert(*v);
            }
        }
    }
    writeln!(
        out,
        "\n## Events on the wire (`--mode json`)\n\nEvent types seen in the {multi} scenarios \
         recorded on more than one version (a version marked no never wrote it there):\n"
    )?;
    out.push_str(&header);
    for (e, vs) in &events {
        writeln!(
            out,
            "| `{e}` |{}",
            table.col(&|v| if vs.contains(&v) { "yes" } else { "no" }.to_string())
        )?;
    }
    writeln!(
        out,
        "\n## Fields that differ\n\nFields (of events, of the messages inside `message_start`/\
         `message_end` by role, of tool results) that some version writes and another does not, \
         in those scenarios:\n"
    )?;
    out.push_str(&header);
    for (f, vs) in &fields {
        // `type` is there whenever its event is (the events table says when).
        if vs.len() == table.versions.len() || f.ends_with(".type") {
            continue;
        }
        writeln!(
            out,
            "| `{f}` |{}",
            table.col(&|v| if vs.contains(&v) { "yes" } else { "no" }.to_string())
        )?;
    }
    Ok(())
}

/// How each scenario ends on each version.
fn endings(
    out: &mut String,
    table: &Table<'_>,
    seen: &BTreeMap<String, BTreeMap<Version, Seen>>,
) -> std::fmt::Result {
    writeln!(
        out,
        "\n## How each scenario ends\n\nExit code or signal (for a recording stopped by a \
         signal: pi's answer to it), then the last assistant stop reason:\n"
    )?;
    out.push_str(&table.header().replacen("| |", "| scenario |", 1));
    for (name, per) in seen {
        writeln!(
            out,
            "| {name} |{}",
            table.col(&|v| per
                .get(&v)
                .map_or("(not recorded)".to_string(), |s| format!(
                    "{}; {}",
                    s.ending, s.stop
                )))
        )?;
    }
    Ok(())
}
