//! The `pi-harness` command line.

use clap::{Parser, Subcommand};

/// Record/replay test harness and conformance suite for programs that drive `pi --mode json`.
#[derive(Parser)]
#[command(name = "pi-harness", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {}

fn main() {
    let _cli = Cli::parse();
}
