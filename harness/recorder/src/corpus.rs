//! The recorded corpus: its manifest (`cassettes/scripts/corpus.json`) and re-recording it.
//!
//! The manifest says, per scenario, which script the LLM plays, how pi is invoked (base
//! arguments, an argv message or a prompt on stdin, per-version extras such as the session
//! flag), whether a signal is sent, and which text must reach the model in which request.
//! [`record_corpus`] records every scenario on each pi version given, into
//! `<out>/<scenario>.<tag>.cassette.jsonl[.zst]` (`pi73`, `pi87`, `pi152`: see
//! `pi_grammar::Version::tag`). Every recording puts the scripted model in the agent dir's
//! `settings.json` (so the manifest's arguments need no model flags, as clients that rely
//! on settings call pi) and keeps its session on disk unless the scenario says otherwise.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::Deserialize;

use crate::recorder::{self, Prelude, RecordError, RecordOptions, RecordOutcome, SignalPlan};
use crate::Notices;

/// Why the corpus (or its manifest) could not be used. A scenario that fails to record is
/// not an error of [`record_corpus`]: it is reported and the others still run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CorpusError {
    /// A file or directory could not be read or created.
    #[error("{action} {}", path.display())]
    Io {
        /// What was being done (`reading`, `creating`).
        action: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The failure.
        #[source]
        source: std::io::Error,
    },
    /// The manifest is not JSON of the manifest's shape.
    #[error("{}: bad manifest", path.display())]
    BadManifest {
        /// The manifest.
        path: PathBuf,
        /// What the JSON reader found.
        #[source]
        source: serde_json::Error,
    },
    /// The manifest breaks one of its rules (the message names the file, scenario and field).
    #[error("{0}")]
    InvalidManifest(String),
    /// A scenario's `api`, `signal` or `at` cannot be read.
    #[error("{scenario}: {message}")]
    InvalidScenario {
        /// The scenario's name.
        scenario: String,
        /// What is wrong with it.
        message: String,
    },
    /// The options do not fit the manifest (`--only` naming no scenario, no `--pi`).
    #[error("{0}")]
    Options(String),
    /// A `--pi`'s version cannot be told.
    #[error("{0}")]
    UnknownVersion(String),
    /// Recording a scenario failed.
    #[error(transparent)]
    Record(#[from] RecordError),
    /// A text the manifest says must reach the model did not (the message names the request).
    #[error("{0}")]
    NotDelivered(String),
}

/// The manifest file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// Arguments every scenario starts from (before its extras and message).
    pub pi_args: Vec<String>,
    /// The scenarios, in the order they are recorded.
    pub scenarios: Vec<ScenarioSpec>,
}

/// One scenario of the corpus.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioSpec {
    /// The scenario's name: its cassettes are `<name>.<tag>.cassette.jsonl`.
    pub name: String,
    /// What it shows (the cassette's `scenario.description`).
    pub description: String,
    /// Script file, relative to the manifest.
    pub script: String,
    /// The cassette's `scenario.tags`.
    #[serde(default)]
    pub tags: Vec<String>,
    /// The prompt as a positional argument.
    #[serde(default)]
    pub message: Option<String>,
    /// The prompt on stdin.
    #[serde(default)]
    pub stdin: Option<String>,
    /// Base arguments to drop (for example `--no-session` for a resumed session).
    #[serde(default)]
    pub drop_args: Vec<String>,
    /// Arguments added after the base ones.
    #[serde(default)]
    pub extra_args: Vec<String>,
    /// Per version tag (`pi73`, `pi87`, `pi152`): more arguments.
    #[serde(default)]
    pub version_args: BTreeMap<String, Vec<String>>,
    /// The oldest pi version this scenario exists on (`1.0.0`: only pi 1.x has it).
    #[serde(default)]
    pub min_version: Option<String>,
    /// An unrecorded run first, with the same arguments and this message.
    #[serde(default)]
    pub prelude_message: Option<String>,
    /// A signal to send pi (`SIGINT`, `SIGTERM`, ...), at `at`.
    #[serde(default)]
    pub signal: Option<String>,
    /// `EVENT[+MS]`, with `signal`.
    #[serde(default)]
    pub at: Option<String>,
    /// pi's `retry.baseDelayMs` setting (short, so a retry scenario records quickly).
    #[serde(default)]
    pub retry_delay_ms: Option<u64>,
    /// Wire protocol: `openai` (default) or `anthropic`.
    #[serde(default)]
    pub api: Option<String>,
    /// Texts that must reach the model: request index (1-based) -> text.
    #[serde(default)]
    pub delivered: Vec<Delivered>,
    /// An RPC session: the client script (relative to the manifest) that drives pi's stdin
    /// (see `pi_recorder::client_script`); the manifest's arguments then say `--mode rpc`.
    #[serde(default)]
    pub client: Option<String>,
}

