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
