//! The recording's throwaway world: a temp dir holding pi's working directory (with the LLM
//! script's files), its agent dir (`models.json` pointing at the scripted server,
//! `settings.json`), `HOME` and `TMPDIR`; the API key and marker the run is given; its
//! `PATH`; and the redactions that take these run-specific values out of the cassette.
//! What the agent dir says is built by pure functions ([`models_json`],
//! [`recording_settings`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use pi_cassette::redact::Redactor;
use serde_json::Value;

use super::install::node_bin_dir;
use super::process::{ClaudeEnv, PiEnv};
use super::{RecordError, RecordOptions};
use crate::llm_script::Api;

/// The recording's directories, removed when it is dropped.
pub(crate) struct Sandbox {
    /// Removes the temp dir on drop.
    _dir: tempfile::TempDir,
    /// The temp dir (`pi-harness-rec-*`).
    pub(crate) tmp: PathBuf,
    /// pi's working directory.
    pub(crate) work: PathBuf,
    /// `PI_CODING_AGENT_DIR`.
    pub(crate) agent: PathBuf,
    /// `HOME`.
    pub(crate) home: PathBuf,
    /// Claude Code's `TMPDIR`.
    pub(crate) tmpdir: PathBuf,
}

impl Sandbox {
    /// Create the directories and write the LLM script's `files` into the working directory.
    pub(crate) fn create(
        script_path: &Path,
        files: &BTreeMap<String, String>,
    ) -> Result<Sandbox, RecordError> {
        let dir = tempfile::Builder::new()
            .prefix("pi-harness-rec-")
            .tempdir()
            .map_err(RecordError::TempDir)?;
        let tmp = dir.path().to_path_buf();
        let sandbox = Sandbox {
            _dir: dir,
            work: tmp.join("work"),
            agent: tmp.join("agent"),
            home: tmp.join("home"),
            tmpdir: tmp.join("tmpdir"),
            tmp,
        };
        for d in [
            &sandbox.work,
            &sandbox.agent,
            &sandbox.home,
            &sandbox.tmpdir,
        ] {
            std::fs::create_dir_all(d).map_err(RecordError::io("creating", d))?;
        }
        for (rel, content) in files {
            if Path::new(rel).is_absolute() || rel.split('/').any(|c| c == "..") {
                return Err(RecordError::ScriptFile {
                    script: script_path.to_path_buf(),
                    file: rel.clone(),
                });
            }
            write_file(&sandbox.work.join(rel), content)?;
        }
        Ok(sandbox)
    }

    /// Write the agent dir: `models.json` naming the server at `base_url` with `key`, and
    /// `settings.json` when the options ask for settings.
    pub(crate) fn write_agent_dir(
        &self,
        opts: &RecordOptions,
        base_url: &str,
        key: &str,
    ) -> Result<(), RecordError> {
        let models = models_json(opts.api, base_url, key);
        write_file(&self.agent.join("models.json"), &format!("{models:#}\n"))?;
        if let Some(settings) = settings_json(opts) {
            write_file(
                &self.agent.join("settings.json"),
                &format!("{settings:#}\n"),
            )?;
        }
        Ok(())
    }

    /// The environment of the recorded CLI: these directories, `PATH` (the options'
    /// directories, pi's own node, then the recorder's `PATH`), a fresh marker, and for
    /// Claude Code the server and key.
    pub(crate) fn env(
        &self,
        opts: &RecordOptions,
        pi_root: Option<&Path>,
        claude: Option<(String, String)>,
    ) -> Result<PiEnv, RecordError> {
        let mut path_dirs: Vec<PathBuf> = opts.path_prepend.clone();
        path_dirs.extend(pi_root.and_then(node_bin_dir));
        let mut path = std::env::join_paths(&path_dirs)?
            .into_string()
            .unwrap_or_default();
        if let Ok(old) = std::env::var("PATH") {
            if !path.is_empty() {
                path.push(':');
            }
            path.push_str(&old);
        }
        Ok(PiEnv {
            agent: self.agent.clone(),
            home: self.home.clone(),
            work: self.work.clone(),
            path,
            marker: format!("pi-harness-rec-{}", random_token(8)),
            claude: claude.map(|(base_url, key)| ClaudeEnv {
                base_url,
                key,
                tmpdir: self.tmpdir.clone(),
            }),
        })
    }

    /// `args` with `{TMP}` and `{CWD}` replaced by the temp and working directories.
    pub(crate) fn substitute(&self, args: &[String]) -> Vec<String> {
        args.iter()
            .map(|a| {
                a.replace("{TMP}", &self.tmp.display().to_string())
                    .replace("{CWD}", &self.work.display().to_string())
            })
            .collect()
    }

