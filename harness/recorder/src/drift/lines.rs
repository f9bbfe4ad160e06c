//! Stream lines kept comparable: long strings shortened with a hash (values that vary run to
//! run scrubbed first), and runs of lines whose order depends on timing sorted.

/// Values pi writes that change from run to run of the same scenario (pi 1.x): a tool's
/// wall time in its result text and `structuredContent`, and `durationMs`.
pub(super) fn scrub_volatile(s: &str) -> String {
    let mut out = s.to_string();
    for (before, after) in [
        ("Wall time ", " seconds"),
        ("\"wall_time_seconds\":", ""),
        ("\\\"wall_time_seconds\\\":", ""),
        ("\"durationMs\":", ""),
        ("\\\"durationMs\\\":", ""),
    ] {
        let mut result = String::with_capacity(out.len());
        let mut rest = out.as_str();
        while let Some(at) = rest.find(before) {
            let start = at + before.len();
            result.push_str(&rest[..start]);
            let tail = &rest[start..];
            let n = tail
                .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == 'e' || c == '-'))
                .unwrap_or(tail.len());
            if n > 0 && tail[n..].starts_with(after) {
                result.push('N');
            } else {
                result.push_str(&tail[..n]);
            }
            rest = &tail[n..];
        }
        result.push_str(rest);
        out = result;
    }
    out
}

/// Show long strings by their start, length and a hash, so a diff line stays readable but
/// any change anywhere in the string still shows.
pub(super) fn short(s: &str) -> String {
    let s = &scrub_volatile(s);
    const MAX: usize = 160;
    if s.chars().count() <= MAX {
        return format!("{s:?}");
    }
    let head: String = s.chars().take(80).collect();
    let mut h: u64 = 0xcbf29ce484222325;
    for b in s.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x100000001b3);
    }
    format!("{head:?}… ({} chars, fnv {h:016x})", s.chars().count())
}

/// Sort each run of consecutive lines starting with `prefix`: tools of one assistant message
/// run in parallel and pi reports their ends in completion order, which varies run to run.
pub(super) fn sort_runs(lines: &mut [String], prefix: &str) {
    sort_runs_of(lines, &[prefix]);
}

/// Sort each run of consecutive lines that start with any of `prefixes`.
pub(super) fn sort_runs_of(lines: &mut [String], prefixes: &[&str]) {
    let starts = |l: &String| prefixes.iter().any(|p| l.starts_with(p));
    let mut i = 0;
    while i < lines.len() {
        let mut j = i;
        while j < lines.len() && starts(&lines[j]) {
            j += 1;
        }
        if j > i + 1 {
            lines[i..j].sort();
        }
        i = j.max(i + 1);
    }
}
