//! `pi-harness conform` as a whole ([`conform`]): find fake-pi and the suite, choose the
//! cases, get each one's expected stream (bundled, given, or from the reference), skip what
//! the implementation does not claim, run and judge the rest, and write the report where the
//! caller says ([`Output`]). `--export` writes expected files instead.
//!
//! The pieces live in the modules named for them ([`crate::request`], [`crate::case`],
//! [`crate::capability`], [`crate::case_dir`], [`crate::reference`], [`crate::compare`],
//! [`crate::verdict`], [`crate::implementation`], [`crate::report`], [`crate::expected`],
//! [`crate::fake_pi`]); they are re-exported here under the paths they had when they all
//! lived in this one module.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub use crate::capability::{capabilities_of, missing, CAPABILITIES};
pub use crate::case::{
    case_name, case_of, cassette_files, discover, rpc_steps, Case, CANCEL_IDLE_MS,
};
pub use crate::case_dir::prepare;
pub use crate::compare::{comparable, compare, compare_bounded, FieldDiff, IGNORED_FIELDS};
pub use crate::expected::{
    expected_of, expected_text, load_expected, write_expected, Expected, GZIP_OVER,
};
pub use crate::fake_pi::find_fake_pi;
pub use crate::implementation::{handshake, run_impl, ImplOutput, MARKER_VAR, PROTOCOL_VERSION};
pub use crate::reference::{
    provider_run, provider_run_main, provider_run_request, provider_run_rpc,
    reference_capabilities, reference_run_claude,
};
pub use crate::report::{case_text, report, summary};
pub use crate::request::{
    instantiate, to_provider_request, PiDoc, RequestDoc, RpcStep, SessionDoc, REQUEST_VERSION,
};
pub use crate::verdict::{judge, CaseResult, Verdict, MAX_DIFFS};

use crate::implementation::collect::DEFAULT_MAX_OUTPUT_BYTES;
use crate::reference::REFERENCE_NAME;
use crate::shown::shell_quote;

/// Seconds a case may take by default (`--timeout`).
pub const DEFAULT_TIMEOUT_SECS: u64 = 30;

/// Options of `pi-harness conform`.
#[derive(Debug, Clone)]
pub struct ConformOptions {
    /// The implementation's command; `None`: this binary's `provider-run`.
    pub implementation: Option<String>,
    /// The cases to run, by name (`--case`); empty: every case.
    pub cases: Vec<String>,
    /// The cassettes; `None`: the bundled suite ([`bundled_dirs`]).
    pub cassettes: Option<PathBuf>,
    /// The expected streams; `None`: the bundled ones with the bundled cassettes, else
    /// derived by running the reference provider on each case (and said so).
    pub expected: Option<PathBuf>,
    /// Also write one JSON result per case ([`Output::json`]).
    pub json: bool,
    /// Write the implementation's streams as expected files into this directory instead
    /// of comparing.
    pub export: Option<PathBuf>,
    /// The fake-pi binary (`--fake-pi`); `None`: found by [`find_fake_pi`].
    pub fake_pi: Option<PathBuf>,
    /// How long a case may take before the implementation is killed.
    pub timeout: Duration,
    /// Stdout bytes a case may produce ([`crate::collect::DEFAULT_MAX_OUTPUT_BYTES`]).
    pub max_output: u64,
    /// This process is conform's own (the CLI): it becomes a child subreaper, so a process
    /// an implementation left that escaped its group and cleared its environment (no marker)
    /// comes back to it, and after each case every live descendant of this process is a
    /// leftover, killed and reported. A library caller with children of its own leaves this
    /// off: then leftovers are found by the marker alone.
    pub subreaper: bool,
    /// Run one shard of the selected cases (`--partition K/N`); `None`: all of them.
    pub partition: Option<crate::junit::Partition>,
}

/// Makes the page of a failed case from its result and cassette; the page's path.
pub type PageMaker<'a> = dyn FnMut(&CaseResult, &Path) -> Option<PathBuf> + 'a;

/// Where [`conform`] writes, chosen by its caller (`pi-harness conform`: the report on
/// stdout, or on stderr when stdout carries the `--json` lines; notes on stderr). A write
/// that fails (a closed stdout) is dropped: the verdict is still the return value.
pub struct Output<'a> {
    /// The human report: each case's lines as soon as it finishes, then the summary.
    pub report: &'a mut dyn Write,
    /// One JSON result per case, with [`ConformOptions::json`].
    pub json: &'a mut dyn Write,
    /// A line per expected file written by `--export`.
    pub notes: &'a mut dyn Write,
    /// The JUnit XML report (`--junit FILE`), written when the run ends; a write that fails
    /// is an error, unlike the report's.
    pub junit: Option<&'a mut dyn Write>,
    /// A page for each failed case (`pi-harness conform --junit`: its timeline), made from
    /// the case's result and cassette; the path it returns is linked from the JUnit report.
    pub pages: Option<&'a mut PageMaker<'a>>,
}

