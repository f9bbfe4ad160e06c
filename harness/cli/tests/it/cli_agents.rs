//! Every registered agent in every text that lists agents: `pi-harness --help`, `record`,
//! `run` and `install`'s help, and the message for an agent nobody registered. The texts are
//! built from the registry's rows; a text that lists agents by hand and misses one fails here.

use pi_grammar::Agent;

use crate::util::pih;

/// What `pi-harness ARGS` prints on stdout (help) or stderr (an error), with its status.
fn output(args: &[&str]) -> (Option<i32>, String) {
    let o = pih().args(args).output().unwrap();
    let mut text = String::from_utf8_lossy(&o.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&o.stderr));
    (o.status.code(), text)
}

#[test]
fn every_help_that_lists_agents_names_every_registered_one() {
    let (code, top) = output(&["--help"]);
    assert_eq!(code, Some(0), "{top}");
    for args in [
        &["record", "--help"][..],
        &["run", "--help"],
        &["install", "--help"],
    ] {
        let (code, help) = output(args);
        assert_eq!(code, Some(0), "{args:?}: {help}");
        for agent in Agent::ALL {
            let (name, display) = (agent.name(), agent.display_name());
            assert!(
                help.contains(&format!("{name}:")) && help.contains(display),
                "{args:?} lacks {name} ({display}):\n{help}"
            );
        }
    }
    let (_, install) = output(&["install", "--help"]);
    for agent in Agent::ALL {
        let display = agent.display_name();
        // The line of `record` and `install` in the command list, and the first line.
        for line in ["Record/replay test harness", "  record ", "  install "] {
            let shown = top
                .lines()
                .find(|l| l.starts_with(line))
                .unwrap_or_default();
            assert!(shown.contains(display), "{line:?} lacks {display}:\n{top}");
        }
        assert!(
            install.contains(&format!("pi-harness install {} ", agent.name())),
            "install's examples lack {agent}:\n{install}"
        );
        for v in agent.pinned_versions() {
            assert!(install.contains(v), "install's help lacks {agent} {v}");
        }
    }
}

#[test]
fn an_agent_nobody_registered_is_refused_with_every_registered_name() {
    let names = Agent::names();
    for args in [
        &[
            "record", "--agent", "opencode", "--script", "s", "--out", "o", "--", "x",
        ][..],
        &["run", "--agent", "opencode", "hi"],
        &["install", "opencode", "1.0.0"],
    ] {
        let (code, err) = output(args);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(
            err.contains("'opencode'") && err.contains(&format!("[possible values: {names}]")),
            "{args:?}: {err}"
        );
    }
}

/// `pi-harness agents --json` is the registry as the test helpers read it (the Python and
/// Node packages' tests compare what they name with it): each row's variables and releases,
/// in the registry's order; the text form has a line per agent.
#[test]
fn agents_json_is_the_registry() {
    let o = pih().args(["agents", "--json"]).output().unwrap();
    assert_eq!(o.status.code(), Some(0));
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(rows.len(), Agent::ALL.len());
    for (row, agent) in rows.iter().zip(Agent::ALL) {
        let s = agent.spec();
        assert_eq!(row["name"], s.name);
        assert_eq!(row["display_name"], s.display_name);
        assert_eq!(row["header_key"], s.header_key);
        assert_eq!(row["home_var"].as_str(), s.home_var);
        assert_eq!(row["api_key_var"].as_str(), s.api_key_var);
        assert_eq!(row["newest"], s.newest().version);
        let versions: Vec<&str> = row["releases"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["version"].as_str().unwrap())
            .collect();
        assert_eq!(versions, s.versions());
    }
    let (code, text) = output(&["agents"]);
    assert_eq!(code, Some(0), "{text}");
    assert_eq!(text.lines().count(), Agent::ALL.len(), "{text}");
    for agent in Agent::ALL {
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("{} ", agent.name())))
            .unwrap_or_else(|| panic!("no line for {agent}:\n{text}"));
        assert!(line.contains(agent.display_name()), "{line}");
    }
}
