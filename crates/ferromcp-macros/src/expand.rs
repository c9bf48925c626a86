//! The expansions, as functions from tokens to tokens so that they (and
//! their error messages) can be unit-tested without a compiler run.

use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::{
    Attribute, Expr, FnArg, GenericArgument, Ident, ImplItem, ItemFn, ItemImpl, Lit, LitStr, Meta,
    Pat, PathArguments, ReturnType, Signature, Type,
};

/// What a handler attribute declares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `#[tool]`
    Tool,
    /// `#[prompt]`
    Prompt,
    /// `#[resource]` (a template when its `uri` has `{variables}`)
    Resource,
}

impl Kind {
    fn attr(self) -> &'static str {
        match self {
            Kind::Tool => "#[tool]",
            Kind::Prompt => "#[prompt]",
            Kind::Resource => "#[resource]",
        }
    }
}

/// `#[tool(name = "...", description = "...", title = "...")]`.
#[derive(Default)]
struct Options {
    name: Option<String>,
    description: Option<String>,
    title: Option<String>,
    /// `#[resource]` only.
    uri: Option<String>,
    /// `#[resource]` only.
    mime_type: Option<String>,
    /// The path of the server crate (default `::ferromcp_server`).
    krate: Option<syn::Path>,
    /// `#[tool]` only: `annotations(read_only_hint = true, ..)`.
    annotations: Vec<(Ident, AnnotationValue)>,
    /// `#[tool]` only: expressions for `icons`, `meta`, `output_schema`.
    icons: Option<Expr>,
    meta: Option<Expr>,
    output_schema: Option<Expr>,
    /// `#[tool]` only: `task_support = "optional"` (the variant).
    task_support: Option<Ident>,
    /// `#[tool]` only: `ui = "ui://..."`, the tool's MCP App.
    ui: Option<LitStr>,
    /// `#[tool]` only: `visibility = "app"` (`"model"`, `"app"` or both,
    /// comma-separated): the `UiVisibility` variants.
    visibility: Option<Vec<Ident>>,
}

/// The value of one hint in `annotations(..)`.
#[derive(Clone)]
enum AnnotationValue {
    Bool(bool),
    Str(String),
}

/// The hints `annotations(..)` accepts (`ToolAnnotations`' fields).
const HINTS: [&str; 4] = [
    "read_only_hint",
    "destructive_hint",
    "idempotent_hint",
    "open_world_hint",
];

/// Parses `annotations(read_only_hint = true, destructive_hint, title = "..")`
/// (a bare hint means `true`).
fn parse_annotations(
    meta: &syn::meta::ParseNestedMeta,
    out: &mut Vec<(Ident, AnnotationValue)>,
) -> syn::Result<()> {
    meta.parse_nested_meta(|m| {
        let Some(ident) = m.path.get_ident().cloned() else {
            return Err(m.error(unsupported_hint()));
        };
        let name = ident.to_string();
        let value = if name == "title" {
            AnnotationValue::Str(m.value()?.parse::<LitStr>()?.value())
        } else if HINTS.contains(&name.as_str()) {
            if m.input.peek(syn::Token![=]) {
                let v = m.value()?;
                match v.parse::<syn::LitBool>() {
                    Ok(b) => AnnotationValue::Bool(b.value),
                    Err(e) => {
                        return Err(syn::Error::new(
                            e.span(),
                            format!("`{name}` takes `true` or `false`"),
                        ));
                    }
                }
            } else {
                AnnotationValue::Bool(true)
            }
        } else {
            return Err(m.error(unsupported_hint()));
        };
        if out.iter().any(|(i, _)| *i == ident) {
            return Err(m.error(format!("`{name}` is given twice")));
        }
        out.push((ident, value));
        Ok(())
    })
}

fn unsupported_hint() -> String {
    format!(
        "unsupported annotation: expected {}, each `= true` or `= false`, or `title = \"...\"`",
        HINTS.map(|h| format!("`{h}`")).join(", ")
    )
}

fn parse_options(kind: Kind, attr: TokenStream) -> syn::Result<Options> {
    let mut o = Options::default();
    if attr.is_empty() {
        return Ok(o);
    }
    let span = attr.clone();
    let parser = syn::meta::parser(|meta| {
        if meta.path.is_ident("crate") {
            let lit = meta.value()?.parse::<LitStr>()?;
            o.krate = Some(lit.parse::<syn::Path>()?);
            return Ok(());
        }
        if kind == Kind::Tool {
            if meta.path.is_ident("annotations") {
                return parse_annotations(&meta, &mut o.annotations);
            }
            let expr_slot = if meta.path.is_ident("icons") {
                Some(&mut o.icons)
            } else if meta.path.is_ident("meta") {
                Some(&mut o.meta)
            } else if meta.path.is_ident("output_schema") {
                Some(&mut o.output_schema)
            } else {
                None
            };
            if let Some(slot) = expr_slot {
                *slot = Some(meta.value()?.parse::<Expr>()?);
                return Ok(());
            }
            if meta.path.is_ident("ui") {
                let lit = meta.value()?.parse::<LitStr>()?;
                let uri = lit.value();
                // SEP-1865: an app resource URI uses the ui:// scheme.
                let ok = uri.strip_prefix("ui://").is_some_and(|rest| {
                    !rest.is_empty() && !rest.chars().any(|c| c.is_whitespace() || c.is_control())
                });
                if !ok {
                    return Err(syn::Error::new(
                        lit.span(),
                        format!(
                            "`ui` is a `ui://` URI naming the tool's app resource, not {uri:?}"
                        ),
                    ));
                }
                o.ui = Some(lit);
                return Ok(());
            }
            if meta.path.is_ident("visibility") {
                let lit = meta.value()?.parse::<LitStr>()?;
                let mut seen = Vec::new();
                for part in lit.value().split(',').map(str::trim) {
                    let variant = match part {
                        "model" => "Model",
                        "app" => "App",
                        _ => {
                            return Err(syn::Error::new(
                                lit.span(),
                                "`visibility` is \"model\", \"app\" or \"model, app\"",
                            ));
                        }
                    };
                    seen.push(Ident::new(variant, lit.span()));
                }
                o.visibility = Some(seen);
                return Ok(());
            }
            if meta.path.is_ident("task_support") {
                let lit = meta.value()?.parse::<LitStr>()?;
                let variant = match lit.value().as_str() {
                    "forbidden" => "Forbidden",
                    "optional" => "Optional",
                    "required" => "Required",
                    _ => {
                        return Err(syn::Error::new(
                            lit.span(),
                            "`task_support` is \"forbidden\", \"optional\" or \"required\"",
                        ));
                    }
                };
                o.task_support = Some(Ident::new(variant, lit.span()));
                return Ok(());
            }
        }
        let slot = if meta.path.is_ident("name") {
            &mut o.name
        } else if meta.path.is_ident("description") {
            &mut o.description
        } else if meta.path.is_ident("title") {
            &mut o.title
        } else if kind == Kind::Resource && meta.path.is_ident("uri") {
            &mut o.uri
        } else if kind == Kind::Resource && meta.path.is_ident("mime_type") {
            &mut o.mime_type
        } else {
            let expected = match kind {
                Kind::Resource => "`uri`, `name`, `description`, `title`, `mime_type` or `crate`",
                Kind::Tool => {
                    "`name`, `description`, `title`, `annotations(..)`, `icons`, `meta`, `output_schema`, `task_support`, `ui`, `visibility` or `crate`"
                }
                Kind::Prompt => "`name`, `description`, `title` or `crate`",
            };
            return Err(meta.error(format!(
                "unsupported {} argument: expected {expected}",
                kind.attr()
            )));
        };
        *slot = Some(meta.value()?.parse::<LitStr>()?.value());
        Ok(())
    });
    syn::parse::Parser::parse2(parser, attr)?;
    if o.visibility.is_some() && o.ui.is_none() {
        return Err(syn::Error::new_spanned(
            span,
            "`visibility` applies to a tool with an app: add `ui = \"ui://...\"`",
        ));
    }
    Ok(o).and_then(|o| match (&o.uri, span.is_empty()) {
        (None, _) if kind == Kind::Resource => Err(missing_uri(span)),
        _ => Ok(o),
    })
}

