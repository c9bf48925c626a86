//! The authenticated caller.

/// The authenticated caller, when the transport authenticated one.
///
/// Defined in this crate, which the server and the authorization layers
/// both build on, so that a layer in front of an MCP endpoint (such as
/// `ferromcp-auth`'s resource half, which inserts one into the HTTP request's
/// extensions) need not depend on `ferromcp-server`. `ferromcp-server` re-exports it
/// as `ferromcp_server::Principal` and hands it to handlers as
/// `ctx.principal()`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Principal {
    /// Subject identifier (e.g. the token's `sub`).
    pub subject: String,
    /// Granted scopes.
    pub scopes: Vec<String>,
    /// The OAuth client id, when known.
    pub client_id: Option<String>,
}
