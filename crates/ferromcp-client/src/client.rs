//! The public [`Client`] facade: typed MCP operations over the core
//! (`crate::core`), which owns the connection.
// Foreign type: serde_json (`Value`, `Map`, `RawValue`, `Number`, `Error`) in this module's public
// signatures: it is the JSON data model users pass in and get back (arbitrary params, results,
// schemas, `_meta`); the SDK is built on serde_json by design.

use crate::core::{Config, Inner, decode, to_object};
use crate::error::{Error, ErrorKind, Result};
use crate::options::RequestOptions;
use crate::subscription::Subscription;
use crate::transport::{Transport, TransportKind};
use ferromcp_protocol::method;
use ferromcp_protocol::types::*;
use ferromcp_protocol::{Era, ProtocolVersion};
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::sync::Arc;

/// An MCP client connected to one server. Cheap to clone; the connection
/// closes when the last clone is dropped (or on [`Client::close`]).
#[derive(Clone)]
pub struct Client {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("server", &self.inner.identity())
            .field("state", &self.inner.state())
            .finish()
    }
}

impl Client {
    /// A client over `transport`, before negotiation.
    pub(crate) fn from_transport(transport: Arc<dyn Transport>, config: Config) -> Self {
        Client {
            inner: Inner::new(transport, config),
        }
    }

    /// Negotiates; on failure the transport is closed.
    pub(crate) async fn start(self) -> Result<Self> {
        match self.inner.negotiate().await {
            Ok(()) => {
                self.inner.start_keep_alive();
                Ok(self)
            }
            Err(e) => {
                self.close().await;
                Err(e)
            }
        }
    }

    /// The negotiated era.
    pub fn era(&self) -> Era {
        self.inner.state().era
    }

    /// The negotiated protocol version.
    pub fn protocol_version(&self) -> ProtocolVersion {
        self.inner.state().version
    }

    /// The server's capabilities (from `server/discover` or `initialize`).
    pub fn server_capabilities(&self) -> ServerCapabilities {
        self.inner.state().capabilities
    }

    /// The server's self-description, when it sent one.
    pub fn server_info(&self) -> Option<Implementation> {
        self.inner.state().server_info
    }

    /// The server's instructions, when it sent some.
    pub fn instructions(&self) -> Option<String> {
        self.inner.state().instructions
    }

    /// The kind of transport in use.
    pub fn transport_kind(&self) -> TransportKind {
        self.inner.transport.kind()
    }

    /// The capabilities this client declares.
    pub fn capabilities(&self) -> &ClientCapabilities {
        self.inner.capabilities()
    }

    /// Sends any request and returns its raw result (custom methods;
    /// protocol retries apply, MRTR does not).
    pub async fn request(
        &self,
        method: &str,
        params: Option<JsonObject>,
        opts: RequestOptions,
    ) -> Result<Value> {
        let raw = self
            .inner
            .request_cached(method, &params.unwrap_or_default(), &opts)
            .await?;
        decode(&raw, method)
    }

    /// `server/discover` (modern era; cached per its hints).
    pub async fn discover(&self) -> Result<DiscoverResult> {
        self.require_modern("server/discover")?;
        let raw = self
            .inner
            .request_cached(
                method::SERVER_DISCOVER,
                &JsonObject::new(),
                &RequestOptions::default(),
            )
            .await?;
        decode(&raw, "server/discover")
    }

    pub(crate) fn require_modern(&self, what: &str) -> Result<()> {
        if self.inner.modern() {
            Ok(())
        } else {
            Err(Error::new(
                ErrorKind::Unsupported,
                format!("{what} exists only in the modern era (2026-07-28)"),
            ))
        }
    }

    pub(crate) fn require_handshake(&self, what: &str) -> Result<()> {
        if self.inner.modern() {
            Err(Error::new(
                ErrorKind::Unsupported,
                format!("{what} exists only in the handshake era"),
            ))
        } else {
            Ok(())
        }
    }

