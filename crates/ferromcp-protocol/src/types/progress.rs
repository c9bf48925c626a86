//! `notifications/progress`.
// PROG-*

use super::Meta;
use crate::meta::ProgressToken;
use serde::{Deserialize, Serialize};

// PROG-02
/// `notifications/progress` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProgressNotificationParams {
    /// The `progressToken` of the request this reports on.
    pub progress_token: ProgressToken,
    /// Progress so far; strictly increasing, may be fractional.
    pub progress: f64,
    /// Total, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<f64>,
    /// Human-readable status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Open metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl ProgressNotificationParams {
    /// Progress `progress` (of `total`, if known) for `token`.
    pub fn new(token: ProgressToken, progress: f64, total: Option<f64>) -> Self {
        Self {
            progress_token: token,
            progress,
            total,
            message: None,
            meta: None,
        }
    }
}
