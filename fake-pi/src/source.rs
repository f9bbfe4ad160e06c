//! Which cassette this start replays.
//!
//! The settings come from the environment (`FAKE_PI_CASSETTE`, `FAKE_PI_SPEED`,
//! `FAKE_PI_STATE`), else from a file `fake-pi.conf` beside the program as it was invoked
//! (the directory of argv[0], found on `PATH` when argv[0] has no `/`, then the directory
//! of the real executable): `KEY=VALUE` lines with the same keys, `#` comments, relative
//! paths taken from the file's directory. So a client that passes pi an empty or
//! allow-listed environment still gets its cassette.
//!
//! `FAKE_PI_CASSETTE` names a cassette (replayed on every start), a directory (its
//! `*.cassette.jsonl[.gz|.zst]` files in name order, one per start) or a sequence file
//! (`*.sequence`: one cassette path per line, one per start). A sequence counts starts
//! in a state file (`FAKE_PI_STATE`, default `<sequence>.state`, or `.fake-pi-state` in a
//! directory), locked while counting, so concurrent starts take different entries; a
//! start past the end is refused.

use std::fs::File;
use std::io::{BufRead, Read, Seek, SeekFrom, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use pi_cassette::{CassetteError, CassetteReader};

use crate::exit;

/// Where fake-pi's settings come from.
#[derive(Debug, Default)]
pub(crate) struct Settings {
    pub(crate) cassette: Option<PathBuf>,
    pub(crate) speed: Option<String>,
    pub(crate) state: Option<PathBuf>,
}

/// The name of the file beside the program.
pub(crate) const CONF: &str = "fake-pi.conf";

fn program_dirs(argv0: &str, path_var: Option<&str>) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if argv0.contains('/') {
        if let Some(d) = Path::new(argv0).parent() {
            dirs.push(d.to_path_buf());
        }
    } else if let Some(path) = path_var {
        if let Some(d) = std::env::split_paths(path).find(|d| d.join(argv0).is_file()) {
            dirs.push(d);
        }
    }
    if let Ok(exe) = std::env::current_exe() {
        if let Some(d) = exe.parent() {
            dirs.push(d.to_path_buf());
        }
    }
    dirs
}

/// Read a conf file: `KEY=VALUE` lines.
pub(crate) fn parse_conf(path: &Path, text: &str) -> Result<Settings, String> {
    let base = path.parent().unwrap_or(Path::new("."));
    let mut s = Settings::default();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some((k, v)) = line.split_once('=') else {
            return Err(format!(
                "{}:{}: expected KEY=VALUE, found {line:?}",
                path.display(),
                n + 1
            ));
        };
        let v = v.trim();
        match k.trim() {
            "FAKE_PI_CASSETTE" => s.cassette = Some(base.join(v)),
            "FAKE_PI_STATE" => s.state = Some(base.join(v)),
            "FAKE_PI_SPEED" => s.speed = Some(v.to_string()),
            other => {
                return Err(format!(
                    "{}:{}: unknown key {other:?} (FAKE_PI_CASSETTE, FAKE_PI_SPEED, FAKE_PI_STATE)",
                    path.display(),
                    n + 1
                ))
            }
        }
    }
    Ok(s)
}

/// The settings for this start: the environment's, completed by the conf file.
pub(crate) fn settings(
    env: &dyn Fn(&str) -> Option<String>,
    argv0: &str,
) -> Result<Settings, String> {
    let mut s = Settings::default();
    for dir in program_dirs(argv0, env("PATH").as_deref()) {
        let conf = dir.join(CONF);
        match crate::files::read_config(&conf) {
            Ok(Some(text)) => {
                s = parse_conf(&conf, &text)?;
                break;
            }
            Ok(None) => {}
            Err(e) => return Err(e.line("fake-pi's settings", &conf)),
        }
    }
    let set = |v: Option<String>| v.filter(|v| !v.is_empty());
    if let Some(c) = set(env("FAKE_PI_CASSETTE")) {
        s.cassette = Some(PathBuf::from(c));
    }
    if let Some(v) = set(env("FAKE_PI_SPEED")) {
        s.speed = Some(v);
    }
    if let Some(v) = set(env("FAKE_PI_STATE")) {
        s.state = Some(PathBuf::from(v));
    }
    Ok(s)
}

fn is_cassette_name(p: &Path) -> bool {
    p.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(pi_cassette::input::is_cassette_file_name)
}

/// The cassettes of a sequence, in order; `None` when `path` is a single cassette.
pub(crate) fn sequence(path: &Path) -> Result<Option<Vec<PathBuf>>, String> {
    if path.is_dir() {
        let mut list: Vec<PathBuf> = std::fs::read_dir(path)
            .map_err(|e| format!("{}: cannot list: {e}", path.display()))?
            .flatten()
            .map(|e| e.path())
            .filter(|p| is_cassette_name(p))
            .collect();
        list.sort();
        if list.is_empty() {
            return Err(format!(
                "{}: no *.cassette.jsonl(.gz|.zst) files in this directory",
                path.display()
            ));
        }
        return Ok(Some(list));
    }
    if path.extension().is_some_and(|e| e == "sequence") {
        let text = match crate::files::read_config(path) {
            Ok(Some(t)) => t,
            Ok(None) => {
                return Err(format!(
                    "{}: cannot read sequence: no such file",
                    path.display()
                ))
            }
            Err(e) => return Err(e.line("a sequence", path)),
        };
        let base = path.parent().unwrap_or(Path::new("."));
        let list: Vec<PathBuf> = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .map(|l| base.join(l))
            .collect();
        if list.is_empty() {
            return Err(format!(
                "{}: the sequence lists no cassette",
                path.display()
            ));
        }
        return Ok(Some(list));
    }
    Ok(None)
}

