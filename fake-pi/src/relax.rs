//! Matching loosened at test time, and the next step a mismatch names.
//!
//! `FAKE_PI_IGNORE=model,env` (commas or spaces between names) adds fields to the header's
//! `expect.irrelevant` for this start only, as `pi-harness cassette relax --ignore` writes
//! them into the file: the test helpers set it from a test's `ignore` option, so a test
//! says what it does not care about without rewriting the cassette. The names are
//! `pi_cassette::matching::IGNORABLE`'s (the effective fields, `env`, `stdin`); another is
//! fake-pi's misuse (exit 96), named.
//!
//! Every expectation mismatch (exit 99) ends with one line that says what to do next
//! ([`next_step`]): record the cassette again and review it, or ignore the fields that
//! differ at replay.

use pi_cassette::matching::IGNORABLE;
use pi_cassette::Header;

/// The variable naming the fields to ignore.
pub(crate) const IGNORE_ENV: &str = "FAKE_PI_IGNORE";

/// The fields `value` names, each checked; the one-line error naming a field that cannot
/// be ignored.
pub(crate) fn fields(value: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for name in value
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|n| !n.is_empty())
    {
        if !IGNORABLE.contains(&name) {
            return Err(format!(
                "{IGNORE_ENV}: {name:?} is not a field a replay can ignore (known: {})",
                IGNORABLE.join(", ")
            ));
        }
        out.push(name.to_string());
    }
    Ok(out)
}

/// Add the fields of `FAKE_PI_IGNORE` (when set) to `header`'s ignored ones.
pub(crate) fn apply(header: &mut Header) -> Result<(), String> {
    if let Some(value) = crate::environ::var(IGNORE_ENV) {
        let names = fields(&value)?;
        header.expect.ignore(&names);
    }
    Ok(())
}

/// The field a mismatch line is about, as `FAKE_PI_IGNORE` names it (`expect.effective.model:
/// ...` is `model`, `expect.env.KEY: ...` is `env`, `stdin: ...` is `stdin`); `None` for one
/// no replay can ignore (a secret in argv, a flag the syntax check wants).
fn ignorable_field(mismatch: &str) -> Option<&'static str> {
    let field = mismatch.split(": ").next()?;
    let field = field.strip_prefix("expect.").unwrap_or(field);
    let field = field.strip_prefix("effective.").unwrap_or(field);
    let name = field.split('.').next()?;
    IGNORABLE.iter().copied().find(|f| *f == name)
}

/// The line that follows a mismatch's: what to do when the new call is right (record the
/// cassette again, then review), or when the fields that differ do not matter (ignore them
/// at replay).
pub(crate) fn next_step(mismatches: &[String]) -> String {
    let mut fields: Vec<&str> = Vec::new();
    for f in mismatches.iter().filter_map(|m| ignorable_field(m)) {
        if !fields.contains(&f) {
            fields.push(f);
        }
    }
    let record = "if the new call is right, record the cassette again (record mode all: --pi-record-mode all, recordMode: 'all' or PI_HARNESS_RECORD_MODE=all; then pi-harness cassette review)";
    if fields.is_empty() {
        return format!("fake-pi: next: {record}");
    }
    let (does, it) = if fields.len() == 1 {
        ("does", "it")
    } else {
        ("do", "them")
    };
    format!(
        "fake-pi: next: {record}; if {} {does} not matter, ignore {it} at replay (the test's ignore option, {IGNORE_ENV}={}, or pi-harness cassette relax --ignore {})",
        fields.join(" and "),
        fields.join(","),
        fields.join(" ")
    )
}

/// Say each mismatch (`fake-pi: expectation mismatch: LINE (WHERE)`), then the next step;
/// the status of a mismatch.
pub(crate) fn mismatched(mismatches: &[String], place: &str) -> i32 {
    for m in mismatches {
        crate::exit::say(&format!("fake-pi: expectation mismatch: {m} ({place})"));
    }
    crate::exit::say(&next_step(mismatches));
    crate::exit::EXPECTATION
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked() {
        assert_eq!(
            fields("model, env  stdin").unwrap(),
            ["model", "env", "stdin"]
        );
        assert!(fields("").unwrap().is_empty());
        let e = fields("model,colour").unwrap_err();
        assert!(
            e.starts_with("FAKE_PI_IGNORE: \"colour\" is not a field"),
            "{e}"
        );
    }

    #[test]
    fn the_next_step_names_the_fields_that_can_be_ignored() {
        let m = [
            "expect.effective.model: expected \"gpt-5.5\", got \"o3\"".to_string(),
            "expect.env.CODEX_API_KEY: expected set and non-empty, got unset".to_string(),
            "expect.never_in_argv: the value of $KEY is in argv".to_string(),
        ];
        let line = next_step(&m);
        assert!(line.contains("FAKE_PI_IGNORE=model,env"), "{line}");
        assert!(line.contains("record mode all"), "{line}");
        assert!(!next_step(&m[2..]).contains("FAKE_PI_IGNORE"));
        let stdin = ["stdin: the recording's was a pipe, this call's is a terminal".to_string()];
        assert!(next_step(&stdin).contains("FAKE_PI_IGNORE=stdin"));
    }
}
