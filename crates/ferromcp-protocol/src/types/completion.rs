//! Argument completion: `completion/complete`.
// CMPL-*

use super::tagged::{Tagged, deserialize_tagged};
use super::{Meta, ResultType};
use serde::{Deserialize, Deserializer, Serialize};
use std::collections::BTreeMap;

// CMPL-02
/// `completion/complete` params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompleteRequestParams {
    /// What is being completed.
    #[serde(rename = "ref")]
    pub reference: CompletionReference,
    /// The argument being completed.
    pub argument: CompletionArgument,
    /// Already-resolved arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<CompletionContext>,
}

/// The object whose argument is completed, keyed on `"type"`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type")]
pub enum CompletionReference {
    /// `"ref/prompt"`: an argument of a prompt.
    #[serde(rename = "ref/prompt")]
    Prompt(PromptReference),
    /// `"ref/resource"`: a variable of a resource template.
    #[serde(rename = "ref/resource")]
    ResourceTemplate(ResourceTemplateReference),
}

impl Tagged for CompletionReference {
    const TAG: &'static str = "type";
    const EXPECTING: &'static str = "a completion reference object";

    fn decode<'de, D: Deserializer<'de>>(tag: &str, rest: D) -> Result<Self, D::Error> {
        match tag {
            "ref/prompt" => Ok(Self::Prompt(PromptReference::deserialize(rest)?)),
            "ref/resource" => Ok(Self::ResourceTemplate(
                ResourceTemplateReference::deserialize(rest)?,
            )),
            other => Err(serde::de::Error::unknown_variant(
                other,
                &["ref/prompt", "ref/resource"],
            )),
        }
    }
}

impl<'de> Deserialize<'de> for CompletionReference {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        deserialize_tagged(d)
    }
}

/// Identifies a prompt.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct PromptReference {
    /// The prompt name.
    pub name: String,
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
}

/// Identifies a resource template.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ResourceTemplateReference {
    /// The URI template.
    pub uri: String,
}

/// The argument being completed.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CompletionArgument {
    /// Argument name.
    pub name: String,
    /// What the user typed so far.
    pub value: String,
}

/// Extra context for a completion.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CompletionContext {
    /// Previously resolved argument values.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<BTreeMap<String, String>>,
}

/// `completion/complete` result.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompleteResult {
    /// `resultType` (modern wire).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// The suggestions.
    pub completion: Completion,
    /// Open metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// Completion suggestions.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Completion {
    /// At most [`Completion::MAX_VALUES`] values, most relevant first.
    pub values: Vec<String>,
    /// Total number of matches, which may exceed `values.len()`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
    /// Whether more matches exist than were returned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub has_more: Option<bool>,
}

impl Completion {
    // CMPL-02
    /// The most values one result may carry.
    pub const MAX_VALUES: usize = 100;

    /// Suggestions from `values`, truncated to [`Completion::MAX_VALUES`]
    /// with `total` and `hasMore` set accordingly.
    pub fn from_values(mut values: Vec<String>) -> Self {
        let total = values.len();
        let has_more = total > Self::MAX_VALUES;
        values.truncate(Self::MAX_VALUES);
        Self {
            values,
            total: Some(total as u64),
            has_more: Some(has_more),
        }
    }
}
