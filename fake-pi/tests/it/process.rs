//! fake-pi's process behaviour with real processes and real signals: exit codes, death by
//! signal, hang, spawned children (own session, ignoring SIGTERM, holding stdout,
//! grandchildren), pi's SIGTERM cleanup and SIGINT death, custom signal actions, timing
//! and a reader that goes away.

use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, ChildStdout};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::util::*;

const LONG: Duration = Duration::from_secs(10);

fn read_line(r: &mut BufReader<ChildStdout>) -> String {
    let mut s = String::new();
    r.read_line(&mut s).unwrap();
    s
}

/// Wait for the process to end, with a deadline (kills it and fails when exceeded).
fn wait_exit(child: &mut Child) -> std::process::ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            return st;
        }
        if start.elapsed() > LONG {
            let _ = child.kill();
            panic!("fake-pi did not end within {LONG:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The children (`fake-pi-child`) carrying the sandbox marker: (pid, ppid, session).
fn fake_children(sb: &World) -> Vec<(i32, i32, i32)> {
    sb.alive()
        .into_iter()
        .filter(|&p| cmdline(p).starts_with("fake-pi-child"))
        .filter_map(|p| stat(p).map(|(_, ppid, _, sid)| (p, ppid, sid)))
        .collect()
}

#[test]
fn exit_code_and_death_by_signal() {
    let sb = World::new(module_path!());
    let c = sb
        .cassette("x")
        .version("0.87.1")
        .members("")
        .records([
            r#"{"dt_ms":0,"stdout_text":"partial","newline":false}"#,
            r#"{"dt_ms":0,"exit":42}"#,
        ])
        .write();
    cmd(&sb, &c).assert().code(42).stdout("partial");
    for (name, num) in [
        ("SIGKILL", 9),
        ("SIGUSR1", 10),
        ("SIGTERM", 15),
        ("SIGPIPE", 13),
    ] {
        let c = sb
            .cassette("s")
            .version("0.73.1")
            .members("")
            .records([
                r#"{"dt_ms":0,"stderr":"dying\n"}"#,
                &format!(r#"{{"dt_ms":0,"signal":"{name}"}}"#),
            ])
            .write();
        let out = sb.fake_pi(&c).output().unwrap();
        assert_eq!(out.status.signal(), Some(num), "{name}: {:?}", out.status);
        assert_eq!(out.stderr, b"dying\n");
    }
    sb.assert_none_left();
}

#[test]
fn hang_stays_alive_and_silent_until_killed() {
    let sb = World::new(module_path!());
    let c = sb
        .cassette("h")
        .version("0.87.1")
        .members("")
        .records([
            r#"{"dt_ms":0,"stdout":{"type":"agent_start"}}"#,
            r#"{"dt_ms":0,"hang":true}"#,
        ])
        .write();
    let mut child = sb.fake_pi(&c).spawn().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    assert_eq!(read_line(&mut out), "{\"type\":\"agent_start\"}\n");
    std::thread::sleep(Duration::from_millis(200));
    assert!(
        child.try_wait().unwrap().is_none(),
        "a hung fake-pi is alive"
    );
    send(child.id(), libc::SIGKILL);
    assert_eq!(wait_exit(&mut child).signal(), Some(9));
    let mut rest = Vec::new();
    out.read_to_end(&mut rest).unwrap();
    assert!(rest.is_empty(), "silent while hung");
    sb.assert_none_left();
}

#[test]
fn sigterm_cleans_up_children_but_an_escaped_grandchild_survives() {
    let sb = World::new(module_path!());
    let c = sb.cassette("t").version("0.87.1").members("").records([
            r#"{"dt_ms":0,"spawn":{"id":"a","own_session":true,"ignore_sigterm":true,"grandchild":{"own_session":true}}}"#,
            r#"{"dt_ms":0,"spawn":{"id":"b","own_session":true,"grandchild":{"own_session":false,"ignore_sigterm":true}}}"#,
            r#"{"dt_ms":0,"stdout":{"type":"tool_execution_start"}}"#,
            r#"{"dt_ms":0,"hang":true}"#,
        ]).write();
    let mut child = sb.fake_pi(&c).spawn().unwrap();
    let me = child.id() as i32;
    let mut out = BufReader::new(child.stdout.take().unwrap());
    read_line(&mut out);
    wait_until(LONG, || fake_children(&sb).len() == 4);
    let procs = fake_children(&sb);
    let (_, _, my_sid) = (0, 0, stat(me).unwrap().3);
    let kids: Vec<_> = procs.iter().filter(|p| p.1 == me).collect();
    assert_eq!(kids.len(), 2, "{procs:?}");
    for k in &kids {
        assert_eq!(k.2, k.0, "child {} leads its own session", k.0);
        assert_ne!(k.2, my_sid);
    }
    let a = kids
        .iter()
        .find(|k| cmdline(k.0) == "fake-pi-child a")
        .unwrap()
        .0;
    let b = kids
        .iter()
        .find(|k| cmdline(k.0) == "fake-pi-child b")
        .unwrap()
        .0;
    let ga = procs.iter().find(|p| p.1 == a).unwrap().0;
    let gb = procs.iter().find(|p| p.1 == b).unwrap().0;
    assert_eq!(
        stat(ga).unwrap().3,
        ga,
        "grandchild of a escaped into its own session"
    );
    assert_eq!(
        stat(gb).unwrap().3,
        b,
        "grandchild of b stays in b's session"
    );

    send(me as u32, libc::SIGTERM);
    assert_eq!(wait_exit(&mut child).code(), Some(143));
    wait_until(LONG, || !alive(a) && !alive(b) && !alive(gb));
    assert!(
        alive(ga),
        "a grandchild in its own session escapes pi's cleanup"
    );
    sb.kill_and_await(&[ga]);
    sb.assert_none_left();
}

#[test]
fn sigint_dies_and_children_survive() {
    let sb = World::new(module_path!());
    let c = sb
        .cassette("i")
        .version("0.73.1")
        .members("")
        .records([
            r#"{"dt_ms":0,"spawn":{"id":"tool","grandchild":{}}}"#,
            r#"{"dt_ms":0,"stdout":{"type":"tool_execution_start"}}"#,
            r#"{"dt_ms":60000,"stdout":{"type":"never"}}"#,
            r#"{"dt_ms":0,"exit":0}"#,
        ])
        .write();
    let mut child = sb.fake_pi(&c).env("FAKE_PI_SPEED", "1").spawn().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    read_line(&mut out);
    wait_until(LONG, || fake_children(&sb).len() == 2);
    send(child.id(), libc::SIGINT);
    assert_eq!(
        wait_exit(&mut child).signal(),
        Some(2),
        "dies by SIGINT mid-sleep"
    );
    let left: Vec<i32> = fake_children(&sb).iter().map(|p| p.0).collect();
    assert_eq!(
        left.len(),
        2,
        "pi leaves its tool processes behind on SIGINT"
    );
    sb.kill_and_await(&left);
    sb.assert_none_left();
}

#[test]
fn child_ignoring_sigterm_and_child_in_callers_group() {
    let sb = World::new(module_path!());
    let c = sb
        .cassette("g")
        .version("0.87.1")
        .members(r#""process":{"on_sigterm":{"action":"cleanup_exit","code":7}}"#)
        .records([
            r#"{"dt_ms":0,"spawn":{"id":"stubborn","ignore_sigterm":true}}"#,
            r#"{"dt_ms":0,"spawn":{"id":"same-group","own_session":false}}"#,
            r#"{"dt_ms":0,"stdout":{"type":"ready"}}"#,
            r#"{"dt_ms":0,"hang":true}"#,
        ])
        .write();
    let mut child = sb.fake_pi(&c).spawn().unwrap();
    let me = child.id() as i32;
    let mut out = BufReader::new(child.stdout.take().unwrap());
    read_line(&mut out);
    wait_until(LONG, || fake_children(&sb).len() == 2);
    let stubborn = fake_children(&sb)
        .into_iter()
        .find(|p| cmdline(p.0).ends_with("stubborn"))
        .unwrap()
        .0;
    let same = fake_children(&sb)
        .into_iter()
        .find(|p| cmdline(p.0).ends_with("same-group"))
        .unwrap()
        .0;
    assert_eq!(
        stat(same).unwrap().3,
        stat(me).unwrap().3,
        "no setsid: same session as fake-pi"
    );
    send(stubborn as u32, libc::SIGTERM);
    std::thread::sleep(Duration::from_millis(300));
    assert!(alive(stubborn), "the child ignores SIGTERM");
    send(me as u32, libc::SIGTERM);
    assert_eq!(wait_exit(&mut child).code(), Some(7));
    wait_until(LONG, || !alive(stubborn) && !alive(same));
    sb.assert_none_left();
}

#[test]
fn a_child_holding_stdout_keeps_the_reader_from_eof() {
    let sb = World::new(module_path!());
    let c = sb
        .cassette("o")
        .version("0.87.1")
        .members("")
        .records([
            r#"{"dt_ms":0,"spawn":{"id":"holder","hold_stdout":true}}"#,
            r#"{"dt_ms":0,"stdout":{"type":"agent_end"}}"#,
            r#"{"dt_ms":0,"exit":0}"#,
        ])
        .write();
    let mut child = sb.fake_pi(&c).spawn().unwrap();
    let rx = drain(child.stdout.take().unwrap());
    assert_eq!(wait_exit(&mut child).code(), Some(0));
    assert!(
        rx.recv_timeout(Duration::from_millis(300)).is_err(),
        "no EOF while the child holds stdout"
    );
    let holder: Vec<i32> = fake_children(&sb).iter().map(|p| p.0).collect();
    assert_eq!(holder.len(), 1);
    sb.kill_and_await(&holder);
    let all = rx.recv_timeout(LONG).expect("EOF once the holder is gone");
    assert_eq!(all, b"{\"type\":\"agent_end\"}\n");
    sb.assert_none_left();
}

#[test]
fn a_child_with_a_lifetime_ends_by_itself() {
    let sb = World::new(module_path!());
    let c = sb
        .cassette("l")
        .version("0.87.1")
        .members("")
        .records([
            r#"{"dt_ms":0,"spawn":{"id":"short","hold_stdout":true,"lifetime_ms":200}}"#,
            r#"{"dt_ms":0,"exit":0}"#,
        ])
        .write();
    let start = Instant::now();
    let out = sb.fake_pi(&c).output().unwrap(); // returns at EOF, when the child is gone
    assert_eq!(out.status.code(), Some(0));
    assert!(
        start.elapsed() >= Duration::from_millis(200),
        "{:?}",
        start.elapsed()
    );
    sb.assert_none_left();
}

#[test]
fn signal_actions_from_the_header() {
    let sb = World::new(module_path!());
    let c = sb.cassette("a").version("0.87.1").members(r#""process":{"on_sigterm":{"action":"ignore"},"on_sighup":{"action":"exit","code":5},"on_sigint":{"action":"die"}}"#).records([r#"{"dt_ms":0,"stdout":{"type":"x"}}"#, r#"{"dt_ms":0,"hang":true}"#]).write();
    let mut child = sb.fake_pi(&c).spawn().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    read_line(&mut out);
    send(child.id(), libc::SIGTERM);
    std::thread::sleep(Duration::from_millis(200));
    assert!(child.try_wait().unwrap().is_none(), "SIGTERM ignored");
    send(child.id(), libc::SIGHUP);
    assert_eq!(wait_exit(&mut child).code(), Some(5));
    // Signals act while fake-pi is still reading stdin, too (pi's default: SIGTERM -> 143).
    let c = sb
        .cassette("b")
        .version("0.87.1")
        .members("")
        .records([r#"{"dt_ms":0,"exit":0}"#])
        .write();
    let mut child = sb
        .fake_pi(&c)
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(100));
    send(child.id(), libc::SIGTERM);
    assert_eq!(wait_exit(&mut child).code(), Some(143));
    sb.assert_none_left();
}

/// Arrival times of the first two stdout lines at a given speed.
fn gap(sb: &World, speed: &str) -> Duration {
    let c = sb
        .cassette("gap")
        .version("0.87.1")
        .members("")
        .records([
            r#"{"dt_ms":0,"stdout":{"n":1}}"#,
            r#"{"dt_ms":300,"stdout":{"n":2}}"#,
            r#"{"dt_ms":0,"exit":0}"#,
        ])
        .write();
    let mut child = sb.fake_pi(&c).env("FAKE_PI_SPEED", speed).spawn().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    assert_eq!(read_line(&mut out), "{\"n\":1}\n");
    let t1 = Instant::now();
    assert_eq!(read_line(&mut out), "{\"n\":2}\n");
    let g = t1.elapsed();
    assert_eq!(wait_exit(&mut child).code(), Some(0));
    g
}

#[test]
fn timing_is_recorded_scaled_or_instant() {
    let sb = World::new(module_path!());
    let real = gap(&sb, "1");
    let fast = gap(&sb, "10");
    let instant = gap(&sb, "0");
    assert!(real >= Duration::from_millis(250), "speed 1: {real:?}");
    assert!(
        fast >= Duration::from_millis(20) && fast < Duration::from_millis(250),
        "speed 10: {fast:?}"
    );
    assert!(
        instant < fast && instant < Duration::from_millis(100),
        "speed 0: {instant:?}"
    );
    assert!(fast < real);
    sb.assert_none_left();
}

#[test]
fn a_sleeping_fake_pi_answers_sigterm_at_once() {
    let sb = World::new(module_path!());
    let c = sb
        .cassette("z")
        .version("0.73.1")
        .members("")
        .records([
            r#"{"dt_ms":0,"stdout":{"n":1}}"#,
            r#"{"dt_ms":60000,"exit":0}"#,
        ])
        .write();
    let mut child = sb.fake_pi(&c).env("FAKE_PI_SPEED", "1").spawn().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    read_line(&mut out);
    let t = Instant::now();
    send(child.id(), libc::SIGTERM);
    assert_eq!(wait_exit(&mut child).code(), Some(143));
    assert!(t.elapsed() < Duration::from_secs(5));
    sb.assert_none_left();
}

#[test]
fn a_reader_that_goes_away_ends_fake_pi_quietly() {
    let sb = World::new(module_path!());
    let c = sb
        .cassette("p")
        .version("0.87.1")
        .members("")
        .records([
            r#"{"dt_ms":0,"stdout":{"n":1}}"#,
            r#"{"dt_ms":100,"stdout":{"n":2}}"#,
            r#"{"dt_ms":0,"exit":0}"#,
        ])
        .write();
    let mut child = sb.fake_pi(&c).env("FAKE_PI_SPEED", "1").spawn().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    read_line(&mut out);
    drop(out);
    assert_eq!(wait_exit(&mut child).code(), Some(141));
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert_eq!(err, "");
    sb.assert_none_left();
}

/// Read stdout to EOF in a thread; the receiver gets everything once EOF comes.
fn drain(mut stdout: ChildStdout) -> mpsc::Receiver<Vec<u8>> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut all = Vec::new();
        let _ = stdout.read_to_end(&mut all);
        let _ = tx.send(all);
    });
    rx
}

#[test]
fn a_grandchild_holds_stdout_only_when_told_to() {
    let sb = World::new(module_path!());
    // The child holds stdout for 100 ms; its grandchild keeps it (or not) after that.
    for hold in [true, false] {
        let c = sb.cassette("gh").version("0.87.1").members("").records([
                &format!(r#"{{"dt_ms":0,"spawn":{{"id":"c","hold_stdout":true,"lifetime_ms":100,"grandchild":{{"hold_stdout":{hold}}}}}}}"#),
                r#"{"dt_ms":0,"exit":0}"#,
            ]).write();
        let mut child = sb.fake_pi(&c).spawn().unwrap();
        let rx = drain(child.stdout.take().unwrap());
        assert_eq!(wait_exit(&mut child).code(), Some(0));
        wait_until(LONG, || fake_children(&sb).len() == 1); // the child is gone, the grandchild stays
        let grandchild = fake_children(&sb)[0].0;
        if hold {
            assert!(
                rx.recv_timeout(Duration::from_millis(300)).is_err(),
                "the grandchild holds stdout"
            );
            sb.kill_and_await(&[grandchild]);
            rx.recv_timeout(LONG)
                .expect("EOF once the grandchild is gone");
        } else {
            rx.recv_timeout(LONG)
                .expect("EOF although the grandchild lives");
            sb.kill_and_await(&[grandchild]);
        }
    }
    sb.assert_none_left();
}

/// A child nobody kills (its own session, SIGTERM ignored, left by a plain fake-pi that exits
/// 0) still ends by itself, after `FAKE_PI_CHILD_MAX_MS`, grandchild too (they lived forever
/// before: 300 spawn records left 600 processes).
#[test]
fn a_child_nobody_kills_ends_after_its_maximum_lifetime() {
    let sb = World::new(module_path!());
    let c = sb.cassette("t").version("0.87.1").members("").records([
            r#"{"dt_ms":0,"spawn":{"id":"a","own_session":true,"ignore_sigterm":true,"grandchild":{"own_session":true,"ignore_sigterm":true}}}"#,
            r#"{"dt_ms":0,"exit":0}"#,
        ]).write();
    let out = sb
        .fake_pi(&c)
        .env("FAKE_PI_CHILD_MAX_MS", "1500")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    // Left behind at first, as with real pi...
    assert_eq!(sb.wait_alive(2, LONG).len(), 2);
    // ...then gone by themselves.
    wait_until(Duration::from_secs(30), || sb.alive().is_empty());
}

/// The lifetimes of what fake-pi leaves running have a ceiling, the 10-minute child bound:
/// `FAKE_PI_CODEX_ORPHAN_MS=18446744073709551615` left an orphan that never ended. A value past
/// it, 0 or not a number is refused at the start in one line (exit 96), whatever the shape;
/// the ceiling itself is taken.
#[test]
fn a_lifetime_past_ten_minutes_is_refused_in_one_line() {
    let sb = World::new(module_path!());
    let c = sb
        .cassette("x")
        .members("")
        .records([r#"{"dt_ms":0,"exit":0}"#])
        .write();
    for var in [
        "FAKE_PI_CHILD_MAX_MS",
        "FAKE_PI_CODEX_ORPHAN_MS",
        "FAKE_PI_GEMINI_ORPHAN_MS",
    ] {
        for bad in ["18446744073709551615", "600001", "0", "5s"] {
            let out = sb.fake_pi(&c).env(var, bad).output().unwrap();
            assert_eq!(out.status.code(), Some(96), "{var}={bad}");
            assert_eq!(
                String::from_utf8_lossy(&out.stderr),
                format!("fake-pi: {var}: expected a whole number of milliseconds from 1 to 600000 (10 minutes, the longest anything fake-pi starts lives), not {bad:?}\n"),
                "{var}={bad}"
            );
        }
        let out = sb.fake_pi(&c).env(var, "600000").output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{var}=600000");
    }
    // The Codex and Gemini CLI shapes say so before they start a child.
    for (cassette, args, var) in [
        (
            "codex/codex_text.cx0169.cassette.jsonl",
            &["exec", "--json", "--skip-git-repo-check", "Say hello."][..],
            "FAKE_PI_CODEX_ORPHAN_MS",
        ),
        (
            "gemini/gemini_text.gm061.cassette.jsonl",
            &[
                "-o",
                "stream-json",
                "-m",
                "gemini-2.5-flash",
                "-y",
                "-p",
                "Say hello.",
            ][..],
            "FAKE_PI_GEMINI_ORPHAN_MS",
        ),
    ] {
        let out = sb
            .fake_pi(&repo_cassette(cassette))
            .args(args)
            .env(var, "18446744073709551615")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(96), "{var}");
        assert!(out.stdout.is_empty(), "{var}");
    }
    sb.assert_none_left();
}
