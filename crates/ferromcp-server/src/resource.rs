//! Resources and resource templates.
//!
//! A static resource has a fixed URI; a template (RFC 6570) serves a
//! family of URIs and receives the variables it matched. Both are declared
//! like tools, with [`resource`] and [`resource_template`]:
//!
//! ```
//! use ferromcp_server::{Server, resource, resource_template, ResourceRequest, RequestContext};
//! use ferromcp_server::protocol::types::ResourceContents;
//!
//! let server = Server::builder("files", "1.0.0")
//!     .resource(
//!         resource("file:///README", "README")
//!             .description("The read-me")
//!             .mime_type("text/plain")
//!             .handler(|r: ResourceRequest, _cx: RequestContext| async move {
//!                 ResourceContents::text(r.uri, None, "Read me.")
//!             }),
//!     )
//!     .resource_template(
//!         resource_template("file:///notes/{name}", "notes")
//!             .description("One note")
//!             .handler(|r: ResourceRequest, _cx: RequestContext| async move {
//!                 let name = r.vars.get("name").cloned().unwrap_or_default();
//!                 ResourceContents::text(r.uri, None, format!("note {name}"))
//!             }),
//!     )
//!     .build();
//! assert!(server.is_ok());
//! ```
// RES-*

use crate::context::RequestContext;
use crate::error::{HandlerError, IntoHandlerError};
use crate::future::BoxFuture;
use crate::raw_result::RawResult;
use crate::state::StateNeed;
use crate::uri_template::UriTemplate;
use ferromcp_protocol::types::{
    Annotations, Icon, Meta, ReadResourceResult, Resource, ResourceContents, ResourceTemplate,
};
use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

/// What a resource handler receives.
#[derive(Debug, Clone)]
pub struct ResourceRequest {
    /// The URI being read.
    pub uri: String,
    /// Variables matched by the template (empty for static resources).
    pub vars: BTreeMap<String, String>,
}

/// Conversion of a resource handler's return value into a read result.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be returned by a resource handler",
    label = "not a resource read result type",
    note = "a resource returns `String` (text at the URI read, with the declared MIME type), `ReadResourceResult`, `ResourceContents`, `Vec<ResourceContents>`, or a `Result<_, E>` of one of these"
)]
pub trait IntoReadResult {
    /// Converts.
    fn into_read_result(self) -> Result<ReadResourceResult, HandlerError>;
}

impl IntoReadResult for ReadResourceResult {
    fn into_read_result(self) -> Result<ReadResourceResult, HandlerError> {
        Ok(self)
    }
}

// RES-*
/// Text contents of the URI being read, with the MIME type the resource
/// or template declared: the handler need not repeat either.
impl IntoReadResult for String {
    fn into_read_result(self) -> Result<ReadResourceResult, HandlerError> {
        ResourceContents::text(String::new(), None, self).into_read_result()
    }
}

impl IntoReadResult for &'static str {
    fn into_read_result(self) -> Result<ReadResourceResult, HandlerError> {
        self.to_owned().into_read_result()
    }
}

/// Fills what a `String` result left out: contents without a URI get the
/// URI that was read and, unless they have one, the declared MIME type.
pub(crate) fn complete(
    result: Result<ReadResourceResult, HandlerError>,
    uri: &str,
    mime: Option<&str>,
) -> Result<ReadResourceResult, HandlerError> {
    let mut r = result?;
    for c in &mut r.contents {
        let (u, m) = match c {
            ResourceContents::Text(t) => (&mut t.uri, &mut t.mime_type),
            ResourceContents::Blob(b) => (&mut b.uri, &mut b.mime_type),
        };
        if u.is_empty() {
            *u = uri.to_owned();
            if m.is_none() {
                *m = mime.map(str::to_owned);
            }
        }
    }
    Ok(r)
}

impl IntoReadResult for ResourceContents {
    fn into_read_result(self) -> Result<ReadResourceResult, HandlerError> {
        Ok(ReadResourceResult {
            contents: vec![self],
            ..ReadResourceResult::default()
        })
    }
}

impl IntoReadResult for Vec<ResourceContents> {
    fn into_read_result(self) -> Result<ReadResourceResult, HandlerError> {
        Ok(ReadResourceResult {
            contents: self,
            ..ReadResourceResult::default()
        })
    }
}

impl<T: IntoReadResult, E: IntoHandlerError> IntoReadResult for Result<T, E> {
    fn into_read_result(self) -> Result<ReadResourceResult, HandlerError> {
        self.map_err(IntoHandlerError::into_handler_error)
            .and_then(IntoReadResult::into_read_result)
    }
}

