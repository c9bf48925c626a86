//! Typed wire model for 2026-07-28 and the handshake revisions.
//!
//! Conventions shared by every file here:
//! - Field names are the wire's camelCase (`#[serde(rename_all = "camelCase")]`).
//! - Optional members are `Option` and are omitted when `None`.
//! - Request params types carry no `_meta`: the request envelope is decoded
//!   once by [`crate::meta::RequestMeta`]. Results and notification params
//!   carry `_meta` as an open [`Meta`] map (unknown keys are preserved).
//! - Where the spec allows extension (capabilities, `extensions`, `_meta`,
//!   JSON Schemas) unknown members are kept verbatim.
//! - Results carry `resultType` as `Option<ResultType>` (absent on handshake
//!   revisions); the [`McpResult`] / [`CacheableResult`] traits let a server
//!   stamp `resultType`, `serverInfo` and cache hints on any of them. The
//!   answers to input requests ([`ElicitResult`], [`CreateMessageResult`],
//!   [`ListRootsResult`]) are not results and have no `resultType`.
//! - Shapes named by a member (content blocks by `type`, input requests by
//!   `method`, elicitation params by `mode`) decode in one pass when that
//!   member comes first and by buffering otherwise; no `untagged` decoding.
//!   Unknown content block types are kept in [`ContentBlock::Unknown`].
//! - Tool schemas are [`JsonObject`]s: every keyword survives, member order
//!   does not (see [`tools`]).
// Foreign type: serde_json (`Value`, `Map`, `RawValue`, `Number`, `Error`) in this module's public
// signatures: it is the JSON data model users pass in and get back (arbitrary params, results,
// schemas, `_meta`); the SDK is built on serde_json by design.

pub mod annotations;
pub mod apps;
pub mod cancel;
pub mod capabilities;
pub mod common;
pub mod completion;
pub mod content;
pub mod discover;
pub mod elicitation;
pub mod implementation;
pub mod initialize;
pub mod logging;
pub mod mrtr;
pub mod ordered;
pub mod progress;
pub mod prompts;
pub mod resources;
pub mod roots;
pub mod sampling;
pub mod skills;
pub mod subscriptions;
pub(crate) mod tagged;
pub mod tasks;
pub mod tools;

pub use annotations::*;
pub use apps::*;
pub use cancel::*;
pub use capabilities::*;
pub use common::*;
pub use completion::*;
pub use content::*;
pub use discover::*;
pub use elicitation::*;
pub use implementation::*;
pub use initialize::*;
pub use logging::*;
pub use mrtr::*;
pub use ordered::*;
pub use progress::*;
pub use prompts::*;
pub use resources::*;
pub use roots::*;
pub use sampling::*;
pub use skills::*;
pub use subscriptions::*;
pub use tasks::*;
pub use tools::*;

use serde::{Deserialize, Serialize};

/// An open JSON object: `_meta`, settings objects, schemas.
pub type JsonObject = serde_json::Map<String, serde_json::Value>;

/// A `_meta` object on a result or notification.
pub type Meta = JsonObject;

// PAGE-02
/// An opaque pagination cursor.
pub type Cursor = String;

// RESULT-01…03
/// `resultType`: how to parse a result.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub enum ResultType {
    /// `"complete"`: a final result.
    #[default]
    Complete,
    /// `"input_required"`: an MRTR interim result.
    InputRequired,
    /// A value defined by an extension; invalid unless that extension was negotiated.
    Other(String),
}

impl ResultType {
    /// The wire string.
    pub fn as_str(&self) -> &str {
        match self {
            Self::Complete => "complete",
            Self::InputRequired => "input_required",
            Self::Other(s) => s,
        }
    }
}

impl Serialize for ResultType {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ResultType {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        Ok(match &*s {
            "complete" => Self::Complete,
            "input_required" => Self::InputRequired,
            _ => Self::Other(s.into_owned()),
        })
    }
}

// CACHE-01
/// `cacheScope`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheScope {
    /// Identical for every caller; shareable across authorization contexts.
    Public,
    /// Reusable only within the same authorization context.
    Private,
}

/// `role` of a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The user.
    User,
    /// The assistant (model).
    Assistant,
}
