//! Notification fan-out (cache invalidation, the application's callback)
//! and server→client requests, answered with the user's handlers.

use super::{Inner, Notice};
use crate::error::{ErrorKind, Result};
use crate::message::Inbound;
use crate::transport::{AbortOnDrop, Outbound};
use ferromcp_protocol::jsonrpc::{self, OutgoingError, OutgoingNotification, OutgoingResult};
use ferromcp_protocol::method::{self, ServerRequest};
use ferromcp_protocol::types::*;
use ferromcp_protocol::{ErrorCode, ErrorObject};
use serde_json::{Value, json};
use std::sync::{Arc, Weak};

impl Inner {
    // CACHE-10
    /// Applies a notification's side effects and hands it to the
    /// user's callback.
    pub(crate) fn on_notification(&self, n: Inbound) {
        let Inbound::Notification { method, params } = n else {
            return;
        };
        let params: Option<Value> = params.and_then(|p| serde_json::from_str(p.get()).ok());
        self.invalidate_for(&method, params.as_ref());
        if method == method::NOTIFICATIONS_MESSAGE {
            tracing::debug!(?params, "server log message");
        }
        if let Some(cb) = &self.config.on_notice {
            cb(&Notice { method, params });
        }
    }

    // CACHE-10
    /// Drops cache entries a change notification makes stale.
    pub(crate) fn invalidate_for(&self, method: &str, params: Option<&Value>) {
        let Some(cache) = &self.config.cache else {
            return;
        };
        let id = &self.identity;
        match method {
            method::NOTIFICATIONS_TOOLS_LIST_CHANGED => {
                cache.invalidate_methods(id, &[method::TOOLS_LIST])
            }
            method::NOTIFICATIONS_PROMPTS_LIST_CHANGED => {
                cache.invalidate_methods(id, &[method::PROMPTS_LIST])
            }
            method::NOTIFICATIONS_RESOURCES_LIST_CHANGED => cache.invalidate_methods(
                id,
                &[method::RESOURCES_LIST, method::RESOURCES_TEMPLATES_LIST],
            ),
            method::NOTIFICATIONS_RESOURCES_UPDATED => {
                if let Some(uri) = params.and_then(|p| p.get("uri")).and_then(Value::as_str) {
                    cache.invalidate_resource(id, uri);
                }
            }
            _ => {}
        }
    }

    // LEGACY-18, MRTR-15
    /// Answers a handshake-era server request with the user's handlers,
    /// concurrently with everything else, at most
    /// [`crate::Limits::max_concurrent_server_requests`] at a time: a request
    /// arriving while all are busy is dropped (a flooding server must not
    /// make the client run unbounded handlers or queue unbounded answers).
    pub(crate) fn spawn_server_request(self: Arc<Self>, r: Inbound) {
        let Ok(permit) = self.server_requests.clone().try_acquire_owned() else {
            if let Inbound::Request { id, method, .. } = &r {
                tracing::warn!(%id, %method, "dropping a server request: too many being handled");
            }
            return;
        };
        tokio::spawn(async move {
            let _permit = permit; // held until the answer is sent
            let Inbound::Request { id, method, params } = r else {
                return;
            };
            let outcome: std::result::Result<Value, ErrorObject> =
                match ServerRequest::decode(&method, params.as_deref()) {
                    Err(e) => Err(e),
                    Ok(ServerRequest::Ping(_)) => Ok(json!({})),
                    Ok(ServerRequest::Custom { method, .. }) => {
                        Err(ErrorObject::method_not_found(method))
                    }
                    Ok(req) => {
                        let input = match req {
                            ServerRequest::CreateMessage(p) => InputRequest::Sampling(p),
                            ServerRequest::Elicit(p) => InputRequest::Elicitation(p),
                            _ => InputRequest::ListRoots(None),
                        };
                        self.config.handlers.fulfil(input).await.map_err(|e| {
                            // No handler installed: the method is not
                            // implemented here, which -32601 says.
                            let code = if matches!(e.kind(), ErrorKind::Unsupported) {
                                ErrorCode::METHOD_NOT_FOUND
                            } else {
                                ErrorCode::INTERNAL_ERROR
                            };
                            ErrorObject::new(code, e.to_string())
                        })
                    }
                };
            let body = match &outcome {
                Ok(v) => jsonrpc::to_vec(&OutgoingResult::new(&id, v)),
                Err(e) => jsonrpc::to_vec(&OutgoingError::new(Some(&id), e)),
            };
            let st = self.state();
            let headers = self.headers(&st, "", &JsonObject::new(), false);
            let out = Outbound {
                id: None,
                body,
                headers,
                cancellable: false,
                resumable: false,
            };
            if let Err(e) = self.transport.send(out).await {
                tracing::warn!(error = %e, %method, "could not answer a server request");
            }
        });
    }

    /// Sends a notification (handshake era).
    pub(crate) async fn notify(&self, method: &str, params: Option<Value>) -> Result<()> {
        let st = self.state();
        let body = jsonrpc::to_vec(&OutgoingNotification::new(method, params.as_ref()));
        let headers = self.headers(&st, method, &JsonObject::new(), false);
        self.transport
            .send(Outbound {
                id: None,
                body,
                headers,
                cancellable: false,
                resumable: false,
            })
            .await
    }

    pub(crate) fn start_pump(self: &Arc<Self>) {
        let Some(mut rx) = self.transport.take_unsolicited() else {
            return;
        };
        let weak: Weak<Inner> = Arc::downgrade(self);
        let task = tokio::spawn(async move {
            while let Some(msg) = rx.recv().await {
                let Some(inner) = weak.upgrade() else { return };
                match msg {
                    n @ Inbound::Notification { .. } => inner.on_notification(n),
                    r @ Inbound::Request { .. } => inner.spawn_server_request(r),
                    Inbound::Response { id, .. } => {
                        tracing::debug!(?id, "ignoring an unsolicited response");
                    }
                }
            }
        });
        *self.pump.lock().unwrap_or_else(|p| p.into_inner()) =
            Some(AbortOnDrop(task.abort_handle()));
    }
}
