//! Sessions on disk, imitated: fake-pi creates, names, reports and finds session files as
//! the cassette's pi version does, with the replayed session's id.
//!
//! Measured on real pi (0.73.1, 0.87.1, 1.5.2): sessions live in `--session-dir DIR`,
//! else `$PI_CODING_AGENT_SESSION_DIR`, else `settings.json` `sessionDir` (files directly
//! in that dir), else `<agent dir>/sessions/--<cwd with '/', '\' and ':' as '->--/`. A
//! file is named `<start time, ':' and '.' as '-'>_<id>.jsonl` and holds a `session`
//! header (`version`, `id`, `timestamp`, `cwd`), `model_change`, `thinking_level_change`,
//! then one `message` entry per message, chained by `parentId`; it is written once a
//! prompt was sent. `--session ID` finds a session by exact id, then by id prefix, in the
//! current directory's sessions, then in every directory's; a session of another working
//! directory makes pi ask on stderr whether to fork it (stdin at EOF: exit 0, nothing on
//! stdout); no match is `No session found matching 'ID'` (exit 1). `--session PATH` opens
//! or creates that file. `--session-id ID` (0.87.1+) opens the current directory's
//! session with that id or creates one, with a warning. A resumed run prints the stored
//! header verbatim as its `session` line and appends to the file.
//!
//! fake-pi writes the messages the replayed stream ends (`message_end` events), so a
//! client that lists, reads or resumes sessions sees real-looking files.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

use pi_cassette::SessionUse;
use pi_grammar::{Feature, Grammar, ParsedArgs};

use crate::agent::AgentDir;
use crate::values::{iso, now_ms, uuid_v7};

/// A header line of a session file, read back.
#[derive(Debug, Clone)]
pub(crate) struct Header {
    pub(crate) line: String,
    pub(crate) id: String,
    pub(crate) timestamp: String,
    pub(crate) cwd: String,
}

/// What this run does with its session.
#[derive(Debug)]
pub(crate) enum Plan {
    /// `--no-session`: nothing on disk (the id is the client's `--session-id`, if any).
    Ephemeral { id: Option<String> },
    /// A new session file: in `dir` under pi's name, or at exactly `path`.
    New {
        dir: PathBuf,
        path: Option<PathBuf>,
        id: Option<String>,
        parent: Option<PathBuf>,
        /// Entries copied from a forked session.
        copied: Vec<String>,
    },
    /// An existing file, appended to.
    Resume { path: PathBuf, header: Header },
}

impl Plan {
    pub(crate) fn session_use(&self) -> SessionUse {
        match self {
            Plan::Resume { .. } => SessionUse::Resumed,
            Plan::New { copied, .. } if !copied.is_empty() => SessionUse::Resumed,
            _ => SessionUse::New,
        }
    }
}

/// pi stops before the run (exit `code`, with this stderr; stdout empty).
#[derive(Debug)]
pub(crate) struct Stop {
    pub(crate) stderr: String,
    pub(crate) code: i32,
}

pub(crate) use pi_grammar::cwd_slug;

/// The first line of a session file, parsed.
pub(crate) fn read_header(path: &Path) -> Option<Header> {
    let f = std::fs::File::open(path).ok()?;
    let mut line = String::new();
    std::io::BufReader::new(f).read_line(&mut line).ok()?;
    let line = line.trim_end_matches('\n').to_string();
    let v: serde_json::Value = serde_json::from_str(&line).ok()?;
    (v["type"] == "session").then(|| Header {
        id: v["id"].as_str().unwrap_or("").to_string(),
        timestamp: v["timestamp"].as_str().unwrap_or("").to_string(),
        cwd: v["cwd"].as_str().unwrap_or("").to_string(),
        line: line.clone(),
    })
}

/// Session files in `dir` (not recursive), newest name first.
fn files_in(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl") && p.is_file())
        .collect();
    out.sort();
    out.reverse();
    out
}

