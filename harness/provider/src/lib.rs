//! pi-provider: the reference provider.
mod provider;
pub mod retry;
pub mod supervisor;

pub use pi_wire::message;
pub use provider::*;
pub use tokio_util::sync::CancellationToken;
