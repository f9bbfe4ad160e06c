//! What a cassette asks of its caller's setup, as the test helpers read it: `cassette show
//! --json`'s `setup` (a dummy key, the agent's home and the config that gives the recorded
//! values). For each agent, a wrapper's call that sets no key and writes no config replays the
//! bundled cassette with only that setup, from a bare environment (no exit 99), and fails
//! without it. Cassettes are named in every form `corpus list` prints, and a typo gets the
//! nearest name.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use pi_testkit::{fake_pi, World, MARKER_VAR};
use serde_json::Value;

/// pi-harness in the world: its marker, its dir as cwd (no `cassettes/` there, so a name is
/// the bundled corpus's), the bundle unpacked into the world's cache.
fn pih(w: &World, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pi-harness"))
        .args(args)
        .env(MARKER_VAR, w.marker())
        .env("PI_HARNESS_CACHE", w.path().join("cache"))
        .env_remove("RUST_BACKTRACE")
        .env_remove("RUST_LIB_BACKTRACE")
        .current_dir(w.path())
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn show_json(w: &World, name: &str) -> Value {
    let out = pih(w, &["cassette", "show", "--json", name]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{name}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("--json prints one JSON object")
}

/// What a wrapper under test does: its argv and the lines it writes on stdin.
struct Call<'a> {
    name: &'a str,
    argv: Vec<String>,
    stdin: Vec<String>,
}

/// fake-pi replaying the cassette `show` found, from a bare environment (PATH, a HOME and
/// TMPDIR of the world's, the marker, the cassette): with `setup`, only what `setup` says
/// (its variables; its home variable pointed at a fresh dir holding its files); without,
/// the agent's home an empty dir.
fn replay(w: &World, facts: &Value, call: &Call<'_>, with_setup: bool, n: usize) -> Output {
    let file = facts["file"]
        .as_str()
        .expect("a bundled cassette has a file");
    let setup = &facts["setup"];
    let home = w.path().join(format!("home-{n}"));
    std::fs::create_dir_all(&home).unwrap();
    let mut cmd = Command::new(fake_pi());
    cmd.args(&call.argv)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", &home)
        .env("TMPDIR", w.path())
        .env(MARKER_VAR, w.marker())
        .env("FAKE_PI_CASSETTE", file)
        .env("FAKE_PI_SPEED", "0")
        .env("FAKE_PI_VALUES", "recorded")
        .current_dir(w.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(var) = setup["home_var"].as_str() {
        let dir = w.path().join(format!("agent-home-{n}"));
        std::fs::create_dir_all(&dir).unwrap();
        if with_setup {
            for f in setup["files"].as_array().unwrap() {
                let path = dir.join(f["path"].as_str().unwrap());
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(path, f["content"].as_str().unwrap()).unwrap();
            }
        }
        cmd.env(var, &dir);
    }
    if with_setup {
        for (k, v) in setup["env"].as_object().unwrap() {
            cmd.env(k, v.as_str().unwrap());
        }
    }
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    for line in &call.stdin {
        writeln!(stdin, "{line}").unwrap();
    }
    drop(stdin);
    child.wait_with_output().unwrap()
}

/// The call replays the cassette with the setup alone (the recorded stdout and exit status),
/// and is refused without it; returns the setup.
fn setup_alone_replays(w: &World, call: &Call<'_>) -> Value {
    let facts = show_json(w, call.name);
    let c = pi_cassette::Cassette::load(Path::new(facts["file"].as_str().unwrap())).unwrap();
    let code = match c.ending() {
        pi_cassette::Action::Exit(code) => Some(*code),
        other => panic!("{other:?}"),
    };
    let out = replay(w, &facts, call, true, 0);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), code, "{}: {err}", call.name);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&c.stdout_bytes()),
        "{}: {err}",
        call.name
    );
    assert!(!err.contains("fake-pi:"), "{}: {err}", call.name);
    let bare = replay(w, &facts, call, false, 1);
    assert_ne!(
        bare.status.code(),
        code,
        "{}: passes without the setup too, so this test shows nothing",
        call.name
    );
    assert_ne!(bare.stdout, c.stdout_bytes(), "{}", call.name);
    facts["setup"].clone()
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| a.iter().map(|s| s.as_str().unwrap().to_string()).collect())
        .unwrap_or_default()
}

