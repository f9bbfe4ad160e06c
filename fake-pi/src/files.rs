//! The files fake-pi reads and writes, each bounded and never blocking: a CLI's
//! configuration ([`read_config`]: Codex's `config.toml` and profiles, Gemini CLI's settings
//! layers, pi's `settings.json` and `models.json`; fake-pi's own `fake-pi.conf` and
//! sequences), followed through a link as the CLIs follow it, but only a regular file and at
//! most [`CONFIG_MAX_BYTES`]; a file of fake-pi's own ([`read_own`], [`replace_own`]: Codex's
//! last thread), never through a link; and a file it appends to ([`open_append`]:
//! `FAKE_PI_REPORT`, `FAKE_PI_TIMELINE`), only a regular one and never through a link. A FIFO
//! is never waited on (opened without blocking, then refused), a device such as `/dev/zero`
//! never read.

use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// The most fake-pi reads of a CLI's configuration file (1 MiB): real ones are a few KiB,
/// and what reads them (`toml`, `serde_json`) holds many times the file (a 26 MB
/// `config.toml` took 911 MB).
pub(crate) const CONFIG_MAX_BYTES: u64 = 1 << 20;

/// Why a configuration file was not read.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum ConfigError {
    /// fake-pi's own refusal, where the real CLI would hang or grow without bound: not a
    /// regular file (a FIFO, a device, a directory), or larger than [`CONFIG_MAX_BYTES`].
    Refused(String),
    /// What the CLI itself meets too: an I/O error, text that is not UTF-8.
    Unreadable(String),
}

impl ConfigError {
    /// The line that names the file (`path`, `what` it is for the CLI) and the problem.
    pub(crate) fn line(&self, what: &str, path: &Path) -> String {
        match self {
            ConfigError::Refused(p) => format!(
                "{}: {p} ({what}: fake-pi reads it only from a regular file of at most {})",
                path.display(),
                size(CONFIG_MAX_BYTES)
            ),
            ConfigError::Unreadable(p) => format!("{}: {p}", path.display()),
        }
    }
}

/// `bytes` as a person reads it: `1 MiB`, `4 KiB`.
fn size(bytes: u64) -> String {
    if bytes >= 1 << 20 && bytes % (1 << 20) == 0 {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{} KiB", bytes >> 10)
    }
}

/// The most fake-pi reads of a file of its own (a thread id).
const OWN_MAX_BYTES: u64 = 4 << 10;

/// What a file is when it is not a regular file.
fn kind(t: std::fs::FileType) -> &'static str {
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() || t.is_block_device() {
        "a device"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_symlink() {
        "a symbolic link"
    } else {
        "not a regular file"
    }
}

/// Open `path` for reading without blocking (a FIFO with no writer opens at once) and
/// without becoming its controlling terminal; `follow`: through a final symbolic link.
/// `Ok(None)` when it does not exist; an error names what it is when it is not a regular
/// file (looked at before the open, so a device is never opened, and again after it).
fn open_regular(path: &Path, follow: bool) -> Result<Option<File>, String> {
    let meta = if follow {
        std::fs::metadata(path)
    } else {
        std::fs::symlink_metadata(path)
    };
    match meta {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot read it: {e}")),
        Ok(m) if !m.is_file() => {
            return Err(format!("{}, not a regular file", kind(m.file_type())))
        }
        Ok(_) => {}
    }
    let mut flags = libc::O_NONBLOCK | libc::O_NOCTTY;
    if !follow {
        flags |= libc::O_NOFOLLOW;
    }
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            return Err("a symbolic link, not a regular file".into())
        }
        Err(e) => return Err(format!("cannot read it: {e}")),
    };
    // Replaced between the look and the open: look again at what was opened.
    let t = file
        .metadata()
        .map_err(|e| format!("cannot read it: {e}"))?
        .file_type();
    if !t.is_file() {
        return Err(format!("{}, not a regular file", kind(t)));
    }
    Ok(Some(file))
}

