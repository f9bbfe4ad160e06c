//! The files fake-pi reads and writes, each bounded and never blocking: a file of fake-pi's
//! own ([`read_own`], [`replace_own`]: Codex's last thread), never through a link. A FIFO is
//! never waited on (opened without blocking, then refused), a device such as `/dev/zero`
//! never read.

use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

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
        return Err(format!(
            "larger than {} KiB, the most fake-pi reads of it",
            max >> 10
        ));
    }
    Ok(bytes)
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
