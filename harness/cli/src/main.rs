//! The `pi-harness` binary: see the `pi_harness` library for the command tree.

fn main() -> std::process::ExitCode {
    pi_harness::main()
}