/// The type-erased resource handler.
pub trait ResourceHandler: Send + Sync + 'static {
    /// Reads the resource.
    fn read(
        &self,
        req: ResourceRequest,
        cx: RequestContext,
    ) -> BoxFuture<Result<ReadResourceResult, HandlerError>>;
}

/// The server's side of a raw-result reader.
pub(crate) trait RawReadHandler: Send + Sync + 'static {
    fn read(
        &self,
        req: ResourceRequest,
        cx: RequestContext,
    ) -> BoxFuture<Result<RawResult, HandlerError>>;
}

/// A raw-result reader function, shared by the raw path and its typed
/// adapter.
struct RawRead<F>(Arc<F>);

impl<F, Fut> RawReadHandler for RawRead<F>
where
    F: Fn(ResourceRequest, RequestContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<RawResult, HandlerError>> + Send + 'static,
{
    fn read(
        &self,
        req: ResourceRequest,
        cx: RequestContext,
    ) -> BoxFuture<Result<RawResult, HandlerError>> {
        Box::pin((self.0)(req, cx))
    }
}

impl<F, Fut> ResourceHandler for RawRead<F>
where
    F: Fn(ResourceRequest, RequestContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<RawResult, HandlerError>> + Send + 'static,
{
    fn read(
        &self,
        req: ResourceRequest,
        cx: RequestContext,
    ) -> BoxFuture<Result<ReadResourceResult, HandlerError>> {
        let fut = (self.0)(req, cx);
        Box::pin(async move {
            let raw = fut.await?;
            serde_json::from_str(raw.get()).map_err(|e| {
                HandlerError::Protocol(ferromcp_protocol::ErrorObject::internal(format!(
                    "the resources/read result is malformed: {e}"
                )))
            })
        })
    }
}

/// A static resource ready to register.
#[derive(Clone)]
pub struct ResourceDef {
    pub(crate) resource: Resource,
    pub(crate) handler: Arc<dyn ResourceHandler>,
    /// State types the handler takes (checked at registration).
    pub(crate) state_needs: Vec<StateNeed>,
    /// A reader whose result is already JSON text ([`ResourceDef::raw`]).
    pub(crate) raw: Option<Arc<dyn RawReadHandler>>,
}

impl std::fmt::Debug for ResourceDef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResourceDef")
            .field("resource", &self.resource)
            .finish_non_exhaustive()
    }
}

impl ResourceDef {
    /// The wire definition as listed in `resources/list`.
    pub fn definition(&self) -> &Resource {
        &self.resource
    }

    /// A resource listed as `resource` whose reader returns the
    /// `resources/read` result as JSON text, for a relay: its members
    /// reach the client as they are (unknown ones included; no `uri` or
    /// `mimeType` is filled in). The server still sets `resultType`,
    /// stamps `serverInfo` and fills the missing cache hints for
    /// 2026-07-28 clients, as for any result.
    pub fn raw<F, Fut>(resource: Resource, handler: F) -> Self
    where
        F: Fn(ResourceRequest, RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<RawResult, HandlerError>> + Send + 'static,
    {
        let f = Arc::new(handler);
        Self {
            resource,
            handler: Arc::new(RawRead(f.clone())),
            state_needs: Vec::new(),
            raw: Some(Arc::new(RawRead(f))),
        }
    }
}

/// A resource template ready to register.
#[derive(Clone)]
pub struct TemplateDef {
    pub(crate) template: ResourceTemplate,
    pub(crate) compiled: Option<Arc<UriTemplate>>,
    pub(crate) error: Option<String>,
    pub(crate) handler: Arc<dyn ResourceHandler>,
    /// State types the handler takes (checked at registration).
    pub(crate) state_needs: Vec<StateNeed>,
    /// A reader whose result is already JSON text ([`TemplateDef::raw`]).
    pub(crate) raw: Option<Arc<dyn RawReadHandler>>,
}

impl std::fmt::Debug for TemplateDef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TemplateDef")
            .field("template", &self.template)
            .finish_non_exhaustive()
    }
}

impl TemplateDef {
    /// The wire definition as listed in `resources/templates/list`.
    pub fn definition(&self) -> &ResourceTemplate {
        &self.template
    }

