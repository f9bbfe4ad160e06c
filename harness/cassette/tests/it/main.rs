//! pi-cassette's integration tests, one binary: the committed cassettes against the parser
//! and the schema (`cassettes`), the fault cassettes against their generator
//! (`fault_cassettes`), and the reader and lint agreeing on arbitrary input (`parse_props`).

mod cassettes;
mod fault_cassettes;
mod parse_props;
mod util;