    /// The redactions every recording applies: the key, the run's directories, pi's install
    /// directory and the server's port.
    pub(crate) fn redactor(&self, key: &str, pi_root: Option<&Path>, port: u16) -> Redactor {
        let mut redactor = Redactor::new();
        redactor.literal(key, "<API_KEY>", "the API key given to pi");
        redactor.literal(
            &self.work.display().to_string(),
            "<CWD>",
            "pi's working directory",
        );
        redactor.literal(
            &self.agent.display().to_string(),
            "<AGENT_DIR>",
            "PI_CODING_AGENT_DIR",
        );
        redactor.literal(
            &self.home.display().to_string(),
            "<HOME>",
            "HOME given to pi",
        );
        redactor.literal(
            &self.tmp.display().to_string(),
            "<TMP>",
            "the recording's temp dir",
        );
        if let Some(name) = self.tmp.file_name().and_then(|n| n.to_str()) {
            redactor.literal(
                name,
                "<TMP_NAME>",
                "the temp dir's name (inside encoded paths)",
            );
        }
        if let Some(root) = pi_root {
            redactor.literal(
                &root.display().to_string(),
                "<PI_ROOT>",
                "pi's install directory",
            );
        }
        for host in ["127.0.0.1", "localhost"] {
            redactor.literal(
                &format!("{host}:{port}"),
                &format!("{host}:<PORT>"),
                "the LLM server's port",
            );
        }
        redactor
    }
}

/// The `models.json` pointing provider `fake`, model `fake-model`, at the server (pure).
pub fn models_json(api: Api, base_url: &str, key: &str) -> Value {
    match api {
        Api::OpenAi => serde_json::json!({"providers": {"fake": {
            "baseUrl": format!("{base_url}/v1"),
            "api": "openai-completions",
            "apiKey": key,
            "compat": {"supportsDeveloperRole": false, "supportsReasoningEffort": false},
            "models": [{"id": "fake-model", "reasoning": true}]
        }}}),
        // The Anthropic SDK appends `/v1/messages` itself.
        Api::Anthropic => serde_json::json!({"providers": {"fake": {
            "baseUrl": base_url,
            "api": "anthropic-messages",
            "apiKey": key,
            "models": [{"id": "fake-model", "reasoning": true}]
        }}}),
    }
}

/// The `settings.json` the options ask for (retry delay, the scripted model as the
/// default), or `None` when they ask for no settings (pure).
fn settings_json(opts: &RecordOptions) -> Option<Value> {
    let mut settings = serde_json::Map::new();
    if let Some(delay) = opts.retry_base_delay_ms {
        settings.insert("retry".into(), serde_json::json!({"baseDelayMs": delay}));
    }
    if opts.default_model_in_settings {
        settings.insert("defaultProvider".into(), "fake".into());
        settings.insert("defaultModel".into(), "fake-model".into());
    }
    (!settings.is_empty()).then_some(Value::Object(settings))
}

/// What the recording's agent dir says, for its effective values: `models.json` names the
/// scripted model; `settings.json` may make it the default (pure).
pub fn recording_settings(opts: &RecordOptions) -> pi_grammar::AgentSettings {
    let named = opts.default_model_in_settings;
    pi_grammar::AgentSettings {
        default_provider: named.then(|| "fake".to_string()),
        default_model: named.then(|| "fake-model".to_string()),
        models: vec![("fake".into(), "fake-model".into())],
        ..pi_grammar::AgentSettings::default()
    }
}

/// `n` random ASCII letters and digits.
pub(crate) fn random_token(n: usize) -> String {
    (0..n).map(|_| fastrand::alphanumeric()).collect()
}

fn write_file(path: &Path, text: &str) -> Result<(), RecordError> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(RecordError::io("creating", dir))?;
    }
    std::fs::write(path, text).map_err(RecordError::io("writing", path))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recorder::parse_api;

    #[test]
    fn models_json_points_each_api_at_the_server() {
        let m = models_json(Api::OpenAi, "http://127.0.0.1:9", "k");
        assert_eq!(m["providers"]["fake"]["baseUrl"], "http://127.0.0.1:9/v1");
        assert_eq!(m["providers"]["fake"]["api"], "openai-completions");
        let m = models_json(Api::Anthropic, "http://127.0.0.1:9", "k");
        assert_eq!(m["providers"]["fake"]["baseUrl"], "http://127.0.0.1:9");
        assert_eq!(m["providers"]["fake"]["api"], "anthropic-messages");
        assert_eq!(m["providers"]["fake"]["models"][0]["id"], "fake-model");
        assert!(parse_api("grpc").is_err());
    }
}
