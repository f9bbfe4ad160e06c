//! Claude Code's row (`claude -p --input-format stream-json --output-format stream-json`).

use super::{
    AgentSpec, Install, NpmPackage, Placeholder, Placeholders, ProcessShape, Release, TagStyle,
    VersionProbe,
};

/// Claude Code's native linux-x64 package, with the pinned integrity of one release.
const fn native(integrity: &'static str) -> NpmPackage {
    NpmPackage {
        name: "@anthropic-ai/claude-code-linux-x64",
        version: None,
        integrity: Some(integrity),
        published_as: None,
    }
}

pub(super) static ROW: AgentSpec = AgentSpec {
    name: "claude",
    display_name: "Claude Code",
    header_key: "claude",
    dialects: &["stream-json"],
    one_way: false,
    two_way: Some("stream-json"),
    releases: &[
        Release {
            version: "2.1.330",
            tag: "cc21330",
            packages: &[native("sha512-9Gn+V7DtJ8M1nztP9CeDVl9g3RtrepI7rOFTyPRRnZe8D6zebIHKmC7OvBauucuAP0X0k85SDN/LPVZyjsGezQ==")],
        },
        Release {
            version: "2.1.332",
            tag: "cc21332",
            packages: &[native("sha512-f4JWhzwYutJIHScC7/dYOPX6s28tt7ZADhsOi8zwOHq5fFPEuUeChh2NMfinSg0GrUckYxaeebC4h0DqiKzLcw==")],
        },
    ],
    tag_style: TagStyle::Digits("cc"),
    install: Install::NativeBinary {
        binary: "package/claude",
    },
    version_probe: VersionProbe::VersionFlag {
        prefix: "",
        suffix: " (Claude Code)",
    },
    home_var: None,
    api_key_var: Some("ANTHROPIC_API_KEY"),
    placeholders: Placeholders {
        home: None,
        install_root: None,
        session_id: Placeholder {
            text: "<SESSION_ID>",
            means: "Claude Code's session id",
        },
    },
    process: ProcessShape {
        parent: None,
        one_process: &[],
        orphan_ms_var: None,
    },
};