/// The bundled suite's (cassettes, expected) directories: embedded in this binary and
/// unpacked once into a cache directory ([`crate::bundle`]); never the source tree.
pub fn bundled_dirs() -> Result<(PathBuf, PathBuf), String> {
    crate::bundle::dirs()
}

/// `pi-harness conform`: returns true when nothing failed.
pub fn conform(opts: &ConformOptions, out: Output<'_>) -> Result<bool, String> {
    let fake_pi = find_fake_pi(opts.fake_pi.as_deref())?;
    if opts.subreaper {
        crate::implementation::adopt_orphans()
            .map_err(|e| format!("cannot become a child subreaper: {e}"))?;
    }
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let reference = format!("{} provider-run", shell_quote(&exe.to_string_lossy()));
    let cmd = opts
        .implementation
        .clone()
        .unwrap_or_else(|| reference.clone());
    let (cassettes, expected_dir) = suite_dirs(opts)?;
    let mut cases = select_cases(&cassettes, &opts.cases)?;
    if let Some(p) = opts.partition {
        let all = cases.len();
        cases = cases
            .into_iter()
            .enumerate()
            .filter(|(i, _)| p.selects(*i))
            .map(|(_, c)| c)
            .collect();
        let _ = writeln!(out.report, "partition {p}: {} of {all} cases", cases.len());
    }
    if let Some(w) = unverified_warning(&cases) {
        let _ = writeln!(out.report, "{w}");
    }
    let runner = CaseRunner {
        fake_pi: &fake_pi,
        cassettes: &cassettes,
        opts,
    };
    if let Some(dir) = &opts.export {
        for case in &cases {
            let e = runner.expected_from(&cmd, case)?;
            let path = write_expected(dir, &e)?;
            let _ = writeln!(out.notes, "exported {}", path.display());
        }
        return Ok(true);
    }
    let (name, claimed) = match &opts.implementation {
        None => (
            REFERENCE_NAME.to_string(),
            CAPABILITIES.iter().map(|s| s.to_string()).collect(),
        ),
        Some(c) => handshake(c, opts.timeout)?,
    };
    if expected_dir.is_none() {
        let _ = writeln!(
            out.report,
            "expected streams: derived from the reference provider ({} provider-run) on each case, since --expected was not given",
            exe.file_name().map_or("pi-harness".into(), |n| n.to_string_lossy())
        );
    }
    let mut results = Vec::new();
    let mut pages = Vec::new();
    let mut make_page = out.pages;
    for case in &cases {
        let start = Instant::now();
        let expected = match &expected_dir {
            Some(dir) => load_expected(dir, &case.name)?,
            None => runner.expected_from(&reference, case)?,
        };
        let miss = missing(&expected.capabilities, &claimed);
        let verdict = if !miss.is_empty() {
            Verdict::Skipped { missing: miss }
        } else {
            judge(&expected, &runner.run(&cmd, case)?)
        };
        let r = CaseResult {
            case: case.name.clone(),
            capabilities: expected.capabilities.clone(),
            verdict,
            ms: start.elapsed().as_millis() as u64,
        };
        if opts.json {
            let line = serde_json::to_string(&r).expect("serializes");
            let _ = writeln!(out.json, "{line}");
        }
        let _ = out.report.write_all(case_text(&r).as_bytes());
        if let (Some(make), Verdict::Failed { .. }) = (make_page.as_mut(), &r.verdict) {
            if let Some(page) = make(&r, &case.cassette) {
                pages.push((r.case.clone(), page.display().to_string()));
            }
        }
        results.push(r);
    }
    let text = summary(&name, &reproduce_command(opts), &results);
    let _ = out.report.write_all(text.as_bytes());
    if let Some(w) = out.junit {
        w.write_all(crate::junit::junit_with_pages(&name, &results, &pages).as_bytes())
            .and_then(|()| w.flush())
            .map_err(|e| format!("the JUnit report: {e}"))?;
    }
    Ok(!results
        .iter()
        .any(|r| matches!(r.verdict, Verdict::Failed { .. })))
}

/// One line naming the cases of releases newer than every pinned one (unverified: replayed
/// with the grammar their header names), when there are any.
fn unverified_warning(cases: &[Case]) -> Option<String> {
    let marked: Vec<String> = cases
        .iter()
        .filter_map(|c| {
            let reader = pi_cassette::CassetteReader::open(&c.cassette).ok()?;
            let pi = &reader.header().pi;
            let borrowed = pi.borrowed()?;
            Some(format!(
                "{} ({} {}, grammar of {borrowed})",
                c.name,
                reader.header().agent_name(),
                pi.version,
            ))
        })
        .collect();
    (!marked.is_empty()).then(|| {
        format!(
            "warning: unverified: {} of releases newer than every pinned one, replayed with the newest pinned grammar: {}",
            if marked.len() == 1 { "1 case is" } else { "cases are" },
            marked.join(", ")
        )
    })
}

