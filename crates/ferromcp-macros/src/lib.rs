//! # ferromcp-macros
//!
//! Attribute macros for `ferromcp-server`, re-exported (feature `macros`) as
//! `ferromcp_server::macros::{tool, prompt, resource, router}`. They are an optional layer:
//! every macro expands to the public builder API (`ferromcp_server::tool(..)`,
//! `.description(..)`, `.handler(..)`, `ServerBuilder::tools`, …), with no
//! hidden runtime. The expansion names the server crate `::ferromcp_server`;
//! when it is reachable under another path (a renamed dependency, a facade
//! crate re-exporting it), say so with `crate = "path"`:
//! `#[tool(crate = "my_facade::mcp")]`, `#[router(crate = "my_facade::mcp")]`
//! (a router passes it on to its methods).
//!
//! ```
//! use ferromcp_server::macros::tool;
//! use ferromcp_server::{Json, Server};
//!
//! #[derive(serde::Serialize, schemars::JsonSchema)]
//! struct Sum {
//!     sum: i64,
//! }
//!
//! /// Adds two numbers.
//! #[tool]
//! async fn add(
//!     /// The first operand.
//!     a: i64,
//!     /// The second operand.
//!     b: i64,
//! ) -> Json<Sum> {
//!     Json(Sum { sum: a + b })
//! }
//!
//! let server = Server::builder("calc", "1.0.0").tool(add_tool()).build();
//! assert!(server.is_ok());
//! ```

//! ## Mistakes are compile errors at their span
//!
//! A handler the macros cannot turn into builder calls is refused with an
//! error pointing at the offending tokens, for instance:
//!
//! ```compile_fail
//! # use ferromcp_server::macros::tool;
//! #[tool]
//! fn not_async() -> String { String::new() } // error at `fn`: must be `async fn`
//! ```
//!
//! ```compile_fail
//! # use ferromcp_server::macros::tool;
//! #[tool]
//! async fn generic<T: Into<String>>(t: T) -> String { t.into() } // error at `<T: ..>`
//! ```
//!
//! ```compile_fail
//! # use ferromcp_server::macros::tool;
//! #[tool]
//! async fn borrowed(s: &str) -> String { s.into() } // error at `&str`: must be owned
//! ```
//!
//! ```compile_fail
//! # use ferromcp_server::macros::router;
//! struct S;
//! #[router]
//! impl S {
//!     #[tool]
//!     async fn bump(&mut self) -> String { String::new() } // error at `&mut self`
//! }
//! ```
//!
//! ```compile_fail
//! # use ferromcp_server::macros::resource;
//! #[resource(uri = "notes://{id}")]
//! async fn note(name: String) -> String { name } // error at `name`: not a variable of the uri
//! ```
//!
//! ```compile_fail
//! # use ferromcp_server::macros::tool;
//! #[tool(annotations(read_only = true))] // error at `read_only`: lists `read_only_hint`, ..
//! async fn look() -> String { String::new() }
//! ```
//!
//! ```compile_fail
//! # use ferromcp_server::macros::tool;
//! #[tool(annotations(destructive_hint = "no"))] // error at `"no"`: takes `true` or `false`
//! async fn wipe() -> String { String::new() }
//! ```
//!
//! ```compile_fail
//! # use ferromcp_server::macros::tool;
//! #[tool(task_support = "sometimes")] // error: "forbidden", "optional" or "required"
//! async fn slow() -> String { String::new() }
//! ```
//!
//! ```compile_fail
//! # use ferromcp_server::macros::tool;
//! #[tool(ui = "https://example.com/app.html")] // error: `ui` is a `ui://` URI
//! async fn show() -> String { String::new() }
//! ```
//!
//! Type errors the compiler finds are reported at the user's tokens too,
//! with the fix: a tool parameter type without `serde::Deserialize` and
//! `schemars::JsonSchema` (at the parameter's type), a return type that is
//! not a tool result (at the return type):
//!
//! ```compile_fail,E0277
//! # use ferromcp_server::macros::tool;
//! struct Point { x: f64, y: f64 } // no Deserialize, no JsonSchema
//! #[tool]
//! async fn norm(p: Point) -> String { p.x.hypot(p.y).to_string() } // error at `Point`
//! ```
//!
//! ```compile_fail,E0277
//! # use ferromcp_server::macros::tool;
//! #[tool]
//! async fn add(a: i64, b: i64) -> i64 { a + b } // error at `i64`: not a tool result
//! ```

