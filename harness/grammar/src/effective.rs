//! What pi would actually do with a command line: the effective values.
//!
//! pi takes each setting from its flags first, then from the agent dir's `settings.json`
//! (and `models.json`), then from its built-in defaults. Two command lines that differ in
//! syntax (flag order, `-t` vs `--tools`, the prompt on stdin or in argv) but agree here
//! make pi behave the same; two that differ here do not. fake-pi compares these values
//! with the ones a cassette was recorded with; `cassette show` prints them.
//!
//! Pure: the caller reads the agent dir and passes what it found as [`AgentSettings`].

use crate::grammar::Grammar;
use crate::parse::ParsedArgs;
use crate::version::Feature;

/// What pi reads from its agent dir (`$PI_CODING_AGENT_DIR`, else `~/.pi/agent`) that
/// decides effective values. Absent keys are `None`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AgentSettings {
    /// `settings.json` `defaultProvider`.
    pub default_provider: Option<String>,
    /// `settings.json` `defaultModel`.
    pub default_model: Option<String>,
    /// `settings.json` `defaultThinkingLevel`.
    pub default_thinking_level: Option<String>,
    /// `settings.json` `modelThinkingLevels` (`"provider/id"` -> level; pi >= 0.87.1).
    pub model_thinking_levels: Vec<(String, String)>,
    /// `settings.json` `defaultTools` (pi >= 0.87.1; `+name`/`-name` entries from 1.1.0).
    pub default_tools: Option<Vec<String>>,
    /// `settings.json` `enabledModels` (model patterns; the first is the default).
    pub enabled_models: Vec<String>,
    /// `models.json`: `(provider, model id)` in file order.
    pub models: Vec<(String, String)>,
}

/// How pi runs: the mode and everything that changes what it sends to the model or runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Effective {
    /// `json`, `rpc`, `print` or `interactive`.
    pub mode: String,
    /// The provider, or `None` when pi could not pick one.
    pub provider: Option<String>,
    /// The model id (without provider prefix or `:level`), or `None`.
    pub model: Option<String>,
    /// Where the model choice came from, for messages (`--model`, `settings.json`, ...).
    pub model_source: String,
    /// The thinking level pi asks for (before pi clamps it to what the model supports).
    pub thinking: String,
    /// The active tools, sorted.
    pub tools: Vec<String>,
    /// `--system-prompt`.
    pub system_prompt: Option<String>,
    /// `--append-system-prompt`, in order.
    pub append_system_prompt: Vec<String>,
    /// `--extension` values, in order, and whether `--no-extensions` was given.
    pub extensions: Vec<String>,
    /// `--no-extensions`.
    pub no_extensions: bool,
    /// `--skill` values and `--no-skills`.
    pub skills: Vec<String>,
    /// `--no-skills`.
    pub no_skills: bool,
    /// `--prompt-template` values and `--no-prompt-templates`.
    pub prompt_templates: Vec<String>,
    /// `--no-prompt-templates`.
    pub no_prompt_templates: bool,
    /// `--no-context-files` (AGENTS.md and friends left out of the system prompt).
    pub no_context_files: bool,
    /// `--no-mcp` (pi >= 1.0.4).
    pub no_mcp: bool,
    /// The prompts pi sends, in order: stdin joined with the first argv message, then each
    /// further argv message.
    pub prompts: Vec<String>,
}

/// The tools pi 0.73.1 and 0.87.1 register.
const TOOLS_BASE: &[&str] = &["read", "bash", "edit", "write", "grep", "find", "ls"];
/// The tools pi 1.x registers (with the built-in codemode and tool-search extensions).
const TOOLS_1X: &[&str] = &[
    "read",
    "bash",
    "powershell",
    "edit",
    "write",
    "grep",
    "find",
    "ls",
    "codemode",
    "tool_search",
];
/// Tools on when nothing says otherwise.
pub const DEFAULT_TOOLS: &[&str] = &["read", "bash", "edit", "write"];
/// pi's thinking level when nothing sets one.
pub const DEFAULT_THINKING: &str = "medium";

