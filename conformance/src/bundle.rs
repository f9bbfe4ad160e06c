//! The suite this binary carries: every cassette and expected stream, embedded at build
//! time (`build.rs`), so an installed `pi-harness conform` needs no source tree.
//!
//! [`dirs`] unpacks it once into a cache directory named after its contents
//! (`$PI_HARNESS_CACHE`, else `$XDG_CACHE_HOME/pi-harness`, else `~/.cache/pi-harness`;
//! a temp dir when none is writable) and returns the two directories, so reproduce lines
//! and cassette paths in reports stay valid after the run. [`export`] writes a copy where
//! a user wants it (`pi-harness corpus export DIR`).

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

mod files {
    include!(concat!(env!("OUT_DIR"), "/bundle_files.rs"));
}

/// Every bundled file: (path inside the bundle, bytes). Paths start with `cassettes/` (the
/// cassettes, and below `cassettes/scripts/` the scripts they were recorded from, the
/// corpus manifest and the scripts' format) or `expected/`.
pub fn files() -> &'static [(&'static str, &'static [u8])] {
    files::FILES
}

/// A name that changes whenever the bundled contents do.
fn fingerprint() -> String {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for (path, bytes) in files() {
        path.hash(&mut h);
        bytes.hash(&mut h);
    }
    format!("bundle-{}-{:016x}", env!("CARGO_PKG_VERSION"), h.finish())
}

fn cache_root() -> Option<PathBuf> {
    let var = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    var("PI_HARNESS_CACHE")
        .or_else(|| var("XDG_CACHE_HOME").map(|d| d.join("pi-harness")))
        .or_else(|| var("HOME").map(|d| d.join(".cache/pi-harness")))
}

/// Write every bundled file below `dir` (`dir/cassettes/...`, `dir/expected/...`).
/// Existing files of the same name are replaced; nothing else is touched.
pub fn export(dir: &Path) -> Result<usize, String> {
    for (path, bytes) in files() {
        let target = dir.join(path);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| format!("{}: cannot create the directory: {e}", parent.display()))?;
        }
        pi_cassette::output::write(&target, bytes, &[]).map_err(|e| e.to_string())?;
    }
    Ok(files().len())
}

/// The bundled (cassettes, expected) directories, unpacked once per content version.
pub fn dirs() -> Result<(PathBuf, PathBuf), String> {
    let name = fingerprint();
    let roots = cache_root().into_iter().chain(std::iter::once(
        std::env::temp_dir().join("pi-harness-cache"),
    ));
    let mut last_error = String::new();
    for root in roots {
        let dir = root.join(&name);
        if dir.join(".complete").is_file() {
            return Ok((dir.join("cassettes"), dir.join("expected")));
        }
        // Unpack beside the final name and rename into place: concurrent runs never see
        // a half-written bundle.
        let result = std::fs::create_dir_all(&root)
            .map_err(|e| format!("{}: {e}", root.display()))
            .and_then(|()| {
                tempfile::Builder::new()
                    .prefix(".unpacking-")
                    .tempdir_in(&root)
                    .map_err(|e| format!("{}: {e}", root.display()))
            })
            .and_then(|tmp| {
                export(tmp.path())?;
                std::fs::write(tmp.path().join(".complete"), b"")
                    .map_err(|e| format!("{}: {e}", tmp.path().display()))?;
                let staged = tmp.keep();
                match std::fs::rename(&staged, &dir) {
                    Ok(()) => Ok(()),
                    // Another run won the race: use its copy.
                    Err(_) if dir.join(".complete").is_file() => {
                        let _ = std::fs::remove_dir_all(&staged);
                        Ok(())
                    }
                    Err(e) => {
                        let _ = std::fs::remove_dir_all(&staged);
                        Err(format!("{}: {e}", dir.display()))
                    }
                }
            });
        match result {
            Ok(()) => return Ok((dir.join("cassettes"), dir.join("expected"))),
            Err(e) => last_error = e,
        }
    }
    Err(format!("cannot unpack the bundled suite: {last_error}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bundle_holds_every_cassette_and_expected_stream() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR"));
        let count = |dir: &Path, ends: &[&str]| -> usize {
            let mut n = 0;
            let mut todo = vec![dir.to_path_buf()];
            while let Some(d) = todo.pop() {
                for e in std::fs::read_dir(&d).unwrap().flatten() {
                    let p = e.path();
                    let name = p.file_name().unwrap().to_string_lossy().into_owned();
                    if p.is_dir() {
                        todo.push(p);
                    } else if ends.iter().any(|x| name.ends_with(x)) {
                        n += 1;
                    }
                }
            }
            n
        };
        let cassettes = count(
            &src.join("../cassettes"),
            &[
                ".cassette.jsonl",
                ".cassette.jsonl.gz",
                ".cassette.jsonl.zst",
                ".sequence",
            ],
        );
        let expected = count(&src.join("expected"), &[".json", ".json.gz"]);
        let bundled = |p: &str, ends: &[&str]| {
            files()
                .iter()
                .filter(|(f, _)| f.starts_with(p) && ends.iter().any(|x| f.ends_with(x)))
                .count()
        };
        let cassette_ends = [
            ".cassette.jsonl",
            ".cassette.jsonl.gz",
            ".cassette.jsonl.zst",
            ".sequence",
        ];
        assert_eq!(bundled("cassettes/", &cassette_ends), cassettes);
        assert_eq!(bundled("expected/", &[".json", ".json.gz"]), expected);
        let scripts = count(&src.join("../cassettes/scripts"), &[".json", "README.md"]);
        assert_eq!(
            bundled("cassettes/scripts/", &[".json", "README.md"]),
            scripts
        );
        assert!(files()
            .iter()
            .any(|(f, _)| *f == "cassettes/scripts/README.md"));
        assert_eq!(
            files().len(),
            cassettes + expected + scripts,
            "nothing else is bundled"
        );
        for (path, bytes) in files() {
            let on_disk =
                std::fs::read(src.join(if let Some(r) = path.strip_prefix("cassettes/") {
                    format!("../cassettes/{r}")
                } else {
                    path.to_string()
                }))
                .unwrap();
            assert!(on_disk == *bytes, "{path} differs from the source tree");
        }
    }

    #[test]
    fn unpacks_once_into_the_cache_and_exports_anywhere() {
        let cache = tempfile::tempdir().unwrap();
        std::env::set_var("PI_HARNESS_CACHE", cache.path());
        let (c1, e1) = dirs().unwrap();
        let (c2, e2) = dirs().unwrap();
        std::env::remove_var("PI_HARNESS_CACHE");
        assert_eq!((&c1, &e1), (&c2, &e2));
        assert!(c1.starts_with(cache.path()));
        assert!(c1.join("recorded/text_only.pi87.cassette.jsonl").is_file());
        assert!(e1.join("recorded/text_only.pi87.json").is_file());
        let out = tempfile::tempdir().unwrap();
        assert_eq!(export(out.path()).unwrap(), files().len());
        assert!(out
            .path()
            .join("cassettes/recorded/text_only.pi87.cassette.jsonl")
            .is_file());
    }
}
