//! The client core: the connection to one server and everything that
//! talks over it, apart from the public [`crate::Client`] facade.
//!
//! - this file: the shared state ([`Inner`]), what was learned of the
//!   server ([`State`]), the builder's settings ([`Config`]) and small
//!   helpers for results and cancellations;
//! - [`request`]: the one request path for both eras (envelope, headers,
//!   timeouts, progress, the protocol-level retries, the response cache);
//! - [`session`]: the handshake, era negotiation and the keep-alive;
//! - [`notify`]: notification fan-out and server→client requests;
//! - [`ttl`]: a cacheable result's unusable `ttlMs` read as 0.
//!
//! Every modern request carries the `_meta` envelope and, for
//! HTTP, `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name` and `Mcp-Param-*`
//! computed with the protocol crate's codec.
//! Handshake-era requests carry no envelope; after `initialize` they carry
//! the negotiated `MCP-Protocol-Version`.
// META-03/04, HDR-01…HDR-03, HDR-15, LEGACY-11
// Foreign type: serde_json (`Value`) in `Notice`, the one public item here: it is the JSON
// data model users get back (notification params); the SDK is built on serde_json by design.

mod notify;
mod request;
mod session;
mod ttl;

use crate::cache::ResponseCache;
use crate::error::{Error, Result};
use crate::handlers::Handlers;
use crate::negotiate::EraPreference;
use crate::transport::{AbortOnDrop, Transport, TransportKind};
use ferromcp_protocol::header::x_mcp_header::ParamHeaderMap;
use ferromcp_protocol::jsonrpc::{self, OutgoingNotification};
use ferromcp_protocol::method;
use ferromcp_protocol::types::*;
use ferromcp_protocol::{Era, ProtocolVersion, RequestId};
use serde::de::DeserializeOwned;
use serde_json::Value;
use serde_json::value::RawValue;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

/// A notification from the server that no request claimed: list changes,
/// log messages, resource updates (handshake era and stdio).
#[derive(Debug, Clone)]
pub struct Notice {
    /// The method, e.g. `notifications/tools/list_changed`.
    pub method: String,
    /// The params.
    pub params: Option<Value>,
}

/// Called with every unclaimed server notification.
pub type NoticeCallback = Arc<dyn Fn(&Notice) + Send + Sync>;

/// What the client learned about the server.
#[derive(Debug, Clone)]
pub(crate) struct State {
    pub era: Era,
    pub version: ProtocolVersion,
    pub capabilities: ServerCapabilities,
    /// Whether `capabilities` came from the server (initialize or
    /// `server/discover`), so a missing one means "not offered".
    pub capabilities_known: bool,
    pub server_info: Option<Implementation>,
    pub instructions: Option<String>,
}

/// Settings the builder hands to the core.
pub(crate) struct Config {
    pub handlers: Handlers,
    pub extra_capabilities: ClientCapabilities,
    pub client_info: Implementation,
    pub send_client_info: bool,
    /// Check `tools/call` results against the listed `outputSchema`.
    pub validate_output: bool,
    pub log_level: Option<LoggingLevel>,
    pub limits: crate::limits::Limits,
    pub cache: Option<Arc<ResponseCache>>,
    pub partition: String,
    pub on_notice: Option<NoticeCallback>,
    pub era: EraPreference,
    /// The revision pinned by [`crate::ClientBuilder::protocol_version`].
    pub pinned: Option<ProtocolVersion>,
    /// Which failed requests are sent again ([`crate::ClientBuilder::retry`]).
    pub retry: Option<crate::RetryPolicy>,
    /// The application's trace context ([`crate::ClientBuilder::trace_context`]).
    pub trace_context: Option<crate::trace::TraceContextProvider>,
}

pub(crate) struct Inner {
    pub(crate) transport: Arc<dyn Transport>,
    pub(crate) config: Config,
    capabilities: ClientCapabilities,
    state: RwLock<State>,
    next_id: AtomicI64,
    tool_headers: Mutex<HashMap<String, ParamHeaderMap>>,
    /// `outputSchema`s from the last `tools/list`, compiled on first use.
    pub(crate) output_schemas: crate::output::OutputSchemas,
    pump: Mutex<Option<AbortOnDrop>>,
    /// The keep-alive task, when keep-alive is on.
    keep_alive: Mutex<Option<AbortOnDrop>>,
    /// Why the connection was given up for dead (keep-alive), if it was.
    lost: Mutex<Option<String>>,
    closed: AtomicBool,
    identity: String,
    /// Permits for server→client requests being handled
    /// ([`crate::Limits::max_concurrent_server_requests`]).
    server_requests: Arc<tokio::sync::Semaphore>,
}

