//! Every `match` over [`pi_grammar::Agent`] in the workspace's Rust sources is exhaustive: no
//! arm `_ =>` (nor a bare binding, `other =>`) where the other arms name agents, so that a new
//! agent is a compile error at each place that must say what it does, never a silent fall
//! into another agent's branch. The sources are read with `syn`; the figures (matches and arms
//! over `Agent`, `==`/`!=` tests and `matches!` against one) are printed with `--nocapture`:
//!
//! ```text
//! cargo test -p pi-grammar --test it agent_matches -- --nocapture
//! ```

use std::path::{Path, PathBuf};

use syn::spanned::Spanned;
use syn::visit::Visit;

/// The workspace's root (two up from this crate).
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every `.rs` file below the crate directories, `target/` left out.
fn sources() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let p = e.path();
            let name = e.file_name();
            if name == "target" || name == "node_modules" || name.to_string_lossy().starts_with('.')
            {
                continue;
            }
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    for dir in ["harness", "fake-pi", "conformance", "benches"] {
        walk(&root().join(dir), &mut out);
    }
    out.sort();
    out
}

/// Does the pattern name a variant of an `Agent` (`Agent::Codex`, `pi_grammar::Agent::Pi`)?
fn names_agent(pat: &syn::Pat) -> bool {
    struct Finder(bool);
    impl<'a> Visit<'a> for Finder {
        fn visit_path(&mut self, p: &'a syn::Path) {
            let segs: Vec<_> = p.segments.iter().map(|s| s.ident.to_string()).collect();
            if segs.len() >= 2 && segs[segs.len() - 2] == "Agent" {
                self.0 = true;
            }
            syn::visit::visit_path(self, p);
        }
    }
    let mut f = Finder(false);
    f.visit_pat(pat);
    f.0
}

/// Is the pattern a catch-all (`_`, a bare binding, `..`)?
fn catch_all(pat: &syn::Pat) -> bool {
    match pat {
        syn::Pat::Wild(_) | syn::Pat::Rest(_) => true,
        syn::Pat::Ident(i) => i.subpat.is_none(),
        syn::Pat::Paren(p) => catch_all(&p.pat),
        _ => false,
    }
}

/// The pattern's columns: a tuple's elements, else the pattern alone; a guard-free
/// `Some(x)` is looked into, as the agent may be wrapped in an option.
fn columns(pat: &syn::Pat) -> Vec<&syn::Pat> {
    match pat {
        syn::Pat::Tuple(t) => t.elems.iter().collect(),
        _ => vec![pat],
    }
}

#[derive(Default)]
struct Figures {
    matches: usize,
    arms: usize,
    comparisons: usize,
    matches_macros: usize,
    catch_alls: Vec<String>,
}

struct Scan<'f> {
    file: String,
    figures: &'f mut Figures,
}

impl<'a> Visit<'a> for Scan<'_> {
    fn visit_expr_match(&mut self, m: &'a syn::ExprMatch) {
        let arms: Vec<Vec<&syn::Pat>> = m.arms.iter().map(|a| columns(&a.pat)).collect();
        let width = arms.iter().map(Vec::len).max().unwrap_or(0);
        let agent_columns: Vec<usize> = (0..width)
            .filter(|&c| {
                arms.iter()
                    .any(|a| a.get(c).is_some_and(|p| names_agent(p)))
            })
            .collect();
        if !agent_columns.is_empty() {
            self.figures.matches += 1;
            for (arm, cols) in m.arms.iter().zip(&arms) {
                if agent_columns
                    .iter()
                    .any(|&c| cols.get(c).is_some_and(|p| names_agent(p)))
                {
                    self.figures.arms += 1;
                }
                // A guarded arm leaves the others to cover every agent: the compiler checks.
                let whole = arm.guard.is_none() && catch_all(&arm.pat);
                let in_column = arm.guard.is_none()
                    && agent_columns
                        .iter()
                        .any(|&c| cols.len() > 1 && cols.get(c).is_some_and(|p| catch_all(p)));
                if whole || in_column {
                    let line = arm.pat.span().start().line;
                    self.figures
                        .catch_alls
                        .push(format!("{}:{line}", self.file));
                }
            }
        }
        syn::visit::visit_expr_match(self, m);
    }

    fn visit_expr_binary(&mut self, b: &'a syn::ExprBinary) {
        let is_agent = |e: &syn::Expr| match e {
            syn::Expr::Path(p) => {
                let segs: Vec<_> = p
                    .path
                    .segments
                    .iter()
                    .map(|s| s.ident.to_string())
                    .collect();
                segs.len() >= 2 && segs[segs.len() - 2] == "Agent"
            }
            _ => false,
        };
        if matches!(b.op, syn::BinOp::Eq(_) | syn::BinOp::Ne(_))
            && (is_agent(&b.left) || is_agent(&b.right))
        {
            self.figures.comparisons += 1;
        }
        syn::visit::visit_expr_binary(self, b);
    }

    fn visit_macro(&mut self, m: &'a syn::Macro) {
        if m.path.is_ident("matches") {
            let text = m.tokens.to_string();
            if text.contains("Agent ::") {
                self.figures.matches_macros += 1;
            }
        }
        syn::visit::visit_macro(self, m);
    }
}

#[test]
fn no_match_over_agents_has_a_catch_all_arm() {
    let mut figures = Figures::default();
    let root = root();
    for path in sources() {
        let text = std::fs::read_to_string(&path).unwrap();
        let file = syn::parse_file(&text)
            .unwrap_or_else(|e| panic!("{}: not Rust syn reads: {e}", path.display()));
        let shown = path
            .strip_prefix(&root)
            .unwrap_or(&path)
            .display()
            .to_string();
        Scan {
            file: shown,
            figures: &mut figures,
        }
        .visit_file(&file);
    }
    eprintln!(
        "over Agent: {} matches with {} arms naming agents, {} catch-all arms, {} `==`/`!=` tests, {} `matches!`",
        figures.matches,
        figures.arms,
        figures.catch_alls.len(),
        figures.comparisons,
        figures.matches_macros
    );
    assert!(
        figures.matches > 0,
        "the scan found no match over Agent: it reads the wrong tree"
    );
    assert!(
        figures.catch_alls.is_empty(),
        "a match over Agent has a catch-all arm (name each agent, or read the registry): {}",
        figures.catch_alls.join(", ")
    );
}
