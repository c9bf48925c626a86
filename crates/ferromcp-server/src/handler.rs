//! Handler functions of several shapes behind one `handler(f)`, in the
//! manner of axum's `Handler`: a handler takes, in this order, any
//! extractors ([`FromContext`]: [`State<T>`](crate::State), the
//! authenticated principal as `Option<Principal>`), then its arguments
//! (the tool's params type, [`PromptArgs`](crate::PromptArgs),
//! [`ResourceRequest`](crate::ResourceRequest) or
//! `CompleteRequestParams`), then optionally the
//! [`RequestContext`].
//!
//! ```
//! use ferromcp_server::{tool, NoArgs, Principal, RequestContext, Server, State};
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Name { name: String }
//!
//! // Arguments only.
//! async fn hello(a: Name) -> String {
//!     format!("Hello, {}!", a.name)
//! }
//! // State, arguments and the context.
//! async fn count(State(n): State<u32>, _: NoArgs, cx: RequestContext) -> String {
//!     format!("{n} in {}", cx.method())
//! }
//!
//! let server = Server::builder("demo", "1.0.0")
//!     .with_state(7_u32)
//!     .tool(tool("hello").handler(hello))
//!     .tool(tool("count").handler(count))
//!     .tool(tool("whoami").handler(|who: Option<Principal>, _: NoArgs| async move {
//!         who.map_or_else(|| "anonymous".to_owned(), |p| p.subject)
//!     }))
//!     .build();
//! assert!(server.is_ok());
//! ```
//!
//! The marker type parameter of each trait (`T` in [`ToolFn<T>`]) only
//! tells the shapes apart; it is inferred, never written. Closure
//! parameters need their types written (`|a: Args, cx: RequestContext|`),
//! as the shape is chosen from them.

use crate::context::{Principal, RequestContext};
use crate::dispatch::arguments::value_of;
use crate::error::HandlerError;
use crate::fallback::FallbackRequest;
use crate::future::BoxFuture;
use crate::prompt::{IntoPromptResult, PromptArgs, PromptBuilder, PromptDef};
use crate::resource::{
    IntoReadResult, ResourceBuilder, ResourceDef, ResourceHandler, ResourceRequest,
    TemplateBuilder, TemplateDef,
};
use crate::state::{State, StateNeed};
use crate::tool::{IntoToolResult, ToolBuilder, ToolDef, invalid_arguments};
use ferromcp_protocol::types::{
    CallToolResult, CompleteRequestParams, Completion, GetPromptResult, ReadResourceResult,
    Resource, ResourceTemplate,
};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;

mod sealed {
    use crate::context::RequestContext;
    use crate::error::HandlerError;
    use crate::state::StateNeed;

    /// What an extractor does; private so that the set of extractors is
    /// this crate's.
    pub trait Extract: Sized {
        /// Takes the value out of the request's context.
        fn extract(cx: &RequestContext) -> Result<Self, HandlerError>;
        /// Adds what the value needs from the server (checked when the
        /// handler is registered).
        fn declare(needs: &mut Vec<StateNeed>);
    }

    /// What a prompt, resource or completion handler's return value
    /// becomes.
    pub trait IntoReply<O> {
        /// Converts.
        fn into_reply(self) -> Result<O, HandlerError>;
    }
}

/// A value a handler takes from the request besides its arguments, as a
/// parameter before them: [`State<T>`](crate::State) (the application
/// state of type `T`; registering the handler fails unless `T` was given
/// to [`ServerBuilder::with_state`](crate::ServerBuilder::with_state)) or
/// `Option<Principal>` (the authenticated principal, `None` without
/// authentication).
///
/// ```
/// use ferromcp_server::{prompt, PromptArgs, Principal, State};
///
/// let def = prompt("greet").handler(
///     |State(greeting): State<&'static str>, who: Option<Principal>, _: PromptArgs| async move {
///         let name = who.map_or_else(|| "stranger".to_owned(), |p| p.subject);
///         format!("{greeting}, {name}")
///     },
/// );
/// # let _ = def;
/// ```
pub trait FromContext: sealed::Extract + Send + 'static {}

