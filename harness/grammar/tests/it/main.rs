//! pi-grammar's integration tests, one binary: each module is what used to be a test file
//! of its own (`tests/<module>.rs`). `claude` is Claude Code's grammar against its data and
//! the real CLI's messages; `real_claude` runs the real CLI when `PI_HARNESS_REAL_CLAUDE`
//! names it; `pi_data` is pi's flag table against its data per pinned version;
//! `real_grammar_scripts` runs the grammar scripts on the real CLIs when the variables name them.

mod agent_matches;
mod argv_props;
mod claude;
mod pi_data;
mod real_claude;
mod real_grammar_scripts;
