//! Finding the programs a run needs: an executable on `PATH` ([`which`]) and pi's version,
//! asked of pi once per binary ([`probe_version`]).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use tokio::process::Command;

/// Search `PATH` for an executable name.
pub fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

static VERSIONS: OnceLock<Mutex<HashMap<PathBuf, String>>> = OnceLock::new();

/// `pi --version`, once per binary path. 0.73.1 prints it on stderr, 0.87.1 on stdout.
pub async fn probe_version(pi: &Path, env: &[(String, String)]) -> Result<String, String> {
    let cache = VERSIONS.get_or_init(Default::default);
    if let Some(v) = cache.lock().expect("version cache").get(pi) {
        return Ok(v.clone());
    }
    let out = tokio::time::timeout(
        Duration::from_secs(20),
        Command::new(pi)
            .arg("--version")
            .env("PI_OFFLINE", "1")
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .map_err(|_| format!("`{} --version` did not answer within 20 s", pi.display()))?
    .map_err(|e| format!("cannot start {}: {e}", pi.display()))?;
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let version = text
        .split_whitespace()
        .find(|w| {
            w.split('.').count() == 3
                && w.split('.')
                    .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
        })
        .ok_or_else(|| {
            format!(
                "`{} --version` printed no version: {:?}",
                pi.display(),
                text.trim()
            )
        })?
        .to_string();
    cache
        .lock()
        .expect("version cache")
        .insert(pi.to_path_buf(), version.clone());
    Ok(version)
}