/// Everything one run needs to know to plan its session.
pub(crate) struct Ctx<'a> {
    pub(crate) grammar: &'a Grammar,
    pub(crate) parsed: &'a ParsedArgs,
    pub(crate) cwd: &'a str,
    pub(crate) agent: &'a AgentDir,
    pub(crate) env: &'a dyn Fn(&str) -> Option<String>,
}

impl Ctx<'_> {
    /// Where sessions go, and whether they sit directly there (an explicit dir) or in a
    /// per-directory subdir of the agent dir's `sessions`.
    fn root(&self) -> (PathBuf, bool) {
        let rel = |d: &str| Path::new(self.cwd).join(d);
        if let Some(d) = self.parsed.value("--session-dir") {
            return (rel(d), true);
        }
        if let Some(d) = (self.env)("PI_CODING_AGENT_SESSION_DIR").filter(|d| !d.is_empty()) {
            return (rel(&d), true);
        }
        if let Some(d) = &self.agent.session_dir {
            return (rel(d), true);
        }
        (self.agent.path.join("sessions"), false)
    }

    /// The directory this working directory's sessions go to.
    pub(crate) fn cwd_dir(&self) -> PathBuf {
        match self.root() {
            (dir, true) => dir,
            (root, false) => root.join(cwd_slug(self.cwd)),
        }
    }

    /// Every session file pi searches for an id, this directory's first.
    fn search(&self, arg: &str) -> Option<(PathBuf, Header)> {
        let (root, flat) = self.root();
        let here = self.cwd_dir();
        let mut everywhere: Vec<PathBuf> = if flat {
            Vec::new()
        } else {
            std::fs::read_dir(&root)
                .into_iter()
                .flatten()
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.is_dir() && *p != here)
                .flat_map(|d| files_in(&d))
                .collect()
        };
        everywhere.sort();
        everywhere.reverse();
        let local = files_in(&here);
        let headers = |files: &[PathBuf]| -> Vec<(PathBuf, Header)> {
            files
                .iter()
                .filter_map(|p| read_header(p).map(|h| (p.clone(), h)))
                .collect()
        };
        let find = |list: &[(PathBuf, Header)]| {
            list.iter()
                .find(|(_, h)| h.id == arg)
                .or_else(|| list.iter().find(|(_, h)| h.id.starts_with(arg)))
                .cloned()
        };
        find(&headers(&local)).or_else(|| find(&headers(&everywhere)))
    }
}

/// pi's decision about the session, before it reads stdin: the plan, plus what pi printed
/// on stderr on the way (a warning), or the reason it stops.
pub(crate) fn plan(
    ctx: &Ctx,
    stdin_answer: &mut dyn FnMut() -> String,
) -> Result<(Plan, String), Stop> {
    let p = ctx.parsed;
    let v87 = ctx.grammar.has(Feature::SessionId);
    let chosen_id = p.value("--session-id").map(str::to_string);
    if p.has("--no-session") {
        return Ok((Plan::Ephemeral { id: chosen_id }, String::new()));
    }
    let not_found = |arg: &str| Stop {
        stderr: format!("No session found matching '{arg}'\n"),
        code: 1,
    };
    let new_here = |id: Option<String>| Plan::New {
        dir: ctx.cwd_dir(),
        path: None,
        id,
        parent: None,
        copied: Vec::new(),
    };
    if let Some(arg) = p.value("--fork") {
        let Some((path, _)) = lookup(ctx, arg)? else {
            return Err(not_found(arg));
        };
        if let Some(id) = &chosen_id {
            if files_in(&ctx.cwd_dir())
                .iter()
                .any(|f| read_header(f).is_some_and(|h| &h.id == id))
            {
                return Err(Stop {
                    stderr: format!("Session already exists with id '{id}'\n"),
                    code: 1,
                });
            }
        }
        let copied = entries(&path);
        return Ok((
            Plan::New {
                dir: ctx.cwd_dir(),
                path: None,
                id: chosen_id,
                parent: Some(path),
                copied,
            },
            String::new(),
        ));
    }
    if let Some(arg) = p.value("--session") {
        let is_path = arg.contains('/') || arg.contains('\\') || arg.ends_with(".jsonl");
        if is_path {
            let path = Path::new(ctx.cwd).join(arg);
            return Ok(match read_header(&path) {
                Some(header) => (Plan::Resume { path, header }, String::new()),
                None => (
                    Plan::New {
                        dir: ctx.cwd_dir(),
                        path: Some(path),
                        id: None,
                        parent: None,
                        copied: Vec::new(),
                    },
                    String::new(),
                ),
            });
        }
        let Some((path, header)) = lookup(ctx, arg)? else {
            return Err(not_found(arg));
        };
        if header.cwd != ctx.cwd {
            return different_project(ctx, path, header, stdin_answer);
        }
        return Ok((Plan::Resume { path, header }, String::new()));
    }
    if let (true, Some(id)) = (v87, &chosen_id) {
        let found = files_in(&ctx.cwd_dir())
            .into_iter()
            .find_map(|f| read_header(&f).filter(|h| &h.id == id).map(|h| (f, h)));
        return Ok(match found {
            Some((path, header)) => (Plan::Resume { path, header }, String::new()),
            None => (
                new_here(chosen_id.clone()),
                format!(
                    "Warning: No project session found with id '{id}'; creating a new session with that id.\n"
                ),
            ),
        });
    }
    if p.has("--continue") {
        let newest = files_in(&ctx.cwd_dir())
            .into_iter()
            .find_map(|f| read_header(&f).map(|h| (f, h)));
        if let Some((path, header)) = newest {
            return Ok((Plan::Resume { path, header }, String::new()));
        }
    }
    Ok((new_here(None), String::new()))
}