/// A text that must reach the model in a given request.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Delivered {
    /// The request's index (1-based, as the server logs it).
    pub request: usize,
    /// The text one of its messages must hold.
    pub text: String,
}

impl Manifest {
    /// Read a manifest and check its rules (unique names, `client` apart from json-mode
    /// fields, `signal` with `at`, known version tags, valid `min_version`).
    pub fn load(path: &Path) -> Result<Manifest, CorpusError> {
        let text = std::fs::read_to_string(path).map_err(|source| CorpusError::Io {
            action: "reading",
            path: path.to_path_buf(),
            source,
        })?;
        let m: Manifest =
            serde_json::from_str(&text).map_err(|source| CorpusError::BadManifest {
                path: path.to_path_buf(),
                source,
            })?;
        m.check(path)?;
        Ok(m)
    }

    /// The rules `serde` cannot check; errors name the file, scenario and field.
    fn check(&self, path: &Path) -> Result<(), CorpusError> {
        let invalid = |message: String| Err(CorpusError::InvalidManifest(message));
        let mut names = std::collections::BTreeSet::new();
        for (i, s) in self.scenarios.iter().enumerate() {
            if !names.insert(&s.name) {
                return invalid(format!(
                    "{}: scenarios[{i}].name {:?} is used twice",
                    path.display(),
                    s.name
                ));
            }
            if s.client.is_some()
                && (s.stdin.is_some() || s.message.is_some() || s.signal.is_some())
            {
                return invalid(format!(
                    "{}: scenarios[{i}] ({}): a `client` script drives the session; `message`, `stdin` and `signal` belong to json-mode scenarios",
                    path.display(),
                    s.name
                ));
            }
            if s.signal.is_some() != s.at.is_some() {
                return invalid(format!(
                    "{}: scenarios[{i}] ({}): `signal` and `at` go together",
                    path.display(),
                    s.name
                ));
            }
            let tags = known_tags();
            for k in s.version_args.keys() {
                if !tags.contains(k) {
                    return invalid(format!(
                        "{}: scenarios[{i}].version_args: unknown version key {k:?} ({})",
                        path.display(),
                        tags.join(", ")
                    ));
                }
            }
            if let Some(v) = &s.min_version {
                if pi_grammar::Version::parse(v).is_none() {
                    return invalid(format!(
                        "{}: scenarios[{i}].min_version: {v:?} is not a version like 1.0.0",
                        path.display()
                    ));
                }
            }
        }
        Ok(())
    }
}

/// The tags of the pinned pi versions (`pi73`, `pi87`, `pi152`): pi's row in the registry,
/// where pinning a release is a row.
pub fn known_tags() -> Vec<String> {
    pi_grammar::Agent::Pi
        .spec()
        .tags()
        .into_iter()
        .map(str::to_string)
        .collect()
}

impl ScenarioSpec {
    /// Whether this scenario is recorded on pi `version`.
    pub fn applies_to(&self, version: &str) -> bool {
        let (Some(v), Some(min)) = (
            pi_grammar::Version::parse(version),
            self.min_version
                .as_deref()
                .and_then(pi_grammar::Version::parse),
        ) else {
            return true;
        };
        v >= min
    }
}

/// The file name of a scenario's cassette for a version tag (`pi73`, `pi87`), without `.zst`.
pub fn cassette_name(scenario: &str, tag: &str) -> String {
    format!("{scenario}.{tag}.cassette.jsonl")
}

/// pi's arguments for a scenario on a version (pure).
pub fn args_for(
    manifest: &Manifest,
    s: &ScenarioSpec,
    tag: &str,
    message: Option<&str>,
) -> Vec<String> {
    let mut args: Vec<String> = manifest
        .pi_args
        .iter()
        .filter(|a| !s.drop_args.contains(a))
        .cloned()
        .collect();
    args.extend(s.extra_args.iter().cloned());
    if let Some(v) = s.version_args.get(tag) {
        args.extend(v.iter().cloned());
    }
    if let Some(m) = message {
        args.push(m.to_string());
    }
    args
}