impl<T: Clone + Send + Sync + 'static> sealed::Extract for State<T> {
    fn extract(cx: &RequestContext) -> Result<Self, HandlerError> {
        crate::context::extract_state::<T>(cx)
    }
    fn declare(needs: &mut Vec<StateNeed>) {
        needs.push(StateNeed::of::<T>());
    }
}
impl<T: Clone + Send + Sync + 'static> FromContext for State<T> {}

impl sealed::Extract for Option<Principal> {
    fn extract(cx: &RequestContext) -> Result<Self, HandlerError> {
        Ok(cx.principal().cloned())
    }
    fn declare(_: &mut Vec<StateNeed>) {}
}
impl FromContext for Option<Principal> {}

/// Marker of a shape whose last parameter is the [`RequestContext`].
#[derive(Debug)]
pub enum WithContext {}

/// Marker of a shape without the [`RequestContext`].
#[derive(Debug)]
pub enum WithoutContext {}

/// A tool handler function that
/// [`ToolBuilder::handler`](crate::ToolBuilder::handler) takes: an `async`
/// function or closure of the arguments `P`, after any [`FromContext`]
/// extractors (up to three) and optionally followed by the
/// [`RequestContext`], returning an [`IntoToolResult`]:
/// `Fn(P)`, `Fn(P, RequestContext)`, `Fn(State<S>, P)`,
/// `Fn(State<S>, P, RequestContext)`, …
///
/// `P` (`Deserialize` + `JsonSchema`) gives the tool's `inputSchema`.
///
/// ```
/// use ferromcp_server::{tool, RequestContext, State};
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Add { a: i64, b: i64 }
///
/// let plain = tool("add").handler(|x: Add| async move { (x.a + x.b).to_string() });
/// let scaled = tool("scaled_add").handler(
///     |State(k): State<i64>, x: Add, _cx: RequestContext| async move { (k * (x.a + x.b)).to_string() },
/// );
/// # let _ = (plain, scaled);
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a tool handler of a shape `handler` takes",
    label = "not a tool handler",
    note = "a tool handler is an `async` fn or closure taking up to three extractors (`State<T>`, `Option<Principal>`), then its arguments `P: Deserialize + JsonSchema`, then optionally the `RequestContext`, and returning an `IntoToolResult`",
    note = "annotate every closure parameter (`|a: Args, cx: RequestContext|`): the shape is chosen from their types"
)]
pub trait ToolFn<T>: Send + Sync + Sized + 'static {
    /// The arguments type (its schema is the tool's `inputSchema`).
    type Params: DeserializeOwned + JsonSchema;
    #[doc(hidden)]
    fn declare(needs: &mut Vec<StateNeed>);
    /// Runs the handler with its arguments, or answers why they did not
    /// read (after the extractors, whose failure comes first).
    #[doc(hidden)]
    fn run(
        &self,
        arguments: Result<Self::Params, String>,
        cx: RequestContext,
    ) -> BoxFuture<ToolReply>;
    #[doc(hidden)]
    fn call(&self, arguments: &Value, cx: RequestContext) -> BoxFuture<ToolReply> {
        self.run(
            <Self::Params as serde::Deserialize>::deserialize(arguments).map_err(|e| e.to_string()),
            cx,
        )
    }
    #[doc(hidden)]
    fn call_json(&self, arguments: &str, cx: RequestContext) -> BoxFuture<ToolReply> {
        match from_json::<Self::Params>(arguments) {
            Some(p) => self.run(Ok(p), cx),
            // Text that does not read: the `Value`'s reading answers.
            None => self.call(&value_of(arguments.as_bytes()), cx),
        }
    }
}