fn lookup(ctx: &Ctx, arg: &str) -> Result<Option<(PathBuf, Header)>, Stop> {
    Ok(ctx.search(arg))
}

/// pi found the session under another working directory: it asks whether to fork it and
/// reads the answer from stdin.
fn different_project(
    ctx: &Ctx,
    path: PathBuf,
    header: Header,
    stdin_answer: &mut dyn FnMut() -> String,
) -> Result<(Plan, String), Stop> {
    let mut err = std::io::stderr();
    let _ = write!(
        err,
        "Session found in different project: {}\nFork this session into current directory? [y/N] ",
        header.cwd
    );
    let answer = stdin_answer();
    let yes = matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes");
    let fork = Plan::New {
        dir: ctx.cwd_dir(),
        path: None,
        id: None,
        parent: Some(path),
        copied: Vec::new(),
    };
    if yes && !ctx.grammar.has(Feature::SessionId) {
        // 0.73.1 forks and runs the prompt.
        let Plan::New { dir, parent, .. } = fork else {
            unreachable!()
        };
        let copied = parent.as_deref().map(entries).unwrap_or_default();
        return Ok((
            Plan::New {
                dir,
                path: None,
                id: None,
                parent,
                copied,
            },
            String::new(),
        ));
    }
    if yes {
        // 0.87.1 and later write the fork, then exit 0 with nothing on stdout.
        let mut s = Session::new(fork, None, ctx.cwd);
        let _ = s.ensure_file(&SessionMeta::default());
    }
    Err(Stop {
        stderr: String::new(),
        code: 0,
    })
}

/// The entries (lines after the header) of a session file.
fn entries(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .map(|t| t.lines().skip(1).map(str::to_string).collect())
        .unwrap_or_default()
}

/// What the session file's first entries say about the run.
#[derive(Debug, Clone, Default)]
pub(crate) struct SessionMeta {
    pub(crate) provider: Option<String>,
    pub(crate) model: Option<String>,
    pub(crate) thinking: Option<String>,
}

/// The run's session: its id and time, its file, and the entries written so far.
pub(crate) struct Session {
    plan: Plan,
    pub(crate) id: String,
    pub(crate) timestamp: String,
    pub(crate) cwd: String,
    /// The new session's start, in epoch milliseconds (its file name's time).
    start_ms: u64,
    /// Where entries go: the resumed file (opened at the first entry) or the one this run
    /// created, kept open so that nothing put at its path meanwhile is written through.
    file: Option<SessionFile>,
    started: bool,
    last_entry: Option<String>,
}

