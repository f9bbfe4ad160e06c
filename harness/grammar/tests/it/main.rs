//! pi-grammar's integration tests, one binary: each module is what used to be a test file
//! of its own (`tests/<module>.rs`).

mod argv_props;
