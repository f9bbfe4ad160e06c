use super::*;

#[test]
fn names_round_trip_and_are_listed_once() {
    for a in Agent::ALL {
        assert_eq!(Agent::from_name(a.name()), Some(a));
        assert_eq!(Agent::from_header_key(a.spec().header_key), Some(a));
    }
    assert_eq!(Agent::from_name("opencode"), None);
    assert_eq!(Agent::names(), "pi, claude, codex, gemini");
    assert_eq!(
        Agent::name_list(&[Agent::Pi, Agent::Codex, Agent::Gemini]),
        "pi, codex or gemini"
    );
    assert_eq!(or_list(&["a", "b"]), "a or b");
    assert_eq!(or_list(&["a"]), "a");
}

#[test]
fn a_newer_release_borrows_the_newest_pinned_one_of_its_own_agent() {
    assert_eq!(Agent::Codex.borrowed_for("0.170.0"), Some("0.169.0"));
    assert_eq!(Agent::Codex.borrowed_for("0.169.0"), None);
    assert_eq!(Agent::Codex.borrowed_for("0.100.0"), None);
    assert_eq!(Agent::Gemini.borrowed_for("0.62.0"), Some("0.61.0"));
    assert_eq!(Agent::Gemini.borrowed_for("0.61.0"), None);
    assert_eq!(Agent::Gemini.borrowed_for("0.60.9"), None);
    assert_eq!(Agent::Claude.borrowed_for("2.1.333"), Some("2.1.332"));
    assert_eq!(Agent::Pi.borrowed_for("1.6.0"), Some("1.5.2"));
    assert_eq!(Agent::Pi.borrowed_for("1.6"), None);
    assert_eq!(Agent::Pi.borrowed_for("latest"), None);
}

/// The rows agree with themselves and with each other: what a reader keys on (a name, a
/// header key, a dialect, a tag) belongs to one agent, and a pinned release's tag is the one
/// its agent's style makes.
#[test]
fn the_rows_are_consistent() {
    let mut keys = Vec::new();
    for a in Agent::ALL {
        let s = a.spec();
        assert!(!s.releases.is_empty(), "{a}: no pinned release");
        let versions: Vec<Version> = s
            .releases
            .iter()
            .map(|r| Version::parse(r.version).unwrap_or_else(|| panic!("{a}: {}", r.version)))
            .collect();
        assert!(
            versions.windows(2).all(|w| w[0] < w[1]),
            "{a}: oldest first"
        );
        for (r, v) in s.releases.iter().zip(&versions) {
            assert_eq!(r.tag, s.tag_style.tag(*v), "{a} {}", r.version);
            assert!(!r.packages.is_empty(), "{a} {}: no package", r.version);
            if !matches!(s.install, Install::PiPackage { .. }) {
                assert!(
                    r.packages.iter().all(|p| p
                        .integrity
                        .is_some_and(|i| i.starts_with("sha512-") && i.len() == 95)),
                    "{a} {}: every package's integrity pinned",
                    r.version
                );
            }
        }
        assert!(s.one_way || s.two_way.is_some(), "{a}: has no cassettes");
        assert!(!s.dialects.is_empty(), "{a}: no dialect");
        keys.push(format!("name {}", s.name));
        keys.push(format!("display {}", s.display_name));
        keys.push(format!("key {}", s.header_key));
        keys.extend(s.dialects.iter().map(|d| format!("dialect {d}")));
        keys.extend(s.releases.iter().map(|r| format!("tag {}", r.tag)));
        keys.push(format!("tag prefix {}", s.tag_style.prefix()));
    }
    let mut sorted = keys.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), keys.len(), "a key of two agents: {keys:?}");
}

#[test]
fn tags_of_releases_not_pinned_follow_each_agents_style() {
    let tag = |a: Agent, v: &str| a.spec().tag_of(v);
    assert_eq!(Agent::Pi.spec().tags(), ["pi73", "pi87", "pi152"]);
    assert_eq!(tag(Agent::Pi, "1.6.0").as_deref(), Some("pi160"));
    assert_eq!(tag(Agent::Pi, "0.99.0").as_deref(), Some("pi99"));
    assert_eq!(tag(Agent::Claude, "2.1.340").as_deref(), Some("cc21340"));
    assert_eq!(tag(Agent::Codex, "0.169.0").as_deref(), Some("cx0169"));
    assert_eq!(tag(Agent::Codex, "0.170.0").as_deref(), Some("cx0170"));
    assert_eq!(tag(Agent::Codex, "0.170.1").as_deref(), Some("cx01701"));
    assert_eq!(tag(Agent::Gemini, "0.62.0").as_deref(), Some("gm062"));
    assert_eq!(tag(Agent::Gemini, "0.62"), None);
}

#[test]
fn a_version_is_read_from_what_version_prints() {
    let v = |a: Agent, out: &str| a.spec().version_in(out);
    assert_eq!(
        v(Agent::Codex, "codex-cli 0.169.0\n").as_deref(),
        Some("0.169.0")
    );
    assert_eq!(
        v(Agent::Claude, "2.1.330 (Claude Code)\n").as_deref(),
        Some("2.1.330")
    );
    assert_eq!(v(Agent::Gemini, "0.61.0\n").as_deref(), Some("0.61.0"));
    for (a, out) in [
        (Agent::Codex, "codex 0.169.0\n"),
        (Agent::Codex, "codex-cli \n"),
        (Agent::Claude, "2.1.330\n"),
        (Agent::Gemini, "Warning: something\n0.61.0\n"),
        (Agent::Gemini, "0.61.x\n"),
        (Agent::Gemini, ""),
        (Agent::Pi, "1.5.2\n"),
    ] {
        assert_eq!(v(a, out), None, "{a}: {out:?}");
    }
}
