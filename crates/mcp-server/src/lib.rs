//! # mcp-server
//!
//! A Model Context Protocol server: a transport-agnostic core built once and
//! shared by `Arc`, plus thin transports (stdio, Streamable HTTP).

pub mod request_state;
pub mod uri_template;
