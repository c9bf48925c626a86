//! `prompts/list` and `prompts/get`.

use super::Legacy;
use super::mrtr::OnFailure;
use crate::context::{ContextParts, RequestContext};
use crate::error::HandlerError;
use crate::future::{BoxFuture, Reply};
use crate::prompt::PromptDef;
use crate::registry::Registry;
use crate::shared::Shared;
use crate::sieve::sieve_icons_title;
use ferromcp_protocol::jsonrpc::RequestId;
use ferromcp_protocol::types::{GetPromptRequestParams, ListPromptsResult, PaginatedRequestParams};
use ferromcp_protocol::{ErrorObject, ProtocolVersion};
use serde_json::Value;
use std::sync::Arc;

impl Shared {
    pub(super) fn list_prompts(
        &self,
        reg: &Registry,
        id: &RequestId,
        p: PaginatedRequestParams,
        version: ProtocolVersion,
    ) -> Reply {
        let (prompts, next_cursor) = self.page(&reg.prompts, p.cursor.as_deref(), |d| {
            let mut pr = d.prompt.clone();
            sieve_icons_title(version, &mut pr.icons, &mut pr.title);
            pr
        })?;
        let r = ListPromptsResult {
            prompts,
            next_cursor,
            ..Default::default()
        };
        Ok(self.finish_cacheable(id, r, self.cache_hints().prompts_list, version))
    }

    pub(super) async fn get_prompt(
        self: Arc<Self>,
        def: Option<PromptDef>,
        p: GetPromptRequestParams,
        parts: ContextParts,
        legacy: Legacy,
    ) -> Reply {
        let id = parts.id.clone();
        let version = parts.version;
        let Some(def) = def else {
            return Err(
                ErrorObject::invalid_params(format_args!("Unknown prompt: {}", p.name)).into(),
            );
        };
        let args = p.arguments.unwrap_or_default();
        for a in def.prompt.arguments.iter().flatten() {
            if a.required == Some(true) && !args.contains_key(&a.name) {
                return Err(ErrorObject::invalid_params(format_args!(
                    "missing required argument {:?}",
                    a.name
                ))
                .into());
            }
        }
        let args_value = serde_json::to_value(&args).unwrap_or(Value::Null);
        let handler = def.handler.clone();
        let runner = move |_v: &Value,
                           cx: RequestContext|
              -> BoxFuture<
            Result<ferromcp_protocol::types::GetPromptResult, HandlerError>,
        > { handler.get(args.clone(), cx) };
        self.answer_mrtr(
            "prompts/get",
            &p.name,
            args_value,
            (p.input_responses, p.request_state),
            parts,
            legacy,
            runner,
            OnFailure::InternalError,
            |s: &Self, r| Ok(s.finish(&id, r, version)),
        )
        .await
    }
}
