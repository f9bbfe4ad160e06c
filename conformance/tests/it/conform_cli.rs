//! `pi-harness conform` end to end, as a user runs it: the bundled reference provider passes
//! every case; the Node example (conformance/examples/node-impl) passes some cases, skips
//! the ones needing capabilities it does not claim and fails others, and the exit code says
//! so; the Node RPC client, Claude Code bridge and Codex driver pass their agents' cases; one
//! case reproduces alone; a bad case name is a clear error.

use std::process::Command;

use crate::util::*;

struct Table {
    cases: usize,
    passed: usize,
    failed: usize,
    skipped: usize,
}

/// The `| **all** | n | p | f | s |` row of the report.
fn all_row(report: &str) -> Table {
    let row = report
        .lines()
        .find(|l| l.starts_with("| **all** |"))
        .unwrap_or_else(|| panic!("no summary row in:\n{report}"));
    let n: Vec<usize> = row
        .split('|')
        .filter_map(|c| c.trim().parse().ok())
        .collect();
    assert_eq!(n.len(), 4, "{row}");
    Table {
        cases: n[0],
        passed: n[1],
        failed: n[2],
        skipped: n[3],
    }
}

/// The bundle is unpacked into this test process's own cache dir, not the user's.
fn cache() -> &'static std::path::Path {
    static DIR: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    DIR.get_or_init(|| tempfile::tempdir().expect("a temp dir"))
        .path()
}

fn conform(args: &[&str]) -> (i32, String, String) {
    conform_in(&root(), args)
}

