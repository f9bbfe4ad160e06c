//! CI's notice of newer releases (`scripts/check-pi-latest.sh`): one for every pinned CLI, pi,
//! Claude Code, Codex and Gemini CLI, when npm has a release newer than the newest pinned one; never a failure,
//! also when npm does not answer. npm is a stand-in here (`PI_HARNESS_NPM`).

use std::process::Command;

use crate::util::repo;

/// The script run with an npm that prints `answers(package)` (nothing: npm fails); its
/// stdout and exit status.
fn notice(answers: &[(&str, &str)]) -> (String, Option<i32>) {
    let w = pi_testkit::World::new("ci_notice");
    let mut script = String::from("#!/bin/sh\ncase \"$2\" in\n");
    for (package, version) in answers {
        script.push_str(&format!("  {package}) echo {version} ;;\n"));
    }
    script.push_str("  *) exit 1 ;;\nesac\n");
    let npm = w.write("npm", script);
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&npm, std::fs::Permissions::from_mode(0o755)).unwrap();
    let o = Command::new("bash")
        .arg(repo().join("scripts/check-pi-latest.sh"))
        .env("PI_HARNESS_NPM", &npm)
        .output()
        .unwrap();
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        o.status.code(),
    )
}

const PI: &str = "@earendil-works/pi-coding-agent";
const CLAUDE: &str = "@anthropic-ai/claude-code-linux-x64";
const CODEX: &str = "@openai/codex";
const GEMINI: &str = "@google/gemini-cli";

#[test]
fn every_pinned_cli_gets_its_notice_and_none_fails() {
    let pi = pi_grammar::Grammar::newest_pinned().version();
    let cc = pi_grammar::claude::Claude::latest().version();
    let cx = pi_grammar::codex::Codex::latest().version();
    let gm = pi_grammar::gemini::Gemini::latest().version();
    let (out, code) = notice(&[
        (PI, "9.0.0"),
        (CLAUDE, "9.9.9"),
        (CODEX, "9.1.0"),
        (GEMINI, "9.2.0"),
    ]);
    assert_eq!(code, Some(0));
    assert_eq!(
        out,
        format!(
            "check-pi-latest: NOTICE: pi 9.0.0 is out (npm), newer than the newest pinned version {pi}.\n\
             check-pi-latest: NOTICE: it works now, unverified (read with pi {pi}'s grammar); to pin it, follow docs/pinning.md.\n\
             check-pi-latest: NOTICE: Claude Code 9.9.9 is out (npm), newer than the newest pinned version {cc}.\n\
             check-pi-latest: NOTICE: it works now, unverified (read with Claude Code {cc}'s grammar); to pin it, follow docs/pinning.md.\n\
             check-pi-latest: NOTICE: Codex 9.1.0 is out (npm), newer than the newest pinned version {cx}.\n\
             check-pi-latest: NOTICE: it works now, unverified (read with Codex {cx}'s grammar); to pin it, follow docs/pinning.md.\n\
             check-pi-latest: NOTICE: Gemini CLI 9.2.0 is out (npm), newer than the newest pinned version {gm}.\n\
             check-pi-latest: NOTICE: it works now, unverified (read with Gemini CLI {gm}'s grammar); to pin it, follow docs/pinning.md.\n"
        )
    );
    let (out, code) = notice(&[(PI, pi), (CLAUDE, cc), (CODEX, cx), (GEMINI, gm)]);
    assert_eq!(code, Some(0));
    assert_eq!(
        out,
        format!(
            "check-pi-latest: pi {pi} on npm; pinned newest {pi}: up to date\n\
             check-pi-latest: Claude Code {cc} on npm; pinned newest {cc}: up to date\n\
             check-pi-latest: Codex {cx} on npm; pinned newest {cx}: up to date\n\
             check-pi-latest: Gemini CLI {gm} on npm; pinned newest {gm}: up to date\n"
        )
    );
    let (out, code) = notice(&[]);
    assert_eq!(code, Some(0), "no answer is not a failure");
    for agent in pi_grammar::Agent::ALL {
        let newest = agent.spec().newest().version;
        assert!(
            out.contains(&format!(
                "pinned newest is {} {newest}\n",
                agent.display_name()
            )),
            "{agent} has no row in scripts/check-pi-latest.sh: {out}"
        );
    }
    assert_eq!(
        out,
        format!(
            "check-pi-latest: NOTICE: the npm registry did not answer for {PI}; pinned newest is pi {pi}\n\
             check-pi-latest: NOTICE: the npm registry did not answer for {CLAUDE}; pinned newest is Claude Code {cc}\n\
             check-pi-latest: NOTICE: the npm registry did not answer for {CODEX}; pinned newest is Codex {cx}\n\
             check-pi-latest: NOTICE: the npm registry did not answer for {GEMINI}; pinned newest is Gemini CLI {gm}\n"
        )
    );
}
