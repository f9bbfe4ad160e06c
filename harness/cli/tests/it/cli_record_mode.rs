//! `record --record-mode` and `cassette review`: a missing cassette under `none` (and under
//! any mode when `CI` is set) fails naming it and creates nothing; `once` records it;
//! `all` leaves a changed re-recording beside the cassette for review, where
//! `--reject-all` keeps the cassette byte for byte and `--accept-all` replaces it;
//! `--replay-with` then replays as pi. The tests that record need real pi 1.5.2
//! (`PI_HARNESS_REAL_PI152`, `real_pi_record_*`) and skip without it.

use std::path::{Path, PathBuf};

use pi_testkit::{fake_pi, World};

use crate::util::{cassettes, pih};

const ARGS: [&str; 7] = [
    "--mode",
    "json",
    "--provider",
    "fake",
    "--model",
    "fake-model",
    "Say hello.",
];

/// Files in `dir` (names), sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

fn record_cmd(w: &World, mode: &str, script: &Path, out: &Path, pi: &Path) -> assert_cmd::Command {
    let mut c = pih();
    c.env_remove("CI")
        .env(pi_testkit::MARKER_VAR, w.marker())
        .args(["record", "--record-mode", mode, "--script"])
        .arg(script)
        .arg("--out")
        .arg(out)
        .arg("--pi")
        .arg(pi)
        .arg("--")
        .args(ARGS);
    c
}