fn missing_uri(span: TokenStream) -> syn::Error {
    let msg =
        "#[resource] needs `uri = \"...\"` (a fixed URI, or an RFC 6570 template with `{var}`s)";
    if span.is_empty() {
        syn::Error::new(proc_macro2::Span::call_site(), msg)
    } else {
        syn::Error::new_spanned(span, msg)
    }
}

/// The variable names of an RFC 6570 template (`{a}`, `{+b}`, `{?c,d*}`).
fn template_vars(uri: &str) -> Vec<String> {
    let mut vars = Vec::new();
    let mut rest = uri;
    while let Some(start) = rest.find('{') {
        let after = &rest[start + 1..];
        let Some(end) = after.find('}') else { break };
        let expr = after[..end].trim_start_matches(['+', '#', '.', '/', ';', '?', '&']);
        for v in expr.split(',') {
            let v = v.trim_end_matches('*');
            let v = v.split(':').next().unwrap_or(v);
            if !v.is_empty() {
                vars.push(v.to_owned());
            }
        }
        rest = &after[end + 1..];
    }
    vars
}

/// What a parameter of the handler function is for.
enum Role {
    /// A model-supplied argument: a field of the arguments struct.
    Arg {
        ident: Ident,
        ty: Type,
        /// `doc`, `serde` and `schemars` attributes, moved to the field.
        attrs: Vec<Attribute>,
    },
    /// `RequestContext`.
    Context,
    /// `State<T>` (the type as written).
    State(Type),
    /// `ResourceRequest` (resources only).
    Request,
}

/// A handler function, analysed.
struct Handler {
    kind: Kind,
    fn_ident: Ident,
    name: String,
    description: Option<String>,
    title: Option<String>,
    receiver: bool,
    roles: Vec<Role>,
    /// `T` of a `Json<T>` / `Result<Json<T>, E>` return type.
    output: Option<Type>,
    /// The path of the server crate.
    krate: TokenStream,
    /// The declared return type (`None`: `()`).
    ret: Option<Type>,
    /// `#[resource]`: the URI (template) and MIME type.
    uri: Option<String>,
    mime_type: Option<String>,
    /// `#[tool]`: the definition's other parts.
    annotations: Vec<(Ident, AnnotationValue)>,
    icons: Option<Expr>,
    meta: Option<Expr>,
    output_schema: Option<Expr>,
    task_support: Option<Ident>,
    /// `#[tool]`: the app's `ui://` URI and who may call the tool.
    ui: Option<LitStr>,
    visibility: Option<Vec<Ident>>,
}

/// The doc comment of `attrs`, one leading space per line removed.
fn doc_string(attrs: &[Attribute]) -> Option<String> {
    let lines: Vec<String> = attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .filter_map(|a| match &a.meta {
            Meta::NameValue(nv) => match &nv.value {
                Expr::Lit(syn::ExprLit {
                    lit: Lit::Str(s), ..
                }) => Some(s.value()),
                _ => None,
            },
            _ => None,
        })
        .map(|l| l.strip_prefix(' ').map(str::to_owned).unwrap_or(l))
        .collect();
    let text = lines.join("\n").trim().to_owned();
    (!text.is_empty()).then_some(text)
}

/// The last path segment of `ty`, if it is a path type.
fn last_segment(ty: &Type) -> Option<&syn::PathSegment> {
    match ty {
        Type::Path(p) if p.qself.is_none() => p.path.segments.last(),
        Type::Group(g) => last_segment(&g.elem),
        Type::Paren(p) => last_segment(&p.elem),
        _ => None,
    }
}

/// The single type argument of `ty` when its last segment is `name<T, ..>`.
fn first_type_arg<'a>(ty: &'a Type, name: &str) -> Option<&'a Type> {
    let seg = last_segment(ty).filter(|s| s.ident == name)?;
    match &seg.arguments {
        PathArguments::AngleBracketed(a) => a.args.iter().find_map(|g| match g {
            GenericArgument::Type(t) => Some(t),
            _ => None,
        }),
        _ => None,
    }
}

fn is_named(ty: &Type, name: &str) -> bool {
    last_segment(ty).is_some_and(|s| s.ident == name)
}

/// The `T` of a `Json<T>` or `Result<Json<T>, E>` return type.
fn json_output(ret: &ReturnType) -> Option<Type> {
    let ReturnType::Type(_, ty) = ret else {
        return None;
    };
    let ok = first_type_arg(ty, "Result").unwrap_or(ty);
    first_type_arg(ok, "Json").cloned()
}

/// Whether `ty` is `String` (`required: Some(true)`) or `Option<String>`
/// (`Some(false)`); `None` for anything else.
fn prompt_arg_required(ty: &Type) -> Option<bool> {
    if is_named(ty, "String") {
        return Some(true);
    }
    first_type_arg(ty, "Option")
        .filter(|t| is_named(t, "String"))
        .map(|_| false)
}

/// Adds `e` to the errors gathered so far.
fn push_err(acc: &mut Option<syn::Error>, e: syn::Error) {
    match acc {
        Some(a) => a.combine(e),
        None => *acc = Some(e),
    }
}