    // PAGE-04, PAGE-02
    /// Follows `nextCursor` to the end, bounded by
    /// [`crate::Limits::max_list_pages`] (a server repeating a cursor must
    /// not loop the client forever; the specification allows any string, even "").
    pub(crate) async fn all_pages<T, Fut>(
        &self,
        mut page: impl FnMut(Option<String>) -> Fut,
    ) -> Result<Vec<T>>
    where
        Fut: std::future::Future<Output = Result<(Vec<T>, Option<String>)>>,
    {
        let max = self.inner.config.limits.max_list_pages;
        let mut all = Vec::new();
        let mut cursor = None;
        for _ in 0..max {
            let (items, next) = page(cursor).await?;
            all.extend(items);
            match next {
                Some(c) => cursor = Some(c),
                None => return Ok(all),
            }
        }
        Err(Error::invalid(format!(
            "the list did not end within {max} pages"
        )))
    }

    pub(crate) async fn page<T: DeserializeOwned>(
        &self,
        method: &str,
        cursor: Option<String>,
        opts: &RequestOptions,
    ) -> Result<T> {
        let mut p = JsonObject::new();
        if let Some(c) = cursor {
            p.insert("cursor".into(), Value::String(c)); // PAGE-02: opaque
        }
        let raw = self.inner.request_cached(method, &p, opts).await?;
        decode(&raw, method)
    }

    // HDR-14
    /// One page of `tools/list`; tools with invalid `x-mcp-header`
    /// annotations are left out on HTTP.
    pub async fn list_tools_page(&self, cursor: Option<String>) -> Result<ListToolsResult> {
        let mut page: ListToolsResult = self
            .page(method::TOOLS_LIST, cursor, &RequestOptions::default())
            .await?;
        page.tools = self.inner.filter_tools(std::mem::take(&mut page.tools));
        Ok(page)
    }

    // PAGE-04
    /// Every tool, following `nextCursor`.
    pub async fn list_tools(&self) -> Result<Vec<Tool>> {
        self.all_pages(|c| async move {
            let p = self.list_tools_page(c).await?;
            Ok((p.tools, p.next_cursor))
        })
        .await
    }

    /// One page of `prompts/list`.
    pub async fn list_prompts_page(&self, cursor: Option<String>) -> Result<ListPromptsResult> {
        self.page(method::PROMPTS_LIST, cursor, &RequestOptions::default())
            .await
    }

    /// Every prompt.
    pub async fn list_prompts(&self) -> Result<Vec<Prompt>> {
        self.all_pages(|c| async move {
            let p = self.list_prompts_page(c).await?;
            Ok((p.prompts, p.next_cursor))
        })
        .await
    }

    /// One page of `resources/list`.
    pub async fn list_resources_page(&self, cursor: Option<String>) -> Result<ListResourcesResult> {
        self.page(method::RESOURCES_LIST, cursor, &RequestOptions::default())
            .await
    }

    /// Every resource.
    pub async fn list_resources(&self) -> Result<Vec<Resource>> {
        self.all_pages(|c| async move {
            let p = self.list_resources_page(c).await?;
            Ok((p.resources, p.next_cursor))
        })
        .await
    }

    /// One page of `resources/templates/list`.
    pub async fn list_resource_templates_page(
        &self,
        cursor: Option<String>,
    ) -> Result<ListResourceTemplatesResult> {
        self.page(
            method::RESOURCES_TEMPLATES_LIST,
            cursor,
            &RequestOptions::default(),
        )
        .await
    }

    /// Every resource template.
    pub async fn list_resource_templates(&self) -> Result<Vec<ResourceTemplate>> {
        self.all_pages(|c| async move {
            let p = self.list_resource_templates_page(c).await?;
            Ok((p.resource_templates, p.next_cursor))
        })
        .await
    }

