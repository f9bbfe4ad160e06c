//! How pi names a session on disk: the directory of a working directory's sessions
//! ([`cwd_slug`]), a session's file name ([`session_file_name`]), and the session ids pi
//! accepts and a cassette may carry.

/// The directory name pi gives a working directory's sessions under
/// `<agent dir>/sessions`: `--<cwd without its leading '/', '/', '\' and ':' as '-'>--`.
pub fn cwd_slug(cwd: &str) -> String {
    let body: String = cwd
        .trim_start_matches('/')
        .chars()
        .map(|c| {
            if matches!(c, '/' | '\\' | ':') {
                '-'
            } else {
                c
            }
        })
        .collect();
    format!("--{body}--")
}

/// The file name pi gives a session: its start time (ISO, `:` and `.` as `-`), `_`, its id.
pub fn session_file_name(timestamp: &str, id: &str) -> String {
    let stamp: String = timestamp
        .chars()
        .map(|c| if c == ':' || c == '.' { '-' } else { c })
        .collect();
    format!("{stamp}_{id}.jsonl")
}

/// The longest session id a cassette may carry, in bytes: with the time stamp, `_` and
/// `.jsonl` of [`session_file_name`] the name stays well under the 255 bytes a file name may
/// have. (pi sets no length of its own; its ids are 36-byte uuids.)
pub const MAX_SESSION_ID_BYTES: usize = 200;

/// Whether `id` is safe as the id part of a session file's name: pi's own syntax
/// ([`is_valid_session_id`]: no `/`, no NUL, no leading `.`) and at most
/// [`MAX_SESSION_ID_BYTES`]. A cassette's recorded ids are held to this before fake-pi
/// names a file after one.
pub fn is_file_safe_session_id(id: &str) -> bool {
    id.len() <= MAX_SESSION_ID_BYTES && is_valid_session_id(id)
}

/// pi 0.87.1's session id syntax: `^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$`.
pub fn is_valid_session_id(id: &str) -> bool {
    let b = id.as_bytes();
    let inner = |c: &u8| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'-');
    match (b.first(), b.last()) {
        (Some(f), Some(l)) => {
            f.is_ascii_alphanumeric() && l.is_ascii_alphanumeric() && b.iter().all(inner)
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_names_like_pi() {
        assert_eq!(
            cwd_slug("/tmp/pi-sess-1.5.2-6a7m02gs/work"),
            "--tmp-pi-sess-1.5.2-6a7m02gs-work--"
        );
        assert_eq!(cwd_slug("/a:b\\c"), "--a-b-c--");
        assert_eq!(
            session_file_name("2026-11-23T14:18:01.961Z", "my-run-1"),
            "2026-11-23T14-18-01-961Z_my-run-1.jsonl"
        );
    }
}
