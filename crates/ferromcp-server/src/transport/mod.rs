//! Transports: thin layers that frame bytes and call into the core.

/// The stdio line framer, now in the protocol crate.
pub use ferromcp_protocol::framing;
#[cfg(feature = "http")]
pub mod http;
pub mod origin;
#[cfg(feature = "stdio")]
pub mod stdio;
