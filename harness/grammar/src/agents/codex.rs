//! Codex CLI's row (`codex exec --json`).

use super::{
    AgentSpec, Install, NpmPackage, Parent, ParentSignal, Placeholder, Placeholders, ProcessShape,
    PublishedAs, Release, TagStyle, VersionProbe,
};

/// The pinned releases (a constant: the grammar's list is read from it).
pub(crate) const RELEASES: [Release; 1] = [Release {
    version: "0.169.0",
    tag: "cx0169",
    // The node wrapper and the native linux-x64 package it installs as
    // `@openai/codex-linux-x64` (`npm:@openai/codex@VERSION-linux-x64`).
    packages: &[
        NpmPackage {
            name: "@openai/codex",
            version: None,
            integrity: Some("sha512-KhzYlkKPxoNssR8CEm45IjqnFWn7UtlF4CiD3tOJPea51xBs7MaHy0UQG9GSbCqk6Lrjn5QdJDV0QD1/FgWlGw=="),
            published_as: None,
        },
        NpmPackage {
            name: "@openai/codex-linux-x64",
            version: None,
            integrity: Some("sha512-o05NyAOCDygSPRo1yinzxvkRSdmsZyBD9E7mbpmjRanSfM8lypqWtQgEo4XfNkwhuCR2aFu8mlGOsQGFXVbVww=="),
            published_as: Some(PublishedAs {
                name: "@openai/codex",
                version_suffix: "-linux-x64",
            }),
        },
    ],
}];

pub(super) static ROW: AgentSpec = AgentSpec {
    name: "codex",
    display_name: "Codex",
    header_key: "codex",
    dialects: &["exec-json"],
    one_way: true,
    two_way: None,
    releases: &RELEASES,
    tag_style: TagStyle::DigitsWithoutTrailingZero("cx"),
    install: Install::Npm,
    version_probe: VersionProbe::VersionFlag {
        prefix: "codex-cli ",
        suffix: "",
    },
    home_var: Some("CODEX_HOME"),
    api_key_var: Some("CODEX_API_KEY"),
    placeholders: Placeholders {
        home: Some(Placeholder {
            text: "<CODEX_HOME>",
            means: "CODEX_HOME given to Codex",
        }),
        install_root: Some(Placeholder {
            text: "<CODEX_ROOT>",
            means: "Codex's install directory",
        }),
        session_id: Placeholder {
            text: "<THREAD_ID>",
            means: "Codex's thread id (a UUID)",
        },
    },
    // The npm package's `bin/codex.js` spawns the native binary and forwards the signals.
    process: ProcessShape {
        parent: Some(Parent {
            role: "node wrapper",
            child_role: "native binary",
            comm: "node",
            child_comm: "codex",
            on_sigterm: ParentSignal::Forward,
            on_sigint: ParentSignal::Forward,
            on_sighup: ParentSignal::Forward,
            child_env: None,
        }),
        one_process: &[],
        orphan_ms_var: Some("FAKE_PI_CODEX_ORPHAN_MS"),
    },
};
