//! The MCP face of a [`Library`]: resources, the `docs://{+path}`
//! template with completion, the `search_docs` tool and the `ask` prompt.

use crate::DocsError;
use crate::library::{DocFile, Hit, Library, SearchPage};
use ferromcp_server::protocol::types::{
    CallToolResult, Completion, CompletionReference, ContentBlock, GetPromptResult, PromptMessage,
    Resource, ResourceContents, ResourceTemplate, Role,
};
use ferromcp_server::protocol::{ErrorCode, ErrorObject};
use ferromcp_server::{
    HandlerError, PromptArgs, RequestContext, ResourceDef, ResourceRequest, Server, ServerBuilder,
    TemplateDef, prompt, tool,
};
use schemars::JsonSchema;
use serde::Deserialize;
use std::sync::Arc;

/// The resource template every document and section matches.
pub const URI_TEMPLATE: &str = "docs://{+path}";

/// The persona the `ask` prompt opens with unless [`crate::Options::persona`]
/// replaces it.
pub const DEFAULT_PERSONA: &str = "You are a documentation assistant. You answer questions about the \
documentation provided below, precisely and briefly, for a reader who wants to get something done.";

/// The rules the `ask` prompt always states after the persona.
pub const RULES: &str = "Rules:\n\
1. Answer only from the documentation sections provided in this conversation (embedded \
resources). Do not use outside knowledge, and do not guess.\n\
2. Cite the resource URI (for example docs://guide.md#installation) of every section you \
used, next to the statement it supports.\n\
3. If the sections do not cover the question, say so plainly (\"The documentation does not \
cover this.\") and, if useful, name the closest sections that were provided.\n\
4. If the sections disagree, say so and cite both.";

/// The server instructions: what this server is for.
pub fn instructions(lib: &Library) -> String {
    let (files, sections) = lib.counts();
    format!(
        "A documentation server for {name}: {files} documents ({sections} sections) as \
         docs:// resources. To answer a question about {name}, use the `ask` prompt (it \
         brings the relevant sections and the rules for answering from them), or call \
         `search_docs` with a few keywords and read the docs://file#section URIs it returns. \
         Answer only from these documents and cite the URIs you used.",
        name = lib.options().name
    )
}

fn to_handler_error(e: DocsError, uri: &str) -> HandlerError {
    let data = serde_json::json!({ "uri": uri, "reason": e.to_string() });
    HandlerError::Protocol(match e {
        DocsError::Io(m) => ErrorObject::internal(m),
        other => ErrorObject::new(ErrorCode::INVALID_PARAMS, other.to_string()).with_data(data),
    })
}

fn read(lib: &Library, uri: &str) -> Result<ResourceContents, HandlerError> {
    let out = lib.read_uri(uri).map_err(|e| to_handler_error(e, uri))?;
    Ok(ResourceContents::text(
        out.uri,
        Some(out.mime.into()),
        out.text,
    ))
}

/// The `resources/list` entry of a file.
pub(crate) fn resource_of(d: &DocFile) -> Resource {
    let mut r = Resource::new(d.uri.clone(), d.rel.clone());
    r.title = Some(d.title.clone());
    r.description = d.description.clone();
    r.mime_type = Some(d.mime.into());
    r.size = Some(d.size);
    r
}

/// Runs `f` on Tokio's blocking pool: reads may touch the file system (to
/// explain a refusal) and searches cost CPU in proportion to their hits,
/// neither of which may stall the runtime's workers.
async fn off_worker<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, HandlerError> + Send + 'static,
) -> Result<T, HandlerError> {
    tokio::task::spawn_blocking(f).await.unwrap_or_else(|e| {
        Err(HandlerError::Protocol(ErrorObject::internal(format!(
            "the request failed: {e}"
        ))))
    })
}

async fn read_blocking(lib: Arc<Library>, uri: String) -> Result<ResourceContents, HandlerError> {
    off_worker(move || read(&lib, &uri)).await
}

/// The static resource of a file, read through `lib`.
pub(crate) fn resource_def(lib: &Arc<Library>, d: &DocFile) -> ResourceDef {
    let lib = lib.clone();
    ResourceDef::new(
        resource_of(d),
        move |req: ResourceRequest, _cx: RequestContext| read_blocking(lib.clone(), req.uri),
    )
}

#[derive(Debug, Deserialize, JsonSchema)]
struct SearchArgs {
    /// Keywords or a question; sections are ranked by field-weighted BM25
    /// (stemmed, case-insensitive, stop words ignored, identifiers matched
    /// whole and by parts).
    query: String,
    /// Hits per page, at least 1 (by default 10, at most 50, unless the
    /// server is configured otherwise).
    #[serde(default)]
    #[schemars(range(min = 1))]
    limit: Option<usize>,
    /// Skip this many hits (the previous page's `nextOffset`).
    #[serde(default)]
    offset: Option<usize>,
}

