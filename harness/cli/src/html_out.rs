//! Writing a page (`--html OUT`) to the path given and nowhere else: never through a link.
//!
//! A symbolic link at `OUT` is refused (so is a directory, a FIFO or a device: only a
//! regular file or a new path), and so is `OUT` when it is one of the command's inputs. The
//! bytes go to a new file beside it, created with `O_CREAT|O_EXCL|O_NOFOLLOW` (nothing that
//! exists, a link included, is opened), which is renamed over `OUT` once complete: a
//! rename replaces whatever is at the name itself, a link put there meanwhile included,
//! and never follows it. A failed write leaves no temp file and `OUT` as it was.

use std::fs::File;
use std::io::BufWriter;
use std::os::unix::fs::{MetadataExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};

use crate::CliError;

/// A page being written: a new temp file beside its destination.
pub struct NewFile {
    temp: PathBuf,
    dest: PathBuf,
    file: Option<BufWriter<File>>,
    /// Put in place: the temp file is no longer ours to remove.
    done: bool,
}

impl NewFile {
    /// Check `dest` (not a link, not a directory or special file, none of `inputs`) and
    /// create the temp file beside it.
    pub fn create(dest: &Path, inputs: &[&Path]) -> Result<NewFile, CliError> {
        let shown = dest.display();
        match std::fs::symlink_metadata(dest) {
            Ok(m) if m.file_type().is_symlink() => {
                return Err(CliError::usage(format!(
                    "{shown}: is a symbolic link; the page is written only to a regular file or a new path, never through a link"
                )))
            }
            Ok(m) if !m.file_type().is_file() => {
                return Err(CliError::usage(format!(
                    "{shown}: not a regular file; the page is written only to a regular file or a new path"
                )))
            }
            Ok(m) => {
                let same = |i: &&Path| {
                    std::fs::metadata(i).is_ok_and(|im| im.dev() == m.dev() && im.ino() == m.ino())
                };
                if inputs.iter().any(same) {
                    return Err(CliError::usage(format!(
                        "{shown}: is the cassette being read; write the page elsewhere"
                    )));
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(CliError::usage(format!("{shown}: {e}"))),
        }
        let name = dest
            .file_name()
            .ok_or_else(|| CliError::usage(format!("{shown}: names no file")))?;
        let dir = match dest.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let mut last = None;
        for n in 0..16u32 {
            let temp = dir.join(format!(
                ".{}.{}.{n}.tmp",
                name.to_string_lossy(),
                std::process::id()
            ));
            let opened = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o644)
                .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
                .open(&temp);
            match opened {
                Ok(f) => {
                    return Ok(NewFile {
                        temp,
                        dest: dest.to_path_buf(),
                        file: Some(BufWriter::with_capacity(256 << 10, f)),
                        done: false,
                    })
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
                Err(e) => {
                    return Err(CliError::usage(format!(
                        "{shown}: cannot create a file in {}: {e}",
                        dir.display()
                    )))
                }
            }
        }
        Err(CliError::usage(format!(
            "{shown}: cannot create a temp file beside it: {}",
            last.map_or_else(String::new, |e| e.to_string())
        )))
    }

    /// The writer the page goes to.
    pub fn writer(&mut self) -> &mut BufWriter<File> {
        self.file
            .as_mut()
            .expect("the file is open until committed")
    }

    /// Put the complete page in place (flushed, then renamed over the destination); its
    /// size. A failure leaves no temp file.
    pub fn commit(mut self) -> Result<u64, CliError> {
        let file = self.file.take().expect("the writer was not taken");
        self.commit_writer(file)
    }

    /// The writer itself, for a page written by a task that owns it (`run --html`); it comes
    /// back with [`NewFile::commit_writer`]. Until then, dropping this removes the temp file.
    pub fn take_writer(&mut self) -> BufWriter<File> {
        self.file.take().expect("the writer is taken once")
    }

    /// As [`NewFile::commit`], with the writer [`NewFile::take_writer`] gave.
    pub fn commit_writer(mut self, file: BufWriter<File>) -> Result<u64, CliError> {
        let done = file
            .into_inner()
            .map_err(|e| e.into_error())
            .and_then(|f| f.metadata().map(|m| m.len()))
            .and_then(|len| std::fs::rename(&self.temp, &self.dest).map(|()| len));
        self.done = done.is_ok();
        done.map_err(|e| {
            failed(format!(
                "{}: cannot write the page: {e}",
                self.dest.display()
            ))
        })
    }

    /// A write error of the page, as the command reports it.
    pub fn write_error(&self, e: &std::io::Error) -> CliError {
        failed(format!(
            "{}: cannot write the page: {e}",
            self.dest.display()
        ))
    }
}

/// An output that could not be written (exit status 1).
fn failed(message: String) -> CliError {
    CliError {
        message,
        code: crate::exit::EXIT_FAILED,
    }
}

impl Drop for NewFile {
    fn drop(&mut self) {
        if !self.done {
            self.file = None;
            let _ = std::fs::remove_file(&self.temp);
        }
    }
}
