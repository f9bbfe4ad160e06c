//! `pi-supervisor`'s exit statuses, as its table (`pi_provider::supervisor::exit`) says: each
//! run of the binary ends with the status the table gives for what happened.

use std::process::{Command, Stdio};

use pi_provider::supervisor::exit;

fn supervisor(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_pi-supervisor"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn a_bad_command_line_is_usage_said_in_one_line() {
    for (args, says) in [
        (
            &["--bogus"][..],
            "pi-supervisor: unknown argument \"--bogus\"\n",
        ),
        (
            &["--grace-ms"][..],
            "pi-supervisor: --grace-ms needs a value\n",
        ),
        (
            &["--kill-wait-ms", "soon", "--", "true"][..],
            "pi-supervisor: --kill-wait-ms: invalid digit found in string\n",
        ),
        (&["--"][..], "pi-supervisor: missing program after --\n"),
    ] {
        let out = supervisor(args);
        assert_eq!(out.status.code(), Some(exit::USAGE), "{args:?}");
        assert_eq!(String::from_utf8_lossy(&out.stderr), says, "{args:?}");
    }
}

#[test]
fn pi_ending_any_way_is_success_and_a_program_it_cannot_start_is_not_started() {
    // pi's own status is not the supervisor's: without a control socket it goes nowhere.
    for program in ["true", "false"] {
        let out = supervisor(&["--", program]);
        assert_eq!(out.status.code(), Some(exit::SUCCESS), "{program}");
    }
    let out = supervisor(&["--", "/nonexistent/pi"]);
    assert_eq!(out.status.code(), Some(exit::NOT_STARTED));
}