#[test]
fn with_ci_set_a_missing_cassette_fails_naming_it_and_nothing_is_created() {
    let w = World::new("record-mode-ci");
    let script = w.write("hello.json", r#"{"turns":[{"text":["Hello"]}]}"#);
    let dir = w.path().join("cassettes");
    std::fs::create_dir(&dir).unwrap();
    let out = dir.join("hello.cassette.jsonl");
    for (mode, ci) in [("once", Some("1")), ("all", Some("true")), ("none", None)] {
        let mut c = record_cmd(&w, mode, &script, &out, Path::new("/nonexistent/pi"));
        if let Some(v) = ci {
            c.env("CI", v);
        }
        let o = c.output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{mode}: {err}");
        assert_eq!(err.lines().count(), 1, "{mode}: one line: {err}");
        assert!(
            err.starts_with(&format!("error: {}: no such cassette", out.display())),
            "{mode}: {err}"
        );
        if ci.is_some() {
            assert!(err.contains("CI is set"), "{mode}: {err}");
        }
        assert!(names(&dir).is_empty(), "{mode}: created {:?}", names(&dir));
    }
    w.assert_none_left();
}

#[test]
fn an_existing_cassette_is_replayed_with_the_callers_arguments_and_stdin() {
    let w = World::new("record-mode-replay");
    let committed = cassettes().join("recorded/prompt_on_stdin.pi152.cassette.jsonl");
    // Under `once` an existing cassette is not recorded again (no pi is needed), and
    // --replay-with hands the call, stdin included, to fake-pi.
    let o = pih()
        .env_remove("CI")
        .env(pi_testkit::MARKER_VAR, w.marker())
        .env("FAKE_PI_SPEED", "0")
        .env("PI_CODING_AGENT_DIR", w.agent_dir())
        .args([
            "record",
            "--record-mode",
            "once",
            "--script",
            "unused.json",
            "--out",
        ])
        .arg(&committed)
        .args(["--pi", "/nonexistent/pi", "--replay-with"])
        .arg(fake_pi())
        .args([
            "--",
            "--mode",
            "json",
            "--provider",
            "fake",
            "--model",
            "fake-model",
        ])
        .arg("--session-dir")
        .arg(w.path().join("sessions"))
        .write_stdin("List the files.")
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(out.contains(r#""type":"agent_end""#), "{out}");
    // Another prompt on stdin is not the recorded call: fake-pi refuses it (exit 99).
    let o = pih()
        .env_remove("CI")
        .env(pi_testkit::MARKER_VAR, w.marker())
        .env("FAKE_PI_SPEED", "0")
        .env("PI_CODING_AGENT_DIR", w.agent_dir())
        .args([
            "record",
            "--record-mode",
            "none",
            "--script",
            "unused.json",
            "--out",
        ])
        .arg(&committed)
        .arg("--replay-with")
        .arg(fake_pi())
        .args([
            "--",
            "--mode",
            "json",
            "--provider",
            "fake",
            "--model",
            "fake-model",
        ])
        .arg("--session-dir")
        .arg(w.path().join("sessions"))
        .write_stdin("Something else.")
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(99),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    w.assert_none_left();
}

/// A cassette and a pending re-recording of it that says something else.
fn pending_pair(w: &World) -> (PathBuf, PathBuf, Vec<u8>) {
    let dir = w.path().join("t");
    std::fs::create_dir_all(&dir).unwrap();
    let old = dir.join("hello.cassette.jsonl");
    let new = dir.join("hello.cassette.jsonl.new");
    let old_bytes =
        std::fs::read(cassettes().join("recorded/text_only.pi152.cassette.jsonl")).unwrap();
    std::fs::write(&old, &old_bytes).unwrap();
    std::fs::copy(
        cassettes().join("recorded/thinking_text.pi152.cassette.jsonl"),
        &new,
    )
    .unwrap();
    (old, new, old_bytes)
}

#[test]
fn review_rejects_leaving_the_cassette_byte_for_byte_and_accepts_replacing_it() {
    let w = World::new("review");
    let (old, new, old_bytes) = pending_pair(&w);
    let o = pih()
        .current_dir(w.path())
        .args(["cassette", "review", "--reject-all", "t"])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(out.contains("pending  t/hello.cassette.jsonl.new"), "{out}");
    assert!(out.contains("replaces t/hello.cassette.jsonl"), "{out}");
    // The normalized diff: the thinking only the re-recording has.
    assert!(
        out.lines()
            .any(|l| l.starts_with("  + ") && l.contains("thinking")),
        "{out}"
    );
    assert!(
        out.contains("review: 0 accepted, 1 rejected, 0 left pending"),
        "{out}"
    );
    assert_eq!(
        std::fs::read(&old).unwrap(),
        old_bytes,
        "rejected: the cassette is untouched"
    );
    assert!(!new.exists());

    let (old, new, _) = pending_pair(&w);
    let new_bytes = std::fs::read(&new).unwrap();
    let o = pih()
        .args(["cassette", "review", "--accept-all"])
        .arg(&old)
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(
        std::fs::read(&old).unwrap(),
        new_bytes,
        "accepted: replaced"
    );
    assert!(!new.exists());
}

#[test]
fn review_asks_on_stdin_and_leaves_what_it_was_not_told() {
    let w = World::new("review-ask");
    let (old, new, old_bytes) = pending_pair(&w);
    // An answer it does not know, then the end of its input: asked again, then skipped.
    let o = pih()
        .args(["cassette", "review"])
        .arg(w.path())
        .write_stdin("maybe\n")
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(err.contains("`maybe`: answer a, r or s"), "{err}");
    assert!(
        out.contains("0 accepted, 0 rejected, 1 left pending"),
        "{out}"
    );
    assert!(new.exists());
    assert_eq!(std::fs::read(&old).unwrap(), old_bytes);
    let o = pih()
        .args(["cassette", "review"])
        .arg(w.path())
        .write_stdin("r\n")
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&o.stdout).contains("0 accepted, 1 rejected"));
    assert!(!new.exists());
    assert_eq!(std::fs::read(&old).unwrap(), old_bytes);
}

#[test]
fn review_says_when_only_timings_differ() {
    let w = World::new("review-timing");
    let dir = w.path();
    let text = std::fs::read_to_string(cassettes().join("recorded/text_only.pi152.cassette.jsonl"))
        .unwrap();
    std::fs::write(dir.join("a.cassette.jsonl"), &text).unwrap();
    let slower = text.replacen("\"dt_ms\":7.3,", "\"dt_ms\":70.3,", 1);
    assert_ne!(slower, text);
    std::fs::write(dir.join("a.cassette.jsonl.new"), slower).unwrap();
    let o = pih()
        .args(["cassette", "review", "--reject-all"])
        .arg(dir)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("(the same once timings and ids are left out)"),
        "{out}"
    );
    assert!(
        !out.lines()
            .any(|l| l.starts_with("  + ") || l.starts_with("  - ")),
        "{out}"
    );
}

/// Real pi 1.5.2, or `None` (said) when `PI_HARNESS_REAL_PI152` is unset.
fn real_pi() -> Option<PathBuf> {
    let p = std::env::var_os("PI_HARNESS_REAL_PI152").filter(|v| !v.is_empty());
    if p.is_none() {
        eprintln!("skip: PI_HARNESS_REAL_PI152 not set (scripts/install-pi.sh --print-path 1.5.2)");
    }
    p.map(PathBuf::from)
}

