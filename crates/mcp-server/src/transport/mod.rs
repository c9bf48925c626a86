//! Transports: thin layers that frame bytes and call into the core.

pub mod framing;
#[cfg(feature = "http")]
pub mod http;
pub mod origin;
#[cfg(feature = "stdio")]
pub mod stdio;