fn entry_id() -> String {
    format!("{:08x}", fastrand::u32(..))
}

impl Session {
    /// Start the session: the id is the client's choice, else the one the recording
    /// shows (when it is a concrete id, not a placeholder), else a new one.
    pub(crate) fn new(plan: Plan, recorded_id: Option<&str>, cwd: &str) -> Session {
        let now = now_ms();
        let (id, timestamp, cwd, file, started, last) = match &plan {
            Plan::Resume { path, header } => {
                let last = entries(path)
                    .last()
                    .and_then(|l| serde_json::from_str::<serde_json::Value>(l).ok())
                    .and_then(|v| v["id"].as_str().map(str::to_string));
                (
                    header.id.clone(),
                    header.timestamp.clone(),
                    header.cwd.clone(),
                    Some(SessionFile::Path(path.clone())),
                    true,
                    last,
                )
            }
            Plan::Ephemeral { id } | Plan::New { id, .. } => {
                let id = id
                    .clone()
                    .or_else(|| recorded_id.map(str::to_string))
                    .unwrap_or_else(|| uuid_v7(now));
                (id, iso(now), cwd.to_string(), None, false, None)
            }
        };
        Session {
            plan,
            id,
            timestamp,
            cwd,
            start_ms: now,
            file,
            started,
            last_entry: last,
        }
    }

    /// The `session` line pi prints: the stored header when resuming.
    pub(crate) fn resumed_header(&self) -> Option<&str> {
        match &self.plan {
            Plan::Resume { header, .. } => Some(&header.line),
            _ => None,
        }
    }