/// Analyses `sig` and strips the attributes from its parameters (they move
/// to the generated struct). Errors point at the offending tokens.
fn analyze(
    kind: Kind,
    opts: Options,
    attrs: &[Attribute],
    sig: &mut Signature,
    in_router: bool,
) -> syn::Result<Handler> {
    let what = kind.attr();
    let mut errors = None;
    if sig.asyncness.is_none() {
        push_err(
            &mut errors,
            syn::Error::new_spanned(
                sig.fn_token,
                format!(
                    "{what} functions must be `async fn`: write `async fn {}(..)` (the handler is awaited; a synchronous body works inside it)",
                    sig.ident
                ),
            ),
        );
    }
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        push_err(
            &mut errors,
            syn::Error::new_spanned(
                &sig.generics,
                format!("{what} functions cannot be generic: the arguments' JSON Schema is fixed"),
            ),
        );
    }
    if let Some(v) = &sig.variadic {
        push_err(
            &mut errors,
            syn::Error::new_spanned(v, format!("{what} functions cannot be variadic")),
        );
    }
    let mut receiver = false;
    let mut roles = Vec::new();
    let mut seen_cx = false;
    for input in sig.inputs.iter_mut() {
        match input {
            FnArg::Receiver(r) => {
                if !in_router {
                    push_err(
                        &mut errors,
                        syn::Error::new_spanned(
                            &*r,
                            format!("a {what} method must be in an impl block marked `#[router]`"),
                        ),
                    );
                } else if r.reference.is_none() || r.mutability.is_some() || r.colon_token.is_some()
                {
                    push_err(
                        &mut errors,
                        syn::Error::new_spanned(
                            &*r,
                            format!(
                                "{what} methods take `&self` (the server value, shared by `Arc`); \
                                 `self`, `&mut self` and typed receivers are not supported \
                                 (use interior mutability for state that changes)"
                            ),
                        ),
                    );
                }
                receiver = true;
            }
            FnArg::Typed(pt) => {
                let param_attrs = std::mem::take(&mut pt.attrs);
                let ty = (*pt.ty).clone();
                if let Type::Reference(_) = ty {
                    push_err(
                        &mut errors,
                        syn::Error::new_spanned(
                            &pt.ty,
                            format!(
                                "{what} parameters must be owned types (e.g. `String`, not `&str`): \
                                 they are deserialized from the request"
                            ),
                        ),
                    );
                    continue;
                }
                if let Type::ImplTrait(_) = ty {
                    push_err(
                        &mut errors,
                        syn::Error::new_spanned(
                            &pt.ty,
                            format!("{what} functions cannot be generic (`impl Trait` parameter)"),
                        ),
                    );
                    continue;
                }
                if is_named(&ty, "RequestContext") {
                    if seen_cx {
                        push_err(
                            &mut errors,
                            syn::Error::new_spanned(&pt.ty, "only one `RequestContext` parameter"),
                        );
                    }
                    seen_cx = true;
                    roles.push(Role::Context);
                    continue;
                }
                if kind == Kind::Resource && is_named(&ty, "ResourceRequest") {
                    roles.push(Role::Request);
                    continue;
                }
                if first_type_arg(&ty, "State").is_some() {
                    // Several are fine: state is a type map.
                    roles.push(Role::State(ty));
                    continue;
                }
                let ident = match &*pt.pat {
                    Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => p.ident.clone(),
                    other => {
                        push_err(
                            &mut errors,
                            syn::Error::new_spanned(
                                other,
                                format!(
                                    "{what} parameters must be plain names: the name is the \
                                     argument's name"
                                ),
                            ),
                        );
                        continue;
                    }
                };
                let mut kept = Vec::new();
                for a in param_attrs {
                    let p = a.path();
                    let allowed = p.is_ident("doc")
                        || (kind == Kind::Tool && (p.is_ident("serde") || p.is_ident("schemars")));
                    if allowed {
                        kept.push(a);
                    } else {
                        let hint = match kind {
                            Kind::Tool => "doc comments, `#[serde(..)]` and `#[schemars(..)]`",
                            Kind::Prompt | Kind::Resource => "doc comments",
                        };
                        push_err(
                            &mut errors,
                            syn::Error::new_spanned(
                                &a,
                                format!("unsupported attribute on a {what} parameter: only {hint}"),
                            ),
                        );
                    }
                }
                if kind == Kind::Resource {
                    let vars = opts.uri.as_deref().map(template_vars).unwrap_or_default();
                    let name = ident.unraw().to_string();
                    if prompt_arg_required(&ty).is_none() || !vars.contains(&name) {
                        let msg = if vars.is_empty() {
                            "a static resource takes only `State<T>`, `ResourceRequest` and \
                             `RequestContext` parameters (`String` ones are for the `{var}`s \
                             of a template uri)"
                                .to_owned()
                        } else {
                            format!(
                                "resource template parameters are `String` or `Option<String>` \
                                 named after a variable of the uri: one of {vars:?}"
                            )
                        };
                        push_err(&mut errors, syn::Error::new_spanned(&pt.pat, msg));
                        continue;
                    }
                }
                if kind == Kind::Prompt && prompt_arg_required(&ty).is_none() {
                    push_err(
                        &mut errors,
                        syn::Error::new_spanned(
                            &pt.ty,
                            "prompt arguments are strings: use `String` (required) or \
                             `Option<String>` (optional)",
                        ),
                    );
                    continue;
                }
                roles.push(Role::Arg {
                    ident,
                    ty,
                    attrs: kept,
                });
            }
        }
    }
    if let Some(e) = errors {
        return Err(e);
    }
    let fn_ident = sig.ident.clone();
    Ok(Handler {
        kind,
        name: opts.name.unwrap_or_else(|| fn_ident.unraw().to_string()),
        description: opts.description.or_else(|| doc_string(attrs)),
        title: opts.title,
        receiver,
        roles,
        krate: match &opts.krate {
            Some(p) => quote!(#p),
            None => quote!(::ferromcp_server),
        },
        ret: match &sig.output {
            ReturnType::Type(_, t) => Some((**t).clone()),
            ReturnType::Default => None,
        },
        output: match kind {
            Kind::Tool => json_output(&sig.output),
            Kind::Prompt | Kind::Resource => None,
        },
        uri: opts.uri,
        mime_type: opts.mime_type,
        annotations: opts.annotations,
        icons: opts.icons,
        meta: opts.meta,
        output_schema: opts.output_schema,
        task_support: opts.task_support,
        ui: opts.ui,
        visibility: opts.visibility,
        fn_ident,
    })
}

