//! Tools: a name, a JSON Schema for the arguments, and an async handler.
//!
//! ```
//! use ferromcp_server::{tool, RequestContext};
//! use schemars::JsonSchema;
//! use serde::Deserialize;
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct Echo {
//!     /// The text to send back.
//!     text: String,
//! }
//!
//! async fn echo(args: Echo, _cx: RequestContext) -> String {
//!     args.text
//! }
//!
//! let def = tool("echo").description("Echoes the text back").handler(echo);
//! # let _ = def;
//! ```
//!
//! The params type derives the tool's `inputSchema` (JSON Schema 2020-12 via
//! schemars); arguments are validated against it before the handler runs,
//! and failures reach the model as an `isError` result.
// TOOL-06

use crate::context::RequestContext;
use crate::error::{HandlerError, IntoHandlerError};
use crate::field_order;
use crate::raw_result::RawResult;
use crate::state::StateNeed;
use crate::tasks::support::{TaskCreation, TaskSupport};
use ferromcp_protocol::types::{
    CallToolResult, ContentBlock, Icon, JsonObject, Tool, ToolAnnotations,
};
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::future::Future;
use std::sync::Arc;

pub use crate::future::BoxFuture;

/// The type-erased tool handler the server calls.
pub trait ToolHandler: Send + Sync + 'static {
    /// Runs the tool with validated arguments (always a JSON object).
    /// They are lent, not given: the server keeps them to bind a
    /// `requestState` to them if the tool asks for input (MRTR).
    fn call(
        &self,
        arguments: &Value,
        cx: RequestContext,
    ) -> BoxFuture<Result<CallToolResult, HandlerError>>;

    /// Runs the tool with its arguments as JSON text: an object, already
    /// checked against the `inputSchema`. The default makes a `Value` of
    /// it and calls [`call`](Self::call); a handler built by
    /// [`ToolBuilder::handler`] deserializes its arguments type straight
    /// from the text, so they are typed once.
    #[doc(hidden)]
    fn call_json(
        &self,
        arguments: &str,
        cx: RequestContext,
    ) -> BoxFuture<Result<CallToolResult, HandlerError>> {
        match serde_json::from_str::<Value>(arguments) {
            Ok(v) => self.call(&v, cx),
            Err(e) => {
                let e = ferromcp_protocol::ErrorObject::internal(format_args!(
                    "the arguments are not JSON: {e}"
                ));
                Box::pin(async move { Err(HandlerError::Protocol(e)) })
            }
        }
    }
}

// TOOL-06
/// Conversion of a handler's return value into a tool result.
///
/// Implemented for text (`String`, `&'static str`), content blocks,
/// [`CallToolResult`], [`Json<T>`] (structured output) and `Result<T, E>`
/// of any of those with `E` a [`HandlerError`], an
/// [`InputRequired`](crate::InputRequired) or anything `Display` (see
/// [`IntoHandlerError`](crate::IntoHandlerError)): an `Err` that is not a
/// JSON-RPC error object becomes a result with `isError: true` carrying
/// the message, which the model reads.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be returned by a tool handler",
    label = "not a tool result type",
    note = "a tool returns `String`, `&'static str`, `Json<T>` (structured output, `T: Serialize + JsonSchema`), `CallToolResult`, `ContentBlock`, `Vec<ContentBlock>`, or a `Result<_, E>` of one of these: wrap the value (`Json(value)`) or format it (`value.to_string()`)"
)]
pub trait IntoToolResult {
    /// Converts.
    fn into_tool_result(self) -> Result<CallToolResult, HandlerError>;
}

impl IntoToolResult for CallToolResult {
    fn into_tool_result(self) -> Result<CallToolResult, HandlerError> {
        Ok(self)
    }
}

impl IntoToolResult for String {
    fn into_tool_result(self) -> Result<CallToolResult, HandlerError> {
        Ok(CallToolResult::text(self))
    }
}

impl IntoToolResult for &'static str {
    fn into_tool_result(self) -> Result<CallToolResult, HandlerError> {
        Ok(CallToolResult::text(self))
    }
}

