//! pi-recorder's integration tests, one binary: the scripted LLM server over real sockets
//! (`llm_server`, and against hostile clients `llm_server_limits`) and the committed corpora
//! (`recorded_corpus`, `rpc_corpus`).

mod llm_server;
mod llm_server_limits;
mod recorded_corpus;
mod rpc_corpus;
mod util;
