//! Sampling: `sampling/createMessage`. A server asks for it through
//! MRTR on the modern wire and as a server→client request on handshake
//! revisions.
// SAMP-*, MRTR-15

use super::{ContentBlock, JsonObject, Meta, Role, Tool};
use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};
use serde::de::{MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// `sampling/createMessage` params.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateMessageRequestParams {
    /// The conversation to continue.
    pub messages: Vec<SamplingMessage>,
    /// Advisory model preferences.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_preferences: Option<ModelPreferences>,
    /// A system prompt the client may modify or omit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    // SAMP-02
    /// Context to attach (deprecated values need `sampling.context`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include_context: Option<IncludeContext>,
    /// Sampling temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    // SAMP-03
    /// Upper bound on generated tokens; the client must respect it.
    pub max_tokens: u64,
    /// Sequences that stop generation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_sequences: Option<Vec<String>>,
    /// Provider-specific metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<JsonObject>,
    // SAMP-02
    /// Tools the model may use; needs `sampling.tools`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<Tool>>,
    /// How the model may use `tools`; needs `sampling.tools`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
}

/// One message of a sampling conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SamplingMessage {
    /// Who says it.
    pub role: Role,
    /// One block or several.
    pub content: SamplingContent,
    /// Open metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl SamplingMessage {
    /// A message with one block.
    pub fn new(role: Role, content: ContentBlock) -> Self {
        Self {
            role,
            content: SamplingContent::Single(content),
            meta: None,
        }
    }
}

// SAMP-04
/// Sampling content: one block, or an array of blocks.
#[derive(Debug, Clone, PartialEq)]
#[allow(
    clippy::large_enum_variant,
    reason = "the single-block form is the common one; boxing it would cost an allocation per message"
)]
pub enum SamplingContent {
    /// A single block object.
    Single(ContentBlock),
    /// An array of blocks.
    Multiple(Vec<ContentBlock>),
}

impl SamplingContent {
    /// The blocks, whichever form was used.
    pub fn blocks(&self) -> &[ContentBlock] {
        match self {
            Self::Single(b) => std::slice::from_ref(b),
            Self::Multiple(v) => v,
        }
    }
}

impl From<ContentBlock> for SamplingContent {
    fn from(b: ContentBlock) -> Self {
        Self::Single(b)
    }
}

impl From<Vec<ContentBlock>> for SamplingContent {
    fn from(v: Vec<ContentBlock>) -> Self {
        Self::Multiple(v)
    }
}

impl Serialize for SamplingContent {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Single(b) => b.serialize(s),
            Self::Multiple(v) => v.serialize(s),
        }
    }
}

struct SamplingContentVisitor;

impl<'de> Visitor<'de> for SamplingContentVisitor {
    type Value = SamplingContent;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a content block or an array of content blocks")
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<SamplingContent, A::Error> {
        ContentBlock::deserialize(MapAccessDeserializer::new(map)).map(SamplingContent::Single)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<SamplingContent, A::Error> {
        Vec::<ContentBlock>::deserialize(SeqAccessDeserializer::new(seq))
            .map(SamplingContent::Multiple)
    }
}

impl<'de> Deserialize<'de> for SamplingContent {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(SamplingContentVisitor)
    }
}

// SAMP-03
/// Advisory model-selection preferences.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelPreferences {
    /// Model name hints, evaluated in order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hints: Option<Vec<ModelHint>>,
    /// 0–1: importance of low cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_priority: Option<f64>,
    /// 0–1: importance of low latency.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speed_priority: Option<f64>,
    /// 0–1: importance of capability.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intelligence_priority: Option<f64>,
}

/// A model name hint (matched as a substring).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ModelHint {
    /// A full or partial model name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// `includeContext`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum IncludeContext {
    /// `"none"`
    #[serde(rename = "none")]
    None,
    /// `"thisServer"` (deprecated)
    #[serde(rename = "thisServer")]
    ThisServer,
    /// `"allServers"` (deprecated)
    #[serde(rename = "allServers")]
    AllServers,
}

/// `toolChoice`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ToolChoice {
    /// The mode; `auto` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<ToolChoiceMode>,
}

/// How the model may use tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolChoiceMode {
    /// The model decides.
    Auto,
    /// The model must use at least one tool.
    Required,
    /// The model must not use tools.
    None,
}

// SAMP-05, RESULT-05
/// The client's answer to `sampling/createMessage`. An input
/// response on the modern wire, so it carries no `resultType`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateMessageResult {
    /// Role of the generated message.
    pub role: Role,
    /// Generated content: one block or several.
    pub content: SamplingContent,
    /// The model that generated it.
    pub model: String,
    /// Why generation stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<StopReason>,
    /// Open metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// Why sampling stopped; open-ended on the wire.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum StopReason {
    /// `"endTurn"`
    EndTurn,
    /// `"stopSequence"`
    StopSequence,
    /// `"maxTokens"`
    MaxTokens,
    /// `"toolUse"`
    ToolUse,
    /// Any other value, kept as sent.
    Other(String),
}

impl StopReason {
    /// The wire string.
    pub fn as_str(&self) -> &str {
        match self {
            Self::EndTurn => "endTurn",
            Self::StopSequence => "stopSequence",
            Self::MaxTokens => "maxTokens",
            Self::ToolUse => "toolUse",
            Self::Other(s) => s,
        }
    }
}

impl Serialize for StopReason {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for StopReason {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = super::tagged::Str::deserialize(d)?;
        Ok(match &*s.0 {
            "endTurn" => Self::EndTurn,
            "stopSequence" => Self::StopSequence,
            "maxTokens" => Self::MaxTokens,
            "toolUse" => Self::ToolUse,
            _ => Self::Other(s.0.into_owned()),
        })
    }
}
