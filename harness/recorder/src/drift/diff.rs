//! A line diff with context (longest common subsequence): how a drifted stream is shown.

use std::fmt::Write as _;

/// A line diff of `a` (committed) and `b` (fresh) with `context` lines around each change;
/// `-` lines are committed only, `+` lines fresh only. Empty when equal.
pub fn diff(a: &[String], b: &[String], context: usize) -> String {
    // Longest common subsequence table (streams are a few hundred lines at most).
    let (n, m) = (a.len(), b.len());
    let mut lcs = vec![vec![0u32; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let mut ops: Vec<(char, &str)> = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < n || j < m {
        if i < n && j < m && a[i] == b[j] {
            ops.push((' ', &a[i]));
            i += 1;
            j += 1;
        } else if i < n && (j == m || lcs[i + 1][j] >= lcs[i][j + 1]) {
            ops.push(('-', &a[i]));
            i += 1;
        } else {
            ops.push(('+', &b[j]));
            j += 1;
        }
    }
    let changed: Vec<usize> = ops
        .iter()
        .enumerate()
        .filter(|(_, o)| o.0 != ' ')
        .map(|(k, _)| k)
        .collect();
    let mut out = String::new();
    let mut last_shown: Option<usize> = None;
    for (k, (op, line)) in ops.iter().enumerate() {
        let near = changed.iter().any(|&c| c.abs_diff(k) <= context);
        if !near {
            continue;
        }
        if last_shown.is_some_and(|l| l + 1 != k) || (last_shown.is_none() && k > 0) {
            out.push_str("    ...\n");
        }
        let _ = writeln!(out, "  {op} {line}");
        last_shown = Some(k);
    }
    out
}