/// The (cassettes, expected) directories of a run: given, or the bundled suite's (a user's
/// own cassettes alone have no expected directory: the reference's streams stand in).
fn suite_dirs(opts: &ConformOptions) -> Result<(PathBuf, Option<PathBuf>), String> {
    Ok(match (&opts.cassettes, &opts.expected) {
        (Some(c), e) => (c.clone(), e.clone()),
        (None, e) => {
            let (c, bundled) = bundled_dirs()?;
            (c, Some(e.clone().unwrap_or(bundled)))
        }
    })
}

/// The cases below `cassettes`, or only those `wanted` (each must exist).
fn select_cases(cassettes: &Path, wanted: &[String]) -> Result<Vec<Case>, String> {
    let mut cases = discover(cassettes)?;
    if cases.is_empty() {
        return Err(format!(
            "{}: no *.cassette.jsonl file below it",
            cassettes.display()
        ));
    }
    if !wanted.is_empty() {
        // Any form of a name: `codex/codex_text.cx0169`, or `cassettes/...cassette.jsonl`.
        let wanted: Vec<String> = wanted.iter().map(|w| crate::names::case_name(w)).collect();
        for want in &wanted {
            if !cases.iter().any(|c| &c.name == want) {
                let hint = crate::names::did_you_mean(want, cases.iter().map(|c| c.name.as_str()))
                    .map(|n| format!("; did you mean {n}?"))
                    .unwrap_or_default();
                return Err(format!(
                    "no case {want:?} in {} (cases are cassette paths without .cassette.jsonl, e.g. recorded/text_only.pi87){hint}",
                    cassettes.display()
                ));
            }
        }
        cases.retain(|c| wanted.contains(&c.name));
    }
    Ok(cases)
}

/// Runs one case of this suite at a time, each in a temp dir of its own.
struct CaseRunner<'a> {
    fake_pi: &'a Path,
    cassettes: &'a Path,
    opts: &'a ConformOptions,
}

impl CaseRunner<'_> {
    /// Run `cmd` on one case in a fresh temp dir (removed afterwards).
    fn run(&self, cmd: &str, case: &Case) -> Result<ImplOutput, String> {
        let tmp = tempdir(&case.name)?;
        let req = prepare(case, tmp.path(), self.fake_pi)?;
        Ok(run_impl(
            cmd,
            &req,
            tmp.path(),
            self.opts.timeout,
            self.opts.max_output,
        ))
    }

    /// Run `cmd` on one case and turn its stream into an expected record.
    fn expected_from(&self, cmd: &str, case: &Case) -> Result<Expected, String> {
        let out = self.run(cmd, case)?;
        if !out.problems.is_empty() {
            return Err(format!("{}: {}", case.name, out.problems.join("; ")));
        }
        let messages = out
            .messages
            .iter()
            .map(|m| serde_json::from_str(m.get()).expect("read as JSON before"))
            .collect();
        expected_of(case, self.cassettes, messages)
    }
}

/// `pi-harness conform` with every flag the user gave, but `--case` and `--json`.
pub fn reproduce_command(opts: &ConformOptions) -> String {
    let mut s = "pi-harness conform".to_string();
    if let Some(c) = &opts.implementation {
        s.push_str(&format!(" --impl {}", shell_quote(c)));
    }
    for (flag, path) in [
        ("--cassettes", &opts.cassettes),
        ("--expected", &opts.expected),
        ("--fake-pi", &opts.fake_pi),
    ] {
        if let Some(p) = path {
            let shown = std::path::absolute(p).unwrap_or_else(|_| p.clone());
            s.push_str(&format!(
                " {flag} {}",
                shell_quote(&shown.to_string_lossy())
            ));
        }
    }
    if opts.max_output != DEFAULT_MAX_OUTPUT_BYTES {
        s.push_str(&format!(" --max-output {}", opts.max_output));
    }
    if opts.timeout != Duration::from_secs(DEFAULT_TIMEOUT_SECS) {
        s.push_str(&format!(" --timeout {}", opts.timeout.as_secs()));
    }
    s
}

/// A temp dir for one run of a case, named after it.
fn tempdir(case: &str) -> Result<tempfile::TempDir, String> {
    tempfile::Builder::new()
        .prefix(&format!("pih-conform-{}-", case.replace('/', "_")))
        .tempdir()
        .map_err(|e| format!("temp dir: {e}"))
}
