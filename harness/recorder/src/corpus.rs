//! The recorded corpus: its manifest (`cassettes/scripts/corpus.json`) and re-recording it.
//!
//! The manifest says, per scenario, which script the LLM plays, how pi is invoked (base
//! arguments, an argv message or a prompt on stdin, per-version extras such as the session
//! flag), whether a signal is sent, and which text must reach the model in which request.
//! [`record_corpus`] records every scenario on each pi version given, into
//! `<out>/<scenario>.<tag>.cassette.jsonl[.gz]` (`pi73`, `pi87`, `pi152`: see
//! `pi_grammar::Version::tag`). Every recording puts the scripted model in the agent dir's
//! `settings.json` (so the manifest's arguments need no model flags, as clients that rely
//! on settings call pi) and keeps its session on disk unless the scenario says otherwise.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context as _};
use serde::Deserialize;

use crate::recorder::{self, Prelude, RecordOptions, SignalPlan};

/// The manifest file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// Arguments every scenario starts from (before its extras and message).
    pub pi_args: Vec<String>,
    pub scenarios: Vec<ScenarioSpec>,
}

/// One scenario of the corpus.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioSpec {
    pub name: String,
    pub description: String,
    /// Script file, relative to the manifest.
    pub script: String,
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
    #[serde(default)]
    pub signal: Option<String>,
    /// `EVENT[+MS]`, with `signal`.
    #[serde(default)]
    pub at: Option<String>,
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

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Delivered {
    pub request: usize,
    pub text: String,
}

impl Manifest {
    pub fn load(path: &Path) -> anyhow::Result<Manifest> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let m: Manifest = serde_json::from_str(&text)
            .with_context(|| format!("{}: bad manifest", path.display()))?;
        let mut names = std::collections::BTreeSet::new();
        for (i, s) in m.scenarios.iter().enumerate() {
            if !names.insert(&s.name) {
                bail!(
                    "{}: scenarios[{i}].name {:?} is used twice",
                    path.display(),
                    s.name
                );
            }
            if s.client.is_some()
                && (s.stdin.is_some() || s.message.is_some() || s.signal.is_some())
            {
                bail!(
                    "{}: scenarios[{i}] ({}): a `client` script drives the session; `message`, `stdin` and `signal` belong to json-mode scenarios",
                    path.display(),
                    s.name
                );
            }
            if s.signal.is_some() != s.at.is_some() {
                bail!(
                    "{}: scenarios[{i}] ({}): `signal` and `at` go together",
                    path.display(),
                    s.name
                );
            }
            let tags = known_tags();
            for k in s.version_args.keys() {
                if !tags.contains(k) {
                    bail!(
                        "{}: scenarios[{i}].version_args: unknown version key {k:?} ({})",
                        path.display(),
                        tags.join(", ")
                    );
                }
            }
            if let Some(v) = &s.min_version {
                if pi_grammar::Version::parse(v).is_none() {
                    bail!(
                        "{}: scenarios[{i}].min_version: {v:?} is not a version like 1.0.0",
                        path.display()
                    );
                }
            }
        }
        Ok(m)
    }
}

/// The tags of the pinned pi versions (`pi73`, `pi87`, `pi152`).
pub fn known_tags() -> Vec<String> {
    pi_grammar::KNOWN_VERSIONS
        .iter()
        .filter_map(|v| pi_grammar::Version::parse(v))
        .map(|v| v.tag())
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

/// The file name of a scenario's cassette for a version tag (`pi73`, `pi87`), without `.gz`.
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
) -> anyhow::Result<RecordOptions> {
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
        o.api = recorder::parse_api(api).map_err(|e| anyhow!("{}: {e}", s.name))?;
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
        let signal = recorder::parse_signal(sig).map_err(|e| anyhow!("{}: {e}", s.name))?;
        let (event, after_ms) = recorder::parse_at(at).map_err(|e| anyhow!("{}: {e}", s.name))?;
        o.signal = Some(SignalPlan {
            signal,
            event,
            after_ms,
        });
    }
    Ok(o)
}

