//! Every thread fake-pi starts blocks the signals the process takes itself: once each
//! process shape waits mid-tool, every thread's `SigBlk` equals the process's and holds
//! SIGHUP, SIGINT, SIGTERM and SIGCHLD; the stdin hint's thread is born with them blocked
//! even where the main thread has not blocked them yet (the Codex wrapper reads stdin
//! first: its hint thread, started with nothing blocked, took the SIGCHLD of the native
//! child's end and the wrapper waited for it forever). Each shape, stdin a pipe and hints
//! on, answers SIGTERM as its recorded CLI does and runs to its recorded end. The same
//! runs, many times over on a loaded machine: `scripts/fake-pi-shapes-stress.sh`.

use std::process::Stdio;
use std::time::Duration;

use crate::shape::{self, Kind, SHAPES};
use crate::util::*;

#[test]
fn once_each_shape_waits_every_thread_blocks_what_the_process_blocks() {
    for s in SHAPES {
        let world = World::new(&format!("masks_{s:?}"));
        let mut run =
            shape::start(&world, s, Kind::Sigterm).unwrap_or_else(|e| panic!("{}: {e}", s.name()));
        run.drive_to_wait(&world)
            .unwrap_or_else(|e| panic!("{}: {e}", s.name()));
        let fakes = run.fakes(&world);
        if let Err(e) = run.masks_agree(&world) {
            panic!("{}: {e}{}", s.name(), run.threads(&world));
        }
        // Threads past the main one exist (the signal thread, the orphan watch, the stdin
        // reader): the check is not of one thread against itself.
        let threads: usize = fakes.iter().map(|&p| shape::threads(p).len()).sum();
        assert!(
            threads > fakes.len(),
            "{}: {}",
            s.name(),
            run.threads(&world)
        );
        run.sigterm(&world)
            .unwrap_or_else(|e| panic!("{}: {e}", s.name()));
        world.assert_none_left();
    }
}

#[test]
fn each_shape_with_stdin_a_pipe_and_hints_on_reaches_its_recorded_end() {
    for s in SHAPES {
        let world = World::new(&format!("to_end_{s:?}"));
        let run =
            shape::start(&world, s, Kind::ToEnd).unwrap_or_else(|e| panic!("{}: {e}", s.name()));
        run.run_to_end(&world)
            .unwrap_or_else(|e| panic!("{}: {e}", s.name()));
        world.assert_none_left();
    }
}

/// The Codex wrapper reads stdin before it blocks the signals it waits for: the stdin
/// hint's thread, started then, must not take them (it took SIGCHLD, and the wrapper hung).
/// pi's, started after pi blocked them, the same.
#[test]
fn the_stdin_hint_thread_never_takes_the_signals_the_process_waits_for() {
    for (name, cassette, args) in [
        (
            "codex",
            repo_cassette("codex/codex_text.cx0169.cassette.jsonl"),
            &["exec", "--json", "--skip-git-repo-check", "Say hello."][..],
        ),
        (
            "pi",
            repo_cassette("prompt_on_stdin.pi87.cassette.jsonl"),
            &["--mode", "json"][..],
        ),
    ] {
        let world = World::new(&format!("hint_thread_{name}"));
        world.write(
            "codex-home/config.toml",
            "model = \"gpt-5.5\"\nmodel_provider = \"openai\"\n",
        );
        let mut child = world
            .fake_pi(&cassette)
            .args(args)
            .env("FAKE_PI_HINTS", "1")
            .env("FAKE_PI_HINT_STDIN_MS", "60000")
            .env("CODEX_HOME", world.path().join("codex-home"))
            .env("CODEX_API_KEY", "k")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        let mut hint = None;
        wait_until(Duration::from_secs(10), || {
            hint = shape::threads(pid)
                .into_iter()
                .find(|t| t.name == "stdin-hint");
            hint.is_some()
        });
        let hint = hint.unwrap();
        assert_eq!(
            hint.blocked & shape::HANDLED,
            shape::HANDLED,
            "{name}: the stdin hint's thread blocks {:016x}",
            hint.blocked
        );
        drop(child.stdin.take());
        let _ = child.kill();
        child.wait().unwrap();
        world.assert_none_left_within(Duration::from_secs(2));
    }
}