#[test]
fn real_pi_record_once_records_a_missing_cassette_then_all_waits_in_review() {
    let Some(pi) = real_pi() else { return };
    let w = World::new("record-mode-real");
    let hello = w.write(
        "hello.json",
        r#"{"turns":[{"text":["Hello", ", world!"]}]}"#,
    );
    let bye = w.write("bye.json", r#"{"turns":[{"text":["Good", "bye!"]}]}"#);
    let dir = w.path().join("cassettes");
    std::fs::create_dir(&dir).unwrap();
    let out = dir.join("hello.cassette.jsonl");

    let o = record_cmd(&w, "once", &hello, &out, &pi).output().unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let committed = std::fs::read(&out).unwrap();
    assert!(String::from_utf8_lossy(&committed).contains("world!"));
    // `once` again: nothing is recorded (no pi is even looked for).
    let o = record_cmd(&w, "once", &bye, &out, Path::new("/nonexistent/pi"))
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(std::fs::read(&out).unwrap(), committed);

    // `all` with the same script: timings and ids differ, the meaning does not.
    let o = record_cmd(&w, "all", &hello, &out, &pi).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(err.contains("unchanged"), "{err}");
    assert_eq!(names(&dir), ["hello.cassette.jsonl"]);
    assert_eq!(std::fs::read(&out).unwrap(), committed);

    // `all` with another answer: the new recording waits beside the cassette.
    let rerecord = || {
        let o = record_cmd(&w, "all", &bye, &out, &pi).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert_eq!(o.status.code(), Some(0), "{err}");
        assert!(err.contains("hello.cassette.jsonl.new"), "{err}");
        assert_eq!(
            names(&dir),
            ["hello.cassette.jsonl", "hello.cassette.jsonl.new"]
        );
        assert_eq!(
            std::fs::read(&out).unwrap(),
            committed,
            "the cassette waits for review"
        );
    };
    rerecord();
    let o = pih()
        .args(["cassette", "review", "--reject-all"])
        .arg(&dir)
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&o.stdout);
    assert!(
        shown.contains("Goodbye!") && shown.contains("Hello, world!"),
        "{shown}"
    );
    assert_eq!(
        std::fs::read(&out).unwrap(),
        committed,
        "rejected: byte for byte"
    );
    assert_eq!(names(&dir), ["hello.cassette.jsonl"]);

    rerecord();
    let pending = std::fs::read(dir.join("hello.cassette.jsonl.new")).unwrap();
    let o = pih()
        .args(["cassette", "review", "--accept-all"])
        .arg(&dir)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(std::fs::read(&out).unwrap(), pending, "accepted");
    assert_eq!(names(&dir), ["hello.cassette.jsonl"]);
    w.assert_none_left();
}

#[test]
fn the_testkit_world_replays_and_refuses_as_the_mode_says() {
    let w = World::new("record-mode-testkit");
    let missing = w.path().join("missing.cassette.jsonl");
    let o = w
        .pi_recording(
            "none",
            &missing,
            Path::new("s.json"),
            Path::new("/nonexistent/pi"),
        )
        .env_remove("CI")
        .args(ARGS)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("missing.cassette.jsonl: no such cassette"));
    assert!(!missing.exists());
    let committed = cassettes().join("recorded/text_only.pi152.cassette.jsonl");
    let o = w
        .pi_recording(
            "once",
            &committed,
            Path::new("s.json"),
            Path::new("/nonexistent/pi"),
        )
        .env_remove("CI")
        .args(ARGS)
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(String::from_utf8_lossy(&o.stdout).contains(r#""delta":"Hello""#));
    w.assert_none_left();
}

#[test]
fn accepting_a_gzip_re_recording_replaces_the_plain_cassette() {
    let w = World::new("review-gz");
    let dir = w.path();
    let old = dir.join("a.cassette.jsonl");
    std::fs::copy(
        cassettes().join("recorded/text_only.pi152.cassette.jsonl"),
        &old,
    )
    .unwrap();
    let fresh =
        std::fs::read(cassettes().join("recorded/thinking_text.pi152.cassette.jsonl")).unwrap();
    let gz = pi_cassette::output::gzip(&fresh).unwrap();
    std::fs::write(dir.join("a.cassette.jsonl.gz.new"), &gz).unwrap();
    let o = pih()
        .args(["cassette", "review", "--accept-all"])
        .arg(dir)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        out.contains("a.cassette.jsonl.gz.new") && out.contains("thinking"),
        "{out}"
    );
    assert_eq!(names(dir), ["a.cassette.jsonl.gz"]);
    assert_eq!(std::fs::read(dir.join("a.cassette.jsonl.gz")).unwrap(), gz);
}