fn conform_in(dir: &std::path::Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(pi_harness_bin())
        .arg("conform")
        .args(args)
        .current_dir(dir)
        .env("PI_HARNESS_CACHE", cache())
        .env("PI_HARNESS_FAKE_PI", fake_pi())
        .output()
        .expect("run pi-harness conform");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn node() -> bool {
    Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

const NODE_IMPL: &str = "node conformance/examples/node-impl/impl.js";

#[test]
fn the_bundled_provider_passes_every_case() {
    let cases = conformance::conform::discover(&cassettes_dir())
        .expect("cases")
        .len();
    let (code, out, err) = conform(&[]);
    assert_eq!(code, 0, "{out}{err}");
    let t = all_row(&out);
    assert_eq!(
        (t.cases, t.passed, t.failed, t.skipped),
        (cases, cases, 0, 0),
        "{out}"
    );
    assert_eq!(
        out.lines().filter(|l| l.starts_with("PASS  ")).count(),
        cases
    );
    // Codex is an agent of its own in the report: its row, and its release's.
    let codex = conformance::conform::discover(&cassettes_dir())
        .expect("cases")
        .iter()
        .filter(|c| c.request.agent.as_deref() == Some("codex"))
        .count();
    assert!(codex >= 10, "{codex} Codex cases");
    for cap in ["codex", "codex-0.169"] {
        let row = format!("| {cap} | {codex} | {codex} | 0 | 0 |");
        assert!(out.lines().any(|l| l == row), "no {row:?} in:\n{out}");
    }
    assert!(
        out.contains("pi-harness conform --case "),
        "no reproduce line:\n{out}"
    );
}

const NODE_RPC_IMPL: &str = "node conformance/examples/node-rpc-impl/impl.js";

/// An RPC client written outside the reference provider (Node, no dependencies) is scored
/// on the RPC cases: it drives fake-pi in RPC mode as each step says. It passes every RPC
/// case but the two where pi 0.87.1 closes an aborted run as an error, which the example
/// reports as pi says it and the normalized stream (and the reference) report as aborted.
#[test]
fn an_rpc_client_in_node_is_scored_on_the_rpc_cases() {
    if !node() {
        eprintln!("node is not on PATH: the Node RPC example is not run");
        return;
    }
    let (code, out, err) = conform(&["--impl", NODE_RPC_IMPL]);
    assert_eq!(code, 1, "{out}{err}");
    let rpc = out
        .lines()
        .find(|l| l.starts_with("| rpc |"))
        .unwrap_or_else(|| panic!("no rpc row:\n{out}"));
    let rpc_cases = conformance::conform::discover(&cassettes_dir())
        .expect("cases")
        .iter()
        .filter(|c| c.request.rpc.is_some() && c.request.agent.is_none())
        .count();
    assert_eq!(
        rpc,
        format!("| rpc | {rpc_cases} | {} | 2 | 0 |", rpc_cases - 2),
        "{out}"
    );
    let failed: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("FAIL  rpc/"))
        .map(|l| l.split_whitespace().nth(1).unwrap())
        .collect();
    assert_eq!(
        failed,
        [
            "rpc/rpc_abort_retry_backoff.pi87",
            "rpc/rpc_abort_tool.pi87"
        ],
        "{out}"
    );
    assert!(
        out.contains(".reason: expected \"aborted\", got \"model_error\""),
        "{out}"
    );
}

const NODE_CLAUDE_BRIDGE: &str = "node conformance/examples/node-claude-bridge/bridge.js";

/// A Claude Code bridge written outside the reference (Node, no dependencies) is scored on
/// the Claude Code cases: it runs `claude` (fake-pi) in stream-json mode, does the host's
/// steps and maps stdout by the rules of docs/normalized-stream.md. It passes every one
/// (claude_sigterm_mid_tool included: its SIGTERM step comes right after the permission
/// answer, and fake-pi takes it as the recorded host's signal however early it lands); it
/// claims no pi capability, so every pi case is skipped; nor `claude-terminal` (it gives the
/// CLI a pipe, never a terminal), so the case recorded with a terminal on stdin is skipped.
#[test]
fn a_claude_bridge_in_node_is_scored_on_the_claude_cases() {
    if !node() {
        eprintln!("node is not on PATH: the Node Claude Code bridge is not run");
        return;
    }
    let cases = conformance::conform::discover(&cassettes_dir()).expect("cases");
    let claude = |c: &&conformance::conform::Case| c.request.agent.as_deref() == Some("claude");
    let terminal_cases = cases
        .iter()
        .filter(claude)
        .filter(|c| c.request.stdin.as_deref() == Some("terminal"))
        .count();
    assert!(terminal_cases >= 1, "a case with a terminal on stdin");
    let claude_cases = cases.iter().filter(claude).count() - terminal_cases;
    assert!(claude_cases >= 8, "{claude_cases} Claude cases");
    let (code, out, err) = conform(&["--impl", NODE_CLAUDE_BRIDGE]);
    assert_eq!(code, 0, "{out}{err}");
    let row = out
        .lines()
        .find(|l| l.starts_with("| claude |"))
        .unwrap_or_else(|| panic!("no claude row:\n{out}{err}"));
    assert_eq!(
        row,
        format!(
            "| claude | {} | {claude_cases} | 0 | {terminal_cases} |",
            claude_cases + terminal_cases
        ),
        "{out}"
    );
    let t = all_row(&out);
    assert_eq!(t.passed, claude_cases, "{out}");
    assert_eq!(t.skipped, t.cases - claude_cases, "{out}");
    assert!(!out.contains("processes left behind"), "{out}");
}

const NODE_CODEX_IMPL: &str = "node conformance/examples/node-codex-impl/impl.js";

/// A Codex driver written outside the reference (Node, no dependencies) is scored on the
/// Codex cases: it runs `codex` (fake-pi) with the request's `argv` as it stands (the prompt
/// in argv, where the reference pipes it on stdin: fake-pi compares by meaning), maps stdout
/// by the rules of docs/normalized-stream.md and kills what Codex leaves behind. It passes
/// every one, the resumed thread and the four stopped mid-tool included; it claims no pi or
/// Claude Code capability, so those cases are skipped.
#[test]
fn a_codex_driver_in_node_is_scored_on_the_codex_cases() {
    if !node() {
        eprintln!("node is not on PATH: the Node Codex example is not run");
        return;
    }
    let codex_cases = conformance::conform::discover(&cassettes_dir())
        .expect("cases")
        .iter()
        .filter(|c| c.request.agent.as_deref() == Some("codex"))
        .count();
    assert!(codex_cases >= 10, "{codex_cases} Codex cases");
    let (code, out, err) = conform(&["--impl", NODE_CODEX_IMPL]);
    assert_eq!(code, 0, "{out}{err}");
    let row = format!("| codex | {codex_cases} | {codex_cases} | 0 | 0 |");
    assert!(out.lines().any(|l| l == row), "no {row:?} in:\n{out}{err}");
    let t = all_row(&out);
    assert_eq!(t.passed, codex_cases, "{out}");
    assert_eq!(t.skipped, t.cases - codex_cases, "{out}");
    assert!(!out.contains("processes left behind"), "{out}");
}

#[test]
fn the_node_example_passes_some_skips_some_fails_some() {
    if !node() {
        eprintln!("node is not on PATH: the Node example is not run");
        return;
    }
    let (code, out, err) = conform(&["--impl", NODE_IMPL]);
    assert_eq!(
        code, 1,
        "a failing case must make the exit code non-zero\n{out}{err}"
    );
    let t = all_row(&out);
    assert!(t.passed > 0 && t.failed > 0 && t.skipped > 0, "{out}");
    assert_eq!(t.passed + t.failed + t.skipped, t.cases);
    // Skips name what is not claimed; failures show per-field differences and a reproduce line.
    assert!(
        out.contains("SKIP  recorded/session_resume.pi87 (not claimed: session)"),
        "{out}"
    );
    assert!(
        out.lines()
            .any(|l| l.starts_with("      [") && l.contains(": expected ")),
        "{out}"
    );
    let repro = out
        .lines()
        .skip_while(|l| !l.starts_with("reproduce one failure:"))
        .nth(1)
        .unwrap_or_else(|| panic!("no reproduce line:\n{out}"))
        .trim()
        .to_string();
    let case = repro.rsplit("--case ").next().unwrap().to_string();
    assert!(out.contains(&format!("FAIL  {case} (")), "{repro}");
    // The reproduce command runs that one case, and it fails again.
    let (code, one, _) = conform(&["--impl", NODE_IMPL, "--case", &case]);
    assert_eq!(code, 1, "{one}");
    assert_eq!(all_row(&one).cases, 1);
}

#[test]
fn a_case_the_node_example_handles_passes_alone() {
    if !node() {
        return;
    }
    let (code, out, err) = conform(&[
        "--impl",
        NODE_IMPL,
        "--case",
        "recorded/text_only.pi87",
        "--json",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    let line: serde_json::Value =
        serde_json::from_str(out.lines().next().expect("a JSON line")).expect("JSON");
    assert_eq!(line["case"], "recorded/text_only.pi87");
    assert_eq!(line["status"], "passed");
}

#[test]
fn an_unknown_case_is_a_clear_error() {
    let (code, out, err) = conform(&["--case", "no/such_case.pi87"]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains("no case \"no/such_case.pi87\""), "{err}");
}

#[test]
fn an_implementation_without_a_handshake_is_a_clear_error() {
    let (code, out, err) = conform(&["--impl", "true"]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains("--capabilities"), "{err}");
}

/// A user's own cassettes alone: expected streams come from the reference provider (and
/// the report says so), every case prints as it finishes, and the reproduce line keeps
/// every flag given. Before: `--cassettes` without `--expected` looked for expected files
/// in the install's source tree, and the reproduce line dropped `--cassettes`.
#[test]
fn own_cassettes_alone_and_a_reproduce_line_that_keeps_the_flags() {
    let work = tempfile::tempdir().unwrap();
    let own = work.path().join("mine");
    std::fs::create_dir(&own).unwrap();
    for f in ["recorded/text_only.pi152", "tool_bash.pi73"] {
        let from = root().join(format!("cassettes/{f}.cassette.jsonl"));
        let name = from.file_name().unwrap().to_owned();
        std::fs::copy(&from, own.join(name)).unwrap();
    }
    let (code, out, err) = conform_in(work.path(), &["--cassettes", "mine", "--timeout", "20"]);
    assert_eq!(code, 0, "{out}{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[0].starts_with("expected streams: derived from the reference provider"),
        "{out}"
    );
    assert!(lines[1].starts_with("PASS  text_only.pi152 ("), "{out}");
    assert!(lines[2].starts_with("PASS  tool_bash.pi73 ("), "{out}");
    let t = all_row(&out);
    assert_eq!((t.cases, t.passed, t.failed, t.skipped), (2, 2, 0, 0));
    let reproduce = format!(
        "pi-harness conform --cassettes {} --timeout 20 --case text_only.pi152",
        own.display()
    );
    assert!(out.contains(&reproduce), "{out}");
    // The reproduce line runs as printed (from anywhere).
    let args: Vec<&str> = reproduce.split(' ').skip(2).collect();
    let (code, out, err) = conform_in(std::path::Path::new("/"), &args);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(all_row(&out).cases, 1);
    // An empty directory is a clear error.
    let empty = work.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let (code, _, err) = conform_in(work.path(), &["--cassettes", "empty"]);
    assert_eq!(code, 2);
    assert_eq!(err, "error: empty: no *.cassette.jsonl file below it\n");
}

/// A cassette whose file name is not UTF-8 is said, in one line naming it, not left out
/// without a word (before: the run went on without that case, exit 0).
#[test]
fn a_cassette_whose_name_is_not_utf8_is_said() {
    use std::os::unix::ffi::OsStrExt as _;
    let work = tempfile::tempdir().unwrap();
    let own = work.path().join("mine");
    std::fs::create_dir(&own).unwrap();
    let from = root().join("cassettes/recorded/text_only.pi152.cassette.jsonl");
    std::fs::copy(&from, own.join("text_only.pi152.cassette.jsonl")).unwrap();
    let name = std::ffi::OsStr::from_bytes(b"caf\xe9.pi152.cassette.jsonl");
    std::fs::copy(&from, own.join(name)).unwrap();
    let (code, out, err) = conform_in(work.path(), &["--cassettes", "mine", "--timeout", "20"]);
    assert_eq!(code, 2, "{out}{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("error: \"mine/caf\\xE9.pi152.cassette.jsonl\": a cassette whose file name is not UTF-8"),
        "{err}"
    );
}

/// The reproduce line is shell-quoted: a cassette named `$(touch PWNED);x` in a directory
/// whose name has a space and a quote runs, pasted into `sh`, that case and nothing else.
/// Before, the case was printed bare and the pasted line ran `touch PWNED`.
#[test]
fn a_reproduce_line_with_hostile_names_runs_as_pasted() {
    let work = tempfile::tempdir().unwrap();
    let own = work.path().join("my 'own");
    std::fs::create_dir(&own).unwrap();
    let from = root().join("cassettes/recorded/text_only.pi152.cassette.jsonl");
    std::fs::copy(&from, own.join("$(touch PWNED);x.cassette.jsonl")).unwrap();
    let (code, out, err) = conform_in(work.path(), &["--cassettes", "my 'own", "--timeout", "20"]);
    assert_eq!(code, 0, "{out}{err}");
    let line = out
        .lines()
        .skip_while(|l| !l.starts_with("reproduce one case:"))
        .nth(1)
        .unwrap_or_else(|| panic!("no reproduce line in {out}"))
        .trim()
        .to_string();
    assert!(line.ends_with(" --case '$(touch PWNED);x'"), "{line}");
    let bin = work.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    std::os::unix::fs::symlink(pi_harness_bin(), bin.join("pi-harness")).unwrap();
    let pasted = Command::new("sh")
        .arg("-c")
        .arg(&line)
        .current_dir(work.path())
        .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
        .env("PI_HARNESS_CACHE", cache())
        .env("PI_HARNESS_FAKE_PI", fake_pi())
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&pasted.stdout);
    assert!(
        pasted.status.success(),
        "{line}: {out}{}",
        String::from_utf8_lossy(&pasted.stderr)
    );
    assert_eq!(all_row(&out).cases, 1, "{out}");
    assert!(
        !work.path().join("PWNED").exists(),
        "the pasted line ran a command"
    );
}

/// A shared cassette whose `session` line names a path outside the case's directory: conform
/// refuses it naming the field, and the file it aimed at is untouched.
#[test]
fn a_cassette_whose_session_id_names_a_path_is_refused_and_writes_nothing() {
    let work = tempfile::tempdir().unwrap();
    let own = work.path().join("mine");
    std::fs::create_dir(&own).unwrap();
    let victim = work.path().join("victim.cassette.jsonl");
    std::fs::write(&victim, "precious\n").unwrap();
    let text =
        std::fs::read_to_string(cassettes_dir().join("recorded/text_only.pi152.cassette.jsonl"))
            .unwrap();
    let id = format!(
        "x/../../../../../../..{}",
        victim.with_extension("").display()
    );
    let text = text.replacen(
        "\"id\":\"<SESSION_ID>\"",
        &format!("\"id\":{}", serde_json::json!(id)),
        1,
    );
    std::fs::write(own.join("hostile.cassette.jsonl"), text).unwrap();
    let (code, out, err) = conform_in(work.path(), &["--cassettes", "mine"]);
    assert_ne!(code, 0, "{out}{err}");
    assert!(
        err.contains("hostile.cassette.jsonl:2: record field `stdout`: the `session` line's `id`"),
        "{out}{err}"
    );
    assert_eq!(std::fs::read(&victim).unwrap(), b"precious\n");
}

/// An implementation that answers with 40 MB of messages (the earlier runner kept all of
/// them, and their differences, in memory: 4.4 GB for 100 MB): conform kills it at the
/// budget, says which limit was hit, and stays small.
#[test]
fn an_implementation_that_writes_without_end_is_stopped_at_the_output_budget() {
    let work = tempfile::tempdir().unwrap();
    let script = work.path().join("impl.sh");
    std::fs::write(
        &script,
        r#"if [ "$1" = --capabilities ]; then echo '{"protocol":1,"name":"flood","capabilities":["text","pi-0.87"]}'; exit 0; fi
cat >/dev/null
line='{"type":"assistant","text":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}'
yes "$line" | head -c 40000000
"#,
    )
    .unwrap();
    let implementation = format!("sh {}", script.display());
    let mut cmd = Command::new(pi_harness_bin());
    cmd.args(["conform", "--impl", &implementation])
        .args(["--case", "recorded/text_only.pi87"])
        .args(["--max-output", "4000000"])
        .env("PI_HARNESS_CACHE", cache())
        .env("PI_HARNESS_FAKE_PI", fake_pi());
    let m = pi_testkit::process::run_measured(&cmd, std::process::Stdio::null(), 4 << 30);
    let (code, out, err, rss_kib) = (
        m.code.unwrap_or(-1),
        String::from_utf8_lossy(&m.stdout).into_owned(),
        String::from_utf8_lossy(&m.stderr).into_owned(),
        m.peak_rss_kib,
    );
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("FAIL  recorded/text_only.pi87"), "{out}");
    assert!(
        out.contains("stdout over 4000000 bytes (--max-output): the implementation was killed"),
        "{out}"
    );
    assert!(
        out.contains("--max-output 4000000 --case recorded/text_only.pi87"),
        "the reproduce line keeps the budget: {out}"
    );
    assert!(out.len() < 20_000, "a bounded report: {} bytes", out.len());
    assert!(rss_kib < 64 * 1024, "peak RSS {rss_kib} KiB");
}

