//! The verdict on one case ([`judge`]): the implementation's stream compared with the
//! expected one (the first [`MAX_DIFFS`] differences kept, large values cut), together with
//! the problems its run had; and [`CaseResult`], the verdict as the report and `--json` show it.

use serde::Serialize;
use serde_json::Value;

use crate::compare::{compare_each, FieldDiff};
use crate::expected::Expected;
use crate::implementation::ImplOutput;

/// The verdict on one case.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "status", rename_all = "lowercase")]
pub enum Verdict {
    /// The stream equals the expected one and nothing else went wrong.
    Passed,
    /// The stream differs, or something else went wrong.
    Failed {
        /// Problems other than stream differences (bad lines, survivors, timeout, exit).
        problems: Vec<String>,
        /// The first [`MAX_DIFFS`] differences.
        diffs: Vec<FieldDiff>,
        /// Differences past those (absent when none).
        #[serde(skip_serializing_if = "is_zero", default)]
        unlisted_diffs: usize,
    },
    /// Not run: the case needs capabilities the implementation does not claim.
    Skipped {
        /// The capabilities needed but not claimed.
        missing: Vec<String>,
    },
}

/// One case's line of the report, and of `--json`.
#[derive(Debug, Clone, Serialize)]
pub struct CaseResult {
    /// The case name.
    pub case: String,
    /// The capabilities the case needs.
    pub capabilities: Vec<String>,
    /// How it went.
    #[serde(flatten)]
    pub verdict: Verdict,
    /// How long the case took, in milliseconds.
    pub ms: u64,
}

/// Judge one case from what the implementation produced.
pub fn judge(expected: &Expected, out: &ImplOutput) -> Verdict {
    // The report keeps a bounded part of a stream that differs everywhere.
    let (mut diffs, total) = compare_each(
        &expected.messages,
        out.messages.len(),
        |i| serde_json::from_str(out.messages[i].get()).expect("read as JSON before"),
        MAX_DIFFS,
    );
    for d in &mut diffs {
        for v in [&mut d.expected, &mut d.actual].into_iter().flatten() {
            shorten_value(v);
        }
    }
    if diffs.is_empty() && out.problems.is_empty() {
        Verdict::Passed
    } else {
        let unlisted_diffs = total - diffs.len();
        Verdict::Failed {
            problems: out.problems.clone(),
            diffs,
            unlisted_diffs,
        }
    }
}

/// Whether a count is zero (serde: `unlisted_diffs` is left out then).
fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// Field differences a verdict keeps (the report prints the first 12).
pub const MAX_DIFFS: usize = 100;
/// A value in a kept difference larger than this (as JSON) becomes a string saying so.
const MAX_DIFF_VALUE: usize = 4096;

/// A large value replaced by its start and its size.
fn shorten_value(v: &mut Value) {
    let text = v.to_string();
    if text.len() > MAX_DIFF_VALUE {
        let mut end = 200;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        *v = Value::String(format!(
            "{}... ({} bytes of JSON)",
            &text[..end],
            text.len()
        ));
    }
}