impl IntoToolResult for ContentBlock {
    fn into_tool_result(self) -> Result<CallToolResult, HandlerError> {
        Ok(CallToolResult::success(vec![self]))
    }
}

impl IntoToolResult for Vec<ContentBlock> {
    fn into_tool_result(self) -> Result<CallToolResult, HandlerError> {
        Ok(CallToolResult::success(self))
    }
}

// TOOL-07
/// Structured output: serialized into `structuredContent`, with the same
/// JSON as a text block for clients that read only content.
#[derive(Debug, Clone)]
pub struct Json<T>(pub T);

impl<T: Serialize> IntoToolResult for Json<T> {
    fn into_tool_result(self) -> Result<CallToolResult, HandlerError> {
        let v = serde_json::to_value(&self.0)
            .map_err(|e| HandlerError::Protocol(ferromcp_protocol::ErrorObject::internal(e)))?;
        Ok(CallToolResult::structured(v))
    }
}

impl<T: IntoToolResult, E: IntoHandlerError> IntoToolResult for Result<T, E> {
    fn into_tool_result(self) -> Result<CallToolResult, HandlerError> {
        match self {
            Ok(t) => t.into_tool_result(),
            Err(e) => Err(e.into_handler_error()),
        }
    }
}

// TOOL-03
/// Params type for tools without arguments: schema
/// `{"type":"object","additionalProperties":false}`.
#[derive(Debug, Clone, Copy, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}

// Foreign type: tool and form schemas are derived with schemars; the crate re-exports `schemars` so
// the versions match.
impl JsonSchema for NoArgs {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "NoArgs".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"type": "object", "additionalProperties": false})
    }
}

/// A tool ready to register with [`crate::ServerBuilder::tool`].
#[derive(Clone)]
pub struct ToolDef {
    pub(crate) tool: Tool,
    pub(crate) handler: Arc<dyn ToolHandler>,
    pub(crate) task_support: TaskSupport,
    pub(crate) task_creation: TaskCreation,
    /// State types the handler takes (checked at registration).
    pub(crate) state_needs: Vec<StateNeed>,
    /// A handler whose result is already JSON text (see
    /// [`ToolBuilder::raw_result_handler`]); `handler` is then its typed
    /// adapter, used when the call runs as a task.
    pub(crate) raw: Option<Arc<dyn RawToolHandler>>,
}

impl std::fmt::Debug for ToolDef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolDef")
            .field("tool", &self.tool)
            .finish_non_exhaustive()
    }
}

impl ToolDef {
    /// The wire definition as listed in `tools/list`.
    pub fn definition(&self) -> &Tool {
        &self.tool
    }
    /// Whether the tool may run as a task (tasks extension).
    pub fn task_support(&self) -> TaskSupport {
        self.task_support
    }

    // TOOL-08
    /// Sets the behaviour hints of a finished definition (one made by
    /// `#[tool]`, say): `add_tool().with_annotations(ToolAnnotations::new().read_only(true))`.
    pub fn with_annotations(mut self, a: ToolAnnotations) -> Self {
        self.tool.annotations = Some(a);
        self
    }
    /// Sets the display title.
    pub fn with_title(mut self, t: impl Into<String>) -> Self {
        self.tool.title = Some(t.into());
        self
    }
    /// Sets the description.
    pub fn with_description(mut self, d: impl Into<String>) -> Self {
        self.tool.description = Some(d.into());
        self
    }
    /// Sets the icons.
    pub fn with_icons(mut self, icons: Vec<Icon>) -> Self {
        self.tool.icons = Some(icons);
        self
    }
    /// Sets the tool's `_meta`.
    pub fn with_meta(mut self, meta: JsonObject) -> Self {
        self.tool.meta = Some(meta);
        self
    }
    /// Replaces the `outputSchema` (`structuredContent` is validated
    /// against it).
    pub fn with_output_schema(mut self, schema: JsonObject) -> Self {
        self.tool.output_schema = Some(schema);
        self.tool.property_order.output = Vec::new();
        self
    }
    /// Lets the tool run as a task (see [`ToolBuilder::task_support`]).
    pub fn with_task_support(mut self, support: TaskSupport) -> Self {
        self.task_support = support;
        self
    }
}

