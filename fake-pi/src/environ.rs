//! The environment variables fake-pi reads where it uses them: any variable as text
//! ([`var`]), how long a two-way replay waits for its client ([`rpc_wait`]), and the lifetimes
//! of what fake-pi leaves running ([`lifetime_ms`], all checked at the start by
//! [`check_lifetimes`]).

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

/// The longest anything fake-pi starts lives once nobody ends it, in milliseconds (10
/// minutes): the ceiling of every lifetime variable ([`LIFETIMES`]).
pub(crate) const MAX_LIFETIME_MS: u64 = 600_000;

/// The variables that bound how long what fake-pi leaves running lives: a `spawn` child
/// (`FAKE_PI_CHILD_MAX_MS`), Codex's orphaned native child (`FAKE_PI_CODEX_ORPHAN_MS`),
/// Gemini CLI's orphans (`FAKE_PI_GEMINI_ORPHAN_MS`), and the bound a replay hands its tools
/// (`FAKE_PI_TOOL_ORPHAN_MS`, set by fake-pi itself).
pub(crate) const LIFETIMES: [&str; 4] = [
    "FAKE_PI_CHILD_MAX_MS",
    "FAKE_PI_CODEX_ORPHAN_MS",
    "FAKE_PI_GEMINI_ORPHAN_MS",
    "FAKE_PI_TOOL_ORPHAN_MS",
];

/// The lifetime variable `name` (milliseconds): `Ok(None)` when unset or empty; `Err` the
/// one line to say when it is not a whole number from 1 to [`MAX_LIFETIME_MS`] (a value
/// such as `18446744073709551615` left an orphan that never ended).
pub(crate) fn lifetime_ms(name: &str) -> Result<Option<u64>, String> {
    let Some(raw) = var(name).filter(|v| !v.trim().is_empty()) else {
        return Ok(None);
    };
    match raw.trim().parse::<u64>() {
        Ok(ms) if (1..=MAX_LIFETIME_MS).contains(&ms) => Ok(Some(ms)),
        _ => Err(format!(
            "{name}: expected a whole number of milliseconds from 1 to {MAX_LIFETIME_MS} (10 minutes, the longest anything fake-pi starts lives), not {raw:?}"
        )),
    }
}

/// Every lifetime variable checked (fake-pi's start refuses a bad one before it runs
/// anything, so no process it leaves reads one): the first one's line.
pub(crate) fn check_lifetimes() -> Result<(), String> {
    LIFETIMES
        .iter()
        .try_for_each(|v| lifetime_ms(v).map(|_| ()))
}

/// The lifetime variable `name`, else `default`; a bad value (refused at the start, so only
/// met by a process started otherwise) counts as unset; never past the ceiling.
pub(crate) fn lifetime_or(name: &str, default: u64) -> u64 {
    lifetime_ms(name)
        .unwrap_or(Some(default))
        .unwrap_or(default)
        .min(MAX_LIFETIME_MS)
}
