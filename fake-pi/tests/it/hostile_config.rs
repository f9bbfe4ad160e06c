//! A CLI's configuration that is not a regular file, or larger than fake-pi reads: Codex's
//! `config.toml` and a profile's file, each Gemini CLI settings layer, pi's agent dir
//! files, fake-pi's own `fake-pi.conf`. Each is refused at once with one line naming the
//! file and the bound (exit 96; 97 for fake-pi's own settings), under a memory cap and a
//! time limit: a link to /dev/zero grew to the memory limit, a FIFO hung (the Gemini
//! relaunch parent with SIGTERM blocked), a 26 MB `config.toml` took 911 MB. A file within
//! the bound is still read, through a link as the CLIs read it.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use pi_testkit::process::{measure, Measure, Measured};

use crate::util::*;

/// The address space a run gets: a file read whole, or parsed, past it fails the run.
const CAP: u64 = 512 << 20;

fn run(cmd: &Command) -> Measured {
    let how = Measure {
        timeout: Some(Duration::from_secs(20)),
        ..Measure::new(Stdio::null(), CAP)
    };
    measure(cmd, how)
}

/// `path` made what `what` names: `zero` (a link to /dev/zero), `fifo`, `big` (2 MiB of
/// comment lines after `text`), `huge` (26 MB of them), or `text` itself.
fn make(path: &Path, what: &str, text: &str) {
    if let Some(d) = path.parent() {
        std::fs::create_dir_all(d).unwrap();
    }
    let _ = std::fs::remove_file(path);
    match what {
        "zero" => std::os::unix::fs::symlink("/dev/zero", path).unwrap(),
        "fifo" => nix::unistd::mkfifo(path, nix::sys::stat::Mode::S_IRWXU).unwrap(),
        "big" | "huge" => {
            let size = if what == "big" { 2 << 20 } else { 26_000_000 };
            let mut s = text.to_string();
            let line = format!("# {}\n", "x".repeat(97));
            while s.len() < size {
                s.push_str(&line);
            }
            std::fs::write(path, s).unwrap()
        }
        _ => std::fs::write(path, text).unwrap(),
    }
}

/// The one line of fake-pi's refusal of `path` (`kind`), a configuration of `whose`.
fn refusal(path: &Path, kind: &str, whose: &str) -> String {
    let problem = match kind {
        "zero" => "a device, not a regular file",
        "fifo" => "a FIFO, not a regular file",
        _ => "larger than 1 MiB",
    };
    format!(
        "{}: {problem} ({whose}: fake-pi reads it only from a regular file of at most 1 MiB)",
        path.display()
    )
}

fn check(m: &Measured, code: i32, line: &str, what: &str) {
    let err = String::from_utf8_lossy(&m.stderr);
    assert!(!m.timed_out, "{what}: timed out");
    assert_eq!(m.code, Some(code), "{what}: {err}");
    assert_eq!(err, format!("fake-pi: {line}\n"), "{what}");
    assert!(m.peak_rss_kib < 64 << 10, "{what}: {} KiB", m.peak_rss_kib);
}

const CODEX_CONFIG: &str = "model = \"gpt-5.5\"\nmodel_provider = \"openai\"\n";

#[test]
fn a_codex_config_or_profile_that_is_not_a_file_or_too_large_is_refused_at_once() {
    let w = World::new("hostile_codex_config");
    let home = w.path().join("codex-home");
    let codex = |args: &[&str]| {
        let mut cmd = w.fake_pi(&repo_cassette("codex/codex_text.cx0169.cassette.jsonl"));
        cmd.env("CODEX_HOME", &home)
            .env("CODEX_API_KEY", "k")
            .args(["exec", "--json", "--skip-git-repo-check"])
            .args(args)
            .arg("Say hello.");
        cmd
    };
    let config = home.join("config.toml");
    for what in ["zero", "fifo", "huge"] {
        make(&config, what, CODEX_CONFIG);
        let line = refusal(&config, what, "Codex's config");
        check(&run(&codex(&[])), 96, &line, what);
    }
    // A profile's own file, the same.
    make(&config, "text", CODEX_CONFIG);
    let profile = home.join("p.config.toml");
    for what in ["zero", "fifo"] {
        make(&profile, what, "");
        let line = refusal(&profile, what, "Codex's config");
        check(&run(&codex(&["--profile", "p"])), 96, &line, what);
    }
    // Within the bound, and through a link, the file is the CLI's: the run replays.
    let padded = format!("{CODEX_CONFIG}{}", "# pad\n".repeat(170_000));
    assert!(padded.len() < 1 << 20);
    make(&w.path().join("dotfiles/config.toml"), "text", &padded);
    std::fs::remove_file(&config).unwrap();
    std::os::unix::fs::symlink(w.path().join("dotfiles/config.toml"), &config).unwrap();
    let m = run(&codex(&[]));
    assert_eq!(m.code, Some(0), "{}", String::from_utf8_lossy(&m.stderr));
    w.assert_none_left();
}

