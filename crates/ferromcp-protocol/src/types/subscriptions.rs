//! `subscriptions/listen` and `notifications/subscriptions/acknowledged`
//! (modern wire only).
// SUB-*

use super::{Meta, ResultType};
use crate::jsonrpc::RequestId;
use crate::meta::SUBSCRIPTION_ID;
use serde::{Deserialize, Serialize};

// SUB-01
/// Which notifications a listen stream carries. An omitted member means
/// "not subscribed".
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionFilter {
    /// `notifications/tools/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools_list_changed: Option<bool>,
    /// `notifications/prompts/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompts_list_changed: Option<bool>,
    /// `notifications/resources/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources_list_changed: Option<bool>,
    /// `notifications/resources/updated` for these URIs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_subscriptions: Option<Vec<String>>,
}

impl SubscriptionFilter {
    /// Whether the filter asks for nothing.
    pub fn is_empty(&self) -> bool {
        self.tools_list_changed != Some(true)
            && self.prompts_list_changed != Some(true)
            && self.resources_list_changed != Some(true)
            && self
                .resource_subscriptions
                .as_ref()
                .is_none_or(|v| v.is_empty())
    }
}

/// `subscriptions/listen` params.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct SubscriptionsListenRequestParams {
    /// What to deliver on the stream.
    pub notifications: SubscriptionFilter,
}

// SUB-10
/// `subscriptions/listen` result: sent only when the server ends the
/// subscription gracefully. `_meta` carries the subscription id.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionsListenResult {
    /// `resultType`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// Metadata; `io.modelcontextprotocol/subscriptionId` is required.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl SubscriptionsListenResult {
    /// The graceful end of the subscription opened by listen request `id`.
    pub fn ended(id: &RequestId) -> Self {
        Self {
            result_type: Some(ResultType::Complete),
            meta: Some(subscription_meta(id)),
        }
    }

    /// The subscription id in `_meta`, if present and well-formed.
    pub fn subscription_id(&self) -> Option<RequestId> {
        subscription_id(self.meta.as_ref())
    }
}

// SUB-03
/// `notifications/subscriptions/acknowledged` params.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SubscriptionsAcknowledgedNotificationParams {
    /// The subset of the requested filter the server will honour.
    pub notifications: SubscriptionFilter,
    /// Metadata; carries `io.modelcontextprotocol/subscriptionId`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl SubscriptionsAcknowledgedNotificationParams {
    /// The acknowledgement of listen request `id`, honouring `notifications`.
    pub fn new(id: &RequestId, notifications: SubscriptionFilter) -> Self {
        Self {
            notifications,
            meta: Some(subscription_meta(id)),
        }
    }

    /// The subscription id in `_meta`, if present and well-formed.
    pub fn subscription_id(&self) -> Option<RequestId> {
        subscription_id(self.meta.as_ref())
    }
}

// META-11
/// A `_meta` object holding only `io.modelcontextprotocol/subscriptionId: id`
/// (same JSON type as the id).
pub fn subscription_meta(id: &RequestId) -> Meta {
    let mut m = Meta::new();
    m.insert(SUBSCRIPTION_ID.to_owned(), id.to_value());
    m
}

// STDIO-06
/// Reads `io.modelcontextprotocol/subscriptionId` from a `_meta` object
/// (the demultiplexing key of listen-stream notifications).
pub fn subscription_id(meta: Option<&Meta>) -> Option<RequestId> {
    meta?.get(SUBSCRIPTION_ID).and_then(RequestId::from_value)
}
