//! `pi-supervisor`: owns pi's process tree for the reference provider (see
//! `pi_provider::supervisor`); its exit statuses are `pi_provider::supervisor::exit`'s.

// A command-line program: it says why it cannot run on its stderr.
#![allow(clippy::print_stderr)]

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match pi_provider::supervisor::parse_args(&args) {
        Ok(cfg) => std::process::exit(pi_provider::supervisor::run(cfg)),
        Err(e) => {
            eprintln!("pi-supervisor: {e}");
            std::process::exit(pi_provider::supervisor::exit::USAGE);
        }
    }
}