/// `pi-harness conform ARGS` with the world's marker, ended (and failed) when it runs past
/// `limit`: the old handshake waited forever.
fn conform_bounded(world: &World, args: &[&str], limit: std::time::Duration) -> (i32, String) {
    let (k, v) = world.marker_env();
    let mut child = Command::new(pi_harness_bin())
        .arg("conform")
        .args(args)
        .current_dir(world.path())
        .env(k, v)
        .env("PI_HARNESS_CACHE", cache())
        .env("PI_HARNESS_FAKE_PI", fake_pi())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let end = std::time::Instant::now() + limit;
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if std::time::Instant::now() > end {
            let _ = child.kill();
            let _ = child.wait();
            world.kill_all();
            panic!("conform {args:?} still running after {limit:?}");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    (status.code().unwrap_or(-1), err)
}

/// An implementation whose `--capabilities` never answers: conform gives up at `--timeout`,
/// kills it with everything it started, and says so in one line.
#[test]
fn a_handshake_that_never_answers_ends_at_the_timeout() {
    let world = World::new("conform-handshake-hang");
    let script = world.write(
        "impl.sh",
        "if [ \"$1\" = --capabilities ]; then sleep 600 & exec sleep 601; fi\n",
    );
    let implementation = format!("sh {}", script.display());
    let (code, err) = conform_bounded(
        &world,
        &["--impl", &implementation, "--timeout", "2"],
        std::time::Duration::from_secs(60),
    );
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--capabilities` gave no answer within 2 s (--timeout): it was killed"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    world.assert_none_left_within(std::time::Duration::from_secs(5));
}

/// A 5 MB capabilities answer: read up to a bound, and the error quotes its start only
/// (it echoed the whole answer before).
#[test]
fn a_huge_handshake_answer_is_bounded_and_quoted_short() {
    let world = World::new("conform-handshake-huge");
    let script = world.write(
        "impl.sh",
        "if [ \"$1\" = --capabilities ]; then yes '{\"protocol\":1,' | head -c 5000000; exit 0; fi\n",
    );
    let implementation = format!("sh {}", script.display());
    let (code, err) = conform_bounded(
        &world,
        &["--impl", &implementation],
        std::time::Duration::from_secs(60),
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("printed more than 1048576 bytes"), "{err}");
    assert!(err.len() < 1000, "{} bytes of error", err.len());
    world.assert_none_left_within(std::time::Duration::from_secs(5));
}

/// `conform --json` into a full disk: the lines were not written, so conform fails, naming
/// stdout (it exited 0 before).
#[test]
fn conform_json_into_a_full_disk_fails() {
    let out = Command::new(pi_harness_bin())
        .args(["conform", "--json", "--case", "recorded/text_only.pi87"])
        .current_dir(root())
        .env("PI_HARNESS_CACHE", cache())
        .env("PI_HARNESS_FAKE_PI", fake_pi())
        .stdout(
            std::fs::OpenOptions::new()
                .write(true)
                .open("/dev/full")
                .unwrap(),
        )
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("error: stdout: No space left on device"),
        "{err}"
    );
}

/// Live processes whose command line is exactly `argv`.
fn processes_running(argv: &[&str]) -> Vec<i32> {
    let want: Vec<u8> = argv
        .iter()
        .flat_map(|a| [a.as_bytes(), b"\0"].concat())
        .collect();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c == want))
        .collect()
}

/// A process an implementation leaves in a session of its own with its environment cleared
/// (`setsid env -i`) carries no marker: conform, a child subreaper, still finds it, kills it
/// and reports it (it escaped unreported before).
#[test]
fn a_leftover_without_the_marker_is_found_by_the_subreaper() {
    let world = World::new("conform-escapee");
    let seconds = format!("600.{}", std::process::id());
    let script = world.write(
        "impl.sh",
        format!(
            "if [ \"$1\" = --capabilities ]; then echo '{{\"protocol\":1,\"capabilities\":[\"text\",\"pi-0.87\"]}}'; exit 0; fi\ncat >/dev/null\nsetsid env -i /bin/sleep {seconds} </dev/null >/dev/null 2>&1 &\nexit 0\n"
        ),
    );
    let implementation = format!("sh {}", script.display());
    let out = Command::new(pi_harness_bin())
        .args(["conform", "--impl", &implementation])
        .args(["--case", "recorded/text_only.pi87"])
        .current_dir(world.path())
        .env("PI_HARNESS_CACHE", cache())
        .env("PI_HARNESS_FAKE_PI", fake_pi())
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&out.stdout);
    let left = processes_running(&["/bin/sleep", &seconds]);
    for pid in &left {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(*pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    assert_eq!(out.status.code(), Some(1), "{report}");
    assert!(
        report.contains("processes left behind: ")
            && report.contains(&format!("/bin/sleep {seconds}")),
        "{report}"
    );
    assert!(left.is_empty(), "left running: {left:?}");
}

/// A user's cassettes are read one line at a time: `text_only` with 32 MiB of stderr records
/// (from a small gzip) is outlined, copied into its case dir and run by the reference and the
/// implementation with conform under 64 MiB. Before, every cassette was loaded whole to name
/// its case and again to copy it (about 150 MB here).
#[test]
fn a_big_cassette_is_run_in_bounded_memory() {
    use std::io::Write as _;
    let work = tempfile::tempdir().unwrap();
    let mine = work.path().join("mine");
    std::fs::create_dir(&mine).unwrap();
    let text =
        std::fs::read_to_string(cassettes_dir().join("recorded/text_only.pi87.cassette.jsonl"))
            .unwrap();
    let (head, last) = text.trim_end().rsplit_once('\n').unwrap();
    let record = format!(
        "{{\"dt_ms\":0,\"stderr\":\"{}\\n\"}}\n",
        "a line of a tool's chatter ".repeat(4)
    );
    let block = record.repeat((1 << 20) / record.len());
    let member = |data: &[u8]| {
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        enc.write_all(data).unwrap();
        enc.finish().unwrap()
    };
    let mut gz = member(format!("{head}\n").as_bytes());
    let block_gz = member(block.as_bytes());
    for _ in 0..32 {
        gz.extend_from_slice(&block_gz);
    }
    gz.extend_from_slice(&member(format!("{last}\n").as_bytes()));
    std::fs::write(mine.join("big.cassette.jsonl.gz"), gz).unwrap();
    let mut cmd = Command::new(pi_harness_bin());
    cmd.args(["conform", "--cassettes"])
        .arg(&mine)
        .current_dir(work.path())
        .env("PI_HARNESS_CACHE", cache())
        .env("PI_HARNESS_FAKE_PI", fake_pi());
    let m = pi_testkit::process::run_measured(&cmd, std::process::Stdio::null(), 4 << 30);
    let out = String::from_utf8_lossy(&m.stdout);
    let err = String::from_utf8_lossy(&m.stderr);
    assert_eq!(m.code, Some(0), "{out}{err}");
    assert!(out.contains("PASS  big"), "{out}");
    assert!(
        m.peak_rss_kib < 64 * 1024,
        "peak RSS {} KiB\n{out}{err}",
        m.peak_rss_kib
    );
}

/// A cassette that is a FIFO or a device, and an expected file that is a gzip bomb: conform
/// refuses each at once, in one line naming the file and what was wrong, and stays small.
/// Before, a FIFO blocked conform forever and the bomb was read whole (300 MiB).
#[test]
fn hostile_cassette_and_expected_files_are_refused_in_bounded_memory() {
    use std::io::Write as _;
    let world = World::new("conform-hostile-files");
    let fifo_dir = world.path().join("fifo");
    std::fs::create_dir(&fifo_dir).unwrap();
    let fifo = fifo_dir.join("x.cassette.jsonl");
    nix_mkfifo(&fifo);
    let dev_dir = world.path().join("dev");
    std::fs::create_dir(&dev_dir).unwrap();
    std::os::unix::fs::symlink("/dev/zero", dev_dir.join("z.cassette.jsonl")).unwrap();
    for (dir, kind, file) in [
        (&fifo_dir, "a FIFO", fifo.clone()),
        (&dev_dir, "a device", dev_dir.join("z.cassette.jsonl")),
    ] {
        let (code, err) = conform_bounded(
            &world,
            &["--cassettes", dir.to_str().unwrap()],
            std::time::Duration::from_secs(60),
        );
        assert_eq!(code, 2, "{err}");
        assert_eq!(
            err,
            format!("error: {}: {kind}, not a cassette file\n", file.display())
        );
    }
    // The expected stream of a real case, as a 300 MiB string from a small gzip.
    let expected = world.path().join("expected/recorded");
    std::fs::create_dir_all(&expected).unwrap();
    let member = |data: &[u8]| {
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        enc.write_all(data).unwrap();
        enc.finish().unwrap()
    };
    let mut bomb = member(b"{\"case\":\"");
    let chunk = member(&vec![b'a'; 1 << 20]);
    for _ in 0..300 {
        bomb.extend_from_slice(&chunk);
    }
    let file = expected.join("text_only.pi87.json.gz");
    std::fs::write(&file, bomb).unwrap();
    let mut cmd = Command::new(pi_harness_bin());
    cmd.args(["conform", "--cassettes"])
        .arg(cassettes_dir())
        .arg("--expected")
        .arg(world.path().join("expected"))
        .args(["--case", "recorded/text_only.pi87"])
        .env("PI_HARNESS_CACHE", cache())
        .env("PI_HARNESS_FAKE_PI", fake_pi());
    let m = pi_testkit::process::run_measured(&cmd, std::process::Stdio::null(), 4 << 30);
    let err = String::from_utf8_lossy(&m.stderr);
    assert_eq!(m.code, Some(2), "{err}");
    assert_eq!(
        err,
        format!(
            "error: {}: more than 67108864 bytes: no expected stream is that large (a file this size is not one)\n",
            file.display()
        )
    );
    // 64 MiB plus what one line may hold (the expected file's cap).
    assert!(
        m.peak_rss_kib < 128 * 1024,
        "peak RSS {} KiB",
        m.peak_rss_kib
    );
    world.assert_none_left_within(std::time::Duration::from_secs(5));
}

fn nix_mkfifo(path: &std::path::Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}
