//! The supervisor embedded in every executable that links this crate.
//!
//! The provider needs a supervisor process between itself and pi (see
//! [`crate::supervisor`] for why). Rather than asking every application to ship a second
//! binary, the provider starts its own executable again (`/proc/self/exe`, which works even
//! when the file was replaced or deleted since) with [`SUPERVISOR_ENV`] set. A function
//! this crate places in the executable's `.init_array` runs before `main` in every
//! process; it returns at once unless that variable is set, in which case it runs the
//! supervisor with the process's arguments and exits, so the application's `main` never
//! runs in the supervisor process. This is the double-spawn cargo-nextest uses, made
//! automatic: the application needs no hook in its `main`, test binaries and doctests
//! included.
//!
//! The variable is removed before pi starts, so pi and its tools never see it. An explicit
//! supervisor binary (`ProviderOptions::supervisor`, or `PI_HARNESS_SUPERVISOR`) bypasses
//! all this.

/// Set (to `1`) in the environment of a re-executed host: "be the supervisor".
pub const SUPERVISOR_ENV: &str = "PI_PROVIDER_RUN_SUPERVISOR";

/// What the provider executes to get an embedded supervisor.
pub const SELF_EXE: &str = "/proc/self/exe";

#[used]
#[link_section = ".init_array"]
static SUPERVISOR_HOOK: extern "C" fn() = supervisor_hook;

/// Keeps the hook linked into any executable that starts a supervised run: the hook's
/// object is pulled in by this reference from the provider's spawn path.
pub(crate) fn ensure_linked() {
    std::hint::black_box(&SUPERVISOR_HOOK);
}

// Runs only in the supervisor's own process (the variable is set): a bad command line is
// said on its stderr, as a command-line tool does.
#[allow(clippy::print_stderr)]
extern "C" fn supervisor_hook() {
    if std::env::var_os(SUPERVISOR_ENV).is_none() {
        return;
    }
    // Before main, with no other thread of ours yet: pi must not inherit the variable.
    std::env::remove_var(SUPERVISOR_ENV);
    // The arguments from /proc (init functions get none on every libc).
    let args: Vec<String> = std::fs::read("/proc/self/cmdline")
        .map(|raw| {
            raw.split(|&b| b == 0)
                .skip(1)
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    // A trailing NUL leaves one empty piece after the last argument.
    let args = match args.split_last() {
        Some((last, rest)) if last.is_empty() => rest.to_vec(),
        _ => args,
    };
    let code = match crate::supervisor::parse_args(&args) {
        Ok(cfg) => crate::supervisor::run(cfg),
        Err(e) => {
            eprintln!("pi-supervisor: {e}");
            crate::supervisor::exit::USAGE
        }
    };
    std::process::exit(code);
}
