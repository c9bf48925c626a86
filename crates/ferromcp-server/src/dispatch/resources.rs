//! `resources/list`, `resources/templates/list` and `resources/read`.

use super::Legacy;
use super::mrtr::OnFailure;
use crate::context::{ContextParts, RequestContext};
use crate::future::Reply;
use crate::raw_result::{Members, RawResult};
use crate::registry::Registry;
use crate::shared::Shared;
use crate::sieve::sieve_icons_title;
use bytes::Bytes;
use ferromcp_protocol::jsonrpc::RequestId;
use ferromcp_protocol::types::{
    ListResourceTemplatesResult, ListResourcesResult, PaginatedRequestParams,
    ReadResourceRequestParams,
};
use ferromcp_protocol::{ErrorObject, ProtocolVersion};
use serde_json::Value;
use std::sync::Arc;

impl Shared {
    pub(super) fn list_resources(
        &self,
        reg: &Registry,
        id: &RequestId,
        p: PaginatedRequestParams,
        version: ProtocolVersion,
    ) -> Reply {
        let (resources, next_cursor) = self.page(&reg.resources, p.cursor.as_deref(), |d| {
            let mut r = d.resource.clone();
            sieve_icons_title(version, &mut r.icons, &mut r.title);
            r
        })?;
        let r = ListResourcesResult {
            resources,
            next_cursor,
            ..Default::default()
        };
        Ok(self.finish_cacheable(id, r, self.cache_hints().resources_list, version))
    }

    pub(super) fn list_templates(
        &self,
        reg: &Registry,
        id: &RequestId,
        p: PaginatedRequestParams,
        version: ProtocolVersion,
    ) -> Reply {
        let (resource_templates, next_cursor) =
            self.page(&reg.templates, p.cursor.as_deref(), |d| {
                let mut t = d.template.clone();
                sieve_icons_title(version, &mut t.icons, &mut t.title);
                t
            })?;
        let r = ListResourceTemplatesResult {
            resource_templates,
            next_cursor,
            ..Default::default()
        };
        Ok(self.finish_cacheable(id, r, self.cache_hints().templates_list, version))
    }

    pub(super) async fn read_resource(
        self: Arc<Self>,
        reg: Arc<Registry>,
        p: ReadResourceRequestParams,
        parts: ContextParts,
        legacy: Legacy,
    ) -> Reply {
        let id = parts.id.clone();
        let version = parts.version;
        let (handler, raw, vars) = {
            if let Some(d) = reg.resource(&p.uri) {
                (d.handler.clone(), d.raw.clone(), Default::default())
            } else {
                let found = reg.templates.iter().find_map(|t| {
                    let vars = t.compiled.as_ref()?.match_uri(&p.uri)?;
                    Some((t.handler.clone(), t.raw.clone(), vars))
                });
                match found {
                    Some(f) => f,
                    None => return Err(resource_not_found(&p.uri, version).into()),
                }
            }
        };
        if let Some(raw) = raw {
            let uri = p.uri.clone();
            let runner = move |_v: &Value, cx: RequestContext| {
                raw.read(
                    crate::resource::ResourceRequest {
                        uri: uri.clone(),
                        vars: vars.clone(),
                    },
                    cx,
                )
            };
            return self
                .answer_mrtr(
                    "resources/read",
                    &p.uri,
                    Value::Null,
                    (p.input_responses, p.request_state),
                    parts,
                    legacy,
                    runner,
                    OnFailure::InternalError,
                    |s: &Self, r: RawResult| s.finish_raw_read(&id, &r, version),
                )
                .await;
        }
        let uri = p.uri.clone();
        let runner = move |_v: &Value, cx: RequestContext| {
            handler.read(
                crate::resource::ResourceRequest {
                    uri: uri.clone(),
                    vars: vars.clone(),
                },
                cx,
            )
        };
        self.answer_mrtr(
            "resources/read",
            &p.uri,
            Value::Null,
            (p.input_responses, p.request_state),
            parts,
            legacy,
            runner,
            OnFailure::InternalError,
            |s: &Self, r| Ok(s.finish_cacheable(&id, r, s.cache_hints().resources_read, version)),
        )
        .await
    }

    /// The answer to a `resources/read` whose result is already JSON text
    /// (see [`Self::splice_raw`]); it must be an object with distinct
    /// member names.
    pub(crate) fn finish_raw_read(
        &self,
        id: &RequestId,
        r: &RawResult,
        version: ProtocolVersion,
    ) -> Result<Bytes, ErrorObject> {
        let members = Members::of(r.get())?;
        self.splice_raw(
            id,
            &members,
            version,
            None,
            false,
            Some(self.cache_hints().resources_read),
        )
    }
}

pub(super) fn resource_not_found(uri: &str, version: ProtocolVersion) -> ErrorObject {
    let data = serde_json::json!({ "uri": uri });
    if version.is_modern() {
        // RES-03: -32602 on the modern wire (never -32002, ERR-05).
        ErrorObject::invalid_params(format_args!("Resource not found: {uri}")).with_data(data)
    } else {
        // LEGACY-08: -32002 on handshake revisions.
        ErrorObject::new(
            ferromcp_protocol::ErrorCode::LEGACY_RESOURCE_NOT_FOUND,
            "Resource not found",
        )
        .with_data(data)
    }
}
