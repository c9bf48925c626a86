//! The client side of MCP authorization (feature `client`).
//!
//! - [`es256`]: the ES256 key clients sign with.
//! - [`dpop`]: RFC 9449 DPoP proofs and nonces.
//! - [`assertion`]: `private_key_jwt` client authentication (RFC 7523 §2.2).
//! - [`grants`]: the extension grants (client credentials, JWT bearer,
//!   enterprise-managed token exchange).

pub mod assertion;
pub mod dpop;
pub mod es256;
pub mod grants;