#[test]
fn each_gemini_settings_layer_that_is_not_a_file_or_too_large_is_refused_at_once() {
    let w = World::new("hostile_gemini_settings");
    let ws = w.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let system = w.path().join("etc/settings.json");
    let defaults = w.path().join("etc/defaults.json");
    let gemini = || {
        let mut cmd = w.fake_pi(&repo_cassette("gemini/gemini_text.gm061.cassette.jsonl"));
        cmd.env("HOME", w.path())
            .env("GEMINI_API_KEY", "k")
            .env("GEMINI_CLI_SYSTEM_SETTINGS_PATH", &system)
            .env("GEMINI_CLI_SYSTEM_DEFAULTS_PATH", &defaults)
            .env("GEMINI_CLI_TRUST_WORKSPACE", "true")
            .env_remove("GEMINI_CLI_HOME")
            .env_remove("GEMINI_MODEL")
            .current_dir(&ws)
            .args(["-o", "stream-json", "-m", "gemini-2.5-flash", "-y", "-p"])
            .arg("Say hello.");
        cmd
    };
    let layers = [
        w.path().join(".gemini/settings.json"),
        ws.join(".gemini/settings.json"),
        system.clone(),
        defaults.clone(),
    ];
    for file in &layers {
        for what in ["zero", "fifo", "big"] {
            make(file, what, "{}\n");
            let line = refusal(file, what, "Gemini CLI's settings");
            check(
                &run(&gemini()),
                96,
                &line,
                &format!("{} {what}", file.display()),
            );
        }
        std::fs::remove_file(file).unwrap();
    }
    w.assert_none_left();
}

#[test]
fn pi_s_agent_dir_files_and_fake_pi_conf_that_are_not_files_are_refused_at_once() {
    let w = World::new("hostile_pi_settings");
    let c = w
        .cassette("text")
        .expect(r#"{"flags":{"mode":"json"},"prompt":"hi","argv_messages":["hi"]}"#)
        .records([
            r#"{"dt_ms":0,"stdout":{"type":"session"}}"#,
            r#"{"dt_ms":0,"exit":0}"#,
        ])
        .write();
    let agent = w.agent_dir();
    for (name, whose) in [
        ("settings.json", "pi's settings"),
        ("models.json", "pi's models"),
    ] {
        let file = agent.join(name);
        for what in ["zero", "fifo", "big"] {
            make(&file, what, "{}\n");
            let mut cmd = w.fake_pi(&c);
            cmd.args(["--mode", "json", "hi"]);
            let line = format!("agent dir: {}", refusal(&file, what, whose));
            check(&run(&cmd), 96, &line, &format!("{name} {what}"));
        }
        std::fs::remove_file(&file).unwrap();
    }
    // fake-pi's own settings beside the program: the same, exit 97 (no cassette).
    let bin = w.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    pi_testkit::bins::install_exe(&pi_testkit::fake_pi(), &bin.join("pi")).unwrap();
    let conf = bin.join("fake-pi.conf");
    for what in ["zero", "fifo"] {
        make(&conf, what, "");
        let mut cmd = Command::new(bin.join("pi"));
        cmd.env_clear()
            .env(MARKER_VAR, w.marker())
            .current_dir(w.path())
            .args(["--mode", "json", "hi"]);
        let line = refusal(&conf, what, "fake-pi's settings");
        check(&run(&cmd), 97, &line, &format!("fake-pi.conf {what}"));
    }
    w.assert_none_left();
}
