//! What `cassette-v1.schema.json` rejects in a header and the parser lets through: `null` for
//! an optional field, and flag names that are not plain long names.

use super::report::Report;

/// Check the header line `text` (line `lineno`) against the schema's extra rules.
pub(super) fn check_schema_extras(report: &mut Report, lineno: usize, text: &str) {
    let Ok(value) = serde_json::from_str::<serde_json::Value>(text) else {
        return;
    };
    let mut found = Vec::new();
    nulls(&value, "", &mut found);
    for field in found {
        report.add(
            lineno,
            format!("header field `{field}` is null: leave an optional field out instead"),
        );
    }
    if let Some(flags) = value.pointer("/expect/flags").and_then(|f| f.as_object()) {
        for name in flags.keys() {
            let ok = name
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphanumeric())
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
            if !ok {
                report.add(
                    lineno,
                    format!("header field `expect.flags`: {name:?} is not a long flag name without dashes (write \"mode\", not \"--mode\")"),
                );
            }
        }
    }
}

/// The dotted paths of the `null` values under `v`.
fn nulls(v: &serde_json::Value, at: &str, out: &mut Vec<String>) {
    if let Some(obj) = v.as_object() {
        for (k, v) in obj {
            let here = if at.is_empty() {
                k.clone()
            } else {
                format!("{at}.{k}")
            };
            if v.is_null() {
                out.push(here);
            } else {
                nulls(v, &here, out);
            }
        }
    }
}