fn words(s: &[&str]) -> Vec<String> {
    s.iter().map(|s| s.to_string()).collect()
}

/// pi: no provider or model flag; the setup's `settings.json` gives the recorded ones.
#[test]
fn pi_replays_with_the_setup_alone() {
    let w = World::new("setup_pi");
    let call = Call {
        name: "recorded/text_only.pi87",
        argv: words(&["--mode", "json", "Say hello."]),
        stdin: Vec::new(),
    };
    let setup = setup_alone_replays(&w, &call);
    assert_eq!(setup["home_var"], "PI_CODING_AGENT_DIR");
    assert_eq!(setup["files"][0]["path"], "settings.json");
    w.assert_none_left();
}

/// Codex: no key, no config of the wrapper's; the setup gives `CODEX_API_KEY` and the
/// `CODEX_HOME/config.toml` with the recorded model and provider.
#[test]
fn codex_replays_with_the_setup_alone() {
    let w = World::new("setup_codex");
    let call = Call {
        name: "codex/codex_text.cx0169",
        argv: words(&["exec", "--json", "--skip-git-repo-check", "Say hello."]),
        stdin: Vec::new(),
    };
    let setup = setup_alone_replays(&w, &call);
    assert_eq!(setup["home_var"], "CODEX_HOME");
    assert_eq!(
        setup["env"]["CODEX_API_KEY"].as_str().map(str::is_empty),
        Some(false)
    );
    let config = setup["files"][0]["content"].as_str().unwrap();
    assert!(config.contains("model = \"gpt-5.5\""), "{config}");
    w.assert_none_left();
}

/// Gemini CLI: the recorded call's flags; the setup gives `GEMINI_API_KEY` and the settings
/// (`general.maxAttempts`) in `GEMINI_CLI_HOME/.gemini/settings.json`.
#[test]
fn gemini_replays_with_the_setup_alone() {
    let w = World::new("setup_gemini");
    let facts = show_json(&w, "gemini/gemini_text.gm061");
    let call = Call {
        name: "gemini/gemini_text.gm061",
        argv: strings(&facts["replay"]["argv"]),
        stdin: Vec::new(),
    };
    let setup = setup_alone_replays(&w, &call);
    assert_eq!(setup["home_var"], "GEMINI_CLI_HOME");
    assert_eq!(setup["files"][0]["path"], ".gemini/settings.json");
    assert!(setup["env"]["GEMINI_API_KEY"].is_string(), "{setup}");
    w.assert_none_left();
}

/// Claude Code: the recorded call's flags and stdin lines; the setup gives the key alone
/// (no home of its own).
#[test]
fn claude_replays_with_the_setup_alone() {
    let w = World::new("setup_claude");
    let facts = show_json(&w, "claude/claude_text.cc21330");
    let call = Call {
        name: "claude/claude_text.cc21330",
        argv: strings(&facts["replay"]["argv"]),
        stdin: strings(&facts["replay"]["stdin_lines"]),
    };
    let setup = setup_alone_replays(&w, &call);
    assert_eq!(setup["home_var"], Value::Null);
    assert_eq!(setup["files"], serde_json::json!([]));
    assert!(setup["env"]["ANTHROPIC_API_KEY"].is_string(), "{setup}");
    w.assert_none_left();
}

