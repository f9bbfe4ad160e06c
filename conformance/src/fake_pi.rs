//! Finding the fake-pi binary conform gives every case as its `pi` (or `claude`). Nothing here
//! builds it: it is given, installed beside `pi-harness`, or on `PATH`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Environment variable naming the fake-pi binary.
pub const FAKE_PI_VAR: &str = "PI_HARNESS_FAKE_PI";

/// Find fake-pi: `explicit` (`--fake-pi`), `$PI_HARNESS_FAKE_PI`, beside the running
/// executable, else on `PATH`; otherwise a one-line error naming those ways and how to build
/// or install it.
pub fn find_fake_pi(explicit: Option<&Path>) -> Result<PathBuf, String> {
    let exe = std::env::current_exe().ok();
    find(
        explicit,
        std::env::var_os(FAKE_PI_VAR),
        exe.as_deref(),
        std::env::var_os("PATH"),
    )
}

/// [`find_fake_pi`] with the process's environment, executable and `PATH` as parameters.
fn find(
    explicit: Option<&Path>,
    var: Option<OsString>,
    exe: Option<&Path>,
    path: Option<OsString>,
) -> Result<PathBuf, String> {
    if let Some(p) = explicit {
        return Ok(p.to_path_buf());
    }
    if let Some(p) = var {
        return Ok(PathBuf::from(p));
    }
    let beside = exe.and_then(Path::parent).map(|d| d.join("fake-pi"));
    if let Some(p) = beside.filter(|p| p.is_file()) {
        return Ok(p);
    }
    let on_path = path.and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join("fake-pi"))
            .find(|p| p.is_file())
    });
    on_path.ok_or_else(|| {
        let beside = exe
            .and_then(Path::parent)
            .map_or_else(|| "this executable".to_string(), |d| d.display().to_string());
        format!(
            "fake-pi not found: pass --fake-pi PATH, set {FAKE_PI_VAR}, or put fake-pi in {beside} or on PATH (`cargo build -p fake-pi` builds it, `cargo install --path fake-pi` installs it)"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_then_variable_then_beside_then_path_else_one_line_naming_each_way() {
        let dir = tempfile::tempdir().unwrap();
        let (bin, on_path) = (dir.path().join("bin"), dir.path().join("path"));
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::create_dir_all(&on_path).unwrap();
        let exe = bin.join("pi-harness");
        let path = Some(OsString::from(&on_path));
        let given = Path::new("/given/fake-pi");
        let var = || Some(OsString::from("/var/fake-pi"));
        assert_eq!(
            find(Some(given), var(), Some(&exe), path.clone()),
            Ok(given.into())
        );
        assert_eq!(
            find(None, var(), Some(&exe), path.clone()),
            Ok("/var/fake-pi".into())
        );
        let err = find(None, None, Some(&exe), path.clone()).unwrap_err();
        assert!(!err.contains('\n'), "{err}");
        for way in [
            "--fake-pi",
            FAKE_PI_VAR,
            &bin.display().to_string(),
            "on PATH",
            "cargo build -p fake-pi",
            "cargo install --path fake-pi",
        ] {
            assert!(err.contains(way), "{way}: {err}");
        }
        std::fs::write(on_path.join("fake-pi"), "").unwrap();
        assert_eq!(
            find(None, None, Some(&exe), path.clone()),
            Ok(on_path.join("fake-pi"))
        );
        std::fs::write(bin.join("fake-pi"), "").unwrap();
        assert_eq!(find(None, None, Some(&exe), path), Ok(bin.join("fake-pi")));
    }
}
