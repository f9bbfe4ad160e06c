//! Writing an output file, the one way every command does it.
//!
//! A regular file (or a new path) is replaced atomically: the bytes go to a temp file beside
//! it, then a rename, so a failed write leaves the old file. A symlink is followed and its
//! target replaced (the link stays a link). Anything else that is not a directory (a FIFO,
//! `/dev/null`, a terminal, `/dev/stdout`) is written through, never replaced by a regular
//! file. An output that is one of the command's inputs is refused: writing it would destroy
//! what is being read.

use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Why an output could not be written; the message names the path.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct OutputError(pub String);

/// Where the bytes for `path` really go: the path itself, or a symlink's final target.
fn resolve(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// The same file as any of `inputs` (device and inode, so links and `..` do not hide it).
fn is_an_input(path: &Path, inputs: &[&Path]) -> bool {
    let Ok(out) = std::fs::metadata(path) else {
        return false;
    };
    inputs
        .iter()
        .any(|i| std::fs::metadata(i).is_ok_and(|m| m.dev() == out.dev() && m.ino() == out.ino()))
}

/// `bytes` as one gzip member at the best compression: the one gzip writer of the workspace
/// (cassettes, expected streams); [`crate::input::open`] is the one reader.
pub fn gzip(bytes: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    enc.write_all(bytes)?;
    enc.finish()
}

/// Write `bytes` to `path` (see the module doc); `inputs` are the files the command reads.
pub fn write(path: &Path, bytes: &[u8], inputs: &[&Path]) -> Result<(), OutputError> {
    let err = |what: String| OutputError(format!("{}: {what}", path.display()));
    if path.as_os_str().is_empty() {
        return Err(OutputError("the output path is empty".into()));
    }
    if is_an_input(path, inputs) {
        return Err(err(
            "is also an input of this command; write the output somewhere else".into(),
        ));
    }
    let target = resolve(path);
    match std::fs::metadata(&target) {
        Ok(m) if m.is_dir() => return Err(err("is a directory".into())),
        Ok(m) if !m.is_file() => {
            // A FIFO, a device, a terminal: write through, never replace.
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .open(&target)
                .map_err(|e| err(format!("cannot open: {e}")))?;
            return f
                .write_all(bytes)
                .and_then(|()| f.flush())
                .map_err(|e| err(format!("cannot write: {e}")));
        }
        _ => {}
    }
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(".pi-harness-out-")
        .tempfile_in(&dir)
        .map_err(|e| {
            // tempfile names its random file; the directory is what the user can fix.
            let e = e
                .raw_os_error()
                .map_or(e, std::io::Error::from_raw_os_error);
            err(format!("cannot create a file in {}: {e}", dir.display()))
        })?;
    tmp.write_all(bytes)
        .and_then(|()| tmp.flush())
        .map_err(|e| err(format!("cannot write: {e}")))?;
    // Keep the permissions of a file being replaced.
    if let Ok(m) = std::fs::metadata(&target) {
        let _ = std::fs::set_permissions(tmp.path(), m.permissions());
    }
    tmp.persist(&target)
        .map_err(|e| err(format!("cannot move into place: {}", e.error)))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::FileTypeExt;

    #[test]
    fn regular_files_are_replaced_links_followed_and_inputs_refused() {
        let d = tempfile::tempdir().unwrap();
        let file = d.path().join("a.txt");
        write(&file, b"one", &[]).unwrap();
        write(&file, b"two", &[]).unwrap();
        assert_eq!(std::fs::read(&file).unwrap(), b"two");
        let link = d.path().join("link.txt");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        write(&link, b"three", &[]).unwrap();
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read(&file).unwrap(), b"three");
        let e = write(&link, b"x", &[&file]).unwrap_err().to_string();
        assert!(e.contains("is also an input"), "{e}");
        assert_eq!(std::fs::read(&file).unwrap(), b"three");
        assert!(write(d.path(), b"x", &[])
            .unwrap_err()
            .to_string()
            .contains("is a directory"));
    }

    #[test]
    fn devices_and_fifos_are_written_through() {
        write(Path::new("/dev/null"), b"gone", &[]).unwrap();
        assert!(std::fs::metadata("/dev/null")
            .unwrap()
            .file_type()
            .is_char_device());
        let d = tempfile::tempdir().unwrap();
        let fifo = d.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::read(fifo).unwrap())
        };
        write(&fifo, b"through", &[]).unwrap();
        assert_eq!(reader.join().unwrap(), b"through");
        assert!(std::fs::symlink_metadata(&fifo)
            .unwrap()
            .file_type()
            .is_fifo());
    }
}
