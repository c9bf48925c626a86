//! Content blocks: the `content` of tool results, prompt messages and
//! sampling messages.
//!
//! [`ContentBlock`] is keyed on `"type"`. Unknown block types are kept
//! verbatim in [`ContentBlock::Unknown`] instead of failing the whole result,
//! so a client stays usable against a server that speaks a newer revision.
// Foreign type: serde_json (`Value`, `Map`, `RawValue`, `Number`, `Error`) in this module's public
// signatures: it is the JSON data model users pass in and get back (arbitrary params, results,
// schemas, `_meta`); the SDK is built on serde_json by design.

use super::tagged::{Tagged, deserialize_tagged, keep_unknown};
use super::{Annotations, JsonObject, Meta, Resource, ResourceContents};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

/// One block of content.
///
/// Written with `"type"` first; read in one pass when `"type"` comes first
/// and by buffering otherwise.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type")]
pub enum ContentBlock {
    /// `"text"`
    #[serde(rename = "text")]
    Text(TextContent),
    /// `"image"`
    #[serde(rename = "image")]
    Image(ImageContent),
    /// `"audio"`
    #[serde(rename = "audio")]
    Audio(AudioContent),
    /// `"resource_link"`: a reference to a resource the client can read.
    #[serde(rename = "resource_link")]
    ResourceLink(Resource),
    /// `"resource"`: an embedded resource.
    #[serde(rename = "resource")]
    Resource(EmbeddedResource),
    /// `"tool_use"` (sampling only).
    #[serde(rename = "tool_use")]
    ToolUse(ToolUseContent),
    /// `"tool_result"` (sampling only).
    #[serde(rename = "tool_result")]
    ToolResult(ToolResultContent),
    /// A block of a type this crate does not know, kept verbatim (its
    /// `"type"` member included).
    #[serde(untagged)]
    Unknown(JsonObject),
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text(TextContent::new(text))
    }

    /// An image block from base64 data.
    pub fn image(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        Self::Image(ImageContent {
            data: data.into(),
            mime_type: mime_type.into(),
            annotations: None,
            meta: None,
        })
    }

    /// An audio block from base64 data.
    pub fn audio(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        Self::Audio(AudioContent {
            data: data.into(),
            mime_type: mime_type.into(),
            annotations: None,
            meta: None,
        })
    }

    /// An embedded resource block.
    pub fn embedded(resource: ResourceContents) -> Self {
        Self::Resource(EmbeddedResource {
            resource,
            annotations: None,
            meta: None,
        })
    }

    /// The wire `"type"` of this block (`None` only for an unknown block
    /// whose `"type"` is not a string, which decoding never produces).
    pub fn type_name(&self) -> Option<&str> {
        Some(match self {
            Self::Text(_) => "text",
            Self::Image(_) => "image",
            Self::Audio(_) => "audio",
            Self::ResourceLink(_) => "resource_link",
            Self::Resource(_) => "resource",
            Self::ToolUse(_) => "tool_use",
            Self::ToolResult(_) => "tool_result",
            Self::Unknown(o) => return o.get("type").and_then(Value::as_str),
        })
    }

    /// The text of a text block.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Self::Text(t) => Some(&t.text),
            _ => None,
        }
    }
}

impl From<TextContent> for ContentBlock {
    fn from(v: TextContent) -> Self {
        Self::Text(v)
    }
}

impl From<ImageContent> for ContentBlock {
    fn from(v: ImageContent) -> Self {
        Self::Image(v)
    }
}

impl From<AudioContent> for ContentBlock {
    fn from(v: AudioContent) -> Self {
        Self::Audio(v)
    }
}

impl From<EmbeddedResource> for ContentBlock {
    fn from(v: EmbeddedResource) -> Self {
        Self::Resource(v)
    }
}

impl From<ToolUseContent> for ContentBlock {
    fn from(v: ToolUseContent) -> Self {
        Self::ToolUse(v)
    }
}

impl From<ToolResultContent> for ContentBlock {
    fn from(v: ToolResultContent) -> Self {
        Self::ToolResult(v)
    }
}

impl Tagged for ContentBlock {
    const TAG: &'static str = "type";
    const EXPECTING: &'static str = "a content block object";

    fn decode<'de, D: Deserializer<'de>>(tag: &str, rest: D) -> Result<Self, D::Error> {
        Ok(match tag {
            "text" => Self::Text(TextContent::deserialize(rest)?),
            "image" => Self::Image(ImageContent::deserialize(rest)?),
            "audio" => Self::Audio(AudioContent::deserialize(rest)?),
            "resource_link" => Self::ResourceLink(Resource::deserialize(rest)?),
            "resource" => Self::Resource(EmbeddedResource::deserialize(rest)?),
            "tool_use" => Self::ToolUse(ToolUseContent::deserialize(rest)?),
            "tool_result" => Self::ToolResult(ToolResultContent::deserialize(rest)?),
            other => Self::Unknown(keep_unknown(Self::TAG, other, rest)?),
        })
    }
}

impl<'de> Deserialize<'de> for ContentBlock {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        deserialize_tagged(d)
    }
}

/// Text content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TextContent {
    /// The text.
    pub text: String,
    /// Display hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Open metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl TextContent {
    /// Plain text without annotations.
    pub fn new(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            annotations: None,
            meta: None,
        }
    }
}

// PROMPT-04
/// Image content: base64 data with a MIME type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageContent {
    /// Base64-encoded image bytes.
    pub data: String,
    /// MIME type, e.g. `image/png`.
    pub mime_type: String,
    /// Display hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Open metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// Audio content: base64 data with a MIME type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AudioContent {
    /// Base64-encoded audio bytes.
    pub data: String,
    /// MIME type, e.g. `audio/wav`.
    pub mime_type: String,
    /// Display hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Open metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// The contents of a resource, embedded in a message or result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EmbeddedResource {
    /// Text or blob contents.
    pub resource: ResourceContents,
    /// Display hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Open metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

// SAMP-04
/// A model's request to call a tool, in sampling.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolUseContent {
    /// Identifier the matching `tool_result` answers via `toolUseId`.
    pub id: String,
    /// Tool name.
    pub name: String,
    /// Tool arguments.
    pub input: JsonObject,
    /// Open metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

// SAMP-04
/// The result of a tool use, in sampling.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResultContent {
    /// The `id` of the `tool_use` this answers.
    pub tool_use_id: String,
    /// Unstructured result.
    pub content: Vec<ContentBlock>,
    /// Structured result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// Whether the tool use failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// Open metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}
