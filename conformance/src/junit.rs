//! CI-native output: the JUnit XML report CI dashboards read ([`junit`]: `testsuites`, one
//! `testsuite`, one `testcase` per case, a `failure` with the report's lines for the case, a
//! `skipped` for a case the implementation does not claim), and the deterministic sharding
//! of the cases across CI machines ([`Partition`], `--partition K/N`). Pure: the caller
//! decides where the text goes.

use std::fmt::Write as _;

use crate::report::case_text;
use crate::verdict::{CaseResult, Verdict};

/// One shard of the cases: `K/N` (or nextest's spelling, `count:K/N`). The cases, in the
/// order the suite runs them, are dealt round-robin: the i-th (from 0) goes to shard
/// `i % N + 1`, so shards differ by at most one case and every case is in exactly one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Partition {
    /// K, from 1.
    pub index: usize,
    /// N, at least 1.
    pub count: usize,
}

impl Partition {
    /// Whether the case at `position` (from 0, in the suite's order) is in this shard.
    pub fn selects(&self, position: usize) -> bool {
        position % self.count == self.index - 1
    }
}

impl std::str::FromStr for Partition {
    type Err = String;

    /// `K/N` or `count:K/N`, 1 <= K <= N.
    fn from_str(text: &str) -> Result<Partition, String> {
        let spec = text.strip_prefix("count:").unwrap_or(text);
        let bad =
            || format!("expected K/N (or count:K/N) with 1 <= K <= N, like 1/4, found {text:?}");
        let (k, n) = spec.split_once('/').ok_or_else(bad)?;
        let (index, count) = match (k.parse::<usize>(), n.parse::<usize>()) {
            (Ok(k), Ok(n)) => (k, n),
            _ => return Err(bad()),
        };
        if count == 0 || index == 0 || index > count {
            return Err(bad());
        }
        Ok(Partition { index, count })
    }
}

impl std::fmt::Display for Partition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// Text as XML character data or an attribute value: the five special characters escaped,
/// and the characters XML 1.0 does not allow (most controls) replaced by U+FFFD.
pub fn escape(text: &str) -> String {
    let mut s = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => s.push_str("&amp;"),
            '<' => s.push_str("&lt;"),
            '>' => s.push_str("&gt;"),
            '"' => s.push_str("&quot;"),
            '\'' => s.push_str("&apos;"),
            '\t' | '\n' | '\r' => s.push(c),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => s.push('\u{FFFD}'),
            c => s.push(c),
        }
    }
    s
}

/// Seconds, as JUnit's `time` attributes hold them.
fn seconds(ms: u64) -> String {
    format!("{:.3}", ms as f64 / 1000.0)
}

/// The JUnit XML report of one run of the suite against implementation `name`: a
/// `testsuite` named `conform` with one `testcase` per result (its `classname` the case's
/// directory: `conform.recorded`, `conform.rpc`, `conform.claude`, or `conform`).
pub fn junit(name: &str, results: &[CaseResult]) -> String {
    junit_with_pages(name, results, &[])
}

/// As [`junit`], with a page for some failed cases (`(case, path)`: its timeline), linked from
/// its `testcase`: a `timeline` property and, in `system-out`, `timeline: PATH` and the
/// `[[ATTACHMENT|PATH]]` line CI servers (Jenkins, GitLab) show as an attachment.
pub fn junit_with_pages(name: &str, results: &[CaseResult], pages: &[(String, String)]) -> String {
    let failures = results
        .iter()
        .filter(|r| matches!(r.verdict, Verdict::Failed { .. }))
        .count();
    let skipped = results
        .iter()
        .filter(|r| matches!(r.verdict, Verdict::Skipped { .. }))
        .count();
    let total: u64 = results.iter().map(|r| r.ms).sum();
    let counts = format!(
        r#"tests="{}" failures="{failures}" errors="0" skipped="{skipped}" time="{}""#,
        results.len(),
        seconds(total)
    );
    let mut s = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    writeln!(s, r#"<testsuites name="pi-harness conform" {counts}>"#).unwrap();
    writeln!(s, r#"  <testsuite name="conform" {counts}>"#).unwrap();
    writeln!(s, "    <properties>").unwrap();
    writeln!(
        s,
        r#"      <property name="implementation" value="{}"/>"#,
        escape(name)
    )
    .unwrap();
    writeln!(s, "    </properties>").unwrap();
    for r in results {
        let class = match r.case.rsplit_once('/') {
            Some((dir, _)) => format!("conform.{}", dir.replace('/', ".")),
            None => "conform".to_string(),
        };
        let open = format!(
            r#"    <testcase name="{}" classname="{}" time="{}""#,
            escape(&r.case),
            escape(&class),
            seconds(r.ms)
        );
        match &r.verdict {
            Verdict::Passed => writeln!(s, "{open}/>").unwrap(),
            Verdict::Skipped { missing } => writeln!(
                s,
                "{open}>\n      <skipped message=\"not claimed: {}\"/>\n    </testcase>",
                escape(&missing.join(", "))
            )
            .unwrap(),
            Verdict::Failed {
                problems, diffs, ..
            } => {
                let message = match (problems.first(), diffs.len()) {
                    (Some(p), _) => p.clone(),
                    (None, n) => format!(
                        "the stream differs from the expected one ({n} or more differences)"
                    ),
                };
                let page = pages
                    .iter()
                    .find(|(case, _)| *case == r.case)
                    .map(|(_, p)| escape(p));
                let properties = page.as_ref().map_or(String::new(), |p| {
                    format!("\n      <properties>\n        <property name=\"timeline\" value=\"{p}\"/>\n      </properties>")
                });
                let out = page.as_ref().map_or(String::new(), |p| {
                    format!("\n      <system-out>timeline: {p}\n[[ATTACHMENT|{p}]]</system-out>")
                });
                writeln!(
                    s,
                    "{open}>{properties}\n      <failure message=\"{}\" type=\"mismatch\">{}</failure>{out}\n    </testcase>",
                    escape(&message),
                    escape(&case_text(r))
                )
                .unwrap();
            }
        }
    }
    s.push_str("  </testsuite>\n</testsuites>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partitions_are_read_as_nextest_writes_them() {
        let p: Partition = "2/4".parse().unwrap();
        assert_eq!(p, Partition { index: 2, count: 4 });
        assert_eq!("count:2/4".parse::<Partition>().unwrap(), p);
        assert_eq!(p.to_string(), "2/4");
        for bad in [
            "0/4", "5/4", "1/0", "1", "a/b", "1/4/2", "hash:1/4", " 1/4", "",
        ] {
            let e = bad.parse::<Partition>().unwrap_err();
            assert!(e.starts_with("expected K/N (or count:K/N)"), "{bad}: {e}");
        }
    }

    #[test]
    fn shards_deal_the_cases_round_robin_each_once() {
        for n in 1..=7 {
            for cases in 0..30 {
                let mut seen = vec![0; cases];
                for k in 1..=n {
                    let p = Partition { index: k, count: n };
                    let mine: Vec<usize> = (0..cases).filter(|&i| p.selects(i)).collect();
                    assert!(mine.len() == cases / n || mine.len() == cases / n + 1);
                    for i in mine {
                        seen[i] += 1;
                    }
                }
                assert!(seen.iter().all(|&c| c == 1), "n={n} cases={cases}");
            }
        }
    }

    #[test]
    fn xml_text_is_escaped_and_kept_legal() {
        assert_eq!(escape("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&apos;");
        assert_eq!(escape("tab\tnl\nbell\u{7}"), "tab\tnl\nbell\u{FFFD}");
    }
}
