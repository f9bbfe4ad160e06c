//! The READMEs run as written: every ```console block of README.md and fake-pi/README.md is
//! executed as a reader following along would (each `$ ` line a command, continued by a
//! trailing `\`; one bash and one directory per file, so `export`, files written by an
//! earlier block and `echo $?` work) and its output compared with the lines that follow it.
//!
//! Matching, as in trycmd: `[..]` in an expected line matches any text within the line; a
//! line that is only `...` matches any number of lines. Each file runs in its own temp
//! dir holding a `cassettes` link to the committed cassettes, with the freshly built
//! `pi-harness` and `fake-pi` first on PATH (as after `cargo install`) and
//! `RUST_BACKTRACE=1` set (as in many CIs). A block fenced as ```console,ignore is shown,
//! not run (it needs real pi or the network).
//!
//! A block fenced as ```console,packages installs the built packages (the wheel and the npm
//! tarballs): [`readme_package_installs_run_as_written`] runs those alone, in a dir with a
//! `dist` link to `$PI_HARNESS_DIST` (what scripts/build-packages.sh wrote) and with no Rust
//! toolchain and no freshly built binary on PATH, after writing every file a block fenced
//! as ```LANG file=NAME shows (the test file a reader would create). CI runs it after
//! building the packages; without `PI_HARNESS_DIST` it says so and checks nothing more.
//!
//! The first-cassette guide (`docs/first-cassette.md`) runs the same way, with real pi: its
//! ```console blocks in [`real_pi_record_first_cassette_guide_runs_as_written`] and its
//! ```console,packages blocks after the README's, both with `PI_HARNESS_CACHE` at the cache
//! `PI_HARNESS_REAL_PI152` lives in (so `pi-harness install pi` needs no network), each
//! skipped, said, without it.

use std::path::Path;
use std::process::Command;

use pi_testkit::{fake_pi, World, MARKER_VAR};

use crate::util::repo;

const SEPARATOR: &str = "@@pi-harness-readme-end@@";

struct Step {
    command: String,
    expected: Vec<String>,
}

struct Block {
    file: String,
    line: usize,
    steps: Vec<Step>,
}

/// The ```console blocks of `file` (`fence` "```console"), or its ```console,packages ones.
fn blocks(file: &str) -> Vec<Block> {
    blocks_fenced(file, "```console")
}

/// The files a README shows as ```LANG file=NAME blocks: (name, text).
fn shown_files(file: &str) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(repo().join(file)).unwrap();
    let mut out = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let Some(name) = line.trim().strip_prefix("```").and_then(|info| {
            info.split_whitespace()
                .find_map(|w| w.strip_prefix("file="))
        }) else {
            continue;
        };
        let body: Vec<&str> = lines
            .by_ref()
            .take_while(|l| !l.starts_with("```"))
            .collect();
        out.push((name.to_string(), body.join("\n") + "\n"));
    }
    out
}

fn blocks_fenced(file: &str, fence: &str) -> Vec<Block> {
    let text = std::fs::read_to_string(repo().join(file)).unwrap();
    let mut out = Vec::new();
    let mut lines = text.lines().enumerate();
    while let Some((i, line)) = lines.next() {
        if line.trim() != fence {
            continue;
        }
        let mut block = Block {
            file: file.to_string(),
            line: i + 1,
            steps: Vec::new(),
        };
        let mut continuing = false;
        for (_, l) in lines.by_ref() {
            if l.trim_start().starts_with("```") {
                break;
            }
            if continuing {
                let step = block
                    .steps
                    .last_mut()
                    .expect("a command is being continued");
                step.command.push('\n');
                step.command.push_str(l);
                continuing = l.ends_with('\\');
            } else if let Some(cmd) = l.strip_prefix("$ ") {
                block.steps.push(Step {
                    command: cmd.to_string(),
                    expected: Vec::new(),
                });
                continuing = cmd.ends_with('\\');
            } else {
                block
                    .steps
                    .last_mut()
                    .unwrap_or_else(|| panic!("{file}:{}: output before any `$ ` command", i + 1))
                    .expected
                    .push(l.to_string());
            }
        }
        out.push(block);
    }
    out
}

/// `line` matches `pattern` where `[..]` stands for any text.
fn line_matches(pattern: &str, line: &str) -> bool {
    let parts: Vec<&str> = pattern.split("[..]").collect();
    if parts.len() == 1 {
        return pattern == line;
    }
    let mut rest = line;
    for (i, part) in parts.iter().enumerate() {
        if i == 0 {
            let Some(r) = rest.strip_prefix(part) else {
                return false;
            };
            rest = r;
        } else if i == parts.len() - 1 {
            return rest.ends_with(part);
        } else {
            match rest.find(part) {
                Some(at) => rest = &rest[at + part.len()..],
                None => return false,
            }
        }
    }
    true
}