/// The arguments of type `P` read from JSON text, as `P::deserialize` of
/// the `Value` the text makes would read them; `None` when the text does
/// not read (the caller then takes the `Value` path, whose error is the
/// one reported). Reading the text is more lenient in two ways only: a
/// `Box<RawValue>` member and integers beyond 64 bits read.
fn from_json<P: DeserializeOwned>(text: &str) -> Option<P> {
    let mut de = serde_json::Deserializer::from_str(text);
    let p = P::deserialize(&mut de).ok()?;
    de.end().ok()?;
    Some(p)
}

/// What a tool handler resolves to.
type ToolReply = Result<CallToolResult, HandlerError>;

/// Takes extractor `$E` out of `$cx` into a variable of the same name, or
/// returns the boxed error.
macro_rules! extract_or_return {
    ($cx:ident; $($E:ident),*) => {
        $(
            #[allow(non_snake_case)]
            let $E = match <$E as sealed::Extract>::extract(&$cx) {
                Ok(v) => v,
                Err(e) => return Box::pin(async move { Err(e) }),
            };
        )*
    };
}

macro_rules! tool_fn {
    ($($E:ident),*) => {
        impl<F, Fut, R, P, $($E,)*> ToolFn<(WithoutContext, ($($E,)*), P)> for F
        where
            F: Fn($($E,)* P) -> Fut + Send + Sync + 'static,
            Fut: Future<Output = R> + Send + 'static,
            R: IntoToolResult + 'static,
            P: DeserializeOwned + JsonSchema + Send + 'static,
            $($E: FromContext,)*
        {
            type Params = P;
            fn declare(_needs: &mut Vec<StateNeed>) {
                $(<$E as sealed::Extract>::declare(_needs);)*
            }
            fn run(&self, arguments: Result<P, String>, cx: RequestContext) -> BoxFuture<ToolReply> {
                extract_or_return!(cx; $($E),*);
                match arguments {
                    Ok(p) => {
                        let fut = self($($E,)* p);
                        // The context lives as long as the call, as when
                        // the handler takes it.
                        Box::pin(async move {
                            let r = fut.await;
                            drop(cx);
                            r.into_tool_result()
                        })
                    }
                    Err(e) => Box::pin(async move { Ok(invalid_arguments(&e)) }),
                }
            }
        }

        impl<F, Fut, R, P, $($E,)*> ToolFn<(WithContext, ($($E,)*), P)> for F
        where
            F: Fn($($E,)* P, RequestContext) -> Fut + Send + Sync + 'static,
            Fut: Future<Output = R> + Send + 'static,
            R: IntoToolResult + 'static,
            P: DeserializeOwned + JsonSchema + Send + 'static,
            $($E: FromContext,)*
        {
            type Params = P;
            fn declare(_needs: &mut Vec<StateNeed>) {
                $(<$E as sealed::Extract>::declare(_needs);)*
            }
            fn run(&self, arguments: Result<P, String>, cx: RequestContext) -> BoxFuture<ToolReply> {
                extract_or_return!(cx; $($E),*);
                match arguments {
                    Ok(p) => {
                        let fut = self($($E,)* p, cx);
                        Box::pin(async move { fut.await.into_tool_result() })
                    }
                    Err(e) => Box::pin(async move { Ok(invalid_arguments(&e)) }),
                }
            }
        }
    };
}

tool_fn!();
tool_fn!(E1);
tool_fn!(E1, E2);
tool_fn!(E1, E2, E3);

/// A [`ToolFn`] as the type-erased [`ToolHandler`](crate::ToolHandler).
pub(crate) struct ErasedTool<H, T>(pub(crate) H, std::marker::PhantomData<fn() -> T>);

impl<H, T> ErasedTool<H, T> {
    pub(crate) fn new(h: H) -> Self {
        Self(h, std::marker::PhantomData)
    }
}

