//! Shared pieces of the conformance suite.