fn search_result(page: SearchPage) -> Result<CallToolResult, HandlerError> {
    let mut content = Vec::with_capacity(page.results.len() + 1);
    let mut summary = if page.results.is_empty() {
        format!("No section matches {:?}.", page.query)
    } else {
        format!(
            "{} of {} matching sections for {:?} (from {}):",
            page.results.len(),
            page.total,
            page.query,
            page.offset
        )
    };
    for (i, h) in page.results.iter().enumerate() {
        let heading = if h.section.is_empty() {
            &h.title
        } else {
            &h.section
        };
        summary.push_str(&format!(
            "\n{}. {} — {} (relevance {:.2})\n   {}",
            page.offset + i + 1,
            h.uri,
            heading,
            h.relevance,
            h.snippet
        ));
    }
    if !page.results.is_empty() && !page.covered {
        summary.push_str(&format!(
            "\nNo section clearly reaches relevance {:.2}: the documentation most likely does not cover this; these are only the closest sections.",
            page.min_relevance
        ));
    }
    if let Some(next) = page.next_offset {
        summary.push_str(&format!("\nMore: offset={next}"));
    }
    content.push(ContentBlock::text(summary));
    for h in &page.results {
        let mut r = Resource::new(
            h.uri.clone(),
            h.uri.trim_start_matches(crate::SCHEME).to_owned(),
        );
        r.title = Some(if h.section.is_empty() {
            h.title.clone()
        } else {
            format!("{} — {}", h.title, h.section)
        });
        r.description = Some(h.snippet.clone());
        r.mime_type = Some(h.mime_type.clone());
        content.push(ContentBlock::ResourceLink(r));
    }
    let structured = serde_json::to_value(&page)
        .map_err(|e| HandlerError::Protocol(ErrorObject::internal(e)))?;
    Ok(CallToolResult {
        content,
        structured_content: Some(structured),
        ..CallToolResult::default()
    })
}

/// `Title — Section` (or the title alone for a preamble).
fn hit_label(h: &Hit) -> String {
    if h.section.is_empty() {
        h.title.clone()
    } else {
        format!("{} — {}", h.title, h.section)
    }
}

/// The `ask` prompt's messages for `question`: the persona and [`RULES`],
/// the best sections as embedded resources, then the question.
pub fn ask_messages(lib: &Library, question: &str) -> Vec<PromptMessage> {
    let opts = lib.options();
    let persona = opts.persona.as_deref().unwrap_or(DEFAULT_PERSONA).trim();
    let page = lib.search(question, 0, opts.prompt_sections.max(1));
    // Only sections relevant enough are embedded: weak matches would hand
    // the model confident-looking noise.
    let (relevant, weak): (Vec<&Hit>, Vec<&Hit>) = page
        .results
        .iter()
        .partition(|h| page.covered && h.relevance >= page.min_relevance);
    let mut intro = format!("{persona}\n\n{RULES}\n");
    if page.results.is_empty() {
        intro.push_str(
            "\nNo section of the documentation matched this question: say that the documentation does not cover it.\n",
        );
    } else if relevant.is_empty() {
        intro.push_str(
            "\nThe documentation does not cover this question: no section is relevant enough to answer it. \
             Say so plainly, and name the closest sections, which are (by relevance, none sufficient):\n",
        );
        for h in weak.iter().take(3) {
            intro.push_str(&format!("- {} ({})\n", h.uri, hit_label(h)));
        }
    } else {
        intro.push_str(&format!(
            "\nThe {} most relevant documentation sections follow, each as an embedded resource with its URI.\n",
            relevant.len()
        ));
    }
    let mut messages = vec![PromptMessage::new(Role::User, ContentBlock::text(intro))];
    // Each section at most prompt_section_bytes, all of them at most
    // max_prompt_bytes; what is cut is linked instead.
    let mut budget = opts.max_prompt_bytes;
    let mut any_cut = false;
    for h in relevant {
        let cap = opts.prompt_section_bytes.min(budget);
        let Some((out, whole)) = lib.section_excerpt(&h.uri, cap) else {
            continue;
        };
        budget = budget.saturating_sub(out.text.len());
        let cut = out.text.len() < whole;
        any_cut |= cut;
        if !out.text.is_empty() {
            messages.push(PromptMessage::new(
                Role::User,
                ContentBlock::embedded(ResourceContents::text(
                    out.uri,
                    Some(out.mime.into()),
                    out.text,
                )),
            ));
        }
        if cut {
            let mut link = Resource::new(
                h.uri.clone(),
                h.uri.trim_start_matches(crate::SCHEME).to_owned(),
            );
            link.title = Some(hit_label(h));
            link.description = Some(format!(
                "The whole section ({whole} bytes); the prompt holds only its beginning. Read it for the rest."
            ));
            link.mime_type = Some(h.mime_type.clone());
            link.size = u64::try_from(whole).ok();
            messages.push(PromptMessage::new(
                Role::User,
                ContentBlock::ResourceLink(link),
            ));
        }
    }
    if any_cut && let Some(ContentBlock::Text(t)) = messages.first_mut().map(|m| &mut m.content) {
        t.text.push_str(
            "A section too long to embed whole is cut short and followed by a link to the whole section: read it when the cut part matters.\n",
        );
    }
    messages.push(PromptMessage::new(
        Role::User,
        ContentBlock::text(format!("Question: {question}")),
    ));
    messages
}

