//! fake-pi as Gemini CLI: the settings a call runs with, read as 0.61.0's loader reads them
//! ([`layers`]): its files in its order, each read as [`files::read_config`] reads a CLI's
//! configuration, its comments stripped as the loader strips them ([`strip_json_comments`]),
//! then parsed as JSON (a file that is not is fake-pi's own refusal) and flattened to the
//! dotted keys `pi_grammar::gemini::effective` resolves.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use pi_grammar::gemini::{self, Layer};

use crate::{environ, files};

/// The settings files 0.61.0 reads, lowest first (read in its bundle): the system defaults
/// (`GEMINI_CLI_SYSTEM_DEFAULTS_PATH`, else `system-defaults.json` beside the system
/// settings), the user's (`$GEMINI_CLI_HOME/.gemini/settings.json` when that is set, as
/// the CLI's home directory, else `$HOME/.gemini/settings.json`), the workspace's
/// (`./.gemini/settings.json`, only when the workspace is trusted: [`trusted`]), then the
/// system settings over all (`GEMINI_CLI_SYSTEM_SETTINGS_PATH`, else
/// `/etc/gemini-cli/settings.json`).
pub(crate) fn layers(parsed: &gemini::Parsed) -> Result<Vec<Layer>, String> {
    let home = PathBuf::from(
        environ::var("GEMINI_CLI_HOME")
            .filter(|h| !h.is_empty())
            .or_else(|| environ::var("HOME"))
            .unwrap_or_default(),
    );
    let cwd = std::env::current_dir().unwrap_or_default();
    let system = environ::var("GEMINI_CLI_SYSTEM_SETTINGS_PATH")
        .filter(|p| !p.is_empty())
        .map_or_else(
            || PathBuf::from("/etc/gemini-cli/settings.json"),
            PathBuf::from,
        );
    let defaults = environ::var("GEMINI_CLI_SYSTEM_DEFAULTS_PATH")
        .filter(|p| !p.is_empty())
        .map_or_else(
            || system.with_file_name("system-defaults.json"),
            PathBuf::from,
        );
    let user = home.join(".gemini/settings.json");
    let workspace = cwd.join(".gemini/settings.json");
    let mut layers = Vec::new();
    for file in [&defaults, &user] {
        layers.extend(read_layer(file)?);
    }
    let system_layer = read_layer(&system)?;
    let same = |a: &Path, b: &Path| {
        a.canonicalize()
            .ok()
            .is_some_and(|a| b.canonicalize().ok() == Some(a))
    };
    if !same(&workspace, &user) {
        let mut so_far = layers.clone();
        so_far.extend(system_layer.clone());
        if trusted(parsed, &so_far) {
            layers.extend(read_layer(&workspace)?);
        }
    }
    layers.extend(system_layer);
    Ok(layers)
}

/// Is the workspace trusted, so its settings count: `GEMINI_CLI_TRUST_WORKSPACE=true`
/// (`false`, or `GEMINI_RESTRICTED_MODE=true`, says no), `--skip-trust`, or folder trust
/// turned off in the settings (`security.folderTrust.enabled: false`). The CLI's list of
/// trusted folders (`~/.gemini/trustedFolders.json`) is not read: a workspace only it
/// trusts counts as untrusted here.
fn trusted(parsed: &gemini::Parsed, layers: &[Layer]) -> bool {
    let env = |k: &str| environ::var(k).unwrap_or_default();
    if env("GEMINI_RESTRICTED_MODE") == "true" || env("GEMINI_CLI_TRUST_WORKSPACE") == "false" {
        return false;
    }
    if env("GEMINI_CLI_TRUST_WORKSPACE") == "true" || parsed.on("skip-trust") {
        return true;
    }
    layers
        .iter()
        .rev()
        .find_map(|l| l.values.get("security.folderTrust.enabled"))
        .is_some_and(|v| v == "false")
}

/// One settings file as a layer; `None` when it does not exist. Read as
/// [`files::read_config`] reads a CLI's configuration: a regular file (through a link), at
/// most 1 MiB (a FIFO hung the relaunch parent, which ignores SIGTERM; `/dev/zero` grew).
fn read_layer(file: &Path) -> Result<Option<Layer>, String> {
    let text = match files::read_config(file) {
        Ok(Some(t)) => t,
        Ok(None) => return Ok(None),
        Err(e) => return Err(e.line("Gemini CLI's settings", file)),
    };
    let value: serde_json::Value = serde_json::from_str(&strip_json_comments(&text))
        .map_err(|e| format!("{}: not JSON: {e}", file.display()))?;
    let mut values = BTreeMap::new();
    flatten("", &value, &mut values);
    Ok(Some(Layer {
        name: format!("settings.json ({})", file.display()),
        values,
    }))
}

