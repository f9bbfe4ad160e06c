//! What a `codex exec` call runs with, resolved as Codex resolves it: the command line's
//! options first, then the `-c key=value` overrides (the last one of a key wins), then the
//! config files (`$CODEX_HOME/config.toml`, with a profile's values over it), then Codex's
//! defaults; each value with where it came from, for a mismatch to say.
//!
//! Reading TOML is I/O's job (the caller's): this room gets each config layer already
//! flattened to dotted keys with string values (`model_providers.fake.env_key`), and the
//! `-c` overrides split ([`split_override`]) with their values read.

use std::collections::BTreeMap;
use std::fmt;

use super::{Command, Parsed};

/// Where an effective value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// A command-line option (`--model`).
    Flag(String),
    /// A config layer: `-c model=...`, `config.toml (PATH)`, `profile X (...)`.
    Layer(String),
    /// Codex's own default.
    Default,
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Flag(flag) => write!(f, "flag {flag}"),
            Source::Layer(name) => f.write_str(name),
            Source::Default => f.write_str("Codex's default"),
        }
    }
}

/// One resolved value: `None` when nothing sets it and Codex's default is not known here
/// (the model: Codex's built-in choice).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// The value.
    pub value: Option<String>,
    /// Where it came from.
    pub source: Source,
}

/// One config layer, flattened: its name for messages and its `dotted.key -> value` pairs
/// (strings as their text, other values as TOML writes them).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Layer {
    /// `config.toml (/home/u/.codex/config.toml)`, `-c`, ...
    pub name: String,
    /// Its values by dotted key.
    pub values: BTreeMap<String, String>,
}

/// The values of a call that change what Codex does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Effective {
    /// `exec` (the only mode imitated).
    pub mode: String,
    /// `model_provider` (default `openai`).
    pub provider: Resolved,
    /// `model` (default: Codex's built-in, not known here).
    pub model: Resolved,
    /// `sandbox_mode` (default `read-only`).
    pub sandbox: Resolved,
    /// `approval_policy` (default `never`: `codex exec` cannot ask anyone).
    pub approval: Resolved,
    /// `new` (`codex exec`) or `resumed` (`codex exec resume`).
    pub session: &'static str,
}

/// `-c key=value` split at its first `=` (key trimmed), or the CLI's message for an
/// override without one (`Invalid override (missing '='): X`; the CLI prefixes
/// `Error parsing -c overrides: ` and exits 1) or with an empty key.
pub fn split_override(s: &str) -> Result<(String, String), String> {
    let Some((key, value)) = s.split_once('=') else {
        return Err(format!("Invalid override (missing '='): {s}"));
    };
    let key = key.trim();
    if key.is_empty() {
        return Err(format!("Empty key in override: {s}"));
    }
    Ok((key.to_string(), value.to_string()))
}

/// The literal a `-c` value stands for when it is not TOML (`-c model=o3`): the raw text
/// trimmed of white space and of surrounding quotes, as the CLI takes it.
pub fn literal_override(raw: &str) -> String {
    raw.trim()
        .trim_matches(|c| c == '"' || c == '\'')
        .to_string()
}

/// The `-c` overrides of `parsed` as one layer named `-c`, in order (a later one of a key
/// wins). `read_toml` reads a value as TOML (the caller's parser: a string's text, another
/// value as TOML writes it), `None` when it is not TOML: then the value is the literal
/// ([`literal_override`]). `Err`: the CLI's message for a malformed override.
pub fn override_layer(
    parsed: &Parsed,
    read_toml: &dyn Fn(&str) -> Option<String>,
) -> Result<Layer, String> {
    let mut layer = Layer {
        name: "-c".into(),
        values: BTreeMap::new(),
    };
    for o in parsed.values("config") {
        let (key, raw) = split_override(o)?;
        let value = read_toml(&raw).unwrap_or_else(|| literal_override(&raw));
        layer.values.insert(key, value);
    }
    Ok(layer)
}

/// The value of `key` in the highest layer that sets it.
fn from_layers(layers: &[Layer], key: &str) -> Option<Resolved> {
    layers.iter().rev().find_map(|l| {
        l.values.get(key).map(|v| Resolved {
            value: Some(v.clone()),
            source: Source::Layer(l.name.clone()),
        })
    })
}

fn resolve(
    flag: Option<(&str, String)>,
    layers: &[Layer],
    key: &str,
    default: Option<&str>,
) -> Resolved {
    if let Some((name, value)) = flag {
        return Resolved {
            value: Some(value),
            source: Source::Flag(name.to_string()),
        };
    }
    from_layers(layers, key).unwrap_or(Resolved {
        value: default.map(str::to_string),
        source: Source::Default,
    })
}

/// The profile a call selects: `--profile`, else the config's `profile` key.
pub fn profile_name(parsed: &Parsed, layers: &[Layer]) -> Option<String> {
    parsed
        .value("profile")
        .map(str::to_string)
        .or_else(|| from_layers(layers, "profile").and_then(|r| r.value))
}

/// What `parsed` runs with over `layers` (lowest first: config.toml, the profile's values,
/// then the `-c` overrides as one layer named `-c`).
pub fn effective(parsed: &Parsed, layers: &[Layer]) -> Effective {
    let bypass = parsed.has("dangerously-bypass-approvals-and-sandbox");
    let flag = |long: &str| parsed.value(long).map(str::to_string);
    let sandbox_flag = flag("sandbox").map(|v| ("--sandbox", v)).or_else(|| {
        bypass.then(|| {
            (
                "--dangerously-bypass-approvals-and-sandbox",
                "danger-full-access".to_string(),
            )
        })
    });
    let approval_flag = flag("ask-for-approval")
        .map(|v| ("--ask-for-approval", v))
        .or_else(|| {
            bypass.then(|| {
                (
                    "--dangerously-bypass-approvals-and-sandbox",
                    "never".to_string(),
                )
            })
        });
    Effective {
        mode: "exec".into(),
        provider: resolve(None, layers, "model_provider", Some("openai")),
        model: resolve(flag("model").map(|v| ("--model", v)), layers, "model", None),
        sandbox: resolve(sandbox_flag, layers, "sandbox_mode", Some("read-only")),
        approval: resolve(approval_flag, layers, "approval_policy", Some("never")),
        session: match parsed.command {
            Command::ExecResume => "resumed",
            _ => "new",
        },
    }
}
