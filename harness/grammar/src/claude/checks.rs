//! What Claude Code checks once commander has read argv, before it reads stdin, with its
//! exact `Error: ...` lines (measured on 2.1.330), and JavaScript's `Number()` for the
//! parser's number checks.

use super::{error, Parsed, Stop};

/// The CLI's own checks of a parsed command line. `stdout_tty`: a terminal stdout (a
/// non-terminal one implies `--print`).
pub(super) fn check(p: &Parsed, stdout_tty: bool) -> Result<(), Stop> {
    let print = p.has("print") || !stdout_tty;
    let input = p.value("input-format").unwrap_or("text");
    let output = p.value("output-format").unwrap_or("text");
    if let Some(id) = p.value("session-id") {
        if !is_uuid(id) {
            return Err(error(
                "Error: Invalid session ID. Must be a valid UUID.\n".into(),
            ));
        }
    }
    if input == "stream-json" && output != "stream-json" {
        return Err(error(
            "Error: --input-format=stream-json requires output-format=stream-json.\n".into(),
        ));
    }
    if print && output == "stream-json" && !p.has("verbose") {
        return Err(error(
            "Error: When using --print, --output-format=stream-json requires --verbose\n".into(),
        ));
    }
    if p.has("include-partial-messages") && !(print && output == "stream-json") {
        return Err(error(
            "Error: --include-partial-messages requires --print and --output-format=stream-json.\n"
                .into(),
        ));
    }
    if p.has("replay-user-messages") && !(input == "stream-json" && output == "stream-json") {
        return Err(error("Error: --replay-user-messages requires both --input-format=stream-json and --output-format=stream-json.\n".into()));
    }
    Ok(())
}

/// `8-4-4-4-12` hex digits.
fn is_uuid(s: &str) -> bool {
    let parts: Vec<&str> = s.split('-').collect();
    parts.len() == 5
        && parts
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(p, n)| p.len() == n && p.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// JavaScript's `Number(s)`; `None` for `NaN`. Surrounding white space is ignored, the
/// empty string is 0; `0x`/`0o`/`0b` integers; `Infinity` with a sign or none; decimal
/// literals with an optional sign, fraction and exponent.
pub(crate) fn js_number(s: &str) -> Option<f64> {
    let t = s.trim_matches(|c: char| c.is_whitespace() || c == '\u{feff}');
    if t.is_empty() {
        return Some(0.0);
    }
    for (prefix, radix) in [("0x", 16), ("0o", 8), ("0b", 2)] {
        let lower = t.get(..2).map(str::to_ascii_lowercase);
        if lower.as_deref() == Some(prefix) {
            let digits = &t[2..];
            if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
                return None;
            }
            return Some(digits.chars().fold(0.0, |n, c| {
                n * f64::from(radix) + f64::from(c.to_digit(radix).unwrap_or(0))
            }));
        }
    }
    let unsigned = t.strip_prefix(['+', '-']).unwrap_or(t);
    if unsigned == "Infinity" {
        return Some(if t.starts_with('-') {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        });
    }
    let (mantissa, exponent) = match unsigned.find(['e', 'E']) {
        Some(i) => (&unsigned[..i], Some(&unsigned[i + 1..])),
        None => (unsigned, None),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits = |d: &str| d.bytes().all(|b| b.is_ascii_digit());
    let mantissa_ok = digits(int) && digits(frac) && !(int.is_empty() && frac.is_empty());
    let exponent_ok = exponent.map_or(true, |e| {
        let e = e.strip_prefix(['+', '-']).unwrap_or(e);
        !e.is_empty() && digits(e)
    });
    if !(mantissa_ok && exponent_ok) {
        return None;
    }
    t.parse().ok()
}
