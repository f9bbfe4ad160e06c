//! `pi-supervisor`: owns pi's process tree for the reference provider (see `pi_harness::supervisor`).

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match pi_harness::supervisor::parse_args(&args) {
        Ok(cfg) => std::process::exit(pi_harness::supervisor::run(cfg)),
        Err(e) => {
            eprintln!("pi-supervisor: {e}");
            std::process::exit(2);
        }
    }
}