/// `actual` matches `expected` where a `...` line stands for any lines.
fn lines_match(expected: &[String], actual: &[&str]) -> bool {
    match expected.split_first() {
        None => actual.is_empty(),
        Some((first, rest)) if first.trim() == "..." => {
            (0..=actual.len()).any(|skip| lines_match(rest, &actual[skip..]))
        }
        Some((first, rest)) => {
            !actual.is_empty() && line_matches(first, actual[0]) && lines_match(rest, &actual[1..])
        }
    }
}

/// Where a block's commands run: the freshly built binaries first on PATH, or (for the
/// packages blocks) the built packages as `dist` and no Rust toolchain on PATH.
enum Setting<'a> {
    Built {
        bin: &'a Path,
        files: &'a [(String, String)],
    },
    Packages {
        dist: &'a Path,
        files: &'a [(String, String)],
    },
}

/// `PATH` without a directory holding cargo or rustc.
fn path_without_rust() -> String {
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .filter(|d| !d.join("cargo").exists() && !d.join("rustc").exists())
        .map(|d| d.display().to_string())
        .collect::<Vec<_>>()
        .join(":")
}

/// Run `blocks` in a fresh directory; `cache` is the `PI_HARNESS_CACHE` its commands see
/// (default: an empty one inside the directory).
fn run_file(blocks: &[Block], setting: &Setting<'_>, cache: Option<&Path>) -> Result<(), String> {
    let w = World::new("readme");
    std::os::unix::fs::symlink(repo().join("cassettes"), w.path().join("cassettes")).unwrap();
    let (path, files) = match setting {
        Setting::Built { bin, files } => (
            format!(
                "{}:{}",
                bin.display(),
                std::env::var("PATH").unwrap_or_default()
            ),
            *files,
        ),
        Setting::Packages { dist, files } => {
            std::os::unix::fs::symlink(dist, w.path().join("dist")).unwrap();
            (path_without_rust(), *files)
        }
    };
    for (name, text) in files {
        if let Some(dir) = Path::new(name).parent() {
            std::fs::create_dir_all(w.path().join(dir)).unwrap();
        }
        w.write(name, text);
    }
    let cache = cache.map_or_else(|| w.path().join(".cache"), Path::to_path_buf);
    let mut script = String::from("set +e\n");
    let steps: Vec<(&Block, &Step)> = blocks
        .iter()
        .flat_map(|b| b.steps.iter().map(move |s| (b, s)))
        .collect();
    for (_, step) in &steps {
        script.push_str(&step.command);
        script.push_str(&format!("\n__s=$?; echo {SEPARATOR}; ( exit $__s )\n"));
    }
    let out = Command::new("bash")
        .arg("-c")
        .arg(format!("exec 2>&1\n{script}"))
        .current_dir(w.path())
        .env("PATH", path)
        .env("RUST_BACKTRACE", "1")
        .env(MARKER_VAR, w.marker())
        .env("PI_HARNESS_CACHE", cache)
        .env_remove("FAKE_PI_CASSETTE")
        .env_remove("CI")
        .env_remove("PI_HARNESS_RECORD_MODE")
        .env_remove("PI_HARNESS_REAL_PI")
        .env_remove("NO_COLOR")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let outputs: Vec<&str> = text.split(&format!("{SEPARATOR}\n")).collect();
    let mut problems = Vec::new();
    for (i, (block, step)) in steps.iter().enumerate() {
        let actual: Vec<&str> = outputs.get(i).map_or(vec![], |o| o.lines().collect());
        if !lines_match(&step.expected, &actual) {
            problems.push(format!(
                "{}:{}: `{}`\n--- expected\n{}\n--- got\n{}",
                block.file,
                block.line,
                step.command,
                step.expected.join("\n"),
                actual.join("\n")
            ));
        }
    }
    w.assert_none_left();
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n\n"))
    }
}

#[test]
fn the_matcher_is_strict_where_it_should_be() {
    assert!(line_matches("map: [..] MB/s", "map: 20 lines, 3.8 MB/s"));
    assert!(!line_matches("map: [..] MB/s", "map: 20 lines, 3.8 MB"));
    assert!(line_matches("a[..]b[..]c", "a-b-c"));
    assert!(!line_matches("exact", "exact "));
    let e = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert!(lines_match(&e(&["a", "...", "z"]), &["a", "b", "c", "z"]));
    assert!(lines_match(&e(&["a", "...", "z"]), &["a", "z"]));
    assert!(!lines_match(&e(&["a", "z"]), &["a", "b", "z"]));
    assert!(!lines_match(&e(&["a"]), &["a", "extra"]));
}

