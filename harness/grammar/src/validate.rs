//! The checks after stage 1, in pi's order: the flag combinations and `--session-id`
//! syntax checked after `--version` ([`ParsedArgs::validate`]), and the errors reported
//! only after stdin was read ([`Grammar::runtime_errors`]: unknown long flags, `--provider`
//! without `--model`), which `--help` prints first on newer versions.

use crate::grammar::Grammar;
use crate::parse::ParsedArgs;
use crate::rejection::Rejection;
use crate::session::is_valid_session_id;
use crate::version::{texts, Feature};

impl ParsedArgs {
    /// Checks pi makes after `--version` and before `--help`: `--fork` and `--session-id`
    /// combined with other session flags, and the `--session-id` syntax (0.87.1).
    pub fn validate(&self) -> Result<(), Rejection> {
        let fail = |message: String| {
            Err(Rejection {
                stderr: format!("Error: {message}\n"),
                exit_code: 1,
            })
        };
        if self.has("--fork") {
            let conflicts = self.present(&["--session", "--continue", "--resume", "--no-session"]);
            if !conflicts.is_empty() {
                return fail(texts::fill(texts::FORK_CONFLICT, &[&conflicts.join(", ")]));
            }
        }
        if let Some(id) = self.value("--session-id") {
            let conflicts = self.present(&["--session", "--continue", "--resume"]);
            if !conflicts.is_empty() {
                return fail(texts::fill(
                    texts::SESSION_ID_CONFLICT,
                    &[&conflicts.join(", ")],
                ));
            }
            if !is_valid_session_id(id) {
                return fail(texts::SESSION_ID_SYNTAX.into());
            }
        }
        Ok(())
    }

    fn present<'a>(&self, names: &[&'a str]) -> Vec<&'a str> {
        names.iter().copied().filter(|n| self.has(n)).collect()
    }

    /// The error pi reports for unknown long flags, after it has read stdin.
    pub fn unknown_flags_error(&self) -> Option<Rejection> {
        if self.unknown_flags.is_empty() {
            return None;
        }
        let names: Vec<String> = self
            .unknown_flags
            .iter()
            .map(|(n, _)| format!("--{n}"))
            .collect();
        let template = if names.len() == 1 {
            texts::UNKNOWN_OPTION
        } else {
            texts::UNKNOWN_OPTIONS
        };
        Some(Rejection {
            stderr: format!("Error: {}\n", texts::fill(template, &[&names.join(", ")])),
            exit_code: 1,
        })
    }
}

impl Grammar {
    /// The errors pi reports after it has read stdin (exit 1): unknown long flags, then,
    /// with [`Feature::ProviderRequiresModel`], `--provider` without `--model`.
    pub fn runtime_errors(&self, parsed: &ParsedArgs) -> Option<Rejection> {
        let mut stderr = parsed
            .unknown_flags_error()
            .map(|e| e.stderr)
            .unwrap_or_default();
        if self.has(Feature::ProviderRequiresModel) && !parsed.has("--model") {
            if let Some(provider) = parsed.value("--provider") {
                stderr.push_str(&format!(
                    "Error: {}\n",
                    texts::fill(texts::PROVIDER_REQUIRES_MODEL, &[provider])
                ));
            }
        }
        (!stderr.is_empty()).then_some(Rejection {
            stderr,
            exit_code: 1,
        })
    }

    /// What `--help` prints on stderr before the help text: with
    /// [`Feature::HelpReportsRuntimeErrors`], the runtime errors (pi still exits 0).
    pub fn help_preamble(&self, parsed: &ParsedArgs) -> String {
        if self.has(Feature::HelpReportsRuntimeErrors) {
            self.runtime_errors(parsed)
                .map(|e| e.stderr)
                .unwrap_or_default()
        } else {
            String::new()
        }
    }
}