// CANCEL-02
/// The `notifications/cancelled` body for `id`.
pub(crate) fn cancelled_notification(id: &RequestId) -> Vec<u8> {
    let params = CancelledNotificationParams {
        request_id: Some(id.clone()),
        reason: Some("cancelled by the client".into()),
        meta: None,
    };
    jsonrpc::to_vec(&OutgoingNotification::new(
        method::NOTIFICATIONS_CANCELLED,
        Some(&params),
    ))
}

/// Decodes a raw result into `T`.
pub(crate) fn decode<T: DeserializeOwned>(raw: &RawValue, what: &str) -> Result<T> {
    serde_json::from_str(raw.get())
        .map_err(|e| Error::invalid(format!("malformed {what} result")).with_source(e))
}

fn object(v: Value) -> JsonObject {
    match v {
        Value::Object(o) => o,
        _ => JsonObject::new(),
    }
}

pub(crate) fn to_object<T: serde::Serialize>(p: &T) -> Result<JsonObject> {
    serde_json::to_value(p)
        .map(object)
        .map_err(|e| Error::invalid("cannot serialize request params").with_source(e))
}

impl Inner {
    /// The core over `transport`, before negotiation; the pump that routes
    /// unsolicited messages is started.
    pub(crate) fn new(transport: Arc<dyn Transport>, config: Config) -> Arc<Self> {
        let mut capabilities = config.handlers.capabilities();
        let extra = &config.extra_capabilities;
        capabilities.experimental = extra.experimental.clone();
        capabilities.extensions = extra.extensions.clone();
        let identity = transport.identity();
        let inner = Arc::new(Inner {
            transport,
            capabilities,
            state: RwLock::new(State {
                era: Era::Modern,
                version: ProtocolVersion::LATEST,
                capabilities: ServerCapabilities::default(),
                capabilities_known: false,
                server_info: None,
                instructions: None,
            }),
            next_id: AtomicI64::new(1),
            tool_headers: Mutex::new(HashMap::new()),
            output_schemas: crate::output::OutputSchemas::default(),
            pump: Mutex::new(None),
            keep_alive: Mutex::new(None),
            lost: Mutex::new(None),
            closed: AtomicBool::new(false),
            identity,
            server_requests: Arc::new(tokio::sync::Semaphore::new(
                config
                    .limits
                    .max_concurrent_server_requests
                    .min(tokio::sync::Semaphore::MAX_PERMITS),
            )),
            config,
        });
        inner.start_pump();
        inner
    }

    pub(crate) fn state(&self) -> State {
        self.state.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    pub(crate) fn set_state(&self, f: impl FnOnce(&mut State)) {
        f(&mut self.state.write().unwrap_or_else(|p| p.into_inner()));
    }

    pub(crate) fn next_id(&self) -> RequestId {
        RequestId::number(self.next_id.fetch_add(1, Ordering::Relaxed))
    }

    pub(crate) fn modern(&self) -> bool {
        self.state().era == Era::Modern
    }

    pub(crate) fn is_http(&self) -> bool {
        self.transport.kind() == TransportKind::Http
    }

    /// Why the connection was given up for dead, if it was.
    pub(crate) fn lost_reason(&self) -> Option<String> {
        self.lost.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The peer's identity (its URL or command line), for logs and the cache.
    pub(crate) fn identity(&self) -> &str {
        &self.identity
    }

    /// The capabilities this client declares.
    pub(crate) fn capabilities(&self) -> &ClientCapabilities {
        &self.capabilities
    }

    /// Whether the connection is closed (by the application or because it
    /// was lost).
    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Closes the transport once (a stdio child gets `grace` at each step
    /// when given) and stops the keep-alive and the pump.
    pub(crate) async fn close(&self, grace: Option<std::time::Duration>) {
        self.keep_alive
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if self.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        match grace {
            Some(g) => self.transport.close_within(g).await,
            None => self.transport.close().await,
        }
        self.pump.lock().unwrap_or_else(|p| p.into_inner()).take();
    }
}