#[test]
fn readme_console_examples_run_as_written() {
    let bin = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(
        env!("CARGO_BIN_EXE_pi-harness"),
        bin.path().join("pi-harness"),
    )
    .unwrap();
    std::os::unix::fs::symlink(fake_pi(), bin.path().join("fake-pi")).unwrap();
    let mut failures = Vec::new();
    let mut count = 0;
    for file in ["README.md", "fake-pi/README.md"] {
        let blocks = blocks(file);
        count += blocks.iter().map(|b| b.steps.len()).sum::<usize>();
        let setting = Setting::Built {
            bin: bin.path(),
            files: &[],
        };
        if let Err(e) = run_file(&blocks, &setting, None) {
            failures.push(e);
        }
    }
    assert!(count >= 10, "only {count} commands found");
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn readme_package_installs_run_as_written() {
    let blocks = blocks_fenced("README.md", "```console,packages");
    let files = shown_files("README.md");
    assert!(
        blocks.len() >= 2 && !files.is_empty(),
        "README.md shows no package install (```console,packages) or no file it uses"
    );
    let Some(dist) = std::env::var_os("PI_HARNESS_DIST").filter(|d| !d.is_empty()) else {
        eprintln!(
            "PI_HARNESS_DIST is not set: the README's package installs are not run \
             (CI runs them after scripts/build-packages.sh)"
        );
        return;
    };
    let dist = std::path::absolute(Path::new(&dist)).unwrap();
    assert!(
        dist.is_dir(),
        "PI_HARNESS_DIST {}: not a directory",
        dist.display()
    );
    let setting = Setting::Packages {
        dist: &dist,
        files: &files,
    };
    if let Err(e) = run_file(&blocks, &setting, None) {
        panic!("{e}");
    }
    // The guide's pytest and node:test steps record with real pi (from its cache).
    let Some(cache) = real_pi_cache() else {
        return;
    };
    let setting = Setting::Packages {
        dist: &dist,
        files: &shown_files(GUIDE),
    };
    if let Err(e) = run_file(
        &blocks_fenced(GUIDE, "```console,packages"),
        &setting,
        Some(&cache),
    ) {
        panic!("{e}");
    }
}

/// The first-cassette guide.
const GUIDE: &str = "docs/first-cassette.md";

/// The cache `scripts/install-pi.sh` filled, from `PI_HARNESS_REAL_PI152`
/// (`CACHE/pi-1.5.2/node_modules/.bin/pi`); `None`, said, when it is not set.
fn real_pi_cache() -> Option<std::path::PathBuf> {
    let Some(pi) = std::env::var_os("PI_HARNESS_REAL_PI152").filter(|v| !v.is_empty()) else {
        eprintln!(
            "skip: PI_HARNESS_REAL_PI152 not set: the first-cassette guide records with real pi"
        );
        return None;
    };
    let cache = Path::new(&pi).ancestors().nth(4).map(Path::to_path_buf);
    assert!(
        cache.as_ref().is_some_and(|c| c.join("pi-1.5.2").is_dir()),
        "PI_HARNESS_REAL_PI152 {}: not in the cache scripts/install-pi.sh fills",
        Path::new(&pi).display()
    );
    cache
}

#[test]
fn the_readme_links_the_guide_on_its_first_screen() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let first_screen: String = readme.lines().take(30).collect::<Vec<_>>().join("\n");
    assert!(
        first_screen.contains("(docs/first-cassette.md)"),
        "README.md's first 30 lines do not link docs/first-cassette.md"
    );
}

#[test]
fn real_pi_record_first_cassette_guide_runs_as_written() {
    let blocks = blocks(GUIDE);
    let files = shown_files(GUIDE);
    let count: usize = blocks.iter().map(|b| b.steps.len()).sum();
    assert!(
        count >= 15 && files.len() >= 5,
        "{count} commands, {} files",
        files.len()
    );
    let Some(cache) = real_pi_cache() else {
        return;
    };
    let bin = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(
        env!("CARGO_BIN_EXE_pi-harness"),
        bin.path().join("pi-harness"),
    )
    .unwrap();
    std::os::unix::fs::symlink(fake_pi(), bin.path().join("fake-pi")).unwrap();
    let setting = Setting::Built {
        bin: bin.path(),
        files: &files,
    };
    if let Err(e) = run_file(&blocks, &setting, Some(&cache)) {
        panic!("{e}");
    }
}
