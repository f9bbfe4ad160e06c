//! The supervisor's exit statuses: one table, used by every way the supervisor starts
//! (`pi-supervisor`, the supervisor embedded in the host's executable, the preforked one).
//! pi's own end is not among them: it travels on the control socket (`exited`, with pi's
//! status or signal), and the supervisor exits [`SUCCESS`] after saying it.
//!
//! | status | constant | meaning |
//! |---:|---|---|
//! | 0 | [`SUCCESS`] | the supervisor did its job, whatever pi did (`exited` said on the control socket); or it could not start pi and said so there (`spawn_failed`: a program that cannot be run; preforked, a working directory it cannot enter); or, preforked, the host closed the socket without an order |
//! | 2 | [`USAGE`] | a bad command line (or a preforked order carrying one), said as one line `pi-supervisor: ...` on stderr: an unknown argument, a flag without its value or with a value that is not a number, no program after `--` |
//! | 70 | [`CANNOT_SUPERVISE`] | it cannot own a process tree: it cannot become a child subreaper, block its signals or open its signalfd (said on stderr); or, preforked, it cannot read its order (said on the control socket as `spawn_failed`) |
//! | 127 | [`NOT_STARTED`] | pi could not be started and there is no control socket to say so (a shell's status for a command it cannot run) |

/// The supervisor did its job (pi's end, or why pi did not start, is on the control socket).
pub const SUCCESS: i32 = 0;
/// A bad command line, said on stderr.
pub const USAGE: i32 = 2;
/// The supervisor cannot own a process tree (no subreaper, no signalfd), or a preforked one
/// cannot read its order (`EX_SOFTWARE` of `sysexits.h`).
pub const CANNOT_SUPERVISE: i32 = 70;
/// pi could not be started, and no control socket was given to say why.
pub const NOT_STARTED: i32 = 127;