    /// `tools/call`, with MRTR rounds fulfilled by the handlers.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
    ) -> Result<CallToolResult> {
        self.call_tool_with(
            CallToolRequestParams::new(name, arguments),
            RequestOptions::default(),
        )
        .await
    }

    /// A typed `tools/call`: `arguments` is any `Serialize` value that is a
    /// JSON object (a struct, a map, `serde_json::json!({..})`), and the
    /// answer is read as `T` from the tool's `structuredContent`, else from
    /// its text (parsed as JSON, or taken as a string when `T` is one). A
    /// result with `isError: true` is an error ([`Error::is_tool_error`])
    /// carrying its text.
    ///
    /// ```no_run
    /// # async fn demo(client: ferromcp_client::Client) -> Result<(), ferromcp_client::Error> {
    /// #[derive(serde::Serialize)]
    /// struct Add { a: i64, b: i64 }
    /// #[derive(serde::Deserialize)]
    /// struct Sum { sum: i64 }
    ///
    /// let s: Sum = client.call_typed("add", &Add { a: 2, b: 3 }).await?;
    /// let echoed: String = client.call_typed("echo", &serde_json::json!({"text": "hi"})).await?;
    /// # let _ = (s.sum, echoed); Ok(()) }
    /// ```
    pub async fn call_typed<A: serde::Serialize + ?Sized, T: DeserializeOwned>(
        &self,
        name: &str,
        arguments: &A,
    ) -> Result<T> {
        let arguments = match serde_json::to_value(arguments) {
            Ok(Value::Object(m)) => Some(m),
            Ok(Value::Null) => None,
            Ok(other) => {
                return Err(Error::config(format!(
                    "the arguments of {name:?} must be a JSON object, not {other}"
                )));
            }
            Err(e) => {
                return Err(Error::config(format!(
                    "the arguments of {name:?} cannot be serialized: {e}"
                )));
            }
        };
        let r = self.call_tool(name, arguments).await?;
        let text = r
            .content
            .iter()
            .filter_map(|b| b.as_text())
            .collect::<Vec<_>>()
            .join("\n");
        if r.is_error() {
            return Err(Error::new(ErrorKind::ToolError, text));
        }
        if let Some(v) = &r.structured_content {
            return T::deserialize(v).map_err(|e| {
                Error::invalid(format!(
                    "the structuredContent of {name:?} is not the type asked for: {e}"
                ))
            });
        }
        if let Ok(t) = serde_json::from_str::<T>(&text) {
            return Ok(t);
        }
        T::deserialize(Value::String(text)).map_err(|e| {
            Error::invalid(format!(
                "the result of {name:?} has no structuredContent and its text is not the type asked for: {e}"
            ))
        })
    }

    /// `prompts/get` of `name` with string `arguments`, shaped like
    /// [`Self::call_tool`]: `client.prompt("review", [("code", src)])`.
    pub async fn prompt<K: Into<String>, V: Into<String>>(
        &self,
        name: &str,
        arguments: impl IntoIterator<Item = (K, V)>,
    ) -> Result<GetPromptResult> {
        let mut params = GetPromptRequestParams::new(name);
        let args: std::collections::BTreeMap<String, String> = arguments
            .into_iter()
            .map(|(k, v)| (k.into(), v.into()))
            .collect();
        if !args.is_empty() {
            params.arguments = Some(args);
        }
        self.get_prompt(params, RequestOptions::default()).await
    }

    /// `tools/call` with explicit params and options.
    pub async fn call_tool_with(
        &self,
        params: CallToolRequestParams,
        opts: RequestOptions,
    ) -> Result<CallToolResult> {
        let name = params.name.clone();
        let r: CallToolResult =
            crate::mrtr::drive(&self.inner, method::TOOLS_CALL, to_object(&params)?, &opts).await?;
        if self.inner.config.validate_output {
            self.inner.output_schemas.check(&name, &r)?;
        }
        Ok(r)
    }

    /// `prompts/get`, with MRTR.
    pub async fn get_prompt(
        &self,
        params: GetPromptRequestParams,
        opts: RequestOptions,
    ) -> Result<GetPromptResult> {
        crate::mrtr::drive(&self.inner, method::PROMPTS_GET, to_object(&params)?, &opts).await
    }

    /// `resources/read`, with MRTR; complete first-round results are cached.
    pub async fn read_resource(&self, uri: &str) -> Result<ReadResourceResult> {
        let params = to_object(&ReadResourceRequestParams::new(uri))?;
        crate::mrtr::drive(
            &self.inner,
            method::RESOURCES_READ,
            params,
            &RequestOptions::default(),
        )
        .await
    }

    /// `completion/complete`.
    pub async fn complete(&self, params: CompleteRequestParams) -> Result<CompleteResult> {
        let raw = self
            .inner
            .request_cached(
                method::COMPLETION_COMPLETE,
                &to_object(&params)?,
                &RequestOptions::default(),
            )
            .await?;
        decode(&raw, "completion/complete")
    }

    /// One round of an MRTR-capable request (`tools/call`, `prompts/get`,
    /// `resources/read`), for callers driving input requests themselves:
    /// fill `inputResponses`/`requestState` in `params` from the previous
    /// round.
    pub async fn request_round<T: DeserializeOwned>(
        &self,
        method: &str,
        params: JsonObject,
        opts: RequestOptions,
    ) -> Result<MaybeInputRequired<T>> {
        let raw = self.inner.request_cached(method, &params, &opts).await?;
        crate::mrtr::classify(method, &raw)
    }

    /// Answers input requests with the installed handlers, concurrently.
    pub async fn fulfil(&self, requests: &InputRequests) -> Result<InputResponses> {
        crate::mrtr::fulfil(&self.inner.config.handlers, requests).await
    }

    /// `subscriptions/listen` (modern): returns once the server acknowledged.
    pub async fn listen(&self, filter: SubscriptionFilter) -> Result<Subscription> {
        self.require_modern("subscriptions/listen")?; // SUB-14
        Subscription::open(self.inner.clone(), filter).await
    }

    // SUB-11
    /// `subscriptions/listen` that survives the loss of its stream: when the
    /// stream breaks (or the server ends it, e.g. draining for a restart
    /// behind a load balancer), it listens again with `policy`'s backoff
    /// and yields [`crate::SubscriptionEvent::Relistened`], telling the
    /// application to refetch. Opt-in; [`Client::listen`] keeps
    /// ending at the first loss.
    pub async fn listen_resilient(
        &self,
        filter: SubscriptionFilter,
        policy: crate::RetryPolicy,
    ) -> Result<crate::ResilientSubscription> {
        self.require_modern("subscriptions/listen")?; // SUB-14
        crate::subscription::ResilientSubscription::open(self.inner.clone(), filter, policy).await
    }

    /// `resources/subscribe` (handshake era; updates arrive as [`Notice`](crate::Notice)s).
    pub async fn subscribe_resource(&self, uri: &str) -> Result<()> {
        self.require_handshake("resources/subscribe")?;
        let p = to_object(&SubscribeRequestParams {
            uri: uri.to_owned(),
        })?;
        self.inner
            .request_raw(method::RESOURCES_SUBSCRIBE, &p, &RequestOptions::default())
            .await
            .map(drop)
    }

    /// `resources/unsubscribe` (handshake era).
    pub async fn unsubscribe_resource(&self, uri: &str) -> Result<()> {
        self.require_handshake("resources/unsubscribe")?;
        let p = to_object(&UnsubscribeRequestParams {
            uri: uri.to_owned(),
        })?;
        self.inner
            .request_raw(
                method::RESOURCES_UNSUBSCRIBE,
                &p,
                &RequestOptions::default(),
            )
            .await
            .map(drop)
    }

    /// `ping` (handshake era).
    pub async fn ping(&self) -> Result<()> {
        self.require_handshake("ping")?;
        self.inner
            .request_raw(method::PING, &JsonObject::new(), &RequestOptions::default())
            .await
            .map(drop)
    }

    /// `logging/setLevel` (handshake era; modern requests use the builder's
    /// log level instead).
    pub async fn set_log_level(&self, level: LoggingLevel) -> Result<()> {
        self.require_handshake("logging/setLevel")?;
        let p = to_object(&SetLevelRequestParams { level })?;
        self.inner
            .request_raw(method::LOGGING_SET_LEVEL, &p, &RequestOptions::default())
            .await
            .map(drop)
    }

    /// Closes the connection: DELETE the session (HTTP), stop the child
    /// (stdio). Pending requests fail.
    pub async fn close(&self) {
        self.close_inner(None).await;
    }

    /// Closes like [`Self::close`], but a stdio child gets at most `grace`
    /// at each step (stdin closed, then SIGTERM, then SIGKILL) instead of
    /// [`crate::Limits::shutdown_grace`]: for when the application already
    /// cancelled what the server was doing (after Ctrl-C) and waiting the
    /// full grace for a busy server helps nobody.
    pub async fn close_within(&self, grace: std::time::Duration) {
        self.close_inner(Some(grace)).await;
    }

    /// Why the connection was given up for dead, when the keep-alive
    /// ([`crate::ClientBuilder::keep_alive`]) found the server gone; every
    /// request fails after that.
    pub fn lost_reason(&self) -> Option<String> {
        self.inner.lost_reason()
    }

    /// Whether the client is closed (by [`Self::close`] or because the
    /// connection was lost).
    pub fn is_closed(&self) -> bool {
        self.inner.is_closed()
    }

    async fn close_inner(&self, grace: Option<std::time::Duration>) {
        self.inner.close(grace).await;
    }
}