impl<H: ToolFn<T>, T: 'static> crate::tool::ToolHandler for ErasedTool<H, T> {
    fn call(&self, arguments: &Value, cx: RequestContext) -> BoxFuture<ToolReply> {
        self.0.call(arguments, cx)
    }
    fn call_json(&self, arguments: &str, cx: RequestContext) -> BoxFuture<ToolReply> {
        self.0.call_json(arguments, cx)
    }
}

impl<R: IntoPromptResult> sealed::IntoReply<GetPromptResult> for R {
    fn into_reply(self) -> Result<GetPromptResult, HandlerError> {
        self.into_prompt_result()
    }
}

impl<R: IntoReadResult> sealed::IntoReply<ReadResourceResult> for R {
    fn into_reply(self) -> Result<ReadResourceResult, HandlerError> {
        self.into_read_result()
    }
}

impl sealed::IntoReply<Completion> for Result<Completion, HandlerError> {
    fn into_reply(self) -> Result<Completion, HandlerError> {
        self
    }
}

/// A prompt handler function that
/// [`PromptBuilder::handler`](crate::PromptBuilder::handler) takes: an
/// `async` function or closure of the [`PromptArgs`], after any
/// [`FromContext`] extractors (up to three) and optionally followed by
/// the [`RequestContext`], returning an [`IntoPromptResult`].
///
/// ```
/// use ferromcp_server::{prompt, PromptArgs, State};
///
/// let def = prompt("review")
///     .argument("code", "The code to review", true)
///     .handler(|State(tone): State<&'static str>, a: PromptArgs| async move {
///         format!("Review in a {tone} tone:\n{}", a.get("code").cloned().unwrap_or_default())
///     });
/// # let _ = def;
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a prompt handler of a shape `handler` takes",
    label = "not a prompt handler",
    note = "a prompt handler is an `async` fn or closure taking up to three extractors (`State<T>`, `Option<Principal>`), then `PromptArgs`, then optionally the `RequestContext`, and returning an `IntoPromptResult`",
    note = "annotate every closure parameter (`|a: Args, cx: RequestContext|`): the shape is chosen from their types"
)]
pub trait PromptFn<T>: Send + Sync + Sized + 'static {
    #[doc(hidden)]
    fn declare(needs: &mut Vec<StateNeed>);
    #[doc(hidden)]
    fn get(
        &self,
        args: PromptArgs,
        cx: RequestContext,
    ) -> BoxFuture<Result<GetPromptResult, HandlerError>>;
}

/// A resource or resource template handler function that
/// [`ResourceBuilder::handler`](crate::ResourceBuilder::handler) and
/// [`TemplateBuilder::handler`](crate::TemplateBuilder::handler) take: an
/// `async` function or closure of the [`ResourceRequest`], after any
/// [`FromContext`] extractors (up to three) and optionally followed by
/// the [`RequestContext`], returning an [`IntoReadResult`].
///
/// ```
/// use ferromcp_server::{resource, ResourceRequest, State};
/// use std::sync::Arc;
///
/// let def = resource("config://app", "config")
///     .mime_type("text/plain")
///     .handler(|State(cfg): State<Arc<String>>, _r: ResourceRequest| async move {
///         cfg.to_string()
///     });
/// # let _ = def;
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a resource handler of a shape `handler` takes",
    label = "not a resource handler",
    note = "a resource handler is an `async` fn or closure taking up to three extractors (`State<T>`, `Option<Principal>`), then `ResourceRequest`, then optionally the `RequestContext`, and returning an `IntoReadResult`",
    note = "annotate every closure parameter (`|a: Args, cx: RequestContext|`): the shape is chosen from their types"
)]
pub trait ResourceFn<T>: Send + Sync + Sized + 'static {
    #[doc(hidden)]
    fn declare(needs: &mut Vec<StateNeed>);
    #[doc(hidden)]
    fn read(
        &self,
        req: ResourceRequest,
        cx: RequestContext,
    ) -> BoxFuture<Result<ReadResourceResult, HandlerError>>;
}

