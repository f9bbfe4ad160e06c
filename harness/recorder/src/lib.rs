//! pi-recorder: records real pi against a scripted LLM server.
pub mod corpus;
pub mod drift;
pub mod llm_script;
pub mod llm_server;
pub mod recorder;
