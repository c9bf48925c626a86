//! `application/x-www-form-urlencoded` encoding and query parsing
//! (WHATWG URL §5), for authorization URLs, token requests and callbacks.
//!
//! The one implementation lives in the crate's shared core (the resource
//! half's introspection requests use it too); this module keeps the public
//! path.

pub use crate::core::form::{
    append_query, decode_component, encode, encode_component, parse, query_of,
};
