//! Prompts and argument completion.
// PROMPT-*, CMPL-*

use crate::context::RequestContext;
use crate::error::{HandlerError, IntoHandlerError};
use crate::future::BoxFuture;
use crate::state::StateNeed;
use ferromcp_protocol::types::{
    CompleteRequestParams, Completion, GetPromptResult, Prompt, PromptArgument, PromptMessage,
};
use std::collections::BTreeMap;
use std::sync::Arc;

// PROMPT-02
/// Prompt arguments: name → value.
pub type PromptArgs = BTreeMap<String, String>;

/// Conversion of a prompt handler's return value into a `prompts/get` result.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be returned by a prompt handler",
    label = "not a prompt result type",
    note = "a prompt returns `String` (one user message), `GetPromptResult`, `Vec<PromptMessage>`, or a `Result<_, E>` of one of these"
)]
pub trait IntoPromptResult {
    /// Converts.
    fn into_prompt_result(self) -> Result<GetPromptResult, HandlerError>;
}

impl IntoPromptResult for GetPromptResult {
    fn into_prompt_result(self) -> Result<GetPromptResult, HandlerError> {
        Ok(self)
    }
}

/// One user message with the text: the common single-message prompt.
impl IntoPromptResult for String {
    fn into_prompt_result(self) -> Result<GetPromptResult, HandlerError> {
        vec![PromptMessage::new(
            ferromcp_protocol::types::Role::User,
            ferromcp_protocol::types::ContentBlock::text(self),
        )]
        .into_prompt_result()
    }
}

impl IntoPromptResult for &'static str {
    fn into_prompt_result(self) -> Result<GetPromptResult, HandlerError> {
        self.to_owned().into_prompt_result()
    }
}

impl IntoPromptResult for Vec<PromptMessage> {
    fn into_prompt_result(self) -> Result<GetPromptResult, HandlerError> {
        Ok(GetPromptResult {
            messages: self,
            ..GetPromptResult::default()
        })
    }
}

impl<T: IntoPromptResult, E: IntoHandlerError> IntoPromptResult for Result<T, E> {
    fn into_prompt_result(self) -> Result<GetPromptResult, HandlerError> {
        self.map_err(IntoHandlerError::into_handler_error)
            .and_then(IntoPromptResult::into_prompt_result)
    }
}

/// The type-erased prompt handler.
pub trait PromptHandler: Send + Sync + 'static {
    /// Renders the prompt with (already checked) arguments.
    fn get(
        &self,
        args: PromptArgs,
        cx: RequestContext,
    ) -> BoxFuture<Result<GetPromptResult, HandlerError>>;
}

/// A prompt ready to register.
#[derive(Clone)]
pub struct PromptDef {
    pub(crate) prompt: Prompt,
    pub(crate) handler: Arc<dyn PromptHandler>,
    /// State types the handler takes (checked at registration).
    pub(crate) state_needs: Vec<StateNeed>,
}

impl std::fmt::Debug for PromptDef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PromptDef")
            .field("prompt", &self.prompt)
            .finish_non_exhaustive()
    }
}

/// Starts a prompt definition.
pub fn prompt(name: impl Into<String>) -> PromptBuilder {
    PromptBuilder {
        prompt: Prompt {
            name: name.into(),
            ..Prompt::default()
        },
    }
}

/// Starts a definition of a prompt another server lists, to serve it
/// again under `name` (a proxy or gateway forwarding `prompts/get`): its
/// description, title and arguments are kept; its `_meta` is not. Finish
/// with a handler that forwards the request.
pub fn prompt_from(name: impl Into<String>, listed: Prompt) -> PromptBuilder {
    let mut b = prompt(name);
    if let Some(d) = listed.description {
        b = b.description(d);
    }
    if let Some(t) = listed.title {
        b = b.title(t);
    }
    for a in listed.arguments.unwrap_or_default() {
        b = b.argument(
            a.name,
            a.description.unwrap_or_default(),
            a.required.unwrap_or(false),
        );
    }
    b
}

/// Builds a [`PromptDef`].
#[derive(Debug, Clone)]
pub struct PromptBuilder {
    pub(crate) prompt: Prompt,
}

impl PromptBuilder {
    /// Description.
    pub fn description(mut self, d: impl Into<String>) -> Self {
        self.prompt.description = Some(d.into());
        self
    }
    /// Display title.
    pub fn title(mut self, t: impl Into<String>) -> Self {
        self.prompt.title = Some(t.into());
        self
    }
    /// Prompt `_meta` (keys are checked when the prompt is registered).
    pub fn meta(mut self, meta: ferromcp_protocol::types::Meta) -> Self {
        self.prompt.meta = Some(meta);
        self
    }
    // PROMPT-03
    /// Declares an argument; required ones are checked before the handler
    /// runs (missing → -32602).
    pub fn argument(
        mut self,
        name: impl Into<String>,
        description: impl Into<String>,
        required: bool,
    ) -> Self {
        self.prompt
            .arguments
            .get_or_insert_with(Vec::new)
            .push(PromptArgument {
                name: name.into(),
                description: Some(description.into()),
                required: Some(required),
                ..PromptArgument::default()
            });
        self
    }
}

/// The type-erased completion handler (`completion/complete`).
pub trait CompletionHandler: Send + Sync + 'static {
    /// Suggests values for the argument being completed.
    fn complete(
        &self,
        params: CompleteRequestParams,
        cx: RequestContext,
    ) -> BoxFuture<Result<Completion, HandlerError>>;
}

crate::state::needs_state!(PromptDef);
