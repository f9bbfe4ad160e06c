//! pi-grammar's integration tests, one binary: each module is what used to be a test file
//! of its own (`tests/<module>.rs`). `claude` is Claude Code's grammar against its data and
//! the real CLI's messages; `real_claude` runs the real CLI when `PI_HARNESS_REAL_CLAUDE`
//! names it.

mod argv_props;
mod claude;
mod real_claude;
