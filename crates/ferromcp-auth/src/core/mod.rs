//! The OAuth pieces both halves use, one file per concept (issue 15):
//!
//! - [`metadata`]: the Protected Resource Metadata document (RFC 9728 §2),
//!   served by the resource half and read by the client half;
//! - [`discovery`]: the well-known URLs (RFC 9728 §3.1, RFC 8414 §3.1,
//!   OpenID Connect Discovery);
//! - [`fetch`]: the bounded HTTP exchange (hyper client, optional rustls,
//!   response size and time caps) behind `resource::HyperFetch` and
//!   `client::HttpClient`;
//! - [`b64`]: base64 and base64url, through `ferromcp_protocol::base64`;
//! - [`form`]: `application/x-www-form-urlencoded` encoding and parsing;
//! - [`uri`]: splitting absolute http(s) URLs and the default-port rule,
//!   for the resource indicator, `htu` and redirect URI comparisons.
//!
//! Public items are re-exported from the paths they had before
//! (`resource::…`, `client::…`); this module itself is private.
// AUTH-05/AUTH-07

pub(crate) mod b64;
pub(crate) mod discovery;
pub(crate) mod fetch;
// The resource half encodes only; parsing is the client half's.
#[cfg_attr(not(feature = "client"), allow(dead_code))]
pub(crate) mod form;
pub(crate) mod metadata;
pub(crate) mod uri;

use std::future::Future;
use std::pin::Pin;

/// A boxed, sendable future (the same type as `futures_util`'s).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;