/// What is named like a pending file but is not one is said, one line each, and left alone;
/// the review goes on to the next file and ends with status 2 counting them: a FIFO (the
/// review hung on it), a symbolic link (accepted, it became the cassette, and a later
/// `relax` rewrote the file outside the directory it pointed at), and a file that is not a
/// cassette (the review stopped there, leaving the rest unreviewed).
#[test]
fn review_says_what_it_cannot_review_leaves_it_alone_and_goes_on() {
    let w = World::new("review-hostile");
    let (old, new, old_bytes) = pending_pair(&w);
    let dir = old.parent().unwrap().to_path_buf();
    let outside = w.write("outside/victim.cassette.jsonl", "not to be touched\n");
    std::os::unix::fs::symlink(&outside, dir.join("a-link.cassette.jsonl.new")).unwrap();
    nix::unistd::mkfifo(
        &dir.join("b-fifo.cassette.jsonl.new"),
        nix::sys::stat::Mode::from_bits_truncate(0o600),
    )
    .unwrap();
    std::fs::write(dir.join("c-bad.cassette.jsonl.new"), "not json\n").unwrap();
    let o = pih()
        .current_dir(w.path())
        .args(["cassette", "review", "--accept-all", "t"])
        .timeout(std::time::Duration::from_secs(30))
        .output()
        .unwrap();
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert_eq!(o.status.code(), Some(2), "{out}{err}");
    let errors: Vec<&str> = err.lines().collect();
    assert_eq!(errors.len(), 3, "{err}");
    assert!(
        errors[0].starts_with("error: t/a-link.cassette.jsonl.new: a symbolic link"),
        "{err}"
    );
    assert!(
        errors[1].starts_with("error: t/b-fifo.cassette.jsonl.new: not a regular file"),
        "{err}"
    );
    assert!(
        errors[2].starts_with("error: t/c-bad.cassette.jsonl.new:1: "),
        "{err}"
    );
    // The good one after them was reviewed (accepted).
    assert!(
        out.contains(
            "review: 1 accepted, 0 rejected, 0 left pending, 3 could not be reviewed (left alone)"
        ),
        "{out}"
    );
    assert_ne!(std::fs::read(&old).unwrap(), old_bytes);
    assert!(!new.exists());
    // Left alone: the link is still a link (not a cassette), its target untouched.
    assert!(
        std::fs::symlink_metadata(dir.join("a-link.cassette.jsonl.new"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert!(!dir.join("a-link.cassette.jsonl").exists());
    assert_eq!(
        std::fs::read_to_string(&outside).unwrap(),
        "not to be touched\n"
    );
    assert!(dir.join("b-fifo.cassette.jsonl.new").exists());
    assert!(dir.join("c-bad.cassette.jsonl.new").exists());
}

/// An error is said once: a corrupt zstd given to review and to drift is one line naming the
/// file, the decoder's words once (before: `cannot read cassette: Data corruption detected:
/// Data corruption detected`, the library's message and then its source again).
#[test]
fn review_and_drift_say_an_error_once() {
    let w = World::new("errors-once");
    let (old, _, _) = pending_pair(&w);
    let dir = old.parent().unwrap().to_path_buf();
    let corrupt = b"\x28\xb5\x2f\xfd\x00\x00garbage";
    std::fs::write(dir.join("hello.cassette.jsonl.new"), corrupt).unwrap();
    let committed = w.path().join("committed");
    let fresh = w.path().join("fresh");
    std::fs::create_dir_all(&committed).unwrap();
    std::fs::create_dir_all(&fresh).unwrap();
    std::fs::copy(&old, committed.join("hello.pi152.cassette.jsonl")).unwrap();
    std::fs::write(fresh.join("hello.pi152.cassette.jsonl"), corrupt).unwrap();
    let review = pih()
        .current_dir(w.path())
        .args(["cassette", "review", "--reject-all", "t"])
        .output()
        .unwrap();
    let drift = pih()
        .args(["drift", "--committed"])
        .arg(&committed)
        .arg("--fresh")
        .arg(&fresh)
        .output()
        .unwrap();
    for (what, o) in [("review", review), ("drift", drift)] {
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{what}: {err}");
        assert_eq!(err.lines().count(), 1, "{what}: {err}");
        assert!(
            err.starts_with("error: ") && err.contains("hello."),
            "{what}: {err}"
        );
        assert_eq!(err.matches("corruption").count(), 1, "{what}: {err}");
    }
}
