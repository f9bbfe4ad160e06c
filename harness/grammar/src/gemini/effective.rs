//! What a Gemini call runs with, resolved as 0.61.0 resolves it (read in its bundle and
//! measured): the model from `-m`, else `GEMINI_MODEL`, else settings `model.name`, else
//! `auto` (an empty or `auto` value is `auto` too); the approval mode from
//! `--approval-mode`, else `-y` (`yolo`), else settings `general.defaultApprovalMode`
//! (which may not say `yolo`), else `default`; `max_attempts` from settings
//! `general.maxAttempts`, else 10; the sandbox from `-s`, else settings `tools.sandbox`.
//! Each value with where it came from, for a mismatch to say.
//!
//! Reading the settings files is the caller's: this room gets each layer flattened to
//! dotted keys, lowest first (the user's `~/.gemini/settings.json`, then the workspace's
//! `.gemini/settings.json`: the later wins).

use std::collections::BTreeMap;
use std::fmt;

use super::Parsed;

/// The model a call with none named asks for (`GEMINI_MODEL_ALIAS_AUTO`).
pub const DEFAULT_MODEL: &str = "auto";
/// Attempts per request when the settings name none (`DEFAULT_MAX_ATTEMPTS`).
pub const DEFAULT_MAX_ATTEMPTS: u32 = 10;

/// Where an effective value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// A command-line option (`--model`).
    Flag(String),
    /// An environment variable (`GEMINI_MODEL`).
    Env(String),
    /// A settings layer, by its name (`settings.json (PATH)`).
    Layer(String),
    /// Gemini's own default.
    Default,
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Flag(flag) => write!(f, "flag {flag}"),
            Source::Env(name) => write!(f, "env {name}"),
            Source::Layer(name) => f.write_str(name),
            Source::Default => f.write_str("Gemini CLI's default"),
        }
    }
}

/// One resolved value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// The value (`None`: nothing sets it and there is no default).
    pub value: Option<String>,
    /// Where it came from.
    pub source: Source,
}

/// One settings layer, flattened: its name for messages and its `dotted.key -> value`
/// pairs (strings as their text, other values as JSON writes them).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Layer {
    /// `settings.json (/home/u/.gemini/settings.json)`.
    pub name: String,
    /// Its values by dotted key.
    pub values: BTreeMap<String, String>,
}

/// The values of a call that change what Gemini does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Effective {
    /// `--output-format` (`text` when not given).
    pub mode: String,
    /// The model asked for.
    pub model: Resolved,
    /// The approval mode (`default`, `auto_edit`, `yolo`, `plan`).
    pub approval: Resolved,
    /// Attempts per request.
    pub max_attempts: Resolved,
    /// The sandbox, when one is asked for.
    pub sandbox: Resolved,
}

fn from_layers(layers: &[Layer], key: &str) -> Option<Resolved> {
    layers.iter().rev().find_map(|l| {
        l.values.get(key).map(|v| Resolved {
            value: Some(v.clone()),
            source: Source::Layer(l.name.clone()),
        })
    })
}

fn flag(value: &str, name: &str) -> Resolved {
    Resolved {
        value: Some(value.to_string()),
        source: Source::Flag(name.into()),
    }
}

fn default(value: Option<&str>) -> Resolved {
    Resolved {
        value: value.map(str::to_string),
        source: Source::Default,
    }
}

/// What `parsed` runs with, given `GEMINI_MODEL` (`env_model`) and the settings layers.
pub fn effective(parsed: &Parsed, env_model: Option<&str>, layers: &[Layer]) -> Effective {
    let model = match parsed.value("model").filter(|m| !m.trim().is_empty()) {
        Some(m) => flag(m.trim(), "--model"),
        None => match env_model.filter(|m| !m.trim().is_empty()) {
            Some(m) => Resolved {
                value: Some(m.trim().to_string()),
                source: Source::Env("GEMINI_MODEL".into()),
            },
            None => from_layers(layers, "model.name")
                .filter(|r| r.value.as_deref().is_some_and(|v| !v.trim().is_empty()))
                .unwrap_or_else(|| default(Some(DEFAULT_MODEL))),
        },
    };
    let approval = if let Some(a) = parsed.value("approval-mode") {
        flag(a, "--approval-mode")
    } else if parsed.on("yolo") {
        flag("yolo", "--yolo")
    } else {
        from_layers(layers, "general.defaultApprovalMode")
            .filter(|r| r.value.as_deref() != Some("yolo"))
            .unwrap_or_else(|| default(Some("default")))
    };
    let max_attempts = from_layers(layers, "general.maxAttempts")
        .unwrap_or_else(|| default(Some(&DEFAULT_MAX_ATTEMPTS.to_string())));
    let sandbox = if parsed.has("sandbox") {
        flag(parsed.value("sandbox").unwrap_or("true"), "--sandbox")
    } else {
        from_layers(layers, "tools.sandbox").unwrap_or_else(|| default(None))
    };
    Effective {
        mode: parsed.value("output-format").unwrap_or("text").to_string(),
        model,
        approval,
        max_attempts,
        sandbox,
    }
}