    /// Create the file with its header entries, if this run keeps one and has not yet.
    fn ensure_file(&mut self, meta: &SessionMeta) -> std::io::Result<()> {
        if self.started {
            return Ok(());
        }
        let (dir, path, parent, copied) = match &self.plan {
            Plan::New {
                dir,
                path,
                parent,
                copied,
                ..
            } => (dir.clone(), path.clone(), parent.clone(), copied.clone()),
            _ => return Ok(()),
        };
        self.started = true;
        let mut file = match path {
            // The client's own `--session PATH`: opened as pi opens it (the client chose it).
            Some(path) => {
                if let Some(d) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                    std::fs::create_dir_all(d)?;
                }
                std::fs::File::create(&path)?
            }
            None => {
                std::fs::create_dir_all(&dir)?;
                self.create_in(&dir)?
            }
        };
        let mut header = serde_json::json!({
            "type": "session", "version": 3, "id": self.id,
            "timestamp": self.timestamp, "cwd": self.cwd,
        });
        if let Some(p) = &parent {
            header["parentSession"] = p.display().to_string().into();
        }
        let mut text = header_line(&header);
        if copied.is_empty() {
            let model_id = entry_id();
            let now = iso(now_ms());
            text.push_str(&format!(
                "{{\"type\":\"model_change\",\"id\":\"{model_id}\",\"parentId\":null,\"timestamp\":\"{now}\",\"provider\":{},\"modelId\":{}}}\n",
                json_str(meta.provider.as_deref().unwrap_or("unknown")),
                json_str(meta.model.as_deref().unwrap_or("unknown")),
            ));
            let level_id = entry_id();
            text.push_str(&format!(
                "{{\"type\":\"thinking_level_change\",\"id\":\"{level_id}\",\"parentId\":\"{model_id}\",\"timestamp\":\"{now}\",\"thinkingLevel\":{}}}\n",
                json_str(meta.thinking.as_deref().unwrap_or("medium")),
            ));
            self.last_entry = Some(level_id);
        } else {
            for l in &copied {
                text.push_str(l);
                text.push('\n');
            }
            self.last_entry = copied
                .last()
                .and_then(|l| serde_json::from_str::<serde_json::Value>(l).ok())
                .and_then(|v| v["id"].as_str().map(str::to_string));
        }
        file.write_all(text.as_bytes())?;
        self.file = Some(SessionFile::Open(file));
        Ok(())
    }

    /// A new file in `dir` under pi's name for this session. Another replay of the same
    /// recorded id may have started in the same millisecond: pi's ids are fresh per run, so
    /// its names never meet; here the time part of the name moves on a millisecond at a time
    /// until the name is free (the header inside keeps the session's own time).
    fn create_in(&self, dir: &Path) -> std::io::Result<std::fs::File> {
        const TRIES: u64 = 10_000;
        for k in 0..TRIES {
            let stamp = if k == 0 {
                self.timestamp.clone()
            } else {
                iso(self.start_ms + k)
            };
            let path = dir.join(pi_grammar::session_file_name(&stamp, &self.id));
            match create_new(&path) {
                Ok(f) => return Ok(f),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
        Err(std::io::Error::other(format!(
            "{}: no free session file name for id {} in {TRIES} tries",
            dir.display(),
            self.id
        )))
    }

    /// Whether [`Session::observe`] may write the session file for this stdout line (a
    /// `message_end` of a session on disk).
    pub(crate) fn observes(&self, line: &[u8]) -> bool {
        !matches!(self.plan, Plan::Ephemeral { .. })
            && line.starts_with(b"{\"type\":\"message_end\"")
    }

    /// Record a replayed stdout line: a `message_end` becomes a `message` entry.
    pub(crate) fn observe(&mut self, line: &[u8], meta: &SessionMeta) -> std::io::Result<()> {
        if !self.observes(line) {
            return Ok(());
        }
        let Ok(v) = serde_json::from_slice::<EndLine>(line) else {
            return Ok(());
        };
        self.ensure_file(meta)?;
        let Some(file) = &mut self.file else {
            return Ok(());
        };
        let id = entry_id();
        let parent = match &self.last_entry {
            Some(p) => json_str(p),
            None => "null".into(),
        };
        let entry = format!(
            "{{\"type\":\"message\",\"id\":\"{id}\",\"parentId\":{parent},\"timestamp\":\"{}\",\"message\":{}}}\n",
            iso(now_ms()),
            v.message.get()
        );
        file.append(entry.as_bytes())?;
        self.last_entry = Some(id);
        Ok(())
    }
}

/// The session file entries are appended to.
enum SessionFile {
    /// A resumed session's file, by the path the client's flags found.
    Path(PathBuf),
    /// Opened (or created) by this run.
    Open(std::fs::File),
}

impl SessionFile {
    fn append(&mut self, data: &[u8]) -> std::io::Result<()> {
        if let SessionFile::Path(path) = self {
            use std::os::unix::fs::OpenOptionsExt;
            let f = std::fs::OpenOptions::new()
                .append(true)
                .custom_flags(libc::O_NOFOLLOW)
                .open(&*path)?;
            *self = SessionFile::Open(f);
        }
        match self {
            SessionFile::Open(f) => f.write_all(data),
            SessionFile::Path(_) => unreachable!("opened above"),
        }
    }
}

/// Create `path` as a new file: never an existing one, never through a symlink placed
/// there (`O_CREAT | O_EXCL` does not follow a link in the last component).
fn create_new(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW)
        .mode(0o644)
        .open(path)
}

#[derive(serde::Deserialize)]
struct EndLine<'a> {
    #[serde(borrow)]
    message: &'a serde_json::value::RawValue,
}

fn json_str(s: &str) -> String {
    serde_json::to_string(s).expect("a string serializes")
}

/// pi's key order for a session header.
fn header_line(h: &serde_json::Value) -> String {
    let mut s = format!(
        "{{\"type\":\"session\",\"version\":3,\"id\":{},\"timestamp\":{},\"cwd\":{}",
        h["id"], h["timestamp"], h["cwd"]
    );
    if let Some(p) = h.get("parentSession") {
        s.push_str(&format!(",\"parentSession\":{p}"));
    }
    s.push_str("}\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_like_pi() {
        assert_eq!(
            cwd_slug("/tmp/pi-sess-1.5.2-6a7m02gs/work"),
            "--tmp-pi-sess-1.5.2-6a7m02gs-work--"
        );
        assert_eq!(cwd_slug("/a:b\\c"), "--a-b-c--");
    }
}
