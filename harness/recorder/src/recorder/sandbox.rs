//! The recording's throwaway world: a temp dir holding pi's working directory (with the LLM
//! script's files), its agent dir (`models.json` pointing at the scripted server,
//! `settings.json`), `HOME` and `TMPDIR`; the API key and marker the run is given; its
//! `PATH`; and the redactions that take these run-specific values out of the cassette.
//! What the agent dir says is built by pure functions ([`models_json`],
//! [`recording_settings`], and the stand-in's `models.json`: `stand_in`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use pi_cassette::redact::Redactor;
use pi_grammar::Agent;
use serde_json::Value;

use super::install::node_bin_dir;
use super::process::{ClaudeEnv, PiEnv};
use super::stand_in::{models_json_for, models_json_one, StandIn, FAKE_MODEL, FAKE_PROVIDER};
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

    /// Write the agent dir: `models.json` routing the stand-in's provider to the server at
    /// `base_url` with `key`, and `settings.json` when the options or the stand-in ask for
    /// settings.
    pub(crate) fn write_agent_dir(
        &self,
        opts: &RecordOptions,
        stand_in: &StandIn,
        base_url: &str,
        key: &str,
    ) -> Result<(), RecordError> {
        if let Some(models) = models_json_for(stand_in, base_url, key) {
            write_file(&self.agent.join("models.json"), &format!("{models:#}\n"))?;
        }
        if let Some(settings) = settings_json(opts, stand_in) {
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
            codex: None,
            gemini: None,
            secrets: opts.secret_env.clone(),
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
    /// directory, the server's port and the values of `secrets` (pi's placeholders, also for
    /// Claude Code's recordings).
    pub(crate) fn redactor(
        &self,
        key: &str,
        pi_root: Option<&Path>,
        port: u16,
        secrets: &[(String, String)],
    ) -> Redactor {
        self.redactor_for(Agent::Pi, key, secrets, port, pi_root)
    }

    /// [`Sandbox::redactor`] for `agent`: named in the descriptions, with its row's
    /// placeholders for the agent dir and the install directory (Codex: `<CODEX_HOME>`,
    /// `<CODEX_ROOT>`).
    pub(crate) fn redactor_for(
        &self,
        agent: Agent,
        key: &str,
        secrets: &[(String, String)],
        port: u16,
        root: Option<&Path>,
    ) -> Redactor {
        let spec = agent.spec();
        let cli = spec.display_name;
        let mut redactor = Redactor::new();
        redactor.literal(key, "<API_KEY>", &format!("the API key given to {cli}"));
        for (name, value) in secrets {
            redactor.literal(
                value,
                &format!("<{name}>"),
                &format!("the value of ${name} (a secret)"),
            );
        }
        redactor.literal(
            &self.work.display().to_string(),
            "<CWD>",
            &format!("{cli}'s working directory"),
        );
        if let Some(p) = spec.placeholders.home {
            redactor.literal(&self.agent.display().to_string(), p.text, p.means);
        }
        redactor.literal(
            &self.home.display().to_string(),
            "<HOME>",
            &format!("HOME given to {cli}"),
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
        if let (Some(root), Some(p)) = (root, spec.placeholders.install_root) {
            redactor.literal(&root.display().to_string(), p.text, p.means);
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
    models_json_one(FAKE_PROVIDER, FAKE_MODEL, api, base_url, key)
}

/// The `settings.json` the options and the stand-in ask for (retry delay, the stand-in's
/// provider and model as the default), or `None` when they ask for no settings (pure).
fn settings_json(opts: &RecordOptions, stand_in: &StandIn) -> Option<Value> {
    let mut settings = serde_json::Map::new();
    if let Some(delay) = opts.retry_base_delay_ms {
        settings.insert("retry".into(), serde_json::json!({"baseDelayMs": delay}));
    }
    if stand_in.in_settings {
        settings.insert("defaultProvider".into(), stand_in.provider.clone().into());
        settings.insert("defaultModel".into(), stand_in.model.clone().into());
    }
    (!settings.is_empty()).then_some(Value::Object(settings))
}

/// What the recording's agent dir says, for its effective values: `models.json` names the
/// stand-in's model; `settings.json` may make it the default (pure).
pub fn recording_settings(stand_in: &StandIn) -> pi_grammar::AgentSettings {
    let named = stand_in.in_settings;
    pi_grammar::AgentSettings {
        default_provider: named.then(|| stand_in.provider.clone()),
        default_model: named.then(|| stand_in.model.clone()),
        models: vec![(stand_in.provider.clone(), stand_in.model.clone())],
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
        let m = models_json(Api::Responses, "http://127.0.0.1:9", "k");
        assert_eq!(m["providers"]["fake"]["baseUrl"], "http://127.0.0.1:9/v1");
        assert_eq!(m["providers"]["fake"]["api"], "openai-responses");
        let m = models_json(Api::Anthropic, "http://127.0.0.1:9", "k");
        assert_eq!(m["providers"]["fake"]["baseUrl"], "http://127.0.0.1:9");
        assert_eq!(m["providers"]["fake"]["api"], "anthropic-messages");
        assert_eq!(m["providers"]["fake"]["models"][0]["id"], "fake-model");
        assert!(parse_api("grpc").is_err());
    }
}
