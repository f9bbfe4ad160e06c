//! The registry's agents on the command line: `--agent`'s value parser (every registered
//! name, shown with its display name in the help) and the help texts that list agents, each
//! built from the rows ([`pi_grammar::agents`]), so that a new row shows up in every one.

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use pi_grammar::agents::{or_list, Install};
use pi_grammar::Agent;

/// `--agent NAME`: one of the registered names (`[possible values: pi, claude, codex,
/// gemini]` in the help, each with its display name in `--help`).
pub fn agent_parser() -> impl TypedValueParser<Value = Agent> {
    PossibleValuesParser::new(
        Agent::ALL.map(|a| PossibleValue::new(a.name()).help(a.display_name())),
    )
    .map(|name| Agent::from_name(&name).unwrap_or_default())
}

/// The agents by display name for a sentence: `pi, Claude Code, Codex or Gemini CLI`.
pub fn display_names() -> String {
    or_list(&Agent::ALL.map(Agent::display_name))
}

/// `pi-harness --help`'s first line.
pub fn about() -> String {
    format!(
        "Record/replay test harness and conformance suite for programs that drive agent CLIs headless: {}.",
        and_list(&Agent::ALL.map(Agent::display_name))
    )
}

/// `a, b and c`.
fn and_list(items: &[&str]) -> String {
    match items {
        [rest @ .., last] if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => items.join(""),
    }
}

/// `record`'s line in `pi-harness --help`.
pub fn record_about() -> String {
    format!(
        "Record a real agent CLI ({}) against a scripted LLM into a cassette",
        display_names()
    )
}

/// `run`'s line in `pi-harness --help`: the agents the provider runs.
pub fn run_about() -> String {
    format!(
        "Run the reference provider against an agent CLI ({}; real or fake) and print the normalized stream",
        pi_provider::driven_names()
    )
}

/// `install`'s line in `pi-harness --help`.
pub fn install_about() -> String {
    format!(
        "Install a real agent CLI ({}, from npm) into the cache, for recording; print its path",
        display_names()
    )
}

/// The versions `install NAME VERSION` takes, per agent: `pi 0.73.1, 0.87.1, 1.5.2 (or any
/// from 0.99.0 on); claude 2.1.330, 2.1.332; ...`.
pub fn install_versions() -> String {
    Agent::ALL
        .map(|a| {
            let spec = a.spec();
            let more = match spec.install {
                Install::PiPackage { bundle_since, .. } => {
                    format!(" (or any from {bundle_since} on)")
                }
                Install::NativeBinary { .. } | Install::Npm => String::new(),
            };
            format!("{} {}{more}", spec.name, spec.versions().join(", "))
        })
        .join("; ")
}

/// `install --help`'s examples (each agent's newest pinned release) and what it needs.
pub fn install_after_help() -> String {
    let newest = |a: Agent| a.spec().newest().version;
    let mut s = format!(
        "Examples:\n  pi-harness install pi {pi}\n  pi-harness record --bin \"$(pi-harness install pi {pi} --print-path)\" --script hello.json --out hello.cassette.jsonl -- --mode json --provider fake --model fake-model 'Say hello.'\n",
        pi = newest(Agent::Pi)
    );
    for a in Agent::ALL.into_iter().filter(|a| *a != Agent::Pi) {
        s.push_str(&format!(
            "  pi-harness install {} {} --print-path\n",
            a.name(),
            newest(a)
        ));
    }
    s.push_str("\nNeeds npm (with its node) and, for pi 0.87.1 and later and the native packages, Linux x86_64.\nCache: $PI_HARNESS_CACHE, else $XDG_CACHE_HOME/pi-harness, else ~/.cache/pi-harness.");
    s
}

/// `pi-harness agents --help`'s fields.
pub const AGENTS_HELP: &str =
    "Each agent: its name (--agent, install, the executable a test world puts on PATH), display
name, the header key its cassettes use, its home variable (PI_CODING_AGENT_DIR, CODEX_HOME,
GEMINI_CLI_HOME; none for Claude Code), the variable it reads its key from, and its pinned
releases, oldest first (the newest is what a test records with by default).

--json prints [{name, display_name, header_key, home_var, api_key_var, releases: [{version,
tag}], newest}].";

/// The registry for `pi-harness agents`: a line per agent, or (`json`) one JSON array.
pub fn listing(json: bool) -> String {
    if json {
        let rows: Vec<serde_json::Value> = Agent::ALL
            .map(|a| {
                let s = a.spec();
                serde_json::json!({
                    "name": s.name,
                    "display_name": s.display_name,
                    "header_key": s.header_key,
                    "home_var": s.home_var,
                    "api_key_var": s.api_key_var,
                    "releases": s.releases.iter().map(|r| serde_json::json!({"version": r.version, "tag": r.tag})).collect::<Vec<_>>(),
                    "newest": s.newest().version,
                })
            })
            .to_vec();
        return serde_json::to_string_pretty(&rows).expect("JSON prints");
    }
    let mut out = String::new();
    for a in Agent::ALL {
        let s = a.spec();
        out.push_str(&format!(
            "{:<8}{:<14}home {:<21}key {:<19}releases {}\n",
            s.name,
            s.display_name,
            s.home_var.unwrap_or("-"),
            s.api_key_var.unwrap_or("-"),
            s.versions().join(", ")
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_texts_name_every_registered_agent() {
        for a in Agent::ALL {
            for text in [about(), record_about(), install_about(), display_names()] {
                assert!(text.contains(a.display_name()), "{a}: {text}");
            }
            let install = format!("{}\n{}", install_versions(), install_after_help());
            assert!(install.contains(&format!("install {} ", a.name())), "{a}");
            for v in a.pinned_versions() {
                assert!(install_versions().contains(v), "{a} {v}");
            }
        }
        assert_eq!(and_list(&["a", "b", "c"]), "a, b and c");
    }
}
