//! Resources and resource templates (RES-*).
//!
//! A static resource has a fixed URI; a template (RFC 6570) serves a
//! family of URIs and receives the variables it matched.

use crate::context::RequestContext;
use crate::error::HandlerError;
use crate::tool::BoxFuture;
use crate::uri_template::UriTemplate;
use mcp_protocol::types::{ReadResourceResult, Resource, ResourceContents, ResourceTemplate};
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
pub trait IntoReadResult {
    /// Converts.
    fn into_read_result(self) -> Result<ReadResourceResult, HandlerError>;
}

impl IntoReadResult for ReadResourceResult {
    fn into_read_result(self) -> Result<ReadResourceResult, HandlerError> {
        Ok(self)
    }
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

impl<T: IntoReadResult, E: Into<HandlerError>> IntoReadResult for Result<T, E> {
    fn into_read_result(self) -> Result<ReadResourceResult, HandlerError> {
        self.map_err(Into::into)
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

struct FnResource<F>(F);

impl<F, Fut, R> ResourceHandler for FnResource<F>
where
    F: Fn(ResourceRequest, RequestContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = R> + Send + 'static,
    R: IntoReadResult + 'static,
{
    fn read(
        &self,
        req: ResourceRequest,
        cx: RequestContext,
    ) -> BoxFuture<Result<ReadResourceResult, HandlerError>> {
        let fut = (self.0)(req, cx);
        Box::pin(async move { fut.await.into_read_result() })
    }
}

/// A static resource ready to register.
#[derive(Clone)]
pub struct ResourceDef {
    pub(crate) resource: Resource,
    pub(crate) handler: Arc<dyn ResourceHandler>,
}

impl std::fmt::Debug for ResourceDef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResourceDef")
            .field("resource", &self.resource)
            .finish_non_exhaustive()
    }
}

impl ResourceDef {
    /// A resource listed as `resource` and read by `handler`.
    pub fn new<F, Fut, R>(resource: Resource, handler: F) -> Self
    where
        F: Fn(ResourceRequest, RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = R> + Send + 'static,
        R: IntoReadResult + 'static,
    {
        Self {
            resource,
            handler: Arc::new(FnResource(handler)),
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
}

impl std::fmt::Debug for TemplateDef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TemplateDef")
            .field("template", &self.template)
            .finish_non_exhaustive()
    }
}

impl TemplateDef {
    /// A template listed as `template` (its `uriTemplate` is compiled once)
    /// and read by `handler` with the matched variables.
    pub fn new<F, Fut, R>(template: ResourceTemplate, handler: F) -> Self
    where
        F: Fn(ResourceRequest, RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = R> + Send + 'static,
        R: IntoReadResult + 'static,
    {
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
            handler: Arc::new(FnResource(handler)),
        }
    }
}