/// Starts a tool definition.
pub fn tool(name: impl Into<String>) -> ToolBuilder {
    ToolBuilder {
        tool: Tool::new(name, Tool::no_arguments_schema()),
        explicit_schema: false,
        task_support: TaskSupport::Forbidden,
        task_creation: TaskCreation::Immediate,
    }
}

/// Starts a definition of a tool another server lists, to serve it again
/// under `name` (a proxy or gateway forwarding its calls): its title,
/// description, icons, schemas (verbatim) and annotations are kept; its
/// `_meta` is not. Finish with a handler that forwards the call.
pub fn tool_from(name: impl Into<String>, listed: Tool) -> ToolBuilder {
    let mut b = tool(name).input_schema(listed.input_schema);
    if let Some(d) = listed.description {
        b = b.description(d);
    }
    if let Some(t) = listed.title {
        b = b.title(t);
    }
    if let Some(a) = listed.annotations {
        b = b.annotations(a);
    }
    if let Some(i) = listed.icons {
        b = b.icons(i);
    }
    if let Some(s) = listed.output_schema {
        b = b.output_schema(s);
    }
    b
}

/// Builds a [`ToolDef`].
#[derive(Debug, Clone)]
pub struct ToolBuilder {
    pub(crate) tool: Tool,
    pub(crate) explicit_schema: bool,
    pub(crate) task_support: TaskSupport,
    pub(crate) task_creation: TaskCreation,
}

impl ToolBuilder {
    /// Human-readable description (shown to the model).
    pub fn description(mut self, d: impl Into<String>) -> Self {
        self.tool.description = Some(d.into());
        self
    }
    /// Display title.
    pub fn title(mut self, t: impl Into<String>) -> Self {
        self.tool.title = Some(t.into());
        self
    }
    // TOOL-08
    /// Behaviour hints (untrusted by clients).
    pub fn annotations(mut self, a: ToolAnnotations) -> Self {
        self.tool.annotations = Some(a);
        self
    }
    /// Icons.
    pub fn icons(mut self, icons: Vec<Icon>) -> Self {
        self.tool.icons = Some(icons);
        self
    }
    /// Uses `schema` verbatim as the `inputSchema` instead of deriving it
    /// (e.g. to add `x-mcp-header` annotations). It must have `"type":"object"`.
    pub fn input_schema(mut self, schema: JsonObject) -> Self {
        self.tool.input_schema = schema;
        self.tool.property_order.input = Vec::new();
        self.explicit_schema = true;
        self
    }
    /// Declares an `outputSchema`; `structuredContent` is validated against it.
    pub fn output_schema(mut self, schema: JsonObject) -> Self {
        self.tool.output_schema = Some(schema);
        self.tool.property_order.output = Vec::new();
        self
    }
    // Foreign type: tool and form schemas are derived with schemars; the crate re-exports
    // `schemars` so the versions match.
    /// Derives the `outputSchema` from `T`.
    /// Its `properties` are written in the order of the `required` list
    /// (declaration order for the fields that are not `Option`), then the
    /// rest, as `T` need not implement `Deserialize`.
    pub fn output<T: JsonSchema>(self) -> Self {
        let s = schema_object::<T>();
        let order = field_order::property_order(Vec::new(), &Value::Object(s.clone()));
        let mut b = self.output_schema(s);
        b.tool.property_order.output = order;
        b
    }

