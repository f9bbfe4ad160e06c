//! What `.ci/run` relies on. Its lanes install every pinned release of every CLI (a row of
//! `LANES` each), so a release pinned without a lane is a failure here, not a release CI
//! never runs.
//!
//! Its change-gated checks (`.ci/gate.sh`): a gate's check runs when one of its inputs differs
//! from the stamp the check wrote when it last passed, and only then. Touching each input fires
//! it: every file and directory the gate lists (a byte changed, a file added to a directory),
//! the release of each CLI it runs, node's version where it runs on node; touching anything else
//! does not. A check that fails, or that could not check anything (its CLI's variable unset),
//! writes no stamp. The gates run here on a copy of their files, with a stand-in for the check
//! (`.ci/it`) and for each real CLI (an executable beside a package.json).

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::util::repo;

/// Each gate and the check it runs (`.ci/it CRATE FILTER`): a new gate is added here too.
const GATES: &[(&str, &str)] = &[
    ("pi-grammar", "pi-grammar pi_grammar_sh"),
    ("claude-grammar", "pi-grammar claude_grammar_sh"),
    ("codex-grammar", "pi-grammar codex_grammar_sh"),
    ("gemini-grammar", "pi-grammar gemini_grammar_sh"),
];

fn gate_sh(root: &Path) -> Command {
    let mut c = Command::new("bash");
    c.arg(root.join(".ci/gate.sh"));
    c
}

