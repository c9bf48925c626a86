//! Client and server capabilities, including `extensions`.
//!
//! Known members are typed; unknown members are preserved in `other`.
// VER-07

use super::JsonObject;
use serde::{Deserialize, Serialize};

// ELICIT-01
/// Elicitation modes a client supports. `{}` means form only.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ElicitationCapability {
    /// Form mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub form: Option<JsonObject>,
    /// URL mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<JsonObject>,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub other: JsonObject,
}

impl ElicitationCapability {
    /// Form mode is supported: declared explicitly, or implied by an empty object.
    pub fn supports_form(&self) -> bool {
        self.form.is_some() || self.url.is_none()
    }
    /// URL mode is supported.
    pub fn supports_url(&self) -> bool {
        self.url.is_some()
    }
}

// SAMP-01
/// Sampling support.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SamplingCapability {
    /// Deprecated `includeContext` support.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<JsonObject>,
    /// Tool use in sampling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<JsonObject>,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub other: JsonObject,
}

/// A capability with an optional `listChanged` flag (roots, tools, prompts).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListChangedCapability {
    /// Whether list-changed notifications are supported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub other: JsonObject,
}

/// Server resources capability.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourcesCapability {
    /// Subscriptions to resource updates are supported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subscribe: Option<bool>,
    /// `notifications/resources/list_changed` is supported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub other: JsonObject,
}

// META-03
/// What a client supports; sent per request in the modern envelope.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ClientCapabilities {
    /// Elicitation (form / url).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elicitation: Option<ElicitationCapability>,
    /// Sampling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampling: Option<SamplingCapability>,
    /// Roots.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub roots: Option<ListChangedCapability>,
    /// Experimental, non-standard capabilities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub experimental: Option<JsonObject>,
    // VER-07
    /// Extensions by identifier.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<JsonObject>,
    /// 2025-11-25 experimental tasks, and any other unknown member.
    #[serde(flatten)]
    pub other: JsonObject,
}

// DISC-05
/// What a server supports.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ServerCapabilities {
    /// Argument completion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completions: Option<JsonObject>,
    /// Log notifications.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logging: Option<JsonObject>,
    /// Prompts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompts: Option<ListChangedCapability>,
    /// Resources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourcesCapability>,
    /// Tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<ListChangedCapability>,
    /// Experimental, non-standard capabilities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub experimental: Option<JsonObject>,
    // VER-07
    /// Extensions by identifier.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<JsonObject>,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub other: JsonObject,
}