/// A wrapper that writes its own config with another model still gets exact matching: the
/// setup's files are not written over the wrapper's, and the mismatch is one line, then the
/// next step.
#[test]
fn a_wrappers_own_config_with_another_model_is_still_a_mismatch() {
    let w = World::new("setup_own_config");
    let facts = show_json(&w, "codex/codex_text.cx0169");
    let own = w.path().join("own-codex-home");
    std::fs::create_dir_all(&own).unwrap();
    std::fs::write(
        own.join("config.toml"),
        "model = \"o3\"\nmodel_provider = \"openai\"\n",
    )
    .unwrap();
    let mut cmd = Command::new(fake_pi());
    cmd.args(["exec", "--json", "--skip-git-repo-check", "Say hello."])
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", w.path())
        .env(MARKER_VAR, w.marker())
        .env("FAKE_PI_CASSETTE", facts["file"].as_str().unwrap())
        .env("FAKE_PI_SPEED", "0")
        .env("CODEX_HOME", &own)
        .current_dir(w.path())
        .stdin(Stdio::null());
    for (k, v) in facts["setup"]["env"].as_object().unwrap() {
        cmd.env(k, v.as_str().unwrap());
    }
    let out = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(99), "{err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 2, "{err}");
    assert!(
        lines[0].starts_with(
            r#"fake-pi: expectation mismatch: expect.effective.model: expected "gpt-5.5", got "o3""#
        ),
        "{err}"
    );
    assert!(lines[1].starts_with("fake-pi: next: "), "{err}");
    w.assert_none_left();
}

/// The cassette lines of `corpus list` (what a user copies).
fn listed(w: &World) -> Vec<String> {
    let out = pih(w, &["corpus", "list"]);
    assert_eq!(out.status.code(), Some(0));
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter(|l| l.starts_with("cassettes/") && !l.starts_with("cassettes/scripts/"))
        .filter(|l| l.contains(".cassette.jsonl"))
        .map(str::to_string)
        .collect()
}

/// One cassette of each directory `corpus list` shows, named as listed, without
/// `cassettes/` and the suffix, and with `./`: `show` finds it and says the one name.
#[test]
fn every_form_corpus_list_prints_is_shown() {
    let w = World::new("setup_names");
    let all = listed(&w);
    assert!(all.len() > 100, "{all:?}");
    let mut dirs: Vec<&str> = Vec::new();
    for line in &all {
        let dir = Path::new(line).parent().unwrap().to_str().unwrap();
        if dirs.contains(&dir) {
            continue;
        }
        dirs.push(dir);
        let rel = line.strip_prefix("cassettes/").unwrap();
        let name = rel[..rel.find(".cassette.jsonl").unwrap()].to_string();
        for form in [
            line.clone(),
            format!("./{line}"),
            rel.to_string(),
            name.clone(),
        ] {
            let facts = show_json(&w, &form);
            assert_eq!(facts["bundled"], name.as_str(), "{form}");
            let file = PathBuf::from(facts["file"].as_str().unwrap());
            assert!(file.ends_with(rel), "{form}: {}", file.display());
        }
    }
    for d in [
        "cassettes",
        "cassettes/recorded",
        "cassettes/claude",
        "cassettes/codex",
        "cassettes/gemini",
    ] {
        assert!(dirs.contains(&d), "{d} not listed: {dirs:?}");
    }
    w.assert_none_left();
}

/// A mistyped name, short or long, is one line naming it and the nearest name; a name like
/// nothing is one line without a guess; both exit 2.
#[test]
fn a_mistyped_name_gets_did_you_mean() {
    let w = World::new("setup_typo");
    for (typo, meant) in [
        ("codex/codex_txt.cx0169", "codex/codex_text.cx0169"),
        (
            "cassettes/gemini/gemni_text.gm061.cassette.jsonl",
            "gemini/gemini_text.gm061",
        ),
        ("codex_text.cx0169", "codex/codex_text.cx0169"),
    ] {
        let out = pih(&w, &["cassette", "show", typo]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{typo}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(&format!("{typo}: no such cassette")), "{err}");
        assert!(
            err.trim_end().ends_with(&format!("did you mean {meant}?")),
            "{err}"
        );
    }
    let out = pih(&w, &["cassette", "show", "zzzzzzzzzzzzzzzzzzzzzz"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(!err.contains("did you mean"), "{err}");
    w.assert_none_left();
}