/// A `completion/complete` handler function that
/// [`ServerBuilder::completion`](crate::ServerBuilder::completion) takes:
/// an `async` function or closure of the `CompleteRequestParams`, after
/// any [`FromContext`] extractors (up to three) and optionally followed
/// by the [`RequestContext`], returning `Result<Completion, HandlerError>`.
///
/// ```
/// use ferromcp_server::{HandlerError, Server, State};
/// use ferromcp_server::protocol::types::{CompleteRequestParams, Completion};
///
/// let server = Server::builder("s", "1")
///     .with_state(vec!["rust", "ruby"])
///     .completion(|State(langs): State<Vec<&'static str>>, p: CompleteRequestParams| async move {
///         let values = langs.iter().filter(|l| l.starts_with(&p.argument.value));
///         let values = values.map(|l| l.to_string()).collect();
///         Ok::<_, HandlerError>(Completion { values, ..Completion::default() })
///     })
///     .build();
/// assert!(server.is_ok());
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a completion handler of a shape `completion` takes",
    label = "not a completion handler",
    note = "a completion handler is an `async` fn or closure taking up to three extractors (`State<T>`, `Option<Principal>`), then `CompleteRequestParams`, then optionally the `RequestContext`, and returning `Result<Completion, HandlerError>`",
    note = "annotate every closure parameter (`|a: Args, cx: RequestContext|`): the shape is chosen from their types"
)]
pub trait CompletionFn<T>: Send + Sync + Sized + 'static {
    #[doc(hidden)]
    fn declare(needs: &mut Vec<StateNeed>);
    #[doc(hidden)]
    fn complete(
        &self,
        params: CompleteRequestParams,
        cx: RequestContext,
    ) -> BoxFuture<Result<Completion, HandlerError>>;
}

/// The shapes of a handler trait whose input is one fixed type.
macro_rules! fixed_fn {
    ($Trait:ident, $method:ident, $Input:ty, $Out:ty; $($E:ident),*) => {
        impl<F, Fut, $($E,)*> $Trait<(WithoutContext, ($($E,)*))> for F
        where
            F: Fn($($E,)* $Input) -> Fut + Send + Sync + 'static,
            Fut: Future + Send + 'static,
            Fut::Output: sealed::IntoReply<$Out>,
            $($E: FromContext,)*
        {
            fn declare(_needs: &mut Vec<StateNeed>) {
                $(<$E as sealed::Extract>::declare(_needs);)*
            }
            fn $method(&self, input: $Input, cx: RequestContext) -> BoxFuture<Result<$Out, HandlerError>> {
                extract_or_return!(cx; $($E),*);
                let fut = self($($E,)* input);
                // The context lives as long as the call, as when the
                // handler takes it.
                Box::pin(async move {
                    let r = fut.await;
                    drop(cx);
                    sealed::IntoReply::into_reply(r)
                })
            }
        }

        impl<F, Fut, $($E,)*> $Trait<(WithContext, ($($E,)*))> for F
        where
            F: Fn($($E,)* $Input, RequestContext) -> Fut + Send + Sync + 'static,
            Fut: Future + Send + 'static,
            Fut::Output: sealed::IntoReply<$Out>,
            $($E: FromContext,)*
        {
            fn declare(_needs: &mut Vec<StateNeed>) {
                $(<$E as sealed::Extract>::declare(_needs);)*
            }
            fn $method(&self, input: $Input, cx: RequestContext) -> BoxFuture<Result<$Out, HandlerError>> {
                extract_or_return!(cx; $($E),*);
                let fut = self($($E,)* input, cx);
                Box::pin(async move { sealed::IntoReply::into_reply(fut.await) })
            }
        }
    };
}