/// Adds the library's resources, template, `search_docs` tool and `ask`
/// prompt to `builder` (with resource subscriptions). `completion` also
/// installs the `completion/complete` handler (paths of the template, the
/// `ask` question from section headings); leave it off when the builder
/// already has one.
pub fn register(mut builder: ServerBuilder, lib: &Arc<Library>, completion: bool) -> ServerBuilder {
    for d in lib.files() {
        builder = builder.resource(resource_def(lib, &d));
    }
    let l = lib.clone();
    let template = ResourceTemplate {
        uri_template: URI_TEMPLATE.into(),
        name: "docs".into(),
        title: Some("Documentation file or section".into()),
        description: Some(
            "A documentation file by its path relative to the docs folder; add #slug (a heading slug) for one section.".into(),
        ),
        mime_type: Some("text/markdown".into()),
        ..ResourceTemplate::default()
    };
    builder = builder.resource_template(TemplateDef::new(
        template,
        move |req: ResourceRequest, _cx: RequestContext| read_blocking(l.clone(), req.uri),
    ));
    let l = lib.clone();
    builder = builder.tool(
        tool("search_docs")
            .title("Search the documentation")
            .description(
                "Full-text search (BM25F) over the documentation, by section. Returns the best sections \
                 with docs://file#section links, snippets (matches in **bold**) and a relevance from 0 to 1; \
                 `covered` is false when no section is relevant enough (the documentation most likely does \
                 not cover the query). Read a link for the whole section. Page with offset=nextOffset.",
            )
            .output::<SearchPage>()
            .handler(move |a: SearchArgs, _cx: RequestContext| {
                let page_size = l.options().page_size;
                let max = l.options().max_query_bytes;
                let l = l.clone();
                let r = if a.query.trim().is_empty() {
                    Err(HandlerError::failed("query is empty: give a few keywords"))
                } else if a.limit == Some(0) {
                    // The schema's `minimum: 1`, for servers built without
                    // schema validation.
                    Err(HandlerError::failed(format!(
                        "limit must be at least 1 (and at most {})",
                        l.options().max_page_size
                    )))
                } else if a.query.len() > max {
                    Err(HandlerError::failed(format!(
                        "query is {} bytes, over the {max} byte limit: give a few keywords",
                        a.query.len()
                    )))
                } else {
                    Ok(())
                };
                async move {
                    r?;
                    off_worker(move || {
                        search_result(l.search(
                            &a.query,
                            a.offset.unwrap_or(0),
                            a.limit.unwrap_or(page_size),
                        ))
                    })
                    .await
                }
            }),
    );
    let l = lib.clone();
    builder = builder.prompt(
        prompt("ask")
            .title("Ask the documentation")
            .description(
                "Answer a question from the documentation only: the assistant's persona and rules, \
                 then the most relevant sections as embedded resources, then the question.",
            )
            .argument(
                "question",
                "The question to answer from the documentation",
                true,
            )
            .handler(move |a: PromptArgs, _cx: RequestContext| {
                let question = a.get("question").cloned().unwrap_or_default();
                let max = l.options().max_query_bytes;
                let r = if question.trim().is_empty() {
                    Err(HandlerError::invalid_params("question is empty"))
                } else if question.len() > max {
                    Err(HandlerError::invalid_params(format_args!(
                        "question is {} bytes, over the {max} byte limit",
                        question.len()
                    )))
                } else {
                    Ok(())
                };
                let l = l.clone();
                async move {
                    r?;
                    off_worker(move || {
                        Ok(GetPromptResult {
                            description: Some(format!("Answer from the documentation: {question}")),
                            messages: ask_messages(&l, &question),
                            ..GetPromptResult::default()
                        })
                    })
                    .await
                }
            }),
    );
    if completion {
        let l = lib.clone();
        builder = builder.completion(
            move |p: ferromcp_server::protocol::types::CompleteRequestParams,
                  _cx: RequestContext| {
                let r = complete(&l, &p.reference, &p.argument.name, &p.argument.value);
                async move { Ok(r) }
            },
        );
    }
    builder.resource_subscriptions(true)
}

fn complete(lib: &Library, reference: &CompletionReference, arg: &str, value: &str) -> Completion {
    match reference {
        CompletionReference::ResourceTemplate(t) if t.uri == URI_TEMPLATE && arg == "path" => {
            let (values, total) = lib.complete_paths(value, Completion::MAX_VALUES);
            Completion {
                has_more: Some(total > values.len()),
                total: Some(total as u64),
                values,
            }
        }
        _ => Completion::default(),
    }
}

/// A server of its own for `lib`: named `ferromcp-docs`, with [`instructions`],
/// everything [`register`] adds, and path completion.
pub fn server(lib: Arc<Library>) -> Result<Server, ferromcp_server::Error> {
    let builder = Server::builder("ferromcp-docs", env!("CARGO_PKG_VERSION"))
        .instructions(instructions(&lib));
    register(builder, &lib, true).build()
}
