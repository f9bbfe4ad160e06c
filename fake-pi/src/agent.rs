//! pi's agent dir as fake-pi reads it: where it is, and what `settings.json` and
//! `models.json` say about the default provider, model, thinking level, tools and the
//! sessions dir.
//!
//! pi reads `$PI_CODING_AGENT_DIR`, else `~/.pi/agent`. A file that does not exist is an
//! empty one; a file that is not valid JSON stops fake-pi (exit 96) rather than guess.

use std::fmt;
use std::marker::PhantomData;
use std::path::{Path, PathBuf};

use pi_grammar::AgentSettings;
use serde::de::{MapAccess, Visitor};
use serde::{Deserialize, Deserializer};

use crate::files;

/// The agent dir and what fake-pi read from it.
pub(crate) struct AgentDir {
    pub(crate) path: PathBuf,
    pub(crate) settings: AgentSettings,
    /// `settings.json` `sessionDir`.
    pub(crate) session_dir: Option<String>,
}

/// Where pi's agent dir is for this environment.
pub(crate) fn locate(env: &dyn Fn(&str) -> Option<String>) -> PathBuf {
    if let Some(dir) = env("PI_CODING_AGENT_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    let home = env("HOME")
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "/".into());
    Path::new(&home).join(".pi/agent")
}

/// A JSON object's entries in file order (serde_json's `Map` sorts its keys).
struct Ordered<V>(Vec<(String, V)>);

impl<'de, V: Deserialize<'de>> Deserialize<'de> for Ordered<V> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V2<V>(PhantomData<V>);
        impl<'de, V: Deserialize<'de>> Visitor<'de> for V2<V> {
            type Value = Ordered<V>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some((k, v)) = map.next_entry()? {
                    out.push((k, v));
                }
                Ok(Ordered(out))
            }
        }
        d.deserialize_map(V2(PhantomData))
    }
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct Settings {
    default_provider: Option<String>,
    default_model: Option<String>,
    default_thinking_level: Option<String>,
    model_thinking_levels: Option<Ordered<String>>,
    default_tools: Option<Vec<String>>,
    enabled_models: Option<Vec<String>>,
    session_dir: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Models {
    providers: Option<Ordered<Provider>>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Provider {
    models: Vec<Model>,
}

#[derive(Deserialize)]
struct Model {
    id: String,
}

/// A JSON file of the agent dir (bounded, a regular file only: [`files::read_config`]); the
/// default when it does not exist.
fn read_json<T: for<'de> Deserialize<'de> + Default>(path: &Path, what: &str) -> Result<T, String> {
    match files::read_config(path) {
        Ok(Some(text)) => serde_json::from_str(&text)
            .map_err(|e| format!("{}: not what pi reads there: {e}", path.display())),
        Ok(None) => Ok(T::default()),
        Err(e) => Err(e.line(what, path)),
    }
}

/// Read the agent dir at `path`.
pub(crate) fn load(path: &Path) -> Result<AgentDir, String> {
    let s: Settings = read_json(&path.join("settings.json"), "pi's settings")?;
    let m: Models = read_json(&path.join("models.json"), "pi's models")?;
    let models = m
        .providers
        .map(|p| p.0)
        .unwrap_or_default()
        .into_iter()
        .flat_map(|(provider, p)| {
            p.models
                .into_iter()
                .map(move |model| (provider.clone(), model.id))
        })
        .collect();
    Ok(AgentDir {
        path: path.to_path_buf(),
        settings: AgentSettings {
            default_provider: s.default_provider,
            default_model: s.default_model,
            default_thinking_level: s.default_thinking_level,
            model_thinking_levels: s.model_thinking_levels.map(|o| o.0).unwrap_or_default(),
            default_tools: s.default_tools,
            enabled_models: s.enabled_models.unwrap_or_default(),
            models,
        },
        session_dir: s.session_dir,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_settings_and_models_in_file_order() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("settings.json"),
            r#"{"defaultProvider":"fake","defaultModel":"fake-b","defaultThinkingLevel":"low","retry":{"baseDelayMs":100},"defaultTools":["+grep"]}"#,
        )
        .unwrap();
        std::fs::write(
            dir.path().join("models.json"),
            r#"{"providers":{"zeta":{"baseUrl":"x","models":[{"id":"z1"}]},"alpha":{"models":[{"id":"a1"},{"id":"a2"}]}}}"#,
        )
        .unwrap();
        let a = load(dir.path()).unwrap();
        assert_eq!(a.settings.default_model.as_deref(), Some("fake-b"));
        assert_eq!(a.settings.default_tools, Some(vec!["+grep".to_string()]));
        assert_eq!(
            a.settings.models,
            vec![
                ("zeta".to_string(), "z1".to_string()),
                ("alpha".to_string(), "a1".to_string()),
                ("alpha".to_string(), "a2".to_string())
            ]
        );
        // Missing files are empty; broken ones are errors naming the file.
        assert_eq!(
            load(&dir.path().join("nope")).unwrap().settings,
            AgentSettings::default()
        );
        std::fs::write(dir.path().join("settings.json"), "{").unwrap();
        assert!(load(dir.path()).err().unwrap().contains("settings.json"));
    }

    #[test]
    fn location() {
        let env = |k: &str| match k {
            "HOME" => Some("/home/u".to_string()),
            _ => None,
        };
        assert_eq!(locate(&env), PathBuf::from("/home/u/.pi/agent"));
        let env = |k: &str| (k == "PI_CODING_AGENT_DIR").then(|| "/a".to_string());
        assert_eq!(locate(&env), PathBuf::from("/a"));
    }
}
