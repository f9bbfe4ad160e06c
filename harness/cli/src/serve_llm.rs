//! `pi-harness serve-llm`: the scripted LLM server as a command. Prints the base URL on the
//! first stdout line, serves until SIGINT or SIGTERM.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use pi_recorder::llm_script::Script;
use pi_recorder::llm_server::{LlmServer, ServerOptions};
use tokio::signal::unix::{signal, SignalKind};

use crate::exit::{EXIT_FAILED, EXIT_OK};
use crate::CliError;

/// Run the command; returns the exit status. User errors (a script that cannot be read or is
/// invalid, a port that cannot be bound, a log that cannot be opened) are one line
/// `error: ...` and exit [`crate::exit::EXIT_USAGE`]. A stdout closed before the URL line is
/// written (`| head -0`) ends the command at once with [`EXIT_OK`]: nobody can learn the URL.
pub fn serve_llm_command(script: &Path, port: u16, log: Option<PathBuf>) -> i32 {
    let script = match Script::load(script) {
        Ok(s) => s,
        Err(e) => return CliError::usage(e.to_string()).report(),
    };
    if let Err(e) = crate::fds::ensure_spare(crate::fds::SPARE_NEEDED) {
        eprintln!("error: {e}");
        return EXIT_FAILED;
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return EXIT_FAILED;
        }
    };
    runtime.block_on(serve(script, port, log))
}

async fn serve(script: Script, port: u16, log: Option<PathBuf>) -> i32 {
    // The handlers go in before the URL is printed: a client may signal as soon as it has it.
    let (mut sigint, mut sigterm) = match (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) {
        (Ok(i), Ok(t)) => (i, t),
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("error: cannot install the signal handlers: {e}");
            return EXIT_FAILED;
        }
    };
    let server = match LlmServer::start(
        script,
        ServerOptions {
            port,
            log_path: log,
            warnings: pi_recorder::Notices::new(|line| eprintln!("{line}")),
        },
    )
    .await
    {
        Ok(s) => s,
        Err(e) => return CliError::usage(e.to_string()).report(),
    };
    let printed = {
        let mut out = std::io::stdout().lock();
        writeln!(out, "{}", server.base_url()).and_then(|()| out.flush())
    };
    let code = match printed {
        Ok(()) => {
            tokio::select! {
                _ = sigint.recv() => {}
                _ = sigterm.recv() => {}
            }
            EXIT_OK
        }
        // The reader went away (`| head -0`): nothing more to say, nobody to serve.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => EXIT_OK,
        Err(e) => {
            eprintln!("error: cannot write the URL: {e}");
            EXIT_FAILED
        }
    };
    server.shutdown().await;
    code
}
