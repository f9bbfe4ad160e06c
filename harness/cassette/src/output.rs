//! Writing an output file, the one way every command does it.
//!
//! A regular file (or a new path) is replaced atomically: the bytes go to a temp file beside
//! it, then a rename, so a failed write leaves the old file. A symlink is followed and its
//! target replaced (the link stays a link). Anything else that is not a directory (a FIFO,
//! `/dev/null`, a terminal, `/dev/stdout`) is written through, never replaced by a regular
//! file. An output that is one of the command's inputs is refused: writing it would destroy
//! what is being read. A command that writes its output a piece at a time, without holding
//! it ([`create`], [`Pending`]), gets the same: its bytes go to a temp file (in the temp dir
//! for a FIFO or a device), which it may read back before the file is put in place.

use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::input::Compression;

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
    let mut enc = gzip_encoder(Vec::new());
    enc.write_all(bytes)?;
    enc.finish()
}

/// The gzip encoder the writer uses (best compression), over `w`, for a writer that streams.
pub fn gzip_encoder<W: Write>(w: W) -> flate2::write::GzEncoder<W> {
    flate2::write::GzEncoder::new(w, flate2::Compression::best())
}

/// The zstd level the writer uses: on recorded cassettes (long runs of repeated JSON) it
/// compresses as small as gzip's best or smaller, about three times faster, and keeps the
/// window within what every reader accepts ([`crate::input::ZSTD_MAX_WINDOW_LOG`]).
const ZSTD_LEVEL: i32 = 9;

/// `bytes` as one zstd frame with its checksum (so a corrupted file is refused, as gzip's
/// CRC does): the one zstd writer of the workspace; [`crate::input::open`] is the one reader.
pub fn zstd(bytes: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut enc = zstd_encoder(Vec::new(), Some(bytes.len() as u64))?;
    enc.write_all(bytes)?;
    enc.finish()
}

/// The zstd encoder the writer uses (its level, a checksum, the window every reader
/// accepts), over `w`, for a writer that streams; `size`, when known, goes in the frame.
pub fn zstd_encoder<W: Write>(
    w: W,
    size: Option<u64>,
) -> std::io::Result<zstd::stream::write::Encoder<'static, W>> {
    let mut enc = zstd::stream::write::Encoder::new(w, ZSTD_LEVEL)?;
    enc.include_checksum(true)?;
    // Level 9 picks at most this window anyway; said here so a change of level cannot
    // write frames the readers refuse.
    enc.window_log(crate::input::ZSTD_MAX_WINDOW_LOG - 1)?;
    if let Some(n) = size {
        enc.set_pledged_src_size(Some(n))?;
        enc.include_contentsize(true)?;
    }
    Ok(enc)
}

/// `bytes` compressed as a file named `path` asks: zstd for `.zst`, gzip for `.gz`, as they
/// are otherwise.
pub fn compress_for(path: &Path, bytes: Vec<u8>) -> std::io::Result<Vec<u8>> {
    compress(Compression::for_name(path), bytes)
}

/// `bytes` compressed as `kind` says.
pub fn compress(kind: Compression, bytes: Vec<u8>) -> std::io::Result<Vec<u8>> {
    match kind {
        Compression::Zstd => zstd(&bytes),
        Compression::Gzip => gzip(&bytes),
        Compression::None => Ok(bytes),
    }
}

/// Write `bytes` to `path` (see the module doc); `inputs` are the files the command reads.
pub fn write(path: &Path, bytes: &[u8], inputs: &[&Path]) -> Result<(), OutputError> {
    let mut out = create(path, inputs)?;
    out.file()
        .write_all(bytes)
        .and_then(|()| out.file().flush())
        .map_err(|e| out.error(format!("cannot write: {e}")))?;
    out.commit()
}

/// An output being written a piece at a time, for a command that does not hold all of it:
/// the bytes go to a temp file ([`Pending::file`]; beside the output when it is a regular
/// file or a new path, in the temp dir when it is a FIFO or a device), which can be read
/// back ([`Pending::temp_path`]) before [`Pending::commit`] puts it in place (or writes it
/// through). Dropped without a commit, it leaves nothing.
#[derive(Debug)]
pub struct Pending {
    /// The output as given (named in errors).
    path: PathBuf,
    /// Where the bytes go: the path, or a symlink's final target.
    target: PathBuf,
    tmp: tempfile::NamedTempFile,
    /// The target is a FIFO or a device: written through, never replaced.
    through: bool,
}

/// Start writing `path` (see [`Pending`]); `inputs` are the files the command reads. The
/// checks of [`write`] are made first: an empty path, an output that is an input, a directory.
pub fn create(path: &Path, inputs: &[&Path]) -> Result<Pending, OutputError> {
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
    let through = match std::fs::metadata(&target) {
        Ok(m) if m.is_dir() => return Err(err("is a directory".into())),
        // A FIFO, a device, a terminal: written through at the end, never replaced.
        Ok(m) => !m.is_file(),
        Err(_) => false,
    };
    let dir = if through {
        std::env::temp_dir()
    } else {
        match target.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        }
    };
    let tmp = tempfile::Builder::new()
        .prefix(".pi-harness-out-")
        .tempfile_in(&dir)
        .map_err(|e| {
            // tempfile names its random file; the directory is what the user can fix.
            let e = e
                .raw_os_error()
                .map_or(e, std::io::Error::from_raw_os_error);
            err(format!("cannot create a file in {}: {e}", dir.display()))
        })?;
    Ok(Pending {
        path: path.to_path_buf(),
        target,
        tmp,
        through,
    })
}

impl Pending {
    /// The temp file the bytes go to.
    pub fn file(&mut self) -> &mut std::fs::File {
        self.tmp.as_file_mut()
    }

    /// The temp file's path, to read back what was written.
    pub fn temp_path(&self) -> &Path {
        self.tmp.path()
    }

    /// An error about this output: `OUTPUT: what`.
    pub fn error(&self, what: String) -> OutputError {
        OutputError(format!("{}: {what}", self.path.display()))
    }

    /// Put the bytes written in place: the temp file renamed over a regular file (keeping
    /// its permissions), or copied into a FIFO or a device.
    pub fn commit(self) -> Result<(), OutputError> {
        if self.through {
            let copy = || -> std::io::Result<()> {
                let mut from = std::fs::File::open(self.tmp.path())?;
                let mut to = std::fs::OpenOptions::new().write(true).open(&self.target)?;
                std::io::copy(&mut from, &mut to)?;
                to.flush()
            };
            return copy().map_err(|e| self.error(format!("cannot write: {e}")));
        }
        // Keep the permissions of a file being replaced.
        if let Ok(m) = std::fs::metadata(&self.target) {
            let _ = std::fs::set_permissions(self.tmp.path(), m.permissions());
        }
        let (path, target) = (self.path, self.target);
        self.tmp.persist(&target).map_err(|e| {
            OutputError(format!(
                "{}: cannot move into place: {}",
                path.display(),
                e.error
            ))
        })?;
        Ok(())
    }
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