    /// The `inputSchema` derived from `P`, its `properties` in `P`'s
    /// declaration order (a client lays the fields out in that order).
    pub(crate) fn derive_input<P: JsonSchema + DeserializeOwned>(&mut self) {
        let schema = schema_object::<P>();
        self.tool.property_order.input = field_order::property_order(
            field_order::declared_fields::<P>(),
            &Value::Object(schema.clone()),
        );
        self.tool.input_schema = schema;
    }
    /// Tool `_meta`.
    pub fn meta(mut self, meta: JsonObject) -> Self {
        self.tool.meta = Some(meta);
        self
    }
    /// Links the tool to its MCP App (`_meta.ui`, kept beside other
    /// `_meta` members): the `ui://` URI, or a
    /// [`UiToolMeta`](ferromcp_protocol::types::UiToolMeta) with a
    /// visibility. See [`crate::ui_resource`].
    pub fn ui(mut self, ui: impl Into<ferromcp_protocol::types::UiToolMeta>) -> Self {
        ui.into()
            .apply_to(self.tool.meta.get_or_insert_with(JsonObject::new));
        self
    }
    /// Lets the tool run as a task (tasks extension, see [`crate::tasks`]).
    /// Registering such a tool enables tasks on the server with default
    /// settings unless [`crate::ServerBuilder::tasks`] configured them.
    pub fn task_support(mut self, support: TaskSupport) -> Self {
        self.task_support = support;
        self
    }
    /// When the call becomes a task; default [`TaskCreation::Immediate`].
    pub fn task_creation(mut self, creation: TaskCreation) -> Self {
        self.task_creation = creation;
        self
    }

    /// Finishes with an untyped handler receiving the raw arguments object.
    pub fn raw_handler<F, Fut, R>(self, f: F) -> ToolDef
    where
        F: Fn(JsonObject, RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = R> + Send + 'static,
        R: IntoToolResult + 'static,
    {
        ToolDef {
            tool: self.tool,
            handler: Arc::new(Raw { f }),
            task_support: self.task_support,
            task_creation: self.task_creation,
            state_needs: Vec::new(),
            raw: None,
        }
    }

    /// Finishes with a handler receiving the raw arguments object and
    /// returning its result as JSON text, for a tool that relays another
    /// server's answer: the result's members reach the client as they
    /// are (unknown ones included) instead of passing through
    /// [`CallToolResult`]. The server still sets `resultType` and stamps
    /// `serverInfo` into `_meta` for 2026-07-28 clients, drops what an
    /// older client's revision does not know, and checks the
    /// `outputSchema` if the tool declares one. A call run as a task gets
    /// the result typed (unknown members dropped).
    ///
    /// ```
    /// use ferromcp_server::{HandlerError, RawResult, RequestContext, Server, tool};
    ///
    /// let relay = tool("relay").raw_result_handler(|_args, _cx: RequestContext| async move {
    ///     let json = r#"{"content":[{"type":"text","text":"hi"}],"vendorExtra":1}"#;
    ///     RawResult::from_string(json.to_owned()).map_err(HandlerError::Protocol)
    /// });
    /// assert!(Server::builder("relay", "1.0.0").tool(relay).build().is_ok());
    /// ```
    pub fn raw_result_handler<F, Fut>(self, f: F) -> ToolDef
    where
        F: Fn(JsonObject, RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<RawResult, HandlerError>> + Send + 'static,
    {
        let f = Arc::new(f);
        ToolDef {
            tool: self.tool,
            handler: Arc::new(RawFn(f.clone())),
            task_support: self.task_support,
            task_creation: self.task_creation,
            state_needs: Vec::new(),
            raw: Some(Arc::new(RawFn(f))),
        }
    }
}

/// The root schema of `T` as a JSON object with `"type":"object"`.
/// Subschemas (a derived enum or struct used as a field) are inlined, so a
/// client sees each parameter's shape where it stands rather than a `$ref`
/// into `$defs`; only recursive types keep a reference.
pub(crate) fn schema_object<T: JsonSchema>() -> JsonObject {
    let schema = schemars::generate::SchemaSettings::draft2020_12()
        .with(|s| s.inline_subschemas = true)
        .into_generator()
        .into_root_schema_for::<T>();
    match schema.to_value() {
        Value::Object(mut m) => {
            m.entry("type")
                .or_insert_with(|| Value::String("object".into()));
            m
        }
        _ => Tool::no_arguments_schema(),
    }
}

struct Raw<F> {
    f: F,
}

impl<F, Fut, R> ToolHandler for Raw<F>
where
    F: Fn(JsonObject, RequestContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = R> + Send + 'static,
    R: IntoToolResult + 'static,
{
    fn call(
        &self,
        arguments: &Value,
        cx: RequestContext,
    ) -> BoxFuture<Result<CallToolResult, HandlerError>> {
        let args = match arguments {
            Value::Object(m) => m.clone(),
            _ => JsonObject::new(),
        };
        let fut = (self.f)(args, cx);
        Box::pin(async move { fut.await.into_tool_result() })
    }
}

// TOOL-06
/// Where in the arguments a schema error is, for the model: the JSON
/// pointer quoted, or "the arguments object" for the root (an empty
/// pointer printed as `''` reads as nothing).
#[cfg_attr(not(feature = "schema-validation"), allow(dead_code))]
pub(crate) fn argument_location(pointer: &str) -> String {
    if pointer.is_empty() || pointer == "/" {
        "the arguments object".to_owned()
    } else {
        format!("'{pointer}'")
    }
}

// TOOL-06
/// The model-visible result for arguments that fail validation.
pub(crate) fn invalid_arguments(detail: &str) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(format!(
        "Invalid arguments: {detail}"
    ))])
}