/// The recording options for one scenario on one version.
pub fn options_for(
    manifest: &Manifest,
    manifest_dir: &Path,
    s: &ScenarioSpec,
    tag: &str,
    pi: &Path,
    out_dir: &Path,
) -> Result<RecordOptions, CorpusError> {
    let invalid = |message: String| CorpusError::InvalidScenario {
        scenario: s.name.clone(),
        message,
    };
    let args = args_for(manifest, s, tag, s.message.as_deref());
    let mut o = RecordOptions::new(
        manifest_dir.join(&s.script),
        out_dir.join(cassette_name(&s.name, tag)),
        pi.to_path_buf(),
        args,
    );
    o.stdin = s.stdin.clone();
    o.client_script = s.client.as_ref().map(|c| manifest_dir.join(c));
    o.scenario = s.name.clone();
    o.description = s.description.clone();
    o.tags = s.tags.clone();
    o.retry_base_delay_ms = s.retry_delay_ms;
    o.default_model_in_settings = true;
    if let Some(api) = &s.api {
        o.api = recorder::parse_api(api).map_err(invalid)?;
    }
    o.timeout = Duration::from_secs(150);
    o.progress = true;
    o.source = Some(match &s.client {
        Some(c) => format!(
            "pi-harness record-corpus (scenario {}, script cassettes/scripts/{}, client cassettes/scripts/{c})",
            s.name, s.script
        ),
        None => format!(
            "pi-harness record-corpus (scenario {}, script cassettes/scripts/{})",
            s.name, s.script
        ),
    });
    if let Some(m) = &s.prelude_message {
        o.prelude = Some(Prelude {
            args: args_for(manifest, s, tag, Some(m)),
            stdin: None,
        });
    }
    if let (Some(sig), Some(at)) = (&s.signal, &s.at) {
        let signal = recorder::parse_signal(sig).map_err(invalid)?;
        let (event, after_ms) = recorder::parse_at(at).map_err(invalid)?;
        o.signal = Some(SignalPlan {
            signal,
            event,
            after_ms,
            to_group: false,
        });
    }
    Ok(o)
}

/// Options of `pi-harness record-corpus`.
#[derive(Debug, Clone)]
pub struct CorpusOptions {
    /// The manifest (`cassettes/scripts/corpus.json`); scripts are found beside it.
    pub manifest: PathBuf,
    /// The pi executables to record on (their versions are read from pi's package).
    pub pis: Vec<PathBuf>,
    /// The directory the cassettes are written to.
    pub out: PathBuf,
    /// Record only these scenarios (all when empty).
    pub only: Vec<String>,
    /// Secrets by name and value (`--secret-env NAME`), for every recording
    /// ([`RecordOptions::secret_env`]).
    pub secret_env: Vec<(String, String)>,
}

/// Record every scenario on every version given. Returns false when any failed (each
/// failure is reported on `notices` and the others still run); one line per recording
/// and a closing line go to `notices`, with each recording's progress.
pub async fn record_corpus(opts: &CorpusOptions, notices: &Notices) -> Result<bool, CorpusError> {
    let manifest = Manifest::load(&opts.manifest)?;
    let dir = opts.manifest.parent().unwrap_or(Path::new("."));
    for name in &opts.only {
        if !manifest.scenarios.iter().any(|s| &s.name == name) {
            return Err(CorpusError::Options(format!(
                "--only {name:?}: no such scenario in {}",
                opts.manifest.display()
            )));
        }
    }
    let versions = versions_of(&opts.pis)?;
    std::fs::create_dir_all(&opts.out).map_err(|source| CorpusError::Io {
        action: "creating",
        path: opts.out.clone(),
        source,
    })?;
    let started = Instant::now();
    let mut failed = Vec::new();
    let chosen = |s: &&ScenarioSpec| opts.only.is_empty() || opts.only.contains(&s.name);
    let total = manifest
        .scenarios
        .iter()
        .filter(chosen)
        .map(|s| versions.iter().filter(|(_, v, _)| s.applies_to(v)).count())
        .sum::<usize>();
    let mut n = 0;
    for s in manifest.scenarios.iter().filter(chosen) {
        for (tag, version, pi) in &versions {
            if !s.applies_to(version) {
                continue;
            }
            n += 1;
            let label = format!("{}.{tag}", s.name);
            let t0 = Instant::now();
            let run = Recording {
                manifest: &manifest,
                dir,
                scenario: s,
                tag,
                pi,
                out: &opts.out,
                secret_env: &opts.secret_env,
            };
            match run.record(notices).await {
                Ok(o) => notices.line(&format!(
                    "[{n}/{total}] ok   {label}: {} ({} bytes, {} requests, {:.1} s)",
                    o.path.file_name().and_then(|f| f.to_str()).unwrap_or("?"),
                    o.bytes,
                    o.requests.len(),
                    t0.elapsed().as_secs_f64()
                )),
                Err(e) => {
                    notices.line(&format!("[{n}/{total}] FAIL {label}: {}", chain(&e)));
                    failed.push(label);
                }
            }
        }
    }
    notices.line(&format!(
        "recorded {} of {total} in {:.1} s{}",
        total - failed.len(),
        started.elapsed().as_secs_f64(),
        if failed.is_empty() {
            String::new()
        } else {
            format!("; failed: {}", failed.join(", "))
        }
    ));
    Ok(failed.is_empty())
}

