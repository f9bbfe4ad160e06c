//! The conformance crate's integration tests, in one binary (one link of the crate and its
//! dependencies; fake-pi and pi-harness built once per run):
//!
//! - [`suite`]: every cassette through the reference provider: snapshots, invariants, no
//!   process left, the committed expected streams up to date;
//! - [`cross_version`]: the streams of one scenario on different pi versions differ only as
//!   documented;
//! - [`cancel_matrix`]: the reference provider cancelled at seven points, nothing left;
//! - [`conform_cli`]: `pi-harness conform` end to end, as a user runs it; [`case_names`]:
//!   `--case` in every form `corpus list` prints;
//! - [`util`]: what they share.

mod cancel_matrix;
mod case_names;
mod ci_output;
mod conform_cli;
mod cross_version;
mod suite;
mod util;