/// Options of `pi-harness record-corpus`.
#[derive(Debug, Clone)]
pub struct CorpusOptions {
    pub manifest: PathBuf,
    /// The pi executables to record on (their versions are read from pi's package).
    pub pis: Vec<PathBuf>,
    pub out: PathBuf,
    pub only: Vec<String>,
}

/// Record every scenario on every version given. Returns false when any failed (each
/// failure is reported and the others still run).
pub async fn record_corpus(opts: &CorpusOptions) -> anyhow::Result<bool> {
    let manifest = Manifest::load(&opts.manifest)?;
    let dir = opts.manifest.parent().unwrap_or(Path::new("."));
    for name in &opts.only {
        if !manifest.scenarios.iter().any(|s| &s.name == name) {
            bail!(
                "--only {name:?}: no such scenario in {}",
                opts.manifest.display()
            );
        }
    }
    let mut versions: Vec<(String, String, &PathBuf)> = Vec::new();
    for pi in &opts.pis {
        let version = recorder::pi_version_of(pi).ok_or_else(|| {
            anyhow!(
                "--pi {}: cannot tell its version (no pi package.json above it)",
                pi.display()
            )
        })?;
        let parsed = pi_grammar::Version::parse(&version)
            .ok_or_else(|| anyhow!("--pi {}: version {version:?}", pi.display()))?;
        versions.push((parsed.tag(), version, pi));
    }
    if versions.is_empty() {
        bail!("give at least one --pi");
    }
    std::fs::create_dir_all(&opts.out)
        .with_context(|| format!("creating {}", opts.out.display()))?;
    let started = Instant::now();
    let mut failed = Vec::new();
    let total = manifest
        .scenarios
        .iter()
        .filter(|s| opts.only.is_empty() || opts.only.contains(&s.name))
        .map(|s| versions.iter().filter(|(_, v, _)| s.applies_to(v)).count())
        .sum::<usize>();
    let mut n = 0;
    for s in &manifest.scenarios {
        if !opts.only.is_empty() && !opts.only.contains(&s.name) {
            continue;
        }
        for (tag, version, pi) in &versions {
            if !s.applies_to(version) {
                continue;
            }
            n += 1;
            let label = format!("{}.{tag}", s.name);
            let t0 = Instant::now();
            let result = async {
                let o = options_for(&manifest, dir, s, tag, pi, &opts.out)?;
                let outcome = recorder::record(&o).await?;
                for d in &s.delivered {
                    let req = outcome
                        .requests
                        .iter()
                        .find(|r| r.index == d.request)
                        .ok_or_else(|| {
                            anyhow!(
                                "request {} never came ({} requests)",
                                d.request,
                                outcome.requests.len()
                            )
                        })?;
                    if !req.mentions(&d.text) {
                        bail!("request {} did not carry {:?}", d.request, d.text);
                    }
                }
                anyhow::Ok(outcome)
            }
            .await;
            match result {
                Ok(o) => eprintln!(
                    "[{n}/{total}] ok   {label}: {} ({} bytes, {} requests, {:.1} s)",
                    o.path.file_name().and_then(|f| f.to_str()).unwrap_or("?"),
                    o.bytes,
                    o.requests.len(),
                    t0.elapsed().as_secs_f64()
                ),
                Err(e) => {
                    eprintln!("[{n}/{total}] FAIL {label}: {e:#}");
                    failed.push(label);
                }
            }
        }
    }
    eprintln!(
        "recorded {} of {total} in {:.1} s{}",
        total - failed.len(),
        started.elapsed().as_secs_f64(),
        if failed.is_empty() {
            String::new()
        } else {
            format!("; failed: {}", failed.join(", "))
        }
    );
    Ok(failed.is_empty())
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
