//! Record modes (`record --record-mode none|once|all`, what the test helpers' `pi_world`
//! and `piWorld` use): whether a cassette is recorded at all, the pending file a changed
//! re-recording waits in (`NAME.cassette.jsonl.new`, as insta's `.snap.new`), the
//! normalized comparison that decides "changed" (timings and ids do not count: the drift
//! check's streams), and `--replay-with`: the cassette then replayed by fake-pi with pi's
//! own arguments, so a test's wrapper that called `pi` gets its answer from the cassette.

use std::io::{IsTerminal, Read};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};

use pi_cassette::Cassette;
use pi_recorder::drift;

use crate::exit::{EXIT_FAILED, EXIT_OK};

/// How a test treats its cassette (vcrpy's and pytest-recording's record modes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum RecordMode {
    /// Replay only: a missing cassette is an error and nothing is created (the default of
    /// the test helpers, and what any mode becomes when `CI` is set).
    None,
    /// Record a missing cassette; replay one that exists.
    Once,
    /// Record again; a result that differs from the cassette (normalized) waits beside it
    /// as a pending file for `pi-harness cassette review`.
    All,
}

impl RecordMode {
    /// The mode's name as written on the command line.
    pub fn name(self) -> &'static str {
        match self {
            RecordMode::None => "none",
            RecordMode::Once => "once",
            RecordMode::All => "all",
        }
    }
}

/// Whether `CI` is set (non-empty, and not `0` or `false`): recording is then off.
pub fn ci_is_set(ci: Option<&std::ffi::OsStr>) -> bool {
    ci.and_then(|v| v.to_str())
        .is_some_and(|v| !v.is_empty() && v != "0" && !v.eq_ignore_ascii_case("false"))
}

/// The mode that applies: `asked`, or [`RecordMode::None`] when `CI` is set.
pub fn effective(asked: RecordMode, ci: Option<&std::ffi::OsStr>) -> RecordMode {
    if ci_is_set(ci) {
        RecordMode::None
    } else {
        asked
    }
}

/// `path` with `suffix` appended to its file name.
fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// The suffixes a compressed cassette carries (the readers take either, by magic bytes).
pub const COMPRESSED: [&str; 2] = [".gz", ".zst"];

/// The uncompressed name of a cassette named `out` (`X` for `X`, `X.gz` or `X.zst`).
pub fn plain_name(out: &Path) -> PathBuf {
    let s = out.to_str().unwrap_or_default();
    COMPRESSED
        .iter()
        .find_map(|c| s.strip_suffix(c))
        .map_or_else(|| out.to_path_buf(), PathBuf::from)
}

/// Every name one cassette may have: plain, then each compressed form.
pub fn variants(out: &Path) -> Vec<PathBuf> {
    let plain = plain_name(out);
    let mut v = vec![plain.clone()];
    v.extend(COMPRESSED.iter().map(|c| with_suffix(&plain, c)));
    v
}

/// The committed cassette `out` names, plain or compressed, when one exists.
pub fn existing(out: &Path) -> Option<PathBuf> {
    std::iter::once(out.to_path_buf())
        .chain(variants(out))
        .find(|p| p.is_file())
}

/// The pending file a changed re-recording of `cassette` waits in (`cassette` + `.new`).
pub fn pending_path(cassette: &Path) -> PathBuf {
    with_suffix(cassette, ".new")
}

/// The cassette a pending file replaces (its name without `.new`), or `None` when `path`
/// is not a pending cassette.
pub fn target_of_pending(path: &Path) -> Option<PathBuf> {
    let s = path.to_str()?.strip_suffix(".new")?;
    let plain = plain_name(Path::new(s));
    plain
        .to_str()
        .is_some_and(|p| p.ends_with(".cassette.jsonl"))
        .then(|| PathBuf::from(s))
}

/// A cassette as the comparison sees it: the agent and version, the expectation (what a
/// caller must send), then the drift check's wire and normalized streams (no timing, no
/// ids, no values that vary run to run).
pub fn normalized(c: &Cassette) -> Vec<String> {
    let mut out = vec![
        format!("agent {} {}", c.header.agent_name(), c.header.pi.version),
        format!(
            "expect {}",
            serde_json::to_string(&c.header.expect).unwrap_or_default()
        ),
    ];
    out.extend(drift::normalize(c));
    out
}

/// The normalized diff of two cassette files (`-` the old, `+` the new); empty when they
/// say the same.
pub fn normalized_diff(old: &Path, new: &Path) -> anyhow::Result<String> {
    // Each held whole for the diff, within the held budget (`Cassette::load_held`).
    let a = normalized(&Cassette::load_held(old)?);
    let b = normalized(&Cassette::load_held(new)?);
    Ok(drift::diff(&a, &b, 3))
}