/// `(tag, version, pi)` for each pi executable given; at least one.
fn versions_of(pis: &[PathBuf]) -> Result<Vec<(String, String, &PathBuf)>, CorpusError> {
    let mut versions = Vec::new();
    for pi in pis {
        let version = recorder::version_of(pi_grammar::Agent::Pi, pi).ok_or_else(|| {
            CorpusError::UnknownVersion(format!(
                "--pi {}: cannot tell its version (no pi package.json above it)",
                pi.display()
            ))
        })?;
        let tag = pi_grammar::Agent::Pi
            .spec()
            .tag_of(&version)
            .ok_or_else(|| {
                CorpusError::UnknownVersion(format!("--pi {}: version {version:?}", pi.display()))
            })?;
        versions.push((tag, version, pi));
    }
    if versions.is_empty() {
        return Err(CorpusError::Options("give at least one --pi".into()));
    }
    Ok(versions)
}

/// One scenario to record on one pi version.
struct Recording<'a> {
    manifest: &'a Manifest,
    /// The manifest's directory.
    dir: &'a Path,
    scenario: &'a ScenarioSpec,
    tag: &'a str,
    pi: &'a Path,
    out: &'a Path,
    secret_env: &'a [(String, String)],
}

impl Recording<'_> {
    /// Record it and check that the texts the manifest names reached the model.
    async fn record(&self, notices: &Notices) -> Result<RecordOutcome, CorpusError> {
        let s = self.scenario;
        let mut o = options_for(self.manifest, self.dir, s, self.tag, self.pi, self.out)?;
        if !self.secret_env.is_empty() {
            o.secret_env = self.secret_env.to_vec();
            let names: Vec<&str> = self.secret_env.iter().map(|(n, _)| n.as_str()).collect();
            if let Some(source) = o.source.as_mut() {
                source.push_str(&format!(" --secret-env {}", names.join(" --secret-env ")));
            }
        }
        let outcome = recorder::record(&o, notices).await?;
        for d in &s.delivered {
            let req = outcome
                .requests
                .iter()
                .find(|r| r.index == d.request)
                .ok_or_else(|| {
                    CorpusError::NotDelivered(format!(
                        "request {} never came ({} requests)",
                        d.request,
                        outcome.requests.len()
                    ))
                })?;
            if !req.mentions(&d.text) {
                return Err(CorpusError::NotDelivered(format!(
                    "request {} did not carry {:?}",
                    d.request, d.text
                )));
            }
        }
        Ok(outcome)
    }
}

/// An error and its sources, joined by `: ` (one line, as the CLI prints errors).
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn args_combine_base_drops_extras_version_and_message() {
        let m: Manifest = serde_json::from_str(
            r#"{"pi_args":["--mode","json","--no-session"],"scenarios":[
                {"name":"r","description":"d","script":"s.json","drop_args":["--no-session"],
                 "version_args":{"pi87":["--session-id","x"]},"message":"hi"}]}"#,
        )
        .unwrap();
        let s = &m.scenarios[0];
        assert_eq!(
            args_for(&m, s, "pi87", s.message.as_deref()),
            ["--mode", "json", "--session-id", "x", "hi"]
        );
        assert_eq!(args_for(&m, s, "pi73", None), ["--mode", "json"]);
        assert_eq!(cassette_name("r", "pi73"), "r.pi73.cassette.jsonl");
    }

    #[test]
    fn the_committed_manifest_is_valid_and_its_scripts_parse() {
        let path =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../cassettes/scripts/corpus.json");
        let m = Manifest::load(&path).unwrap();
        assert!(m.scenarios.len() >= 16, "{} scenarios", m.scenarios.len());
        for s in &m.scenarios {
            let script = path.parent().unwrap().join(&s.script);
            crate::llm_script::Script::load(&script).unwrap_or_else(|e| panic!("{}: {e}", s.name));
            for tag in known_tags() {
                options_for(
                    &m,
                    path.parent().unwrap(),
                    s,
                    &tag,
                    Path::new("pi"),
                    Path::new("/x"),
                )
                .unwrap();
            }
        }
    }
}