/// The expression building the handler's `ToolDef` / `PromptDef`. In a
/// router, it runs inside `fn tool_defs(self: &Arc<Self>)`.
fn def_expr(h: &Handler, self_ty: Option<&Type>) -> TokenStream {
    let in_router = self_ty.is_some();
    // The arguments struct is an item of its own, where `Self` means nothing.
    let fix = |t: &Type| -> TokenStream {
        match self_ty {
            Some(st) => replace_self(quote!(#t), st),
            None => quote!(#t),
        }
    };
    let name = &h.name;
    let k = &h.krate;
    let fn_ident = &h.fn_ident;
    let description = h.description.as_ref().map(|d| quote!(.description(#d)));
    let title = h.title.as_ref().map(|t| quote!(.title(#t)));
    // The first `State<T>` is the handler's extractor; the others
    // are extracted in the handler (and declared for the registration
    // check).
    let mut n_state = 0usize;
    let call_args: Vec<TokenStream> = h
        .roles
        .iter()
        .map(|r| match r {
            Role::Arg { ident, .. } => quote!(#ident),
            Role::Context => quote!(__mcp_cx),
            Role::State(_) => {
                n_state += 1;
                if n_state == 1 {
                    quote!(__mcp_state)
                } else {
                    let i = format_ident!("__mcp_state_{}", n_state);
                    quote!(#i)
                }
            }
            Role::Request => quote!(__mcp_args),
        })
        .collect();
    let extra_states: Vec<(Ident, TokenStream)> = h
        .roles
        .iter()
        .filter_map(|r| match r {
            Role::State(t) => first_type_arg(t, "State").map(&fix),
            _ => None,
        })
        .enumerate()
        .skip(1)
        .map(|(i, inner)| (format_ident!("__mcp_state_{}", i + 1), inner))
        .collect();
    let call = if h.receiver {
        quote! {
            let __mcp_this = ::std::sync::Arc::clone(&__mcp_this);
            async move { __mcp_this.#fn_ident(#(#call_args),*).await }
        }
    } else if in_router {
        quote!(Self::#fn_ident(#(#call_args),*))
    } else {
        quote!(#fn_ident(#(#call_args),*))
    };
    let call = if extra_states.is_empty() {
        call
    } else {
        // Extracted before the handler's future is made (it takes the
        // context), so a missing one answers the error instead.
        let extract = extra_states.iter().map(|(i, inner)| {
            quote! {
                let #i = match #k::__private::extract_state::<#inner>(&__mcp_cx) {
                    ::core::result::Result::Ok(s) => s,
                    ::core::result::Result::Err(e) => break '__mcp ::core::result::Result::Err(e),
                };
            }
        });
        quote! {
            let __mcp_fut = '__mcp: {
                #(#extract)*
                ::core::result::Result::Ok::<_, #k::HandlerError>({ #call })
            };
            async move {
                match __mcp_fut {
                    ::core::result::Result::Ok(f) => ::core::result::Result::Ok::<_, #k::HandlerError>(f.await),
                    ::core::result::Result::Err(e) => ::core::result::Result::Err(e),
                }
            }
        }
    };
    let needs = extra_states.iter().map(|(_, inner)| {
        quote!(let __mcp_def = #k::__private::NeedsState::needs_state::<#inner>(__mcp_def);)
    });
    let this = h
        .receiver
        .then(|| quote!(let __mcp_this = ::std::sync::Arc::clone(self);));
    let state_ty = h.roles.iter().find_map(|r| match r {
        Role::State(t) => Some(t),
        _ => None,
    });
    let arg_idents: Vec<&Ident> = h
        .roles
        .iter()
        .filter_map(|r| match r {
            Role::Arg { ident, .. } => Some(ident),
            _ => None,
        })
        .collect();

    let (prelude, builder, args_ty, unpack) = match h.kind {
        Kind::Tool => {
            let output = h.output.as_ref().map(|t| quote!(.output::<#t>()));
            let (prelude, args_ty, unpack) = if arg_idents.is_empty() {
                (quote!(), quote!(#k::NoArgs), quote!(let _ = __mcp_args;))
            } else {
                let fields = h.roles.iter().filter_map(|r| match r {
                    Role::Arg { ident, ty, attrs } => {
                        let ty = fix(ty);
                        Some(quote!(#(#attrs)* #ident: #ty,))
                    }
                    _ => None,
                });
                let schema_name = format!("{name}_arguments");
                let k_str = k.to_string().replace(' ', "");
                let serde_path = format!("{k_str}::__private::serde");
                let schemars_path = format!("{k_str}::__private::schemars");
                (
                    quote! {
                        #[derive(
                            #k::__private::serde::Deserialize,
                            #k::__private::schemars::JsonSchema
                        )]
                        #[serde(crate = #serde_path)]
                        #[schemars(crate = #schemars_path, rename = #schema_name)]
                        struct __McpArgs { #(#fields)* }
                    },
                    quote!(__McpArgs),
                    quote!(let __McpArgs { #(#arg_idents),* } = __mcp_args;),
                )
            };
            let annotations = (!h.annotations.is_empty()).then(|| {
                let fields = h.annotations.iter().map(|(ident, v)| match v {
                    AnnotationValue::Bool(b) => quote!(#ident: ::core::option::Option::Some(#b),),
                    AnnotationValue::Str(t) => {
                        quote!(#ident: ::core::option::Option::Some(::std::string::String::from(#t)),)
                    }
                });
                quote! {
                    .annotations(#k::protocol::types::ToolAnnotations {
                        #(#fields)*
                        ..::core::default::Default::default()
                    })
                }
            });
            let icons = h.icons.as_ref().map(|e| quote!(.icons(#e)));
            let meta = h.meta.as_ref().map(|e| quote!(.meta(#e)));
            let output_schema = h.output_schema.as_ref().map(|e| quote!(.output_schema(#e)));
            let task_support = h
                .task_support
                .as_ref()
                .map(|v| quote!(.task_support(#k::TaskSupport::#v)));
            // After `meta`, which replaces the whole `_meta`.
            let ui = h.ui.as_ref().map(|uri| match &h.visibility {
                None => quote!(.ui(#uri)),
                Some(v) => quote! {
                    .ui(#k::protocol::types::UiToolMeta::new(#uri)
                        .visibility([#(#k::protocol::types::UiVisibility::#v),*]))
                },
            });
            (
                prelude,
                quote!(#k::tool(#name) #description #title #output #annotations #icons #meta #ui #output_schema #task_support),
                args_ty,
                unpack,
            )
        }
        Kind::Prompt => {
            let mut declare = Vec::new();
            let mut unpack = Vec::new();
            for r in &h.roles {
                if let Role::Arg { ident, ty, attrs } = r {
                    let arg = ident.unraw().to_string();
                    let desc = doc_string(attrs).unwrap_or_default();
                    let required = prompt_arg_required(ty).unwrap_or(false);
                    declare.push(quote!(.argument(#arg, #desc, #required)));
                    unpack.push(if required {
                        quote!(let #ident = __mcp_args.get(#arg).cloned().unwrap_or_default();)
                    } else {
                        quote!(let #ident = __mcp_args.get(#arg).cloned();)
                    });
                }
            }
            (
                quote!(),
                quote!(#k::prompt(#name) #description #title #(#declare)*),
                quote!(#k::PromptArgs),
                quote!(#(#unpack)* let _ = &__mcp_args;),
            )
        }
        Kind::Resource => {
            let uri = h.uri.clone().unwrap_or_default();
            let mime = h.mime_type.as_ref().map(|m| quote!(.mime_type(#m)));
            let start = if template_vars(&uri).is_empty() {
                quote!(#k::resource(#uri, #name))
            } else {
                quote!(#k::resource_template(#uri, #name))
            };
            let unpack = h.roles.iter().filter_map(|r| match r {
                Role::Arg { ident, ty, .. } => {
                    let var = ident.unraw().to_string();
                    Some(if prompt_arg_required(ty).unwrap_or(false) {
                        quote!(let #ident = __mcp_args.vars.get(#var).cloned().unwrap_or_default();)
                    } else {
                        quote!(let #ident = __mcp_args.vars.get(#var).cloned();)
                    })
                }
                _ => None,
            });
            (
                quote!(),
                quote!(#start #description #title #mime),
                quote!(#k::ResourceRequest),
                quote!(#(#unpack)* let _ = &__mcp_args;),
            )
        }
    };
    // The builder call's trait bounds (the return type's) are reported at
    // the return type when there is one, not at the attribute.
    let ret_span = h.ret.as_ref().map_or_else(Span::call_site, |r| r.span());
    let handler_fn = Ident::new("handler", ret_span);
    let handler = match state_ty {
        Some(st) => quote! {
            .#handler_fn(move |__mcp_state: #st, __mcp_args: #args_ty, __mcp_cx: #k::RequestContext| {
                #unpack
                #call
            })
        },
        None => quote! {
            .#handler_fn(move |__mcp_args: #args_ty, __mcp_cx: #k::RequestContext| {
                #unpack
                #call
            })
        },
    };
    // A return type the builder cannot take is reported at the return
    // type, not only at the attribute.
    let check_ret = h.ret.as_ref().map(|ret| {
        let bound = match h.kind {
            Kind::Tool => quote!(#k::IntoToolResult),
            Kind::Prompt => quote!(#k::IntoPromptResult),
            Kind::Resource => quote!(#k::IntoReadResult),
        };
        quote_spanned! {ret.span()=>
            fn __mcp_returns<R: #bound>() {}
            let _ = __mcp_returns::<#ret>;
        }
    });
    // A tool parameter type without `Deserialize` / `JsonSchema` is
    // reported at the parameter, with the fix, before the derives' errors.
    let check_params = (h.kind == Kind::Tool).then(|| {
        let checks = h.roles.iter().filter_map(|r| match r {
            Role::Arg { ty, .. } => {
                let fixed = fix(ty);
                Some(quote_spanned! {ty.span()=>
                    let _ = __mcp_param::<#fixed>;
                })
            }
            _ => None,
        });
        quote! {
            fn __mcp_param<P: #k::__private::ToolParam>() {}
            #(#checks)*
        }
    });
    quote! {
        {
            #check_params
            #prelude
            #check_ret
            #this
            let __mcp_def = #builder #handler;
            #(#needs)*
            __mcp_def
        }
    }
}

/// `ts` with every `Self` replaced by `self_ty`.
fn replace_self(ts: TokenStream, self_ty: &Type) -> TokenStream {
    use proc_macro2::{Group, TokenTree};
    ts.into_iter()
        .flat_map(|tt| -> TokenStream {
            match tt {
                TokenTree::Ident(i) if i == "Self" => quote!(#self_ty),
                TokenTree::Group(g) => {
                    let mut ng = Group::new(g.delimiter(), replace_self(g.stream(), self_ty));
                    ng.set_span(g.span());
                    TokenTree::Group(ng).into()
                }
                other => other.into(),
            }
        })
        .collect()
}

/// `#[tool]` / `#[prompt]` / `#[resource]` on a free `async fn`.
pub(crate) fn free_fn(
    kind: Kind,
    attr: TokenStream,
    item: TokenStream,
) -> syn::Result<TokenStream> {
    if kind == Kind::Resource && attr.is_empty() {
        return Err(missing_uri(attr));
    }
    let opts = parse_options(kind, attr)?;
    let mut f: ItemFn = syn::parse2(item)?;
    let h = analyze(kind, opts, &f.attrs, &mut f.sig, false)?;
    let expr = def_expr(&h, None);
    let k = &h.krate;
    let vis = &f.vis;
    let (suffix, def_ty, noun) = match kind {
        Kind::Tool => ("tool", quote!(#k::ToolDef), "tool"),
        Kind::Prompt => ("prompt", quote!(#k::PromptDef), "prompt"),
        Kind::Resource => {
            let uri = h.uri.as_deref().unwrap_or_default();
            if template_vars(uri).is_empty() {
                ("resource", quote!(#k::ResourceDef), "resource")
            } else {
                ("resource", quote!(#k::TemplateDef), "resource template")
            }
        }
    };
    let def_fn = format_ident!(
        "{}_{}",
        h.fn_ident.unraw(),
        suffix,
        span = h.fn_ident.span()
    );
    // A raw identifier (`r#type`) cannot be an intra-doc link.
    let served_by = if h.fn_ident.to_string().starts_with("r#") {
        format!("`{}`", h.fn_ident.unraw())
    } else {
        format!("[`{}`]", h.fn_ident)
    };
    let doc = format!(
        "The `{}` MCP {noun}, served by {served_by} (generated by `#[{suffix}]`).",
        h.name
    );
    Ok(quote! {
        #f
        #[doc = #doc]
        #vis fn #def_fn() -> #def_ty #expr
    })
}

/// The handler attribute on a router method, if any: its kind and arguments.
fn take_handler_attr(attrs: &mut Vec<Attribute>) -> syn::Result<Option<(Kind, TokenStream)>> {
    let pos = attrs.iter().position(|a| {
        let last = a.path().segments.last().map(|s| s.ident.to_string());
        matches!(
            last.as_deref(),
            Some("tool") | Some("prompt") | Some("resource")
        )
    });
    let Some(pos) = pos else {
        return Ok(None);
    };
    let a = attrs.remove(pos);
    let kind = match a
        .path()
        .segments
        .last()
        .map(|s| s.ident.to_string())
        .as_deref()
    {
        Some("prompt") => Kind::Prompt,
        Some("resource") => Kind::Resource,
        _ => Kind::Tool,
    };
    let args = match a.meta {
        Meta::Path(_) => TokenStream::new(),
        Meta::List(l) => l.tokens,
        Meta::NameValue(nv) => {
            return Err(syn::Error::new_spanned(
                nv,
                format!(
                    "expected {} or {}(name = \"...\")",
                    kind.attr(),
                    kind.attr()
                ),
            ));
        }
    };
    Ok(Some((kind, args)))
}

/// `#[router]` on an inherent impl block.
pub(crate) fn router(attr: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let mut krate: Option<syn::Path> = None;
    if !attr.is_empty() {
        let parser = syn::meta::parser(|meta| {
            if meta.path.is_ident("crate") {
                krate = Some(meta.value()?.parse::<LitStr>()?.parse()?);
                Ok(())
            } else {
                Err(meta.error("unsupported #[router] argument: expected `crate`"))
            }
        });
        syn::parse::Parser::parse2(parser, attr)?;
    }
    let k = match &krate {
        Some(p) => quote!(#p),
        None => quote!(::ferromcp_server),
    };
    let mut imp: ItemImpl = syn::parse2(item)?;
    if let Some((_, path, _)) = &imp.trait_ {
        return Err(syn::Error::new_spanned(
            path,
            "#[router] goes on an inherent impl block (`impl MyServer { .. }`), not a trait impl",
        ));
    }
    if !imp.generics.params.is_empty() || imp.generics.where_clause.is_some() {
        return Err(syn::Error::new_spanned(
            &imp.generics,
            "#[router] does not support generic impl blocks",
        ));
    }
    let mut tools = Vec::new();
    let mut prompts = Vec::new();
    let mut resources = Vec::new();
    let mut templates = Vec::new();
    let self_ty = (*imp.self_ty).clone();
    let mut errors = None;
    for item in imp.items.iter_mut() {
        let ImplItem::Fn(f) = item else { continue };
        let (kind, args) = match take_handler_attr(&mut f.attrs) {
            Ok(Some(k)) => k,
            Ok(None) => continue,
            Err(e) => {
                push_err(&mut errors, e);
                continue;
            }
        };
        if kind == Kind::Resource && args.is_empty() {
            push_err(&mut errors, missing_uri(f.sig.ident.to_token_stream()));
            continue;
        }
        let analysed = parse_options(kind, args).and_then(|mut o| {
            if o.krate.is_none() {
                o.krate.clone_from(&krate);
            }
            analyze(kind, o, &f.attrs, &mut f.sig, true)
        });
        match analysed {
            Ok(h) => {
                let def = def_expr(&h, Some(&self_ty));
                match kind {
                    Kind::Tool => tools.push(def),
                    Kind::Prompt => prompts.push(def),
                    Kind::Resource
                        if template_vars(h.uri.as_deref().unwrap_or_default()).is_empty() =>
                    {
                        resources.push(def)
                    }
                    Kind::Resource => templates.push(def),
                }
            }
            Err(e) => push_err(&mut errors, e),
        }
    }
    if let Some(e) = errors {
        return Err(e);
    }
    Ok(quote! {
        #imp

        impl #self_ty {
            /// The tools declared with `#[tool]` in the `#[router]` impl
            /// block, their handlers bound to this shared value.
            #[allow(dead_code)]
            pub fn tool_defs(self: &::std::sync::Arc<Self>) -> ::std::vec::Vec<#k::ToolDef> {
                ::std::vec![#(#tools),*]
            }
            /// The prompts declared with `#[prompt]` in the `#[router]`
            /// impl block, their handlers bound to this shared value.
            #[allow(dead_code)]
            pub fn prompt_defs(self: &::std::sync::Arc<Self>) -> ::std::vec::Vec<#k::PromptDef> {
                ::std::vec![#(#prompts),*]
            }
            /// The static resources declared with `#[resource]` in the
            /// `#[router]` impl block, their handlers bound to this shared value.
            #[allow(dead_code)]
            pub fn resource_defs(self: &::std::sync::Arc<Self>) -> ::std::vec::Vec<#k::ResourceDef> {
                ::std::vec![#(#resources),*]
            }
            /// The resource templates declared with `#[resource]` in the
            /// `#[router]` impl block, their handlers bound to this shared value.
            #[allow(dead_code)]
            pub fn resource_template_defs(self: &::std::sync::Arc<Self>) -> ::std::vec::Vec<#k::TemplateDef> {
                ::std::vec![#(#templates),*]
            }
            /// Registers every tool, prompt, resource and resource template
            /// of the `#[router]` impl block on `builder`.
            #[allow(dead_code)]
            pub fn register(
                self: &::std::sync::Arc<Self>,
                builder: #k::ServerBuilder,
            ) -> #k::ServerBuilder {
                builder
                    .tools(self.tool_defs())
                    .prompts(self.prompt_defs())
                    .resources(self.resource_defs())
                    .resource_templates(self.resource_template_defs())
            }
        }
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    fn tool_err(attr: TokenStream, item: TokenStream) -> String {
        match free_fn(Kind::Tool, attr, item) {
            Ok(t) => panic!("expected an error, got {t}"),
            Err(e) => e.to_compile_error().to_string(),
        }
    }

    fn router_err(item: TokenStream) -> String {
        match router(TokenStream::new(), item) {
            Ok(t) => panic!("expected an error, got {t}"),
            Err(e) => e.to_compile_error().to_string(),
        }
    }

    #[test]
    fn a_plain_tool_expands_to_the_builder() {
        let out = free_fn(
            Kind::Tool,
            quote!(),
            quote! {
                /// Adds.
                async fn add(/// first
                    a: i64, b: i64, cx: RequestContext) -> Json<Sum> { todo!() }
            },
        )
        .unwrap()
        .to_string();
        assert!(out.contains("fn add_tool"), "{out}");
        assert!(
            out.contains(":: ferromcp_server :: tool (\"add\")"),
            "{out}"
        );
        assert!(out.contains(". description (\"Adds.\")"), "{out}");
        assert!(out.contains(". output :: < Sum > ()"), "{out}");
        assert!(out.contains("add (a , b , __mcp_cx)"), "{out}");
        assert!(out.contains("a : i64"), "{out}");
    }

    #[test]
    fn options_override_name_and_description() {
        let out = free_fn(
            Kind::Tool,
            quote!(name = "sum", description = "Sums", title = "Sum"),
            quote!(
                /// ignored
                async fn add() -> String {
                    todo!()
                }
            ),
        )
        .unwrap()
        .to_string();
        assert!(out.contains("tool (\"sum\")"), "{out}");
        assert!(out.contains("description (\"Sums\")"), "{out}");
        assert!(out.contains("title (\"Sum\")"), "{out}");
        assert!(out.contains(":: ferromcp_server :: NoArgs"), "{out}");
        let e = tool_err(
            quote!(nme = "x"),
            quote!(
                async fn f() {}
            ),
        );
        assert!(e.contains("unsupported #[tool] argument"), "{e}");
    }

    #[test]
    fn annotations_and_the_other_definition_parts_expand_to_setters() {
        let out = free_fn(
            Kind::Tool,
            quote!(
                annotations(
                    read_only_hint = true,
                    destructive_hint = false,
                    open_world_hint,
                    title = "Look"
                ),
                icons = icons(),
                meta = meta(),
                output_schema = schema(),
                task_support = "optional"
            ),
            quote!(
                async fn look() -> String {
                    todo!()
                }
            ),
        )
        .unwrap()
        .to_string();
        assert!(out.contains(". annotations (:: ferromcp_server :: protocol :: types :: ToolAnnotations { read_only_hint : :: core :: option :: Option :: Some (true) , destructive_hint : :: core :: option :: Option :: Some (false) , open_world_hint : :: core :: option :: Option :: Some (true) , title :"), "{out}");
        assert!(out.contains(". icons (icons ())"), "{out}");
        assert!(out.contains(". meta (meta ())"), "{out}");
        assert!(out.contains(". output_schema (schema ())"), "{out}");
        assert!(
            out.contains(". task_support (:: ferromcp_server :: TaskSupport :: Optional)"),
            "{out}"
        );
    }

    #[test]
    fn tool_ui_and_visibility() {
        let item = quote!(
            async fn show() -> String {
                String::new()
            }
        );
        let e = tool_err(quote!(ui = "https://x/app.html"), item.clone());
        assert!(e.contains("`ui` is a `ui://` URI"), "{e}");
        let e = tool_err(quote!(ui = "ui://"), item.clone());
        assert!(e.contains("`ui` is a `ui://` URI"), "{e}");
        let e = tool_err(quote!(ui = "ui://a/v", visibility = "agent"), item.clone());
        assert!(e.contains("`visibility` is"), "{e}");
        let e = tool_err(quote!(visibility = "app"), item.clone());
        assert!(e.contains("add `ui = "), "{e}");
        let out = free_fn(
            Kind::Tool,
            quote!(ui = "ui://a/v", visibility = "model, app"),
            item,
        )
        .map(|t| t.to_string())
        .unwrap_or_default();
        assert!(out.contains(". ui ("), "{out}");
        assert!(out.contains("UiVisibility :: Model , :: ferromcp_server :: protocol :: types :: UiVisibility :: App"), "{out}");
    }

    #[test]
    fn a_wrong_annotation_says_which_ones_exist() {
        let item = quote!(
            async fn f() {}
        );
        let e = tool_err(quote!(annotations(read_only = true)), item.clone());
        assert!(
            e.contains("unsupported annotation: expected `read_only_hint`, `destructive_hint`, `idempotent_hint`, `open_world_hint`"),
            "{e}"
        );
        let e = tool_err(quote!(annotations(read_only_hint = "yes")), item.clone());
        assert!(
            e.contains("`read_only_hint` takes `true` or `false`"),
            "{e}"
        );
        let e = tool_err(
            quote!(annotations(read_only_hint, read_only_hint = false)),
            item.clone(),
        );
        assert!(e.contains("`read_only_hint` is given twice"), "{e}");
        let e = tool_err(quote!(task_support = "sometimes"), item.clone());
        assert!(
            e.contains("`task_support` is") && e.contains("required"),
            "{e}"
        );
        let e = match free_fn(Kind::Prompt, quote!(annotations(read_only_hint)), item) {
            Ok(t) => panic!("expected an error, got {t}"),
            Err(e) => e.to_compile_error().to_string(),
        };
        assert!(e.contains("unsupported #[prompt] argument"), "{e}");
    }

    #[test]
    fn a_non_async_fn_is_refused() {
        let e = tool_err(
            quote!(),
            quote!(
                fn f() -> String {
                    todo!()
                }
            ),
        );
        assert!(e.contains("must be `async fn`"), "{e}");
    }

    #[test]
    fn generics_and_borrowed_parameters_are_refused() {
        let e = tool_err(
            quote!(),
            quote!(
                async fn f<T>(t: T) {}
            ),
        );
        assert!(e.contains("cannot be generic"), "{e}");
        let e = tool_err(
            quote!(),
            quote!(
                async fn f(t: impl Into<String>) {}
            ),
        );
        assert!(e.contains("cannot be generic"), "{e}");
        let e = tool_err(
            quote!(),
            quote!(
                async fn f(s: &str) {}
            ),
        );
        assert!(e.contains("must be owned types"), "{e}");
        let e = tool_err(
            quote!(),
            quote!(
                async fn f((a, b): (i32, i32)) {}
            ),
        );
        assert!(e.contains("plain names"), "{e}");
        let e = tool_err(
            quote!(),
            quote!(
                async fn f(#[cfg(x)] a: i32) {}
            ),
        );
        assert!(e.contains("unsupported attribute"), "{e}");
    }

    #[test]
    fn several_errors_are_reported_together() {
        let e = tool_err(
            quote!(),
            quote!(
                fn f<T>(s: &str) {}
            ),
        );
        assert!(e.contains("async fn"), "{e}");
        assert!(e.contains("generic"), "{e}");
        assert!(e.contains("owned"), "{e}");
    }

    #[test]
    fn a_method_outside_a_router_is_refused() {
        let e = tool_err(
            quote!(),
            quote!(
                async fn f(&self) {}
            ),
        );
        assert!(e.contains("marked `#[router]`"), "{e}");
    }

    #[test]
    fn unsupported_receivers_are_refused_in_a_router() {
        for item in [
            quote!(impl S { #[tool] async fn f(&mut self) {} }),
            quote!(impl S { #[tool] async fn f(self) {} }),
            quote!(impl S { #[tool] async fn f(self: Arc<Self>) {} }),
        ] {
            let e = router_err(item);
            assert!(e.contains("take `&self`"), "{e}");
        }
    }

    #[test]
    fn generic_and_trait_impls_are_refused() {
        let e = router_err(quote!(
            impl<T> S<T> {
                #[tool]
                async fn f(&self) {}
            }
        ));
        assert!(e.contains("generic impl"), "{e}");
        let e = router_err(quote!(impl Tr for S { }));
        assert!(e.contains("inherent impl"), "{e}");
        let e = match router(quote!(krate = "x"), quote!(impl S {})) {
            Ok(t) => panic!("{t}"),
            Err(e) => e.to_string(),
        };
        assert!(e.contains("unsupported #[router] argument"), "{e}");
    }

    #[test]
    fn a_router_collects_tools_and_prompts() {
        let out = router(
            TokenStream::new(),
            quote! {
                impl S {
                    #[tool]
                    async fn a(&self, x: i32) -> String { todo!() }
                    #[ferromcp_server::macros::prompt(name = "p")]
                    async fn b(&self, topic: String, tone: Option<String>) -> Vec<PromptMessage> { todo!() }
                    fn helper(&self) {}
                }
            },
        )
        .unwrap()
        .to_string();
        assert!(out.contains("fn tool_defs"), "{out}");
        assert!(out.contains("fn prompt_defs"), "{out}");
        assert!(out.contains("fn register"), "{out}");
        assert!(out.contains("__mcp_this . a (x)"), "{out}");
        assert!(
            out.contains(". argument (\"topic\" , \"\" , true)"),
            "{out}"
        );
        assert!(
            out.contains(". argument (\"tone\" , \"\" , false)"),
            "{out}"
        );
        assert!(!out.contains("# [tool]"), "attribute stripped: {out}");
    }

    #[test]
    fn prompt_arguments_must_be_strings() {
        let e = match free_fn(
            Kind::Prompt,
            quote!(),
            quote!(
                async fn p(n: u32) {}
            ),
        ) {
            Ok(t) => panic!("{t}"),
            Err(e) => e.to_string(),
        };
        assert!(e.contains("prompt arguments are strings"), "{e}");
    }

    #[test]
    fn template_variables_are_read_from_the_uri() {
        assert_eq!(template_vars("file:///x"), Vec::<String>::new());
        assert_eq!(
            template_vars("a://{x}/{+y}{?p,q*}{#f:3}"),
            ["x", "y", "p", "q", "f"]
        );
    }

    fn resource_err(attr: TokenStream, item: TokenStream) -> String {
        match free_fn(Kind::Resource, attr, item) {
            Ok(t) => panic!("expected an error, got {t}"),
            Err(e) => e.to_compile_error().to_string(),
        }
    }

    #[test]
    fn resources_expand_to_a_resource_or_a_template() {
        let out = free_fn(
            Kind::Resource,
            quote!(uri = "mem://a", mime_type = "text/plain"),
            quote!(
                async fn a(r: ResourceRequest) -> String {
                    todo!()
                }
            ),
        )
        .unwrap()
        .to_string();
        assert!(
            out.contains(":: ferromcp_server :: resource (\"mem://a\" , \"a\")"),
            "{out}"
        );
        assert!(out.contains("mime_type (\"text/plain\")"), "{out}");
        assert!(
            out.contains("-> :: ferromcp_server :: ResourceDef"),
            "{out}"
        );
        let out = free_fn(
            Kind::Resource,
            quote!(uri = "mem://{id}", name = "items"),
            quote!(
                async fn b(id: String) -> String {
                    todo!()
                }
            ),
        )
        .unwrap()
        .to_string();
        assert!(
            out.contains("resource_template (\"mem://{id}\" , \"items\")"),
            "{out}"
        );
        assert!(
            out.contains("-> :: ferromcp_server :: TemplateDef"),
            "{out}"
        );
        assert!(out.contains("vars . get (\"id\")"), "{out}");
    }

    #[test]
    fn resource_mistakes_are_refused() {
        let e = resource_err(
            quote!(),
            quote!(
                async fn a() {}
            ),
        );
        assert!(e.contains("needs `uri"), "{e}");
        let e = resource_err(
            quote!(name = "x"),
            quote!(
                async fn a() {}
            ),
        );
        assert!(e.contains("needs `uri"), "{e}");
        let e = resource_err(
            quote!(uri = "mem://a"),
            quote!(
                async fn a(id: String) {}
            ),
        );
        assert!(e.contains("static resource"), "{e}");
        let e = resource_err(
            quote!(uri = "mem://{id}"),
            quote!(
                async fn a(idd: String) {}
            ),
        );
        assert!(e.contains("one of [\\\"id\\\"]"), "{e}");
        let e = resource_err(
            quote!(uri = "mem://{id}"),
            quote!(
                async fn a(id: u32) {}
            ),
        );
        assert!(e.contains("`String` or `Option<String>`"), "{e}");
        let e = tool_err(
            quote!(uri = "x"),
            quote!(
                async fn a() {}
            ),
        );
        assert!(e.contains("unsupported #[tool] argument"), "{e}");
    }

    #[test]
    fn self_in_argument_types_is_the_impl_type_in_a_router() {
        let out = router(
            TokenStream::new(),
            quote!(impl Srv { #[tool] async fn a(&self, x: Vec<<Self as Tr>::Item>) {} }),
        )
        .unwrap()
        .to_string();
        assert!(out.contains("x : Vec < < Srv as Tr > :: Item >"), "{out}");
    }

    #[test]
    fn the_server_crate_path_can_be_overridden() {
        let out = free_fn(
            Kind::Tool,
            quote!(crate = "my::mcp"),
            quote!(
                async fn a(x: i32) -> String {
                    todo!()
                }
            ),
        )
        .unwrap()
        .to_string();
        assert!(out.contains("my :: mcp :: tool (\"a\")"), "{out}");
        assert!(out.contains("\"my::mcp::__private::serde\""), "{out}");
        assert!(!out.contains("ferromcp_server"), "{out}");
        let out = router(
            quote!(crate = "my::mcp"),
            quote!(impl S { #[tool] async fn a(&self) -> String { todo!() } }),
        )
        .unwrap()
        .to_string();
        assert!(!out.contains("ferromcp_server"), "{out}");
    }

    #[test]
    fn raw_identifiers_lose_their_prefix() {
        let out = free_fn(
            Kind::Tool,
            quote!(),
            quote!(
                async fn r#match(r#type: String) -> String {
                    todo!()
                }
            ),
        )
        .unwrap()
        .to_string();
        assert!(out.contains("fn match_tool"), "{out}");
        assert!(out.contains("tool (\"match\")"), "{out}");
        assert!(out.contains("served by `match`"), "{out}");
    }
}
