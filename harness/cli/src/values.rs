//! The option values several commands take: durations (`500ms`, `1.5s`, `1m`) and `K=V`
//! pairs, parsed for clap with an error that names the text.

use std::time::Duration;

/// The longest duration any option takes: 30 days (a deadline past it is a typo, and
/// adding it to the clock must not overflow).
pub const MAX_DURATION: Duration = Duration::from_secs(30 * 24 * 3600);

/// `500ms`, `2s`, `1.5s`, `1m`, `1h` -> a duration, at most [`MAX_DURATION`].
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let bad = || format!("expected a duration like 500ms, 2s, 1.5s or 1m, found {text:?}");
    let value: f64 = num.parse().map_err(|_| bad())?;
    let secs = match unit {
        "ms" => value / 1000.0,
        "s" => value,
        "m" => value * 60.0,
        "h" => value * 3600.0,
        _ => return Err(bad()),
    };
    let d = Duration::try_from_secs_f64(secs).map_err(|_| bad())?;
    if d > MAX_DURATION {
        return Err(format!(
            "{text:?} is longer than 30 days (the most any option takes)"
        ));
    }
    Ok(d)
}

/// `K=V` -> `(K, V)`; the name must be non-empty and hold no `=`.
pub fn parse_env_pair(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((k, v)) if !k.is_empty() && !k.contains('\0') && !v.contains('\0') => {
            Ok((k.to_string(), v.to_string()))
        }
        // The value may be a secret: only the name is shown.
        Some((k, _)) if !k.is_empty() && !k.contains('\0') => {
            Err(format!("{k}: the value holds a NUL byte"))
        }
        Some(_) => Err("expected NAME=VALUE, found an empty NAME".into()),
        None => Err(format!("expected NAME=VALUE, found {text:?}")),
    }
}

/// `--secret-env NAME`: the name (letters, digits and `_`, not starting with a digit) and its
/// value in this process's environment, which must be set and non-empty. No message shows
/// the value.
pub fn parse_secret_env(name: &str) -> Result<(String, String), String> {
    let ok = name
        .bytes()
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    if !ok {
        return Err(format!(
            "{name:?} is not a variable name (letters, digits and _, not starting with a digit)"
        ));
    }
    match std::env::var(name) {
        Ok(v) if !v.is_empty() => Ok((name.to_string(), v)),
        Ok(_) => Err(format!("${name} is empty here: nothing to keep secret")),
        Err(std::env::VarError::NotPresent) => Err(format!("${name} is not set here")),
        Err(std::env::VarError::NotUnicode(_)) => Err(format!("${name} is not UTF-8")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// Any text: a duration of at most 30 days or an error naming the text; no panic.
        #[test]
        fn any_duration_text(text in "\\PC{0,24}|[0-9.e+-]{0,30}(ms|s|m|h)?") {
            match parse_duration(&text) {
                Ok(d) => proptest::prop_assert!(d <= MAX_DURATION),
                Err(e) => {
                    let shown = format!("{:?}", text);
                    proptest::prop_assert!(e.contains(&shown), "{} lacks {}", e, shown)
                }
            }
        }
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("720h"), Ok(MAX_DURATION));
        for long in ["721h", "10000000000000000000s", "1e400s"] {
            assert!(parse_duration(long).is_err(), "{long}");
        }
        assert_eq!(parse_duration("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("1m"), Ok(Duration::from_secs(60)));
        assert_eq!(parse_duration("0s"), Ok(Duration::ZERO));
        for bad in ["", "5", "ms", "5x", "-1s", "1..2s", "s5"] {
            let e = parse_duration(bad).unwrap_err();
            assert!(e.contains(&format!("{bad:?}")), "{bad}: {e}");
        }
    }

    #[test]
    fn env_pairs() {
        assert_eq!(parse_env_pair("A=b=c"), Ok(("A".into(), "b=c".into())));
        assert_eq!(parse_env_pair("A="), Ok(("A".into(), String::new())));
        assert!(parse_env_pair("=x").is_err());
        assert!(parse_env_pair("AB").unwrap_err().contains("NAME=VALUE"));
    }
}