/// What `record --record-mode` asks for beyond one recording.
pub struct ModeArgs {
    /// The mode asked for (before `CI` is looked at).
    pub mode: RecordMode,
    /// Replay the cassette with this fake-pi afterwards (pi's arguments, this stdin).
    pub replay_with: Option<PathBuf>,
    /// The cassette to keep.
    pub out: PathBuf,
    /// `--stdin`, as given.
    pub stdin: Option<String>,
    /// pi's arguments (for the replay).
    pub pi_args: Vec<String>,
}

/// One recording into the path given, with this stdin; the path written and a summary
/// that names it.
pub type Recorder<'a> =
    dyn FnOnce(PathBuf, Option<String>) -> anyhow::Result<(PathBuf, String)> + 'a;

/// `pi-harness record --record-mode MODE [--replay-with FAKE_PI]`: record or not as the
/// mode says, then (with `--replay-with`) become fake-pi replaying the cassette. Returns
/// the exit status when it does not replay.
pub fn record_with_mode(a: ModeArgs, record: Box<Recorder<'_>>) -> anyhow::Result<i32> {
    let ci = std::env::var_os("CI");
    let mode = effective(a.mode, ci.as_deref());
    // With a replay, stdin is the wrapper's: read it (as pi would) for both runs.
    let mut stdin = a.stdin;
    let mut stdin_bytes = None;
    if a.replay_with.is_some() && stdin.is_none() && !std::io::stdin().is_terminal() {
        let mut buf = Vec::new();
        std::io::stdin().read_to_end(&mut buf)?;
        stdin = (!buf.is_empty()).then(|| String::from_utf8_lossy(&buf).into_owned());
        stdin_bytes = Some(buf);
    }
    let found = existing(&a.out);
    let cassette = match (mode, found) {
        (_, Some(old)) if mode != RecordMode::All => old,
        (RecordMode::None, None) => {
            let why = if mode != a.mode {
                format!(
                    "record mode none (CI is set, so --record-mode {} records nothing); record it with --record-mode once outside CI",
                    a.mode.name()
                )
            } else {
                "record mode none; record it with --record-mode once".to_string()
            };
            eprintln!("error: {}: no such cassette, and {why}", a.out.display());
            return Ok(EXIT_FAILED);
        }
        (_, None) => {
            let (path, summary) = record(a.out.clone(), stdin)?;
            eprintln!("{summary}");
            path
        }
        (_, Some(old)) => rerecord(&old, stdin, record)?,
    };
    match a.replay_with {
        Some(fake_pi) => Err(replay(&fake_pi, &cassette, &a.pi_args, stdin_bytes)),
        None => Ok(EXIT_OK),
    }
}

/// `all` over an existing cassette: record beside it (same file name, so the same
/// scenario), keep the old one when the new one says the same, else leave the new one as
/// the pending file. Returns the cassette to replay (the old, or the pending one).
fn rerecord(
    old: &Path,
    stdin: Option<String>,
    record: Box<Recorder<'_>>,
) -> anyhow::Result<PathBuf> {
    let dir = old.parent().filter(|d| !d.as_os_str().is_empty());
    let dir = dir.unwrap_or(Path::new("."));
    let tmp = tempfile_dir(dir)?;
    let name = plain_name(old)
        .file_name()
        .map(PathBuf::from)
        .unwrap_or_default();
    let result = record(tmp.join(&name), stdin).and_then(|(fresh, summary)| {
        let diff = normalized_diff(old, &fresh)?;
        if diff.is_empty() {
            eprintln!(
                "{}: recorded again, unchanged (timings and ids aside)",
                old.display()
            );
            return Ok(old.to_path_buf());
        }
        let target = dir.join(fresh.file_name().unwrap_or_default());
        for stale in variants(old) {
            let _ = std::fs::remove_file(pending_path(&stale));
        }
        let pending = pending_path(&target);
        std::fs::rename(&fresh, &pending)
            .map_err(|e| anyhow::anyhow!("{}: cannot write it: {e}", pending.display()))?;
        let fresh_name = fresh.display().to_string();
        let pending_name = pending.display().to_string();
        eprintln!("{}", summary.replacen(&fresh_name, &pending_name, 1));
        eprintln!(
            "{}: recorded again and changed; the new recording waits in {} (pi-harness cassette review)",
            old.display(),
            pending.display()
        );
        Ok(pending)
    });
    let _ = std::fs::remove_dir_all(&tmp);
    result
}

/// A fresh directory inside `dir` for one re-recording.
fn tempfile_dir(dir: &Path) -> anyhow::Result<PathBuf> {
    for n in 0..100u32 {
        let p = dir.join(format!(".pi-harness-rerecord-{}-{n}", std::process::id()));
        match std::fs::create_dir(&p) {
            Ok(()) => return Ok(p),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => anyhow::bail!("{}: cannot create it: {e}", p.display()),
        }
    }
    anyhow::bail!("{}: no free name for a re-recording", dir.display())
}