fn text(o: &Output) -> String {
    format!(
        "exit {:?}\nstdout: {}\nstderr: {}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn lines(o: &Output) -> Vec<String> {
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

fn copy_tree(from: &Path, to: &Path) {
    if from.is_dir() {
        std::fs::create_dir_all(to).unwrap();
        for e in std::fs::read_dir(from).unwrap() {
            let e = e.unwrap();
            copy_tree(&e.path(), &to.join(e.file_name()));
        }
    } else {
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(from, to).unwrap();
    }
}

fn executable(path: &Path, script: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, script).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// One gate on a copy of its files: the stand-in check, a stand-in CLI per variable and a
/// `node` that prints the version in `node-version`.
struct Gate {
    name: &'static str,
    root: PathBuf,
    files: Vec<String>,
    vars: BTreeMap<String, PathBuf>,
    /// The gate's CLIs or script run on node: its version is an input.
    node: bool,
    path: String,
}

impl Gate {
    fn new(w: &pi_testkit::World, name: &'static str) -> Gate {
        let o = Command::new("bash")
            .arg(repo().join(".ci/gate.sh"))
            .args(["--inputs", name])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", text(&o));
        let root = w.path().join(name).join("repo");
        copy_tree(&repo().join(".ci/gate.sh"), &root.join(".ci/gate.sh"));
        // The stand-in check: says what it was asked to run, exits as `check-exit` says.
        executable(
            &root.join(".ci/it"),
            "#!/bin/sh\nd=$(dirname \"$0\")/..\necho \"$@\" >>\"$d/calls\"\nexit \"$(cat \"$d/check-exit\")\"\n",
        );
        std::fs::write(root.join("check-exit"), "0").unwrap();
        // Something that is no input of any gate.
        copy_tree(&repo().join("README.md"), &root.join("README.md"));
        let bin = w.path().join(name).join("bin");
        executable(
            &bin.join("node"),
            "#!/bin/sh\ncat \"$(dirname \"$0\")/node-version\"\n",
        );
        std::fs::write(bin.join("node-version"), "v20.0.0\n").unwrap();
        let path = format!(
            "{}:{}",
            bin.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let (mut files, mut vars, mut node) = (Vec::new(), BTreeMap::new(), false);
        for input in lines(&o) {
            if input == "node" {
                node = true;
            } else if input.contains('/') {
                copy_tree(&repo().join(&input), &root.join(&input));
                files.push(input);
            } else {
                let pkg = w.path().join(name).join("cli").join(&input);
                std::fs::create_dir_all(&pkg).unwrap();
                std::fs::write(pkg.join("package.json"), package_json(&input, "1.0.0")).unwrap();
                executable(&pkg.join("cli"), "#!/bin/sh\n");
                vars.insert(input, pkg.join("cli"));
            }
        }
        assert!(
            !files.is_empty() && !vars.is_empty(),
            "{name}: {files:?} {vars:?}"
        );
        Gate {
            name,
            root,
            files,
            vars,
            node,
            path,
        }
    }

    fn run(&self, args: &[&str]) -> Output {
        self.run_without("", args)
    }

    /// The gate with every CLI's variable set but `unset`'s.
    fn run_without(&self, unset: &str, args: &[&str]) -> Output {
        let mut c = gate_sh(&self.root);
        c.args(args).env("PATH", &self.path).current_dir(&self.root);
        for (v, p) in &self.vars {
            if v == unset {
                c.env_remove(v);
            } else {
                c.env(v, p);
            }
        }
        c.output().unwrap()
    }

    /// `--status`: Some(why) when the check would run, None when the stamp is current.
    fn fires(&self) -> Option<String> {
        let o = self.run(&["--status", self.name]);
        match o.status.code() {
            Some(0) => Some(String::from_utf8_lossy(&o.stdout).into_owned()),
            Some(3) => None,
            _ => panic!("{}: --status: {}", self.name, text(&o)),
        }
    }

    fn calls(&self) -> String {
        std::fs::read_to_string(self.root.join("calls")).unwrap_or_default()
    }

    fn stamp(&self) -> String {
        std::fs::read_to_string(self.root.join(".ci/stamps").join(self.name)).unwrap_or_default()
    }

    /// Change `what` (a file of the copy, or a CLI's package.json), see the gate fire naming
    /// `named`, put it back.
    fn fires_on(&self, what: &Path, change: &str, named: &str) {
        let before = std::fs::read(what).ok();
        std::fs::write(what, change).unwrap();
        let why = self.fires();
        match before {
            Some(b) => std::fs::write(what, b).unwrap(),
            None => std::fs::remove_file(what).unwrap(),
        }
        let why = why.unwrap_or_else(|| {
            panic!(
                "{}: {} changed and the gate did not fire",
                self.name,
                what.display()
            )
        });
        assert!(
            why.contains(named),
            "{}: {} changed: {why:?} does not name {named}",
            self.name,
            what.display()
        );
    }
}

/// A CLI's package.json as npm packages have them: tab-indented here (as pi's), with a nested
/// `name` before the package's own.
fn package_json(var: &str, version: &str) -> String {
    format!(
        "{{\n\t\"author\": {{\n\t\t\"name\": \"someone\"\n\t}},\n\t\"name\": \"@x/{var}\",\n\t\"version\": \"{version}\"\n}}\n"
    )
}

fn first_file(dir: &Path) -> PathBuf {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for e in entries {
        if e.is_file() {
            return e;
        }
        if e.is_dir() {
            return first_file(&e);
        }
    }
    panic!("{}: no file", dir.display())
}

#[test]
fn the_gates_are_the_ones_named_here() {
    let listed = Command::new("bash")
        .arg(repo().join(".ci/gate.sh"))
        .arg("--list")
        .output()
        .unwrap();
    let names: Vec<&str> = GATES.iter().map(|g| g.0).collect();
    assert_eq!(lines(&listed), names, "the gates .ci/gate.sh knows");
}

#[test]
fn the_pi_grammar_gate_fires_when_any_input_changes_and_only_then() {
    fires_when_any_input_changes(0);
}

#[test]
fn the_claude_grammar_gate_fires_when_any_input_changes_and_only_then() {
    fires_when_any_input_changes(1);
}

#[test]
fn the_codex_grammar_gate_fires_when_any_input_changes_and_only_then() {
    fires_when_any_input_changes(2);
}

#[test]
fn the_gemini_grammar_gate_fires_when_any_input_changes_and_only_then() {
    fires_when_any_input_changes(3);
}

fn fires_when_any_input_changes(gate: usize) {
    let (name, check) = GATES[gate];
    let w = pi_testkit::World::new("ci_gates");
    {
        let g = Gate::new(&w, name);
        // No stamp: the check runs, and its stamp is written because it passed.
        assert!(g.fires().is_some_and(|why| why.contains("no stamp")));
        let o = g.run(&[name]);
        assert!(o.status.success(), "{name}: {}", text(&o));
        assert_eq!(g.calls(), format!("{check}\n"), "{name}: what ran");
        for v in g.vars.keys() {
            let line = format!("\nrelease  {v}=@x/{v}@1.0.0\n");
            assert!(
                g.stamp().contains(&line),
                "{name}: {line:?} in {}",
                g.stamp()
            );
        }
        // The stamp current: nothing runs.
        assert_eq!(g.fires(), None, "{name}: just stamped");
        let o = g.run(&[name]);
        assert!(o.status.success(), "{name}: {}", text(&o));
        assert!(String::from_utf8_lossy(&o.stdout).contains("skipped"));
        assert_eq!(g.calls(), format!("{check}\n"), "{name}: ran again");

        for f in &g.files {
            let p = g.root.join(f);
            if p.is_dir() {
                let inside = first_file(&p);
                g.fires_on(&inside, "changed", f);
                g.fires_on(&p.join("new-file"), "new", f);
            } else {
                let mut changed = std::fs::read(&p).unwrap();
                changed.push(b'\n');
                g.fires_on(&p, &String::from_utf8_lossy(&changed), f);
            }
        }
        for (v, cli) in &g.vars {
            let pj = cli.parent().unwrap().join("package.json");
            g.fires_on(&pj, &package_json(v, "1.0.1"), v);
        }
        if g.node {
            let version = Path::new(&g.path[..g.path.find(':').unwrap()]).join("node-version");
            g.fires_on(&version, "v22.0.0\n", "node");
        }
        assert_eq!(g.fires(), None, "{name}: every input put back as it was");
        // Anything else: no.
        let readme = g.root.join("README.md");
        std::fs::write(&readme, "changed").unwrap();
        assert_eq!(g.fires(), None, "{name}: README.md is no input");

        // A failing check writes no stamp: the gate still fires afterwards.
        let input = g.root.join(&g.files[0]);
        let input = if input.is_dir() {
            first_file(&input)
        } else {
            input
        };
        std::fs::write(&input, "changed for good").unwrap();
        std::fs::write(g.root.join("check-exit"), "1").unwrap();
        let stamp = g.stamp();
        let o = g.run(&[name]);
        assert_eq!(o.status.code(), Some(1), "{name}: {}", text(&o));
        assert_eq!(g.stamp(), stamp, "{name}: a failed check stamped");
        assert!(g.fires().is_some());

        // Without a CLI's variable the test would skip and pass: the gate refuses.
        let var = g.vars.keys().next().unwrap().clone();
        let calls = g.calls();
        let o = g.run_without(&var, &[name]);
        assert_eq!(o.status.code(), Some(2), "{name}: {}", text(&o));
        assert!(String::from_utf8_lossy(&o.stderr).contains(&var));
        assert_eq!(g.calls(), calls, "{name}: ran without {var}");
        assert_eq!(g.stamp(), stamp);
    }
}

#[test]
fn every_gate_has_a_committed_stamp_of_its_inputs() {
    for &(name, _) in GATES {
        let stamp = std::fs::read_to_string(repo().join(".ci/stamps").join(name))
            .unwrap_or_else(|e| panic!(".ci/stamps/{name}: {e}"));
        let o = Command::new("bash")
            .arg(repo().join(".ci/gate.sh"))
            .args(["--inputs", name])
            .output()
            .unwrap();
        let mut named: Vec<String> = stamp
            .lines()
            .filter(|l| !l.starts_with('#'))
            .map(|l| {
                let what = l.split_once("  ").map_or(l, |(_, w)| w);
                what.split('=').next().unwrap().to_string()
            })
            .collect();
        named.sort();
        let mut inputs = lines(&o);
        inputs.sort();
        assert_eq!(
            named, inputs,
            ".ci/stamps/{name} names other inputs than the gate"
        );
    }
}

/// The releases a gate's CLIs come from are pinned in the agent's row of the registry
/// (`harness/grammar/src/agents/AGENT.rs`: versions, npm packages, integrity): that file is an
/// input of the gate, so pinning a release, or changing what it is installed from, fires it.
#[test]
fn each_gate_reads_the_row_that_pins_its_clis_releases() {
    let rows = [
        ("pi-grammar", "pi", pi_grammar::KNOWN_VERSIONS.to_vec()),
        (
            "claude-grammar",
            "claude",
            pi_grammar::claude::known_versions(),
        ),
        (
            "codex-grammar",
            "codex",
            pi_grammar::codex::known_versions(),
        ),
        (
            "gemini-grammar",
            "gemini",
            pi_grammar::gemini::known_versions(),
        ),
    ];
    assert_eq!(rows.len(), GATES.len(), "a gate without its agent here");
    for (gate, agent, versions) in rows {
        let row = format!("harness/grammar/src/agents/{agent}.rs");
        let pinned = std::fs::read_to_string(repo().join(&row)).unwrap();
        for v in &versions {
            assert!(
                pinned.contains(&format!("version: \"{v}\"")),
                "{row} does not pin {agent} {v}"
            );
        }
        let o = Command::new("bash")
            .arg(repo().join(".ci/gate.sh"))
            .args(["--inputs", gate])
            .output()
            .unwrap();
        assert!(
            lines(&o).contains(&row),
            "{gate}: {row} is no input: {}",
            text(&o)
        );
    }
}

#[test]
fn the_lanes_install_every_pinned_release_and_nothing_else() {
    let run = std::fs::read_to_string(repo().join(".ci/run")).unwrap();
    let block = run
        .split_once("\nLANES=(\n")
        .and_then(|(_, rest)| rest.split_once("\n)\n"))
        .expect(".ci/run has a LANES=( ... ) block")
        .0;
    let mut lanes: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for row in block.lines().filter(|l| !l.trim_start().starts_with('#')) {
        let mut cols = row.trim().trim_matches('"').split('|');
        let (cli, version) = (cols.next().unwrap(), cols.next().unwrap_or(""));
        lanes.entry(cli).or_default().push(version);
    }
    let pinned: BTreeMap<&str, Vec<&str>> = [
        ("pi", pi_grammar::KNOWN_VERSIONS.to_vec()),
        ("claude", pi_grammar::claude::known_versions()),
        ("codex", pi_grammar::codex::known_versions()),
        ("gemini", pi_grammar::gemini::known_versions()),
    ]
    .into_iter()
    .collect();
    assert_eq!(lanes, pinned, ".ci/run's LANES against the pinned releases");
}

/// `bash -c SCRIPT` in a temp dir holding a copy of `.ci/` and `scripts/jobs.sh`.
fn in_ci_copy(w: &pi_testkit::World, script: &str) -> Output {
    copy_tree(&repo().join(".ci"), &w.path().join(".ci"));
    copy_tree(
        &repo().join("scripts/jobs.sh"),
        &w.path().join("scripts/jobs.sh"),
    );
    Command::new("bash")
        .args(["-c", script])
        .current_dir(w.path())
        .output()
        .unwrap()
}

#[test]
fn the_timing_table_is_printed_when_a_step_fails_and_the_run_stops_there() {
    let w = pi_testkit::World::new("ci_table");
    let o = in_ci_copy(
        &w,
        "set -euo pipefail; source .ci/lib.sh; trap ci_table EXIT
         ci_step first true
         ci_step second bash -c 'echo to the log; exit 3'
         ci_step third true",
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let table: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.starts_with("=== timing"))
        .collect();
    assert!(table.len() >= 5, "{out}");
    assert!(
        table[2].starts_with("first ") && table[2].ends_with(" ok"),
        "{out}"
    );
    assert!(
        table[3].starts_with("second ") && table[3].ends_with("FAILED (exit 3)"),
        "{out}"
    );
    assert!(table[4].starts_with("total "), "{out}");
    assert!(!out.contains("third"), "{out}");
    assert!(out.contains("to the log"), "{out}");
}

/// Each step and each job runs in the background of a shell without job control, which would
/// start it with SIGINT and SIGQUIT ignored (POSIX): the cancel and record tests that send
/// SIGINT then saw processes run on. Every way .ci/ runs a command gives them back.
#[test]
fn steps_and_jobs_run_with_sigint_and_sigquit_at_their_default() {
    let w = pi_testkit::World::new("ci_sigint");
    let o = in_ci_copy(
        &w,
        "set -euo pipefail; source .ci/lib.sh; source scripts/jobs.sh
         ign() { grep '^SigIgn' /proc/self/status | sed \"s/^/$1 /\"; }
         ( trap 'true' EXIT; ign plain ) & wait $!
         ci_step step ign step
         ci_start job ign job; ci_wait job
         job() { ign \"run_jobs $1\"; }
         run_jobs 2 job a",
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", text(&o));
    let mask = |who: &str| {
        out.lines()
            .find_map(|l| l.split_once(&format!("{who} SigIgn:")).map(|(_, m)| m))
            .and_then(|m| u64::from_str_radix(m.trim(), 16).ok())
            .unwrap_or_else(|| panic!("no mask of {who}: {out}"))
    };
    // The premise: a background subshell as ci_step made one (with an EXIT trap) runs its
    // commands with SIGINT ignored (bit 2; SIGQUIT is bit 3).
    assert_eq!(mask("plain") & 0b10, 0b10, "{out}");
    for who in ["step", "job", "run_jobs a"] {
        assert_eq!(mask(who) & 0b110, 0, "{who}: {out}");
    }
}

#[test]
fn jobs_side_by_side_print_each_output_whole_and_name_the_one_that_failed() {
    let w = pi_testkit::World::new("ci_jobs");
    let o = in_ci_copy(
        &w,
        "source scripts/jobs.sh
         job() {
           echo \"$1 begins\"
           # 3 ends only once 1 has: it must run beside 2 and then 1 (at most 10 s).
           if [ \"$1\" = 3 ]; then
             for i in $(seq 100); do [ -e one-ended ] && break; sleep 0.1; done
             [ -e one-ended ] || echo '3 waited in vain'
           fi
           if [ \"$1\" = 1 ]; then touch one-ended; fi
           echo \"$1 ends\"
           [ \"$1\" != 2 ]
         }
         run_jobs 2 job 3 2 1",
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    for j in ["1", "2", "3"] {
        assert!(
            out.contains(&format!("{j} begins\n{j} ends\n")),
            "job {j} whole: {out}"
        );
    }
    // 2 and 1 ran beside 3 (two at a time): they ended before it.
    assert!(
        out.find("1 ends").unwrap() < out.find("3 ends").unwrap(),
        "{out}"
    );
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("run_jobs: failed: 2\n"),
        "{}",
        text(&o)
    );
}

#[test]
fn the_rustc_wrapper_runs_the_compiler_with_all_of_cargos_environment_and_logs_the_crate() {
    // Cargo hands integration tests their binaries as CARGO_BIN_EXE_<name>, names with `-`,
    // which a POSIX sh drops from the environment of what it execs.
    let w = pi_testkit::World::new("ci_rustc_log");
    let log = w.path().join("rustc.log");
    let out = w.path().join("target/dist/deps");
    // The compiler's stand-in: says what it got.
    let rustc = w.write(
        "rustc",
        "#!/usr/bin/env python3\nimport os, sys\nprint(sys.argv[1:3], os.environ.get('CARGO_BIN_EXE_pi-harness'))\n",
    );
    std::fs::set_permissions(&rustc, std::fs::Permissions::from_mode(0o755)).unwrap();
    let o = Command::new(repo().join(".ci/rustc-log"))
        .arg(&rustc)
        .args(["--crate-name", "serde", "--edition=2021"])
        .arg("/home/u/.cargo/registry/src/index.crates.io-x/serde-1.0.0/src/lib.rs")
        .arg("--emit=dep-info,metadata,link")
        .args(["-C", "opt-level=3"])
        .arg("--out-dir")
        .arg(&out)
        .env("CARGO_BIN_EXE_pi-harness", "/x/pi-harness")
        .env("PI_CI_RUSTC_LOG", &log)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "['--crate-name', 'serde'] /x/pi-harness\n",
        "{}",
        text(&o)
    );
    let logged = std::fs::read_to_string(&log).unwrap();
    assert_eq!(
        logged,
        format!(
            "serde\tserde-1.0.0\tdist in {}\tbuild -O3\n",
            w.path().join("target").display()
        )
    );
}