macro_rules! fixed_fns {
    ($($Trait:ident, $method:ident, $Input:ty, $Out:ty);*) => {$(
        fixed_fn!($Trait, $method, $Input, $Out;);
        fixed_fn!($Trait, $method, $Input, $Out; E1);
        fixed_fn!($Trait, $method, $Input, $Out; E1, E2);
        fixed_fn!($Trait, $method, $Input, $Out; E1, E2, E3);
    )*};
}

fixed_fns!(
    PromptFn, get, PromptArgs, GetPromptResult;
    ResourceFn, read, ResourceRequest, ReadResourceResult;
    CompletionFn, complete, CompleteRequestParams, Completion
);

/// The state types a handler needs, from its trait's `declare`.
pub(crate) fn needs(declare: fn(&mut Vec<StateNeed>)) -> Vec<StateNeed> {
    let mut needs = Vec::new();
    declare(&mut needs);
    needs
}

/// A [`PromptFn`] as the type-erased [`PromptHandler`](crate::PromptHandler).
pub(crate) struct ErasedPrompt<H, T>(H, std::marker::PhantomData<fn() -> T>);

impl<H, T> ErasedPrompt<H, T> {
    pub(crate) fn new(h: H) -> Self {
        Self(h, std::marker::PhantomData)
    }
}

impl<H: PromptFn<T>, T: 'static> crate::prompt::PromptHandler for ErasedPrompt<H, T> {
    fn get(
        &self,
        args: PromptArgs,
        cx: RequestContext,
    ) -> BoxFuture<Result<GetPromptResult, HandlerError>> {
        self.0.get(args, cx)
    }
}

/// A [`CompletionFn`] as the type-erased
/// [`CompletionHandler`](crate::CompletionHandler).
pub(crate) struct ErasedCompletion<H, T>(H, std::marker::PhantomData<fn() -> T>);

impl<H, T> ErasedCompletion<H, T> {
    pub(crate) fn new(h: H) -> Self {
        Self(h, std::marker::PhantomData)
    }
}

impl<H: CompletionFn<T>, T: 'static> crate::prompt::CompletionHandler for ErasedCompletion<H, T> {
    fn complete(
        &self,
        params: CompleteRequestParams,
        cx: RequestContext,
    ) -> BoxFuture<Result<Completion, HandlerError>> {
        self.0.complete(params, cx)
    }
}

// Every `handler(f)`: the capability builders' typed finishers live here,
// beside the traits they take, so that tool.rs, prompt.rs and resource.rs
// name none of this file (this file names their result traits).

/// The typed finisher of [`ToolBuilder`].
impl ToolBuilder {
    // Foreign type: tool and form schemas are derived with schemars; the crate re-exports
    // `schemars` so the versions match.
    /// Finishes with a typed handler (see [`ToolFn`] for the shapes it
    /// may have): `async fn(P, RequestContext) -> R`, `async fn(P) -> R`,
    /// or either with extractors such as [`State<S>`](crate::State) first.
    /// Unless [`Self::input_schema`] was called, the schema is derived from
    /// `P`. A `State<S>` whose `S` was not given to
    /// [`crate::ServerBuilder::with_state`] makes registering the tool a
    /// configuration error.
    ///
    /// ```
    /// use ferromcp_server::{Server, State, tool, RequestContext};
    /// use std::sync::Arc;
    ///
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Key { key: String }
    ///
    /// type Store = Arc<std::collections::HashMap<String, String>>;
    ///
    /// let get = tool("get").description("Looks a key up").handler(
    ///     |State(store): State<Store>, k: Key, _cx: RequestContext| async move {
    ///         store.get(&k.key).cloned().ok_or(format!("no key {:?}", k.key))
    ///     },
    /// );
    /// let server = Server::builder("kv", "1.0.0")
    ///     .with_state(Store::default())
    ///     .tool(get)
    ///     .build();
    /// assert!(server.is_ok());
    /// ```
    pub fn handler<T: 'static, H: ToolFn<T>>(mut self, f: H) -> ToolDef {
        if !self.explicit_schema {
            self.derive_input::<H::Params>();
        }
        ToolDef {
            tool: self.tool,
            handler: Arc::new(ErasedTool::new(f)),
            task_support: self.task_support,
            task_creation: self.task_creation,
            state_needs: needs(H::declare),
            raw: None,
        }
    }
}

