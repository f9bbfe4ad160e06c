//! Gemini CLI's row (`gemini -p ... --output-format stream-json`).

use super::{
    AgentSpec, Install, NpmPackage, Parent, ParentSignal, Placeholder, Placeholders, ProcessShape,
    Release, TagStyle, VersionProbe,
};

/// The pinned releases (a constant: the grammar's list is read from it).
pub(crate) const RELEASES: [Release; 1] = [Release {
    version: "0.61.0",
    tag: "gm061",
    // One bundle: its dependencies are npm's to check.
    packages: &[NpmPackage {
        name: "@google/gemini-cli",
        version: None,
        integrity: Some("sha512-dbQ9A0qBtFJNi6XBkHvfZ6Azpn6PNgH/P8h2MZ67RLlX8hSAVjup39CRWqdRxZv7YXIuhrFaytr8y0jKnkoxnQ=="),
        published_as: None,
    }],
}];

pub(super) static ROW: AgentSpec = AgentSpec {
    name: "gemini",
    display_name: "Gemini CLI",
    header_key: "gemini",
    dialects: &["gemini-stream-json"],
    one_way: true,
    two_way: None,
    releases: &RELEASES,
    tag_style: TagStyle::DigitsWithoutTrailingZero("gm"),
    install: Install::Npm,
    version_probe: VersionProbe::VersionFlag {
        prefix: "",
        suffix: "",
    },
    home_var: Some("GEMINI_CLI_HOME"),
    api_key_var: Some("GEMINI_API_KEY"),
    placeholders: Placeholders {
        // The sandbox's agent dir is given to nothing (settings live under HOME).
        home: Some(Placeholder {
            text: "<AGENT_DIR>",
            means: "the recording's unused agent dir",
        }),
        install_root: Some(Placeholder {
            text: "<GEMINI_ROOT>",
            means: "Gemini CLI's install directory",
        }),
        session_id: Placeholder {
            text: "<SESSION_ID>",
            means: "Gemini CLI's session id (a UUID)",
        },
    },
    // 0.61.0 relaunches itself: the node process started by the caller spawns a second one
    // that runs the session, ignores SIGTERM and SIGINT, and dies by SIGHUP (node's default).
    process: ProcessShape {
        parent: Some(Parent {
            role: "relaunch parent",
            child_role: "relaunched child",
            comm: "node",
            child_comm: "gemini",
            on_sigterm: ParentSignal::Ignore,
            on_sigint: ParentSignal::Ignore,
            on_sighup: ParentSignal::Die,
            child_env: Some(("GEMINI_CLI_NO_RELAUNCH", "true")),
        }),
        one_process: &["GEMINI_CLI_NO_RELAUNCH", "SANDBOX"],
        orphan_ms_var: Some("FAKE_PI_GEMINI_ORPHAN_MS"),
    },
};