mod expand;

use proc_macro::TokenStream;

/// Declares an MCP tool.
///
/// On an `async fn` it keeps the function and generates, next to it and
/// with the same visibility, `fn <name>_tool() -> ferromcp_server::ToolDef`, to
/// pass to `ServerBuilder::tool`. On a method of an impl block marked
/// [`router`](macro@router) it adds the method to the block's
/// `tool_defs` instead.
///
/// - The tool's name is the function's, unless `#[tool(name = "...")]`.
/// - Its description is the doc comment, unless `#[tool(description = "...")]`;
///   `#[tool(title = "...")]` sets a display title; `crate = "path"` names
///   the server crate when it is not `::ferromcp_server`.
/// - The parameters become the `inputSchema`: a hidden struct deriving
///   `serde::Deserialize` and `schemars::JsonSchema` with one field per
///   parameter; a parameter's doc comment is its description, and
///   `#[serde(..)]` / `#[schemars(..)]` attributes on it are kept.
///   `Option<T>` parameters are optional.
/// - A parameter of type `RequestContext` receives the request context;
///   each of type `State<T>` (several are fine, one per type) receives the
///   application state given to `ServerBuilder::with_state` (see
///   `ferromcp_server::State`); `build()` checks that every one was given.
/// - A `Json<T>` (or `Result<Json<T>, E>`) return type declares `T`'s
///   schema as the `outputSchema`. Any return type the builder accepts
///   works: `String`, `CallToolResult`, `Result<String, String>`, …
/// - The rest of the definition:
///   `annotations(read_only_hint = true, destructive_hint = false,
///   idempotent_hint = true, open_world_hint = false, title = "...")`
///   (a bare hint means `= true`); `icons = <expr>` (a `Vec<Icon>`),
///   `meta = <expr>` and `output_schema = <expr>` (each a `JsonObject`,
///   the latter replacing the derived one); `task_support = "optional"`
///   (or `"required"`, `"forbidden"`); `ui = "ui://..."` links the tool
///   to its MCP App (a `ui://` URI, checked at compile time; the resource
///   is registered with `ServerBuilder::ui_resource`, checked by `build()`)
///   and `visibility = "app"` (or `"model"`, `"model, app"`) says who may
///   call it. A finished `ToolDef` has the same as setters
///   (`add_tool().with_annotations(..)`, `.with_ui(..)`).
///
/// Not accepted (an error at the offending span): a non-`async` fn,
/// generics, borrowed parameters, destructuring patterns (other than for
/// `State`), a `self`, `&mut self` or `self: Arc<Self>` receiver, a method
/// outside a `#[router]` impl block.
///
/// ```
/// use ferromcp_server::macros::tool;
/// use ferromcp_server::{RequestContext, Server, State};
/// use std::sync::Arc;
///
/// struct Greeter { greeting: String }
///
/// /// Greets someone.
/// #[tool(name = "greet")]
/// async fn greet_someone(
///     State(g): State<Arc<Greeter>>,
///     /// Who to greet.
///     name: String,
///     _cx: RequestContext,
/// ) -> Result<String, String> {
///     if name.is_empty() {
///         return Err("a name, please".into());
///     }
///     Ok(format!("{}, {name}!", g.greeting))
/// }
///
/// let server = Server::builder("greeter", "1.0.0")
///     .with_state(Arc::new(Greeter { greeting: "Hello".into() }))
///     .tool(greet_someone_tool())
///     .build();
/// assert!(server.is_ok());
/// ```
///
/// With behaviour hints and `_meta`:
///
/// ```
/// use ferromcp_server::macros::tool;
///
/// fn owner() -> ferromcp_server::protocol::types::JsonObject {
///     let mut m = serde_json::Map::new();
///     m.insert("com.example/owner".into(), "team-a".into());
///     m
/// }
///
/// /// Reads the current temperature.
/// #[tool(
///     annotations(read_only_hint = true, open_world_hint = true),
///     meta = owner(),
///     task_support = "optional"
/// )]
/// async fn temperature() -> String {
///     "21 °C".into()
/// }
///
/// let def = temperature_tool();
/// let hints = def.definition().annotations.clone().unwrap_or_default();
/// assert_eq!(hints.read_only_hint, Some(true));
/// assert_eq!(hints.destructive_hint, None);
/// ```
///
/// With an MCP App (an HTML view the host shows the results in):
///
/// ```
/// use ferromcp_server::macros::tool;
/// use ferromcp_server::{Server, ui_resource};
///
/// /// Shows the chart.
/// #[tool(ui = "ui://charts/view.html")]
/// async fn chart() -> String { "3 points".into() }
///
/// /// Zooms the chart (called by the view only).
/// #[tool(ui = "ui://charts/view.html", visibility = "app")]
/// async fn zoom() -> String { "zoomed".into() }
///
/// assert!(!zoom_tool().definition().visible_to_model());
/// let server = Server::builder("charts", "1.0.0")
///     .ui_resource(ui_resource("ui://charts/view.html", "chart_view").html("<!DOCTYPE html><p>chart</p>"))
///     .tool(chart_tool())
///     .tool(zoom_tool())
///     .build();
/// assert!(server.is_ok());
/// ```
#[proc_macro_attribute]
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand::free_fn(expand::Kind::Tool, attr.into(), item.into())
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// Declares an MCP prompt.
///
/// Like [`macro@tool`]: on an `async fn` it generates
/// `fn <name>_prompt() -> ferromcp_server::PromptDef`; on a method of a
/// [`macro@router`] impl block it joins the block's `prompt_defs`. Name,
/// description and title come the same way. Each `String` parameter is a
/// required prompt argument, each `Option<String>` an optional one (its doc
/// comment is the argument's description); `RequestContext` and `State<T>`
/// parameters are as for tools. The return type is anything
/// `IntoPromptResult` accepts; a `String` is one user message.
///
/// ```
/// use ferromcp_server::macros::prompt;
/// use ferromcp_server::protocol::types::{ContentBlock, PromptMessage, Role};
/// use ferromcp_server::Server;
///
/// /// Asks for a code review.
/// #[prompt]
/// async fn review(
///     /// The code to review.
///     code: String,
///     /// The tone, e.g. "friendly".
///     tone: Option<String>,
/// ) -> Vec<PromptMessage> {
///     let tone = tone.unwrap_or_else(|| "neutral".into());
///     let text = format!("Review this in a {tone} tone:\n{code}");
///     vec![PromptMessage::new(Role::User, ContentBlock::text(text))]
/// }
///
/// let server = Server::builder("prompts", "1.0.0").prompt(review_prompt()).build();
/// assert!(server.is_ok());
/// ```
#[proc_macro_attribute]
pub fn prompt(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand::free_fn(expand::Kind::Prompt, attr.into(), item.into())
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// Declares an MCP resource, or a resource template when its `uri` has
/// RFC 6570 `{variables}`.
///
/// `#[resource(uri = "...")]` is required; `name` (default: the fn name),
/// `description` (default: the doc comment), `title` and `mime_type` are
/// optional. On an `async fn` it generates `fn <name>_resource()` returning
/// a `ferromcp_server::ResourceDef` (fixed URI) or `ferromcp_server::TemplateDef`
/// (template); on a method of a [`macro@router`] impl block it joins the
/// block's `resource_defs` / `resource_template_defs`.
///
/// Parameters: `String` / `Option<String>` ones named after a template
/// variable receive its value; a `ResourceRequest` one the whole request
/// (URI and variables); `RequestContext` and `State<T>` as for tools. The
/// return type is anything `IntoReadResult` accepts; a `String` (or
/// `Result<String, E>`) is the text of the URI read, with the `mime_type`
/// given here, so the handler repeats neither.
///
/// ```
/// use ferromcp_server::macros::resource;
/// use ferromcp_server::protocol::types::ResourceContents;
/// use ferromcp_server::{ResourceRequest, Server};
///
/// /// The read-me.
/// #[resource(uri = "file:///README", mime_type = "text/plain")]
/// async fn readme(req: ResourceRequest) -> ResourceContents {
///     ResourceContents::text(req.uri, None, "Read me.")
/// }
///
/// /// One note.
/// #[resource(uri = "notes://{id}", name = "notes")]
/// async fn note(id: String, req: ResourceRequest) -> Result<ResourceContents, String> {
///     if id.is_empty() {
///         return Err("empty id".into());
///     }
///     Ok(ResourceContents::text(req.uri, None, format!("note {id}")))
/// }
///
/// let server = Server::builder("files", "1.0.0")
///     .resource(readme_resource())
///     .resource_template(note_resource())
///     .build();
/// assert!(server.is_ok());
/// ```
#[proc_macro_attribute]
pub fn resource(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand::free_fn(expand::Kind::Resource, attr.into(), item.into())
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// Collects the `#[tool]`, `#[prompt]` and `#[resource]` methods of an impl block.
///
/// The methods stay as written (an `&self` receiver, or none). The block
/// gains these associated functions, taking the value shared by `Arc`:
///
/// - `fn tool_defs(self: &Arc<Self>) -> Vec<ferromcp_server::ToolDef>`
/// - `fn prompt_defs(self: &Arc<Self>) -> Vec<ferromcp_server::PromptDef>`
/// - `fn resource_defs(self: &Arc<Self>) -> Vec<ferromcp_server::ResourceDef>`
/// - `fn resource_template_defs(self: &Arc<Self>) -> Vec<ferromcp_server::TemplateDef>`
/// - `fn register(self: &Arc<Self>, builder: ServerBuilder) -> ServerBuilder`,
///   which registers all of them (`ServerBuilder::tools`, `::prompts`,
///   `::resources`, `::resource_templates`).
///
/// The handler attributes inside the block are recognised by their last
/// path segment (`tool`, `prompt`, `resource`) and removed by `#[router]`,
/// so they need not be imported.
///
/// Each handler holds a clone of the `Arc`, so `&self` in a method is the
/// shared server value. Generic impl blocks are not supported.
///
/// ```
/// use ferromcp_server::macros::router;
/// use ferromcp_server::{RequestContext, Server};
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicU64, Ordering};
///
/// #[derive(Default)]
/// struct Counter { n: AtomicU64 }
///
/// #[router]
/// impl Counter {
///     /// Adds `by` to the counter and returns the new value.
///     #[tool]
///     async fn bump(&self, /// How much to add.
///         by: u64) -> String {
///         (self.n.fetch_add(by, Ordering::Relaxed) + by).to_string()
///     }
///
///     /// Reads the counter.
///     #[tool(name = "read")]
///     async fn read_counter(&self, _cx: RequestContext) -> String {
///         self.n.load(Ordering::Relaxed).to_string()
///     }
/// }
///
/// let counter = Arc::new(Counter::default());
/// assert_eq!(counter.tool_defs().len(), 2);
/// let server = counter.register(Server::builder("counter", "1.0.0")).build();
/// assert!(server.is_ok());
/// ```
#[proc_macro_attribute]
pub fn router(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand::router(attr.into(), item.into())
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}