/// The typed finisher of [`PromptBuilder`].
impl PromptBuilder {
    /// Finishes with a handler (see [`PromptFn`] for the shapes it may
    /// have): `async fn(PromptArgs, RequestContext) -> R`,
    /// `async fn(PromptArgs) -> R`, or either with extractors such as
    /// [`State<S>`](crate::State) first. A `State<S>` whose `S` was not
    /// given to [`crate::ServerBuilder::with_state`] makes registering the
    /// prompt a configuration error.
    ///
    /// ```
    /// use ferromcp_server::{prompt, PromptArgs, RequestContext, State};
    /// use ferromcp_server::protocol::types::{ContentBlock, PromptMessage, Role};
    ///
    /// #[derive(Clone)]
    /// struct Style(&'static str);
    ///
    /// let def = prompt("review")
    ///     .argument("code", "The code to review", true)
    ///     .handler(|State(style): State<Style>, a: PromptArgs, _cx: RequestContext| async move {
    ///         let code = a.get("code").cloned().unwrap_or_default();
    ///         let text = format!("Review in a {} tone:\n{code}", style.0);
    ///         vec![PromptMessage::new(Role::User, ContentBlock::text(text))]
    ///     });
    /// # let _ = def;
    /// ```
    pub fn handler<T: 'static, H: PromptFn<T>>(self, f: H) -> PromptDef {
        PromptDef {
            prompt: self.prompt,
            handler: Arc::new(ErasedPrompt::new(f)),
            state_needs: needs(H::declare),
        }
    }
}

/// The typed finisher of [`ResourceBuilder`].
impl ResourceBuilder {
    /// Finishes with a handler (see [`ResourceFn`] for the shapes it may
    /// have): `async fn(ResourceRequest, RequestContext) -> R`,
    /// `async fn(ResourceRequest) -> R`, or either with extractors such as
    /// [`State<S>`](crate::State) first. A `State<S>` whose `S` was not
    /// given to [`crate::ServerBuilder::with_state`] makes registering the
    /// resource a configuration error.
    ///
    /// ```
    /// use ferromcp_server::{resource, ResourceRequest, RequestContext, State};
    /// use ferromcp_server::protocol::types::ResourceContents;
    /// use std::sync::Arc;
    ///
    /// let def = resource("config://app", "config").handler(
    ///     |State(cfg): State<Arc<String>>, r: ResourceRequest, _cx: RequestContext| async move {
    ///         ResourceContents::text(r.uri, None, cfg.as_str())
    ///     },
    /// );
    /// # let _ = def;
    /// ```
    pub fn handler<T: 'static, H: ResourceFn<T>>(self, f: H) -> ResourceDef {
        ResourceDef::with_handler(self.resource, f)
    }
}

/// The typed finisher of [`TemplateBuilder`].
impl TemplateBuilder {
    /// Finishes with a handler (see [`ResourceFn`] for the shapes it may
    /// have); it reads the matched variables in [`ResourceRequest::vars`].
    /// A `State<S>` whose `S` was not given to
    /// [`crate::ServerBuilder::with_state`] makes registering the template
    /// a configuration error.
    ///
    /// ```
    /// use ferromcp_server::{resource_template, ResourceRequest, RequestContext, State};
    /// use ferromcp_server::protocol::types::ResourceContents;
    /// use std::collections::HashMap;
    /// use std::sync::Arc;
    ///
    /// let def = resource_template("kv://{key}", "kv").handler(
    ///     |State(kv): State<Arc<HashMap<String, String>>>, r: ResourceRequest, _cx: RequestContext| async move {
    ///         let key = r.vars.get("key").cloned().unwrap_or_default();
    ///         let value = kv.get(&key).cloned().ok_or(format!("no key {key:?}"))?;
    ///         Ok::<_, String>(ResourceContents::text(r.uri, None, value))
    ///     },
    /// );
    /// # let _ = def;
    /// ```
    pub fn handler<T: 'static, H: ResourceFn<T>>(self, f: H) -> TemplateDef {
        TemplateDef::with_handler(self.template, f)
    }
}