/// `*` matches any run of characters (pi's tool patterns).
fn glob(pattern: &str, name: &str) -> bool {
    let (p, n) = (pattern.as_bytes(), name.as_bytes());
    let (mut pi, mut ni, mut star, mut mark) = (0, 0, None, 0);
    while ni < n.len() {
        if pi < p.len() && p[pi] == b'*' {
            star = Some(pi);
            mark = ni;
            pi += 1;
        } else if pi < p.len() && p[pi] == n[ni] {
            pi += 1;
            ni += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ni = mark;
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == b'*' {
        pi += 1;
    }
    pi == p.len()
}

fn split_list(value: &str) -> Vec<String> {
    value
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

impl Grammar {
    /// The tools this version registers.
    pub fn registered_tools(&self) -> &'static [&'static str] {
        if self.has(Feature::ToolPatterns) {
            TOOLS_1X
        } else {
            TOOLS_BASE
        }
    }

    /// The active tools for a parsed command line and settings, sorted.
    pub fn effective_tools(&self, parsed: &ParsedArgs, settings: &AgentSettings) -> Vec<String> {
        let registry = self.registered_tools();
        let patterns = self.has(Feature::ToolPatterns);
        let modifiers = self.has(Feature::ToolModifiers);
        let is_modifier = |e: &String| e.starts_with('+') || e.starts_with('-');
        // Resolve a list of names (and patterns from 1.0.4) against the registry.
        let resolve = |entries: &[String]| -> Vec<String> {
            let mut out = Vec::new();
            for e in entries {
                for t in registry {
                    let hit = if patterns && e.contains('*') {
                        glob(e, t)
                    } else {
                        e == t
                    };
                    if hit && !out.iter().any(|o: &String| o == t) {
                        out.push(t.to_string());
                    }
                }
            }
            out
        };
        let apply_modifiers = |base: Vec<String>, entries: &[String]| -> Vec<String> {
            let mut tools = base;
            for e in entries {
                let name = &e[1..];
                if e.starts_with('+') {
                    if registry.contains(&name) && !tools.iter().any(|t| t == name) {
                        tools.push(name.to_string());
                    }
                } else {
                    tools.retain(|t| t != name);
                }
            }
            tools
        };
        let settings_tools = if self.has(Feature::SettingsDefaultTools) {
            settings.default_tools.clone()
        } else {
            None
        };
        let defaults: Vec<String> = if parsed.has("--no-tools") || parsed.has("--no-builtin-tools")
        {
            Vec::new()
        } else {
            match settings_tools {
                Some(list) if modifiers && list.iter().all(is_modifier) => {
                    apply_modifiers(DEFAULT_TOOLS.iter().map(|s| s.to_string()).collect(), &list)
                }
                Some(list) => resolve(&list),
                None => DEFAULT_TOOLS.iter().map(|s| s.to_string()).collect(),
            }
        };
        let mut tools = match parsed.value("--tools") {
            Some(v) => {
                let entries = split_list(v);
                if modifiers && !entries.is_empty() && entries.iter().all(is_modifier) {
                    apply_modifiers(defaults, &entries)
                } else {
                    resolve(&entries)
                }
            }
            None => defaults,
        };
        if let Some(v) = parsed.value("--exclude-tools") {
            let excluded = split_list(v);
            tools.retain(|t| {
                !excluded.iter().any(|e| {
                    if patterns && e.contains('*') {
                        glob(e, t)
                    } else {
                        e == t
                    }
                })
            });
        }
        tools.sort();
        tools
    }

    /// Everything pi would actually use for this command line, stdin and agent dir.
    /// `prompt_stdin` is what pi keeps of piped stdin ([`crate::prompt::stdin_content`]).
    pub fn effective(
        &self,
        parsed: &ParsedArgs,
        mode: crate::output::AppMode,
        prompt_stdin: Option<&str>,
        settings: &AgentSettings,
    ) -> Effective {
        // --model [provider/]id[:level]
        let flag_model = parsed.value("--model").map(|m| {
            let (m, level) = match m.rsplit_once(':') {
                Some((m, l)) if self.thinking_levels().contains(&l) => (m, Some(l.to_string())),
                _ => (m, None),
            };
            match m.split_once('/') {
                Some((p, id)) if parsed.value("--provider").is_none() => {
                    (Some(p.to_string()), id.to_string(), level)
                }
                _ => (None, m.to_string(), level),
            }
        });
        let (provider, model, model_source, model_level) = match flag_model {
            Some((p, id, level)) => {
                let provider = parsed
                    .value("--provider")
                    .map(str::to_string)
                    .or(p)
                    .or_else(|| {
                        settings
                            .models
                            .iter()
                            .find(|(_, m)| *m == id)
                            .map(|(p, _)| p.clone())
                    });
                (provider, Some(id), "--model".to_string(), level)
            }
            None => {
                if let Some(first) = settings.enabled_models.first() {
                    let (p, id) = match first.split_once('/') {
                        Some((p, id)) => (Some(p.to_string()), id.to_string()),
                        None => (
                            settings
                                .models
                                .iter()
                                .find(|(_, m)| m == first)
                                .map(|(p, _)| p.clone()),
                            first.clone(),
                        ),
                    };
                    (p, Some(id), "settings.json enabledModels".into(), None)
                } else if let (Some(p), Some(m)) =
                    (&settings.default_provider, &settings.default_model)
                {
                    (
                        Some(p.clone()),
                        Some(m.clone()),
                        "settings.json defaultProvider/defaultModel".into(),
                        None,
                    )
                } else if let Some((p, m)) = settings.models.first() {
                    (
                        Some(p.clone()),
                        Some(m.clone()),
                        "the first model of models.json".into(),
                        None,
                    )
                } else {
                    (
                        None,
                        None,
                        "no --model, no settings.json default and no models.json".into(),
                        None,
                    )
                }
            }
        };
        let per_model = match (&provider, &model) {
            (Some(p), Some(m)) if self.has(Feature::ModelThinkingLevels) => settings
                .model_thinking_levels
                .iter()
                .find(|(k, _)| *k == format!("{p}/{m}"))
                .map(|(_, l)| l.clone()),
            _ => None,
        };
        let thinking = parsed
            .value("--thinking")
            .map(str::to_string)
            .or(model_level)
            .or(per_model)
            .or_else(|| settings.default_thinking_level.clone())
            .unwrap_or_else(|| DEFAULT_THINKING.to_string());
        let mut prompts = Vec::new();
        if let Some(first) = crate::prompt::join_prompt(prompt_stdin, &parsed.messages) {
            prompts.push(first);
            prompts.extend(parsed.messages.iter().skip(1).cloned());
        }
        let owned = |flag: &str| -> Vec<String> {
            parsed
                .values(flag)
                .into_iter()
                .map(str::to_string)
                .collect()
        };
        Effective {
            mode: match mode {
                crate::output::AppMode::Json => "json",
                crate::output::AppMode::Rpc => "rpc",
                crate::output::AppMode::Print => "print",
                crate::output::AppMode::Interactive => "interactive",
            }
            .into(),
            provider,
            model,
            model_source,
            thinking,
            tools: self.effective_tools(parsed, settings),
            system_prompt: parsed.value("--system-prompt").map(str::to_string),
            append_system_prompt: owned("--append-system-prompt"),
            extensions: owned("--extension"),
            no_extensions: parsed.has("--no-extensions"),
            skills: owned("--skill"),
            no_skills: parsed.has("--no-skills"),
            prompt_templates: owned("--prompt-template"),
            no_prompt_templates: parsed.has("--no-prompt-templates"),
            no_context_files: parsed.has("--no-context-files"),
            no_mcp: parsed.has("--no-mcp"),
            prompts,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::AppMode;

    fn eff(version: &str, argv: &[&str], stdin: Option<&str>, s: &AgentSettings) -> Effective {
        let g = Grammar::for_version(version).unwrap();
        let argv: Vec<String> = argv.iter().map(|a| a.to_string()).collect();
        let p = g.parse(&argv).unwrap();
        g.effective(&p, AppMode::Json, stdin, s)
    }

    fn tools(version: &str, argv: &[&str], s: &AgentSettings) -> String {
        eff(version, argv, None, s).tools.join(",")
    }

    #[test]
    fn globs() {
        assert!(glob("re*", "read"));
        assert!(glob("*", "bash"));
        assert!(glob("b*h", "bash"));
        assert!(!glob("b*x", "bash"));
        assert!(glob("mcp__*__x", "mcp__a__x"));
    }

    /// The measured table of effective tools (pi 0.73.1, 0.87.1, 1.5.2; request logs).
    #[test]
    fn tools_as_measured() {
        let none = AgentSettings::default();
        let rows: &[(&[&str], &str, &str)] = &[
            (&[], "bash,edit,read,write", "bash,edit,read,write"),
            (&["--tools", "read,nosuchtool"], "read", "read"),
            (
                &["--tools", "+codemode"],
                "",
                "bash,codemode,edit,read,write",
            ),
            (
                &["--tools", "+codemode,-write"],
                "",
                "bash,codemode,edit,read",
            ),
            (&["--tools", "-bash"], "", "edit,read,write"),
            (&["--tools", "re*"], "", "read"),
            (
                &["--tools", "*"],
                "",
                "bash,codemode,edit,find,grep,ls,powershell,read,tool_search,write",
            ),
            (&["--no-tools"], "", ""),
            (&["--no-builtin-tools", "--tools", "read"], "read", "read"),
            (&["--no-tools", "--tools", "+read"], "", "read"),
            (
                &["--exclude-tools", "bash"],
                "edit,read,write",
                "edit,read,write",
            ),
            (
                &["--exclude-tools", "b*,w*"],
                "bash,edit,read,write",
                "edit,read",
            ),
            (
                &["--tools", "read,bash", "--exclude-tools", "bash"],
                "read",
                "read",
            ),
        ];
        for (argv, v87, v152) in rows {
            assert_eq!(tools("0.87.1", argv, &none), *v87, "0.87.1 {argv:?}");
            assert_eq!(tools("1.5.2", argv, &none), *v152, "1.5.2 {argv:?}");
        }
        assert_eq!(tools("0.73.1", &["--tools", "-bash"], &none), "");
        let read = AgentSettings {
            default_tools: Some(vec!["read".into()]),
            ..AgentSettings::default()
        };
        assert_eq!(tools("1.5.2", &[], &read), "read");
        assert_eq!(tools("0.87.1", &[], &read), "read");
        assert_eq!(tools("0.73.1", &[], &read), "bash,edit,read,write");
        assert_eq!(tools("1.5.2", &["--tools", "+bash"], &read), "bash,read");
        let mods = AgentSettings {
            default_tools: Some(vec!["+grep".into(), "-edit".into()]),
            ..AgentSettings::default()
        };
        assert_eq!(tools("1.5.2", &[], &mods), "bash,grep,read,write");
        assert_eq!(tools("0.87.1", &[], &mods), "");
    }

    #[test]
    fn model_from_flags_then_settings_then_models_json() {
        let models = AgentSettings {
            models: vec![
                ("fake".into(), "fake-a".into()),
                ("fake".into(), "fake-b".into()),
            ],
            ..AgentSettings::default()
        };
        let e = eff("1.5.2", &[], None, &models);
        assert_eq!(
            (e.provider.as_deref(), e.model.as_deref()),
            (Some("fake"), Some("fake-a"))
        );
        let defaults = AgentSettings {
            default_provider: Some("other".into()),
            default_model: Some("other-x".into()),
            default_thinking_level: Some("low".into()),
            ..models.clone()
        };
        let e = eff("0.87.1", &[], None, &defaults);
        assert_eq!(
            (
                e.provider.as_deref(),
                e.model.as_deref(),
                e.thinking.as_str()
            ),
            (Some("other"), Some("other-x"), "low")
        );
        let e = eff("0.87.1", &["--model", "fake-b:high"], None, &defaults);
        assert_eq!(
            (
                e.provider.as_deref(),
                e.model.as_deref(),
                e.thinking.as_str()
            ),
            (Some("fake"), Some("fake-b"), "high")
        );
        let e = eff(
            "0.87.1",
            &["--model", "p/m"],
            None,
            &AgentSettings::default(),
        );
        assert_eq!(
            (e.provider.as_deref(), e.model.as_deref()),
            (Some("p"), Some("m"))
        );
        let e = eff("0.87.1", &[], None, &AgentSettings::default());
        assert_eq!(
            (e.provider, e.model, e.thinking.as_str()),
            (None, None, "medium")
        );
    }

    #[test]
    fn prompt_placement_does_not_matter() {
        let s = AgentSettings::default();
        let argv = eff("0.87.1", &["--mode", "json", "Hello"], None, &s);
        let stdin = eff("0.87.1", &["--mode", "json"], Some("Hello"), &s);
        assert_eq!(argv, stdin);
        let more = eff("0.87.1", &["a", "b"], Some("x"), &s);
        assert_eq!(more.prompts, vec!["xa".to_string(), "b".to_string()]);
    }
}
