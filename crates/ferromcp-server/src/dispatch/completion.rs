//! `completion/complete`.

use super::mrtr::guarded;
use crate::context::{ContextParts, RequestContext};
use crate::error::HandlerError;
use crate::future::Reply;
use crate::shared::Shared;
use ferromcp_protocol::ErrorObject;
use ferromcp_protocol::types::{CompleteRequestParams, CompleteResult};
use std::sync::Arc;

impl Shared {
    pub(super) async fn complete(
        self: Arc<Self>,
        p: CompleteRequestParams,
        parts: ContextParts,
    ) -> Reply {
        let id = parts.id.clone();
        let version = parts.version;
        let Some(h) = self.completion().clone() else {
            return Err(ErrorObject::method_not_found("completion/complete").into());
        };
        let cx = RequestContext::new(parts, None, None, self.clone());
        let timeout = self.limits().handler_timeout;
        match guarded(h.complete(p, cx.clone()), timeout, &cx).await {
            Ok(mut completion) => {
                completion.values.truncate(100); // CMPL-02
                let r = CompleteResult {
                    completion,
                    ..Default::default()
                };
                Ok(self.finish(&id, r, version))
            }
            Err(HandlerError::Protocol(e)) => Err(e.into()),
            Err(HandlerError::Failed(m)) => Err(ErrorObject::internal(m).into()),
            Err(HandlerError::NeedInput(_)) => Err(ErrorObject::internal(
                "completion handlers cannot request input (MRTR-01)",
            )
            .into()),
        }
    }
}