/// At most `max` bytes of `file`; an error when it has more.
fn read_bounded(file: File, max: u64) -> Result<Vec<u8>, String> {
    let mut bytes = Vec::new();
    file.take(max + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read it: {e}"))?;
    if bytes.len() as u64 > max {
        return Err(format!("larger than {}", size(max)));
    }
    Ok(bytes)
}

/// A CLI's configuration file at `path`, as the CLIs read it (through a symbolic link, as
/// text): `Ok(None)` when it does not exist.
pub(crate) fn read_config(path: &Path) -> Result<Option<String>, ConfigError> {
    let file = match open_regular(path, true) {
        Ok(Some(f)) => f,
        Ok(None) => return Ok(None),
        Err(e) if e.starts_with("cannot") => return Err(ConfigError::Unreadable(e)),
        Err(e) => return Err(ConfigError::Refused(e)),
    };
    let bytes = read_bounded(file, CONFIG_MAX_BYTES).map_err(|e| {
        if e.starts_with("cannot") {
            ConfigError::Unreadable(e)
        } else {
            ConfigError::Refused(e)
        }
    })?;
    String::from_utf8(bytes).map(Some).map_err(|e| {
        ConfigError::Unreadable(format!(
            "not UTF-8 (at byte {})",
            e.utf8_error().valid_up_to()
        ))
    })
}

/// A file of fake-pi's own at `path`, never through a symbolic link: `Ok(None)` when it
/// does not exist; `Err` when it is not a regular file or is larger than a few KiB.
pub(crate) fn read_own(path: &Path) -> Result<Option<Vec<u8>>, String> {
    let Some(file) = open_regular(path, false)? else {
        return Ok(None);
    };
    read_bounded(file, OWN_MAX_BYTES).map(Some)
}

/// Put `bytes` in the file of fake-pi's own at `path`: written to a new file beside it and
/// renamed over it, so that nothing is written through a link (a link there is replaced, not
/// followed) and a reader sees the old file or the new one. `Err` when what is there is not
/// a regular file or a link (a directory, a FIFO: left alone), or the write fails.
pub(crate) fn replace_own(path: &Path, bytes: &[u8]) -> Result<(), String> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if !m.is_file() && !m.file_type().is_symlink() => {
            return Err(format!("{}, not a regular file", kind(m.file_type())))
        }
        _ => {}
    }
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".{}.tmp", std::process::id()));
    let tmp = std::path::PathBuf::from(tmp);
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW)
        .mode(0o644)
        .open(&tmp)
        .and_then(|mut f| f.write_all(bytes))
        .and_then(|()| std::fs::rename(&tmp, path));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(format!("cannot write it: {e}"));
    }
    Ok(())
}