    /// A template whose reader returns the `resources/read` result as
    /// JSON text (see [`ResourceDef::raw`]).
    pub fn raw<F, Fut>(template: ResourceTemplate, handler: F) -> Self
    where
        F: Fn(ResourceRequest, RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<RawResult, HandlerError>> + Send + 'static,
    {
        let f = Arc::new(handler);
        let mut t = Self::compile(template, Arc::new(RawRead(f.clone())), Vec::new());
        t.raw = Some(Arc::new(RawRead(f)));
        t
    }

    pub(crate) fn compile(
        template: ResourceTemplate,
        handler: Arc<dyn ResourceHandler>,
        state_needs: Vec<StateNeed>,
    ) -> Self {
        let (compiled, error) = match UriTemplate::parse(&template.uri_template) {
            Ok(t) => (Some(Arc::new(t)), None),
            Err(e) => (
                None,
                Some(format!(
                    "invalid uriTemplate {:?}: {e}",
                    template.uri_template
                )),
            ),
        };
        Self {
            template,
            compiled,
            error,
            handler,
            state_needs,
            raw: None,
        }
    }
}

/// Starts a static resource definition: `uri` and `name` as listed in
/// `resources/list`; finish with [`ResourceBuilder::handler`].
///
/// ```
/// use ferromcp_server::{resource, ResourceRequest, RequestContext};
/// use ferromcp_server::protocol::types::ResourceContents;
///
/// let def = resource("mem://motd", "motd")
///     .title("Message of the day")
///     .mime_type("text/plain")
///     .handler(|r: ResourceRequest, _cx: RequestContext| async move {
///         ResourceContents::text(r.uri, None, "Be kind.")
///     });
/// assert_eq!(def.definition().uri, "mem://motd");
/// ```
pub fn resource(uri: impl Into<String>, name: impl Into<String>) -> ResourceBuilder {
    ResourceBuilder {
        resource: Resource::new(uri, name),
    }
}

/// Builds a [`ResourceDef`] (see [`resource`] for an example).
#[derive(Debug, Clone)]
pub struct ResourceBuilder {
    pub(crate) resource: Resource,
}

/// Starts a resource template definition: an RFC 6570 `uri_template` and a
/// `name`; finish with [`TemplateBuilder::handler`]. The handler receives
/// the matched variables in [`ResourceRequest::vars`].
///
/// ```
/// use ferromcp_server::{resource_template, ResourceRequest, RequestContext};
/// use ferromcp_server::protocol::types::ResourceContents;
///
/// let def = resource_template("mem://users/{id}", "users")
///     .description("One user")
///     .handler(|r: ResourceRequest, _cx: RequestContext| async move {
///         let id = r.vars.get("id").ok_or("no id")?;
///         Ok::<_, &str>(ResourceContents::text(r.uri.clone(), None, format!("user {id}")))
///     });
/// assert_eq!(def.definition().uri_template, "mem://users/{id}");
/// ```
pub fn resource_template(
    uri_template: impl Into<String>,
    name: impl Into<String>,
) -> TemplateBuilder {
    TemplateBuilder {
        template: ResourceTemplate {
            uri_template: uri_template.into(),
            name: name.into(),
            ..ResourceTemplate::default()
        },
    }
}

/// Builds a [`TemplateDef`] (see [`resource_template`] for an example).
#[derive(Debug, Clone)]
pub struct TemplateBuilder {
    pub(crate) template: ResourceTemplate,
}

macro_rules! descriptor_setters {
    ($field:ident) => {
        /// Human-readable description.
        pub fn description(mut self, d: impl Into<String>) -> Self {
            self.$field.description = Some(d.into());
            self
        }
        /// Display title.
        pub fn title(mut self, t: impl Into<String>) -> Self {
            self.$field.title = Some(t.into());
            self
        }
        /// MIME type of the contents.
        pub fn mime_type(mut self, m: impl Into<String>) -> Self {
            self.$field.mime_type = Some(m.into());
            self
        }
        /// Audience / priority annotations.
        pub fn annotations(mut self, a: Annotations) -> Self {
            self.$field.annotations = Some(a);
            self
        }
        /// Icons.
        pub fn icons(mut self, icons: Vec<Icon>) -> Self {
            self.$field.icons = Some(icons);
            self
        }
        /// `_meta` (keys are checked when registered).
        pub fn meta(mut self, meta: Meta) -> Self {
            self.$field.meta = Some(meta);
            self
        }
    };
}

impl ResourceBuilder {
    descriptor_setters!(resource);

    /// Size in bytes, if known.
    pub fn size(mut self, bytes: u64) -> Self {
        self.resource.size = Some(bytes);
        self
    }
}

impl TemplateBuilder {
    descriptor_setters!(template);
}

crate::state::needs_state!(ResourceDef, TemplateDef);