/// The default state file of a sequence.
pub(crate) fn default_state(path: &Path) -> PathBuf {
    if path.is_dir() {
        path.join(".fake-pi-state")
    } else {
        let mut s = path.as_os_str().to_owned();
        s.push(".state");
        PathBuf::from(s)
    }
}

/// Count this start in `state` (locked); returns its index (0 for the first start).
pub(crate) fn next_start(state: &Path) -> Result<usize, String> {
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(state)
        .map_err(|e| format!("{}: cannot open the sequence state: {e}", state.display()))?;
    // SAFETY: flock on an open descriptor; released when `f` is closed.
    if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) } != 0 {
        return Err(format!(
            "{}: cannot lock the sequence state: {}",
            state.display(),
            std::io::Error::last_os_error()
        ));
    }
    let mut text = String::new();
    let _ = f.read_to_string(&mut text);
    let n: usize = match text.trim() {
        "" => 0,
        t => t.parse().map_err(|_| {
            format!(
                "{}: the sequence state is not a count ({t:?}); delete it to start over",
                state.display()
            )
        })?,
    };
    let write = |f: &mut File| -> std::io::Result<()> {
        f.set_len(0)?;
        f.seek(SeekFrom::Start(0))?;
        writeln!(f, "{}", n + 1)
    };
    write(&mut f)
        .map_err(|e| format!("{}: cannot write the sequence state: {e}", state.display()))?;
    Ok(n)
}

/// The cassette for this start: a single file, or the next of a sequence. An error is the
/// exit status and the message.
pub(crate) fn choose(settings: &Settings) -> Result<PathBuf, (i32, String)> {
    let Some(path) = settings.cassette.clone() else {
        return Err((
            exit::NO_CASSETTE,
            format!(
                "no cassette: set FAKE_PI_CASSETTE to a .cassette.jsonl(.gz|.zst) file, a directory or a .sequence file, or put a {} beside this program",
                CONF
            ),
        ));
    };
    let Some(list) = sequence(&path).map_err(|e| (exit::NO_CASSETTE, e))? else {
        return Ok(path);
    };
    let state = settings
        .state
        .clone()
        .unwrap_or_else(|| default_state(&path));
    let n = next_start(&state).map_err(|e| (exit::MISUSE, e))?;
    match list.get(n) {
        Some(c) => Ok(c.clone()),
        None => {
            let names: Vec<String> = list
                .iter()
                .map(|p| {
                    p.file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default()
                })
                .collect();
            Err((
                exit::EXPECTATION,
                format!(
                    "sequence {}: this is start {} of pi, but only {} run(s) are recorded ({}); delete {} to start over",
                    path.display(),
                    n + 1,
                    list.len(),
                    names.join(", "),
                    state.display()
                ),
            ))
        }
    }
}

/// A cassette path that names something other than a regular file (a directory, a FIFO, a
/// device) is refused with this message; a path that cannot be looked at is left to the
/// reader, which names the error.
pub(crate) fn not_a_file(path: &Path) -> Option<String> {
    pi_cassette::input::not_a_regular_file(path).map(|kind| {
        format!(
            "{}: cannot read cassette: {kind}, not a cassette file",
            path.display()
        )
    })
}

/// The cassette `file` (at `path`) read again from its start, through the one reader.
pub(crate) fn from_start<'a>(
    path: &Path,
    file: &'a File,
) -> Result<CassetteReader<Box<dyn BufRead + Send + 'a>>, CassetteError> {
    (&*file)
        .seek(SeekFrom::Start(0))
        .map_err(|source| CassetteError::Io {
            path: path.to_path_buf(),
            source,
        })?;
    CassetteReader::from_read(path, file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conf_files() {
        let s = parse_conf(
            Path::new("/opt/bin/fake-pi.conf"),
            "# cassettes for the app\nFAKE_PI_CASSETTE = turns.sequence\nFAKE_PI_SPEED=0\n",
        )
        .unwrap();
        assert_eq!(s.cassette, Some(PathBuf::from("/opt/bin/turns.sequence")));
        assert_eq!(s.speed.as_deref(), Some("0"));
        let e = parse_conf(Path::new("/x/fake-pi.conf"), "\nBOGUS=1\n").unwrap_err();
        assert!(
            e.starts_with("/x/fake-pi.conf:2: unknown key \"BOGUS\""),
            "{e}"
        );
        let e = parse_conf(Path::new("/x/fake-pi.conf"), "just words").unwrap_err();
        assert!(e.contains(":1: expected KEY=VALUE"), "{e}");
    }

    #[test]
    fn sequences_count_starts() {
        let dir = tempfile::tempdir().unwrap();
        for n in ["b.cassette.jsonl", "a.cassette.jsonl", "notes.txt"] {
            std::fs::write(dir.path().join(n), "").unwrap();
        }
        let list = sequence(dir.path()).unwrap().unwrap();
        let names: Vec<_> = list
            .iter()
            .map(|p| p.file_name().unwrap().to_owned())
            .collect();
        assert_eq!(names, ["a.cassette.jsonl", "b.cassette.jsonl"]);
        let state = default_state(dir.path());
        assert_eq!(next_start(&state).unwrap(), 0);
        assert_eq!(next_start(&state).unwrap(), 1);
        let seq = dir.path().join("turns.sequence");
        std::fs::write(&seq, "# first\na.cassette.jsonl\n\nb.cassette.jsonl\n").unwrap();
        assert_eq!(sequence(&seq).unwrap().unwrap().len(), 2);
        assert!(sequence(&dir.path().join("a.cassette.jsonl"))
            .unwrap()
            .is_none());
    }
}
