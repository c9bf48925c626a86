//! `mcp registry …`: the subcommands, dispatched to `registry` (init,
//! validate) and `registry_publish` (publish).

use crate::exit::Failure;
use crate::registry::{self, InitArgs, ValidateArgs};
use crate::registry_publish::{self, PublishArgs};
use clap::Subcommand;

/// `mcp registry …`.
#[derive(Debug, Subcommand)]
pub enum RegistryCommand {
    /// Write `server.json` from the server's own answer and the crate's
    /// Cargo.toml: `mcp registry init [--from URL | -- CMD ARGS…]`.
    Init(Box<InitArgs>),
    /// Check a `server.json` against the registry's rules (exit 0 when it
    /// passes, else 2 with one line per problem).
    Validate(ValidateArgs),
    /// Publish a `server.json` (validated first) with the registry's HTTP
    /// API (`POST /v0/publish`), the token taken from $MCP_REGISTRY_TOKEN.
    Publish(PublishArgs),
}

/// `mcp registry …`.
pub async fn run(c: RegistryCommand) -> Result<u8, Failure> {
    match c {
        RegistryCommand::Init(a) => registry::init(*a).await,
        RegistryCommand::Validate(a) => registry::validate_cmd(&a).await,
        RegistryCommand::Publish(a) => registry_publish::run(a).await,
    }
}
