//! The `pi-harness` binary: see the `pi_harness` library for the command tree.

// A command-line program: what it prints is its output (the library does the printing).
#![allow(clippy::print_stdout, clippy::print_stderr)]

fn main() -> std::process::ExitCode {
    pi_harness::main()
}