/// Become fake-pi (`exec`) replaying `cassette` with pi's arguments and the stdin read
/// before; returns only when the exec failed.
fn replay(
    fake_pi: &Path,
    cassette: &Path,
    pi_args: &[String],
    stdin: Option<Vec<u8>>,
) -> anyhow::Error {
    let mut cmd = std::process::Command::new(fake_pi);
    let agent = set_up(&mut cmd, cassette);
    cmd.arg0(agent)
        .args(pi_args)
        .env("FAKE_PI_CASSETTE", cassette);
    if let Some(bytes) = stdin {
        let file = match stdin_file(&bytes) {
            Ok(f) => f,
            Err(e) => return e,
        };
        cmd.stdin(file);
    }
    let e = cmd.exec();
    anyhow::anyhow!("--replay-with {}: {e}", fake_pi.display())
}

/// What the fresh cassette asks of the call that the recorder gave its CLI itself (the
/// cassette's setup, as `cassette show --json` says it): each variable it needs that this
/// environment lacks (the key of the recorder's provider), and the config files written into
/// the agent's home when this environment names one that is an empty directory (a test
/// world's agent dir; a home with files of its own is the caller's and left alone). The
/// agent's name, for the replay's argv[0].
fn set_up(cmd: &mut std::process::Command, cassette: &Path) -> &'static str {
    let Ok((recording, path)) = crate::show::load(cassette) else {
        return "pi";
    };
    let agent = recording.header.agent();
    let Ok(facts) = crate::show::facts(&recording, path.as_deref()) else {
        return agent.name();
    };
    for (k, v) in &facts.setup.env {
        if std::env::var_os(k).map_or(true, |v| v.is_empty()) {
            cmd.env(k, v);
        }
    }
    let home = facts
        .setup
        .home_var
        .and_then(std::env::var_os)
        .map(PathBuf::from);
    let empty = home.as_deref().is_some_and(|h| {
        std::fs::symlink_metadata(h).is_ok_and(|m| m.is_dir())
            && std::fs::read_dir(h).is_ok_and(|mut d| d.next().is_none())
    });
    if let (Some(home), true) = (home, empty) {
        for f in &facts.setup.files {
            let p = home.join(&f.path);
            if p.components()
                .any(|c| matches!(c, std::path::Component::ParentDir))
            {
                continue;
            }
            if let Some(dir) = p.parent() {
                let _ = std::fs::create_dir_all(dir);
            }
            let _ = std::fs::write(&p, &f.content);
        }
    }
    agent.name()
}

/// An unlinked temp file holding `bytes`, positioned at its start.
fn stdin_file(bytes: &[u8]) -> anyhow::Result<std::fs::File> {
    use std::io::{Seek, Write};
    let dir = std::env::temp_dir();
    let path = dir.join(format!("pi-harness-stdin-{}", std::process::id()));
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&path)
        .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    let _ = std::fs::remove_file(&path);
    f.write_all(bytes)?;
    f.seek(std::io::SeekFrom::Start(0))?;
    Ok(f)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;

    #[test]
    fn ci_turns_every_mode_into_none() {
        assert_eq!(
            effective(RecordMode::Once, Some(OsStr::new("1"))),
            RecordMode::None
        );
        assert_eq!(
            effective(RecordMode::All, Some(OsStr::new("true"))),
            RecordMode::None
        );
        assert_eq!(effective(RecordMode::Once, None), RecordMode::Once);
        assert_eq!(
            effective(RecordMode::Once, Some(OsStr::new(""))),
            RecordMode::Once
        );
        assert_eq!(
            effective(RecordMode::All, Some(OsStr::new("false"))),
            RecordMode::All
        );
        assert_eq!(
            effective(RecordMode::All, Some(OsStr::new("0"))),
            RecordMode::All
        );
    }

    #[test]
    fn pending_names_map_back_to_their_cassette() {
        let p = pending_path(Path::new("t/hello.cassette.jsonl"));
        assert_eq!(p, Path::new("t/hello.cassette.jsonl.new"));
        assert_eq!(
            target_of_pending(&p).unwrap(),
            Path::new("t/hello.cassette.jsonl")
        );
        assert_eq!(
            target_of_pending(Path::new("a.cassette.jsonl.gz.new")).unwrap(),
            Path::new("a.cassette.jsonl.gz")
        );
        assert!(target_of_pending(Path::new("notes.txt.new")).is_none());
        assert!(target_of_pending(Path::new("a.cassette.jsonl")).is_none());
        assert_eq!(
            target_of_pending(Path::new("a.cassette.jsonl.zst.new")).unwrap(),
            Path::new("a.cassette.jsonl.zst")
        );
        assert!(target_of_pending(Path::new("a.json.gz.new")).is_none());
        let all = [
            "a.cassette.jsonl",
            "a.cassette.jsonl.gz",
            "a.cassette.jsonl.zst",
        ];
        for name in all {
            assert_eq!(variants(Path::new(name)), all.map(PathBuf::from));
        }
    }
}