/// `value` flattened to dotted keys under `prefix` (strings as their text).
fn flatten(prefix: &str, value: &serde_json::Value, out: &mut BTreeMap<String, String>) {
    match value {
        serde_json::Value::Object(map) => {
            for (k, v) in map {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(&key, v, out);
            }
        }
        serde_json::Value::String(s) if !prefix.is_empty() => {
            out.insert(prefix.to_string(), s.clone());
        }
        v if !prefix.is_empty() => {
            out.insert(prefix.to_string(), v.to_string());
        }
        _ => {}
    }
}

/// `text` with its comments blanked out, as Gemini CLI's settings loader does before it
/// parses the JSON (0.61.0 bundles the `strip-json-comments` package, 3.x, and calls it with
/// its defaults): `//` to the end of the line and `/* ... */`, outside strings (a `"` after an
/// odd number of backslashes does not end one), each character of a comment but whitespace
/// turned to a space; a comment left open runs to the end. Trailing commas stay (an error, as
/// for the CLI).
pub(crate) fn strip_json_comments(text: &str) -> String {
    #[derive(PartialEq)]
    enum In {
        Code,
        String,
        Line,
        Block,
    }
    let blank = |s: &str| -> String {
        s.chars()
            .map(|c| if c.is_whitespace() { c } else { ' ' })
            .collect()
    };
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let (mut state, mut from, mut i) = (In::Code, 0, 0);
    while i < b.len() {
        let pair = (b[i], b.get(i + 1).copied());
        match state {
            In::Code | In::String if b[i] == b'"' => {
                let backslashes = b[..i].iter().rev().take_while(|&&c| c == b'\\').count();
                if backslashes % 2 == 0 {
                    state = if state == In::Code {
                        In::String
                    } else {
                        In::Code
                    };
                }
            }
            In::String => {}
            In::Code if pair == (b'/', Some(b'/')) || pair == (b'/', Some(b'*')) => {
                out.push_str(&text[from..i]);
                from = i;
                state = if pair.1 == Some(b'/') {
                    In::Line
                } else {
                    In::Block
                };
                i += 1;
            }
            In::Line if b[i] == b'\n' || pair == (b'\r', Some(b'\n')) => {
                // The line break itself stays.
                out.push_str(&blank(&text[from..i]));
                from = i;
                state = In::Code;
            }
            In::Block if pair == (b'*', Some(b'/')) => {
                out.push_str(&blank(&text[from..i + 2]));
                from = i + 2;
                state = In::Code;
                i += 1;
            }
            _ => {}
        }
        i += 1;
    }
    if matches!(state, In::Line | In::Block) {
        out.push_str(&blank(&text[from..]));
    } else {
        out.push_str(&text[from..]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::strip_json_comments as strip;

    #[test]
    fn comments_are_blanked_outside_strings_as_the_cli_strips_them() {
        assert_eq!(
            strip("{\n  // the model\n  \"a\": 1 /* one */\n}"),
            "{\n              \n  \"a\": 1          \n}"
        );
        // Inside a string: kept, an escaped quote does not end the string.
        let kept = r#"{"url": "http://x/*y*/", "q": "say \"//hi\"", "b": "\\"} // end"#;
        assert_eq!(
            strip(kept),
            r#"{"url": "http://x/*y*/", "q": "say \"//hi\"", "b": "\\"}       "#
        );
        // A block over lines keeps the line breaks; `//` inside it is part of it.
        assert_eq!(strip("1/* a\n// b */2"), "1    \n       2");
        // `\r\n` ends a line comment too; one left open runs to the end.
        assert_eq!(strip("1// x\r\n2 /* open"), "1    \r\n2        ");
        assert_eq!(strip("\"a\" // é"), "\"a\"     ");
        // The result parses as the CLI's JSON.parse would.
        let v: serde_json::Value = serde_json::from_str(&strip(
            "{\n  // where\n  \"model\": {\"name\": \"gemini-2.5-flash\"}, /* c */ \"x\": \"a//b\"\n}\n",
        ))
        .unwrap();
        assert_eq!(v["model"]["name"], "gemini-2.5-flash");
        assert_eq!(v["x"], "a//b");
    }
}
