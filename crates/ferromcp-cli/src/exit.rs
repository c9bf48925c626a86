//! Exit codes and the one failure type every subcommand returns.

use ferromcp_client::protocol::types::ElicitRequestUrlParams;
use ferromcp_client::{Error, ErrorKind};

/// The exit codes (documented in `mcp --help`).
pub mod code {
    /// Success.
    pub const OK: u8 = 0;
    /// The tool ran and reported `isError: true`.
    pub const TOOL_ERROR: u8 = 1;
    /// Bad arguments.
    pub const USAGE: u8 = 2;
    /// The server answered with a JSON-RPC error or something invalid.
    pub const PROTOCOL: u8 = 3;
    /// Connection, spawn, I/O failure or timeout.
    pub const TRANSPORT: u8 = 4;
    /// The server asked for user input and `--no-input` was given.
    pub const NEEDS_INPUT: u8 = 5;
    /// Authorization needed or refused (see `mcp login`).
    pub const AUTH: u8 = 6;
    /// The server needs the user to complete an interaction at a URL first
    /// (-32042, URL elicitation required) and it was not done (`--no-input`,
    /// `--json`, declined, or still required after the retries).
    pub const NEEDS_URL_INTERACTION: u8 = 7;
    /// Ctrl-C.
    pub const INTERRUPTED: u8 = 130;
}

/// A failed command: the message for stderr and the exit code.
#[derive(Debug)]
pub struct Failure {
    /// The exit code.
    pub code: u8,
    /// What went wrong.
    pub message: String,
    // LEGACY-22
    /// The URL interactions a -32042 answer asked for.
    pub url_elicitations: Vec<ElicitRequestUrlParams>,
}

impl Failure {
    /// A failure with an exit code and a message.
    pub fn new(code: u8, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            url_elicitations: Vec::new(),
        }
    }

    /// A usage error.
    pub fn usage(message: impl Into<String>) -> Self {
        Self::new(code::USAGE, message)
    }

    /// A transport-level failure (also local I/O such as saving a file).
    pub fn transport(message: impl Into<String>) -> Self {
        Self::new(code::TRANSPORT, message)
    }

    /// A protocol-level failure.
    pub fn protocol(message: impl Into<String>) -> Self {
        Self::new(code::PROTOCOL, message)
    }
}

/// The exit code for a client error.
pub fn code_for(e: &Error) -> u8 {
    if e.is_auth() {
        return code::AUTH;
    }
    match e.kind() {
        ErrorKind::Protocol(_)
        | ErrorKind::InvalidResponse
        | ErrorKind::Negotiation
        | ErrorKind::Handler
        | ErrorKind::TooManyRounds { .. }
        | ErrorKind::Unsupported
        | ErrorKind::NotOffered { .. }
        | ErrorKind::OutputSchemaMismatch { .. } => code::PROTOCOL,
        ErrorKind::Cancelled => code::INTERRUPTED,
        ErrorKind::Config | ErrorKind::InvalidMeta { .. } => code::USAGE,
        _ => code::TRANSPORT,
    }
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        let message = match e.rpc_error() {
            Some(o) => format!("server error {}: {}", o.code, o.message),
            None => e.to_string(),
        };
        Self {
            code: code_for(&e),
            message,
            url_elicitations: e.url_elicitations(),
        }
    }
}
