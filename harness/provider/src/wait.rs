//! How long the provider waits: the longest wait it honours ([`MAX_WAIT`]) and deadlines
//! capped by it, so no deadline overflows the clock.

use std::time::Duration;

/// The longest wait the provider honours (30 days): a longer `grace`, `kill_wait` or
/// timeout is taken as this, so deadlines never overflow the clock.
pub const MAX_WAIT: Duration = Duration::from_secs(30 * 24 * 3600);

/// `now + d`, with `d` capped at [`MAX_WAIT`].
pub(crate) fn after(d: Duration) -> tokio::time::Instant {
    tokio::time::Instant::now() + d.min(MAX_WAIT)
}

/// Sleep until `until`; forever when there is no deadline.
pub(crate) async fn sleep_until(until: Option<tokio::time::Instant>) {
    match until {
        Some(t) => tokio::time::sleep_until(t).await,
        None => std::future::pending().await,
    }
}