/// `path` opened to append to (created when missing), only a regular file and never
/// through a symbolic link, without blocking (a FIFO is refused, not waited on). `Err` says
/// what it is, or the system's error.
pub(crate) fn open_append(path: &Path) -> Result<File, String> {
    if let Ok(m) = std::fs::symlink_metadata(path) {
        if !m.is_file() {
            return Err(format!("{}, not a regular file", kind(m.file_type())));
        }
    }
    let file = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY)
        .mode(0o644)
        .open(path)
        .map_err(|e| {
            if e.raw_os_error() == Some(libc::ELOOP) {
                "a symbolic link, not a regular file".to_string()
            } else {
                e.to_string()
            }
        })?;
    let t = file.metadata().map_err(|e| e.to_string())?.file_type();
    if !t.is_file() {
        return Err(format!("{}, not a regular file", kind(t)));
    }
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configs_are_read_through_links_but_only_regular_files_within_the_bound() {
        let dir = tempfile::tempdir().unwrap();
        let p = |n: &str| dir.path().join(n);
        std::fs::write(p("a.toml"), "x = 1\n").unwrap();
        std::os::unix::fs::symlink(p("a.toml"), p("link.toml")).unwrap();
        std::os::unix::fs::symlink("/dev/zero", p("zero.toml")).unwrap();
        nix::unistd::mkfifo(&p("fifo.toml"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        std::fs::write(p("big.toml"), vec![b'#'; CONFIG_MAX_BYTES as usize + 1]).unwrap();
        std::fs::write(p("max.toml"), vec![b'#'; CONFIG_MAX_BYTES as usize]).unwrap();
        std::fs::write(p("latin1.toml"), b"x = \"\xe9\"\n").unwrap();
        let refused = |s: &str| Err(ConfigError::Refused(s.into()));
        assert_eq!(read_config(&p("a.toml")), Ok(Some("x = 1\n".into())));
        assert_eq!(read_config(&p("link.toml")), Ok(Some("x = 1\n".into())));
        assert_eq!(read_config(&p("none.toml")), Ok(None));
        assert_eq!(
            read_config(&p("zero.toml")),
            refused("a device, not a regular file")
        );
        assert_eq!(
            read_config(&p("fifo.toml")),
            refused("a FIFO, not a regular file")
        );
        assert_eq!(
            read_config(dir.path()),
            refused("a directory, not a regular file")
        );
        assert_eq!(read_config(&p("big.toml")), refused("larger than 1 MiB"));
        assert_eq!(read_config(&p("max.toml")).unwrap().unwrap().len(), 1 << 20);
        assert_eq!(
            read_config(&p("latin1.toml")),
            Err(ConfigError::Unreadable("not UTF-8 (at byte 5)".into()))
        );
        assert_eq!(
            ConfigError::Refused("a FIFO, not a regular file".into()).line("Codex's config.toml", Path::new("/h/config.toml")),
            "/h/config.toml: a FIFO, not a regular file (Codex's config.toml: fake-pi reads it only from a regular file of at most 1 MiB)"
        );
    }

    #[test]
    fn own_files_are_never_read_or_written_through_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let p = |n: &str| dir.path().join(n);
        let target = p("target");
        std::fs::write(&target, "keep me").unwrap();
        std::os::unix::fs::symlink(&target, p("own")).unwrap();
        assert_eq!(
            read_own(&p("own")),
            Err("a symbolic link, not a regular file".into())
        );
        // The link is replaced, its target untouched.
        replace_own(&p("own"), b"id").unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"keep me");
        assert!(std::fs::symlink_metadata(p("own")).unwrap().is_file());
        assert_eq!(read_own(&p("own")), Ok(Some(b"id".to_vec())));
        // A FIFO is neither waited on nor replaced.
        nix::unistd::mkfifo(&p("fifo"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        assert_eq!(
            read_own(&p("fifo")),
            Err("a FIFO, not a regular file".into())
        );
        assert_eq!(
            replace_own(&p("fifo"), b"id"),
            Err("a FIFO, not a regular file".into())
        );
        assert!(std::fs::symlink_metadata(p("fifo"))
            .unwrap()
            .file_type()
            .is_fifo());
        // No temp file is left.
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 3, "{names:?}");
    }

    #[test]
    fn appends_go_to_regular_files_only_never_through_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let p = |n: &str| dir.path().join(n);
        let mut f = open_append(&p("report")).unwrap();
        f.write_all(b"one\n").unwrap();
        assert_eq!(std::fs::read(p("report")).unwrap(), b"one\n");
        std::os::unix::fs::symlink(p("report"), p("link")).unwrap();
        assert_eq!(
            open_append(&p("link")).map(|_| ()),
            Err("a symbolic link, not a regular file".into())
        );
        std::os::unix::fs::symlink(p("nowhere"), p("dangling")).unwrap();
        assert_eq!(
            open_append(&p("dangling")).map(|_| ()),
            Err("a symbolic link, not a regular file".into())
        );
        assert!(!p("nowhere").exists());
        nix::unistd::mkfifo(&p("fifo"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        assert_eq!(
            open_append(&p("fifo")).map(|_| ()),
            Err("a FIFO, not a regular file".into())
        );
    }
}
