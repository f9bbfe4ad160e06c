//! pi-provider's integration tests, one binary: the reference provider and the RPC session
//! against fake-pi as a real subprocess (each test with its own marker, proving no process
//! is left). The preforked supervisor has a test binary of its own (`tests/prefork.rs`): it
//! must fork while its process has one thread, so it has its own `main` and no harness.

mod provider;
mod rpc_session;
mod supervisor_exit;