/// The server's side of a raw-result tool.
pub(crate) trait RawToolHandler: Send + Sync + 'static {
    fn call(
        &self,
        arguments: &Value,
        cx: RequestContext,
    ) -> BoxFuture<Result<RawResult, HandlerError>>;
}

/// A raw-result handler function, shared by the raw path and the typed
/// adapter the task path uses.
pub(crate) struct RawFn<F>(pub(crate) Arc<F>);

impl<F, Fut> RawToolHandler for RawFn<F>
where
    F: Fn(JsonObject, RequestContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<RawResult, HandlerError>> + Send + 'static,
{
    fn call(
        &self,
        arguments: &Value,
        cx: RequestContext,
    ) -> BoxFuture<Result<RawResult, HandlerError>> {
        let args = match arguments {
            Value::Object(m) => m.clone(),
            _ => JsonObject::new(),
        };
        Box::pin((self.0)(args, cx))
    }
}

impl<F, Fut> ToolHandler for RawFn<F>
where
    F: Fn(JsonObject, RequestContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<RawResult, HandlerError>> + Send + 'static,
{
    fn call(
        &self,
        arguments: &Value,
        cx: RequestContext,
    ) -> BoxFuture<Result<CallToolResult, HandlerError>> {
        let fut = RawToolHandler::call(self, arguments, cx);
        Box::pin(async move { fut.await?.typed() })
    }
}

crate::state::needs_state!(ToolDef);

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize, JsonSchema)]
    #[allow(dead_code)]
    enum Mode {
        Fast,
        Slow,
    }

    #[derive(serde::Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Point {
        x: i64,
    }

    #[derive(serde::Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Args {
        mode: Mode,
        at: Option<Point>,
    }

    #[derive(serde::Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Tree {
        children: Vec<Tree>,
    }

    #[test]
    fn derived_parameter_types_are_inlined() {
        let s = Value::Object(schema_object::<Args>());
        let text = s.to_string();
        assert!(!text.contains("$ref") && !text.contains("$defs"), "{text}");
        assert_eq!(
            s["properties"]["mode"]["enum"],
            serde_json::json!(["Fast", "Slow"])
        );
        assert_eq!(s["type"], "object");
    }

    // TOOL-08
    #[test]
    fn a_finished_definition_takes_annotations_and_the_rest() {
        let def = tool("t")
            .handler(|_: NoArgs, _cx: RequestContext| async { "ok" })
            .with_annotations(ToolAnnotations::new().read_only(true).open_world(false))
            .with_title("T")
            .with_task_support(TaskSupport::Optional);
        let a = def.definition().annotations.clone().unwrap_or_default();
        assert_eq!(
            (a.read_only_hint, a.open_world_hint, a.destructive_hint),
            (Some(true), Some(false), None)
        );
        assert_eq!(def.definition().title.as_deref(), Some("T"));
        assert_eq!(def.task_support(), TaskSupport::Optional);
    }

    #[test]
    fn recursive_types_keep_their_reference() {
        let text = Value::Object(schema_object::<Tree>()).to_string();
        assert!(text.contains("$ref"), "{text}");
    }
}
