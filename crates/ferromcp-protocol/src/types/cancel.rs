//! `notifications/cancelled`.
// CANCEL-*

use super::Meta;
use crate::jsonrpc::RequestId;
use serde::{Deserialize, Serialize};

/// `notifications/cancelled` params.
///
/// `requestId` is required on 2026-07-28 and optional on 2025-11-25; it is
/// optional here so both read, and always set by [`CancelledNotificationParams::new`].
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CancelledNotificationParams {
    // CANCEL-07
    /// The id of the request to cancel (or the listen request to end).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<RequestId>,
    // CANCEL-09
    /// Why, for logs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Open metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl CancelledNotificationParams {
    /// Cancels `id`, with an optional reason.
    pub fn new(id: RequestId, reason: Option<String>) -> Self {
        Self {
            request_id: Some(id),
            reason,
            meta: None,
        }
    }
}
