//! fake-pi as Codex: the config a call runs with, read as Codex reads it, as the layers
//! `pi_grammar::codex::effective` resolves: `$CODEX_HOME/config.toml` (default
//! `~/.codex`; not read with `--ignore-user-config`), the selected profile's values
//! (`--profile NAME` or the config's `profile` key: its `[profiles.NAME]` table, then
//! `$CODEX_HOME/NAME.config.toml`, which 0.169.0's help names), then the `-c` overrides
//! (each value read as TOML, else taken as the literal). The `toml` crate reads the files
//! here, where the I/O is; the grammar stays std only. Each file is read as
//! [`files::read_config`] reads a CLI's configuration: a regular file (through a link), at
//! most 1 MiB; anything else is fake-pi's own refusal (a FIFO hung, `/dev/zero` grew).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use pi_grammar::codex::{self, Layer, Parsed};

use crate::files::{self, ConfigError};

/// `$CODEX_HOME`, else `$HOME/.codex`.
pub(crate) fn codex_home(env: &dyn Fn(&str) -> Option<String>) -> PathBuf {
    match env("CODEX_HOME").filter(|h| !h.is_empty()) {
        Some(h) => PathBuf::from(h),
        None => PathBuf::from(env("HOME").unwrap_or_default()).join(".codex"),
    }
}

/// A TOML value as the layers hold it: a string's text, anything else as TOML writes it.
fn text(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// `table` flattened to dotted keys under `prefix`.
fn flatten(prefix: &str, table: &toml::Table, out: &mut BTreeMap<String, String>) {
    for (k, v) in table {
        let key = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        match v {
            toml::Value::Table(t) => flatten(&key, t, out),
            v => {
                out.insert(key, text(v));
            }
        }
    }
}

/// A `-c` value read as TOML (`"x"`, `true`, `[1]`), or `None` when it is not TOML.
fn read_toml_value(raw: &str) -> Option<String> {
    let table: toml::Table = format!("value = {raw}").parse().ok()?;
    table.get("value").map(text)
}

/// Why a call's layers could not be read.
#[derive(Debug)]
pub(crate) enum LayersError {
    /// What the CLI says and exits 1 with (a config it cannot read or parse, a malformed `-c`).
    Cli(String),
    /// fake-pi's own refusal (exit 96): a config that is not a regular file or is larger
    /// than fake-pi reads ([`files::read_config`]), where real Codex would hang or grow.
    Refused(String),
}

/// A TOML file read whole (bounded, a regular file only); `None` when it does not exist.
fn read_file(path: &Path) -> Result<Option<toml::Table>, LayersError> {
    let text = match files::read_config(path) {
        Ok(Some(t)) => t,
        Ok(None) => return Ok(None),
        Err(e @ ConfigError::Refused(_)) => {
            return Err(LayersError::Refused(e.line("Codex's config", path)))
        }
        Err(ConfigError::Unreadable(e)) => {
            return Err(LayersError::Cli(format!(
                "Error loading config.toml: {}: {e}",
                path.display()
            )))
        }
    };
    text.parse::<toml::Table>().map(Some).map_err(|e| {
        LayersError::Cli(format!(
            "Error loading config.toml: {}: {e}",
            path.display()
        ))
    })
}

/// The layers of a call, lowest first.
pub(crate) fn layers(parsed: &Parsed, home: &Path) -> Result<Vec<Layer>, LayersError> {
    let overrides = codex::override_layer(parsed, &read_toml_value)
        .map_err(|e| LayersError::Cli(format!("Error parsing -c overrides: {e}")))?;
    let mut layers = Vec::new();
    let file = home.join("config.toml");
    let base = if parsed.has("ignore-user-config") {
        None
    } else {
        read_file(&file)?
    };
    if let Some(t) = &base {
        let mut values = BTreeMap::new();
        flatten("", t, &mut values);
        values.retain(|k, _| !k.starts_with("profiles."));
        layers.push(Layer {
            name: format!("config.toml ({})", file.display()),
            values,
        });
    }
    let mut with_overrides = layers.clone();
    with_overrides.push(overrides.clone());
    if let Some(name) = codex::profile_name(parsed, &with_overrides) {
        if let Some(toml::Value::Table(t)) = base
            .as_ref()
            .and_then(|b| b.get("profiles"))
            .and_then(|p| p.get(&name))
        {
            let mut values = BTreeMap::new();
            flatten("", t, &mut values);
            layers.push(Layer {
                name: format!("[profiles.{name}] of {}", file.display()),
                values,
            });
        }
        let profile_file = home.join(format!("{name}.config.toml"));
        if let Some(t) = read_file(&profile_file)? {
            let mut values = BTreeMap::new();
            flatten("", &t, &mut values);
            layers.push(Layer {
                name: format!("profile {name} ({})", profile_file.display()),
                values,
            });
        }
    }
    layers.push(overrides);
    Ok(layers)
}

/// The values Codex refuses before it runs (measured): a `sandbox_mode` that is not one
/// of its three (`Error loading config.toml: unknown variant ...`), and a `model_provider`
/// that is neither built in nor under `[model_providers]` (`Error: Model provider `X` not
/// found`). Both exit 1.
pub(crate) fn refused(effective: &codex::Effective, layers: &[Layer]) -> Option<String> {
    const SANDBOXES: [&str; 3] = ["read-only", "workspace-write", "danger-full-access"];
    if let Some(s) = effective.sandbox.value.as_deref() {
        if !SANDBOXES.contains(&s) {
            return Some(format!(
                "Error loading config.toml: unknown variant `{s}`, expected one of `read-only`, `workspace-write`, `danger-full-access`\nin `sandbox_mode`\n\n"
            ));
        }
    }
    let provider = effective.provider.value.as_deref()?;
    let prefix = format!("model_providers.{provider}.");
    let configured = layers
        .iter()
        .any(|l| l.values.keys().any(|k| k.starts_with(&prefix)));
    let built_in = ["openai", "oss", "ollama", "lmstudio"].contains(&provider);
    (!configured && !built_in).then(|| format!("Error: Model provider `{provider}` not found\n"))
}