/// Resources read by a closure of the request and the context.
impl ResourceDef {
    /// A resource listed as `resource` and read by `handler`.
    pub fn new<F, Fut, R>(resource: Resource, handler: F) -> Self
    where
        F: Fn(ResourceRequest, RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = R> + Send + 'static,
        R: IntoReadResult + 'static,
    {
        Self::with_handler::<(WithContext, ()), _>(resource, handler)
    }
    /// A resource read by a [`ResourceFn`] of any shape.
    pub(crate) fn with_handler<T: 'static, H: ResourceFn<T>>(
        resource: Resource,
        handler: H,
    ) -> Self {
        let h = FnResource::new(handler, resource.mime_type.as_deref());
        Self {
            resource,
            handler: Arc::new(h),
            state_needs: needs(H::declare),
            raw: None,
        }
    }
}

/// Templates read by a closure of the request and the context.
impl TemplateDef {
    /// A template listed as `template` (its `uriTemplate` is compiled once)
    /// and read by `handler` with the matched variables.
    pub fn new<F, Fut, R>(template: ResourceTemplate, handler: F) -> Self
    where
        F: Fn(ResourceRequest, RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = R> + Send + 'static,
        R: IntoReadResult + 'static,
    {
        Self::with_handler::<(WithContext, ()), _>(template, handler)
    }
    /// A template read by a [`ResourceFn`] of any shape.
    pub(crate) fn with_handler<T: 'static, H: ResourceFn<T>>(
        template: ResourceTemplate,
        handler: H,
    ) -> Self {
        let h = FnResource::new(handler, template.mime_type.as_deref());
        Self::compile(template, Arc::new(h), needs(H::declare))
    }
}

/// A handler and the declared MIME type (for `resource::complete`).
struct FnResource<H, T>(H, Option<Arc<str>>, PhantomData<fn() -> T>);

impl<H: ResourceFn<T>, T: 'static> FnResource<H, T> {
    fn new(h: H, mime: Option<&str>) -> Self {
        Self(h, mime.map(Arc::from), PhantomData)
    }
}

impl<H: ResourceFn<T>, T: 'static> ResourceHandler for FnResource<H, T> {
    fn read(
        &self,
        req: ResourceRequest,
        cx: RequestContext,
    ) -> BoxFuture<Result<ReadResourceResult, HandlerError>> {
        let (uri, mime) = (req.uri.clone(), self.1.clone());
        let fut = self.0.read(req, cx);
        Box::pin(async move { crate::resource::complete(fut.await, &uri, mime.as_deref()) })
    }
}

/// A handler for the methods the server does not implement (see
/// [`crate::fallback`]). Implemented for every
/// `Fn(FallbackRequest, RequestContext) -> impl Future<Output =
/// Result<serde_json::Value, HandlerError>>`.
pub trait FallbackHandler: Send + Sync + 'static {
    /// Serves one request; resolves with its `result` object.
    fn call(
        &self,
        req: FallbackRequest,
        cx: RequestContext,
    ) -> BoxFuture<Result<serde_json::Value, HandlerError>>;
}

impl<F, Fut> FallbackHandler for F
where
    F: Fn(FallbackRequest, RequestContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<serde_json::Value, HandlerError>> + Send + 'static,
{
    fn call(
        &self,
        req: FallbackRequest,
        cx: RequestContext,
    ) -> BoxFuture<Result<serde_json::Value, HandlerError>> {
        Box::pin(self(req, cx))
    }
}
