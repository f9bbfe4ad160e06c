//! The environment variables fake-pi reads where it uses them: any variable as text
//! ([`var`]), and how long a two-way replay waits for its client ([`rpc_wait`]).

/// The variable `k` as text (lossy), when set.
pub(crate) fn var(k: &str) -> Option<String> {
    std::env::var_os(k).map(|v| v.to_string_lossy().into_owned())
}

/// `FAKE_PI_RPC_WAIT_MS`: how long a two-way replay waits for the client (`None`: as long as
/// it takes).
pub(crate) fn rpc_wait() -> Result<Option<std::time::Duration>, String> {
    match var("FAKE_PI_RPC_WAIT_MS").map(|v| v.trim().parse::<u64>()) {
        None => Ok(None),
        Some(Ok(ms)) if ms > 0 => Ok(Some(std::time::Duration::from_millis(ms))),
        Some(_) => {
            Err("FAKE_PI_RPC_WAIT_MS: expected a whole number of milliseconds above 0".into())
        }
    }
}
