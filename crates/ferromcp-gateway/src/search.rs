//! Search mode (`"gateway": {"toolMode": "search"}`): for hosts that drown
//! in tools, `tools/list` offers two meta-tools instead of every upstream's
//! tools.
//!
//! - `search_tools {query, limit?}`: the aggregated tools best matching
//!   `query`, ranked by field-weighted BM25 over their names, titles and
//!   descriptions (the documentation assistant's ranking, `ferromcp-rank`),
//!   each with its name, description and `inputSchema`, as structured
//!   content and text. `limit` defaults to [`DEFAULT_LIMIT`] and never
//!   exceeds `gateway.maxSearchResults`.
//! - `call_tool {name, arguments?}`: calls the aggregated tool `name`.
//!
//! Policy holds as in the default mode: a tool the upstream's
//! `allowTools`/`denyTools` refuse is not in the catalogue at all, and the
//! per-scope rules decide, with the same function the middleware uses on
//! `tools/list` and `tools/call`, which tools a caller finds and may call.
//! A hidden or unknown tool given to `call_tool` gets the answer of a tool
//! that does not exist (-32602 `Unknown tool: NAME`). The index is rebuilt
//! on the first search after the catalogue changed (an upstream's tool
//! list changed, an upstream came or went).
// AUTH-04, TOOL-06, TOOL-07

use crate::aggregate::{self, Aggregate};
use crate::scopes::ScopePolicy;
use crate::tool_mode::{CALL_TOOL, DEFAULT_LIMIT, MAX_RESULTS_LIMIT, SEARCH_TOOLS};
use ferromcp_protocol::ErrorObject;
use ferromcp_protocol::types::{CallToolResult, JsonObject, Tool};
use ferromcp_rank::{Fields, Index, Scratch};
use ferromcp_server::middleware::{Next, RpcLayer, RpcRequest, RpcResponse, RpcService};
use ferromcp_server::{HandlerError, RequestContext, ServerBuilder, ToolDef, tool};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex, OnceLock};

/// The most bytes of a tool's description that are indexed (a hostile
/// upstream's megabyte description costs no more than this).
const INDEXED_DESCRIPTION_BYTES: usize = 4 * 1024;

/// The index over one generation of the catalogue.
struct Built {
    generation: u64,
    tools: Vec<Arc<Tool>>,
    index: Index,
}

fn fields(t: &Tool) -> Fields<'_> {
    Fields {
        title: t.title.as_deref().unwrap_or(""),
        heading: &t.name,
        path: "",
        body: ferromcp_rank::prefix_at_char(
            t.description.as_deref().unwrap_or(""),
            INDEXED_DESCRIPTION_BYTES,
        ),
    }
}

impl Built {
    fn new(generation: u64, tools: Vec<Arc<Tool>>) -> Self {
        let all: Vec<Fields<'_>> = tools.iter().map(|t| fields(t)).collect();
        let mut index = Index::new(&all);
        for (id, f) in (0u32..).zip(&all) {
            let terms = index.terms(f);
            index.insert(id, id, &terms);
        }
        Self {
            generation,
            tools,
            index,
        }
    }
}

/// The two meta-tools' state: the catalogue, the scope policy and the
/// index of the catalogue's last generation searched.
pub(crate) struct ToolSearch {
    agg: Arc<OnceLock<Arc<Aggregate>>>,
    policy: ScopePolicy,
    max: usize,
    built: Mutex<Option<Arc<Built>>>,
}

impl ToolSearch {
    pub(crate) fn new(
        agg: Arc<OnceLock<Arc<Aggregate>>>,
        policy: ScopePolicy,
        max: usize,
    ) -> Arc<Self> {
        Arc::new(Self {
            agg,
            policy,
            max: max.clamp(1, MAX_RESULTS_LIMIT),
            built: Mutex::new(None),
        })
    }

    fn aggregate(&self) -> Result<&Arc<Aggregate>, HandlerError> {
        self.agg
            .get()
            .ok_or_else(|| HandlerError::failed("the gateway is starting"))
    }

    /// The index of the catalogue as it is now (rebuilt when it changed).
    fn index(&self) -> Result<Arc<Built>, HandlerError> {
        let agg = self.aggregate()?;
        let mut built = self.built.lock().unwrap_or_else(|p| p.into_inner());
        let (generation, tools) = agg.tools();
        match &*built {
            Some(b) if b.generation == generation => Ok(b.clone()),
            _ => {
                let b = Arc::new(Built::new(generation, tools));
                *built = Some(b.clone());
                Ok(b)
            }
        }
    }

    /// The tools best matching `query` that `cx`'s caller may see, best
    /// first, at most `limit` (bounded by the configured maximum).
    pub(crate) fn search(
        &self,
        query: &str,
        limit: Option<u64>,
        cx: &RequestContext,
    ) -> Result<Vec<Arc<Tool>>, HandlerError> {
        let limit = limit.map_or(DEFAULT_LIMIT.min(self.max), |l| {
            usize::try_from(l).unwrap_or(usize::MAX).clamp(1, self.max)
        });
        let b = self.index()?;
        let q = b.index.query(query);
        let (hits, _) = b.index.rank(&q, &mut Scratch::default(), usize::MAX, |id| {
            let t = b.tools.get(id as usize)?;
            Some(b.index.passage_boost(&q, &fields(t)))
        });
        let principal = cx.principal();
        Ok(hits
            .iter()
            .filter_map(|h| b.tools.get(h.id as usize))
            // The decision the middleware makes on tools/list and tools/call.
            .filter(|t| self.policy.permits(&t.name, principal))
            .take(limit)
            .cloned()
            .collect())
    }

    /// Calls the aggregated tool `name` for `cx`'s caller, if it may.
    pub(crate) async fn call(
        &self,
        name: &str,
        arguments: JsonObject,
        cx: RequestContext,
    ) -> Result<CallToolResult, HandlerError> {
        let route = self
            .aggregate()?
            .tool_route(name)
            // The decision the middleware makes on tools/call.
            .filter(|_| self.policy.permits(name, cx.principal()));
        let Some((up, own)) = route else {
            // The server's answer to a tool that does not exist.
            return Err(HandlerError::Protocol(
                ErrorObject::invalid_params(format_args!("Unknown tool: {name}"))
                    .with_data(json!({"name": name})),
            ));
        };
        aggregate::call_tool(up, own, arguments, cx).await
    }
}

fn object(v: Value) -> JsonObject {
    match v {
        Value::Object(m) => m,
        _ => JsonObject::new(),
    }
}

/// Arguments as `T`; a mismatch is an argument error the model reads
/// (what the server answers when they fail the `inputSchema`).
fn parse<T: serde::de::DeserializeOwned>(a: JsonObject) -> Result<T, HandlerError> {
    serde_json::from_value(Value::Object(a))
        .map_err(|e| HandlerError::failed(format!("Invalid arguments: {e}")))
}

/// `search_tools`'s arguments.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct SearchArgs {
    query: String,
    #[serde(default)]
    limit: Option<u64>,
}

/// `call_tool`'s arguments.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct CallArgs {
    name: String,
    #[serde(default)]
    arguments: Option<JsonObject>,
}

/// The meta-tools' definitions, their handlers served by `search`.
pub(crate) fn meta_tools(search: &Arc<ToolSearch>) -> [ToolDef; 2] {
    let max = search.max;
    let s = search.clone();
    let search_tools = tool(SEARCH_TOOLS)
        .title("Search tools")
        .description(format!(
            "Finds the tools for a task among every connected server's tools. \
             Returns the best matches (name, description, inputSchema), best first; \
             call one with {CALL_TOOL}. Describe the task in words (\"read a file\", \
             \"current time in a timezone\") or give part of a tool's name."
        ))
        .input_schema(object(json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "minLength": 1,
                          "description": "What the tool should do, or part of its name."},
                "limit": {"type": "integer", "minimum": 1, "maximum": max,
                          "description": format!("How many tools to return (default {}, at most {max}).",
                                                 DEFAULT_LIMIT.min(max))},
            },
            "required": ["query"],
            "additionalProperties": false,
        })))
        .output_schema(object(json!({
            "type": "object",
            "properties": {
                "tools": {"type": "array", "items": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string"},
                        "title": {"type": "string"},
                        "description": {"type": "string"},
                        "inputSchema": {"type": "object"},
                    },
                    "required": ["name", "inputSchema"],
                }},
            },
            "required": ["tools"],
        })))
        .raw_handler(move |a: JsonObject, cx: RequestContext| {
            let s = s.clone();
            async move {
                let a: SearchArgs = parse(a)?;
                if a.query.trim().is_empty() {
                    return Err(HandlerError::failed(
                        "query is blank: say what the tool should do",
                    ));
                }
                let found = s.search(&a.query, a.limit, &cx)?;
                let tools: Vec<Value> = found
                    .iter()
                    .map(|t| {
                        let mut o = JsonObject::new();
                        o.insert("name".into(), t.name.clone().into());
                        if let Some(x) = &t.title {
                            o.insert("title".into(), x.clone().into());
                        }
                        if let Some(d) = &t.description {
                            o.insert("description".into(), d.clone().into());
                        }
                        o.insert("inputSchema".into(), Value::Object(t.input_schema.clone()));
                        Value::Object(o)
                    })
                    .collect();
                Ok::<_, HandlerError>(CallToolResult::structured(json!({"tools": tools})))
            }
        });
    let s = search.clone();
    let call_tool = tool(CALL_TOOL)
        .title("Call a tool")
        .description(format!(
            "Calls a tool found with {SEARCH_TOOLS}: give its exact name and its arguments \
             (an object matching the tool's inputSchema)."
        ))
        .input_schema(object(json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "minLength": 1,
                         "description": format!("The tool's exact name, as {SEARCH_TOOLS} gave it.")},
                "arguments": {"type": "object",
                              "description": "The tool's arguments (default: none)."},
            },
            "required": ["name"],
            "additionalProperties": false,
        })))
        .raw_handler(move |a: JsonObject, cx: RequestContext| {
            let s = s.clone();
            async move {
                let a: CallArgs = parse(a)?;
                s.call(&a.name, a.arguments.unwrap_or_default(), cx)
                    .await
            }
        });
    [search_tools, call_tool]
}

/// Registers the meta-tools and the `tools/list` rewrite on `builder`.
pub(crate) fn install(builder: ServerBuilder, search: &Arc<ToolSearch>) -> ServerBuilder {
    let [s, c] = meta_tools(search);
    let listed = [s.definition(), c.definition()]
        .iter()
        .filter_map(|t| serde_json::to_value(t).ok())
        .collect();
    builder.tool(s).tool(c).layer(OnlyMeta {
        listed: Arc::new(listed),
    })
}

/// The `tools/list` of search mode: the meta-tools only (the aggregated
/// tools stay registered, for `call_tool` and for hosts that call a name
/// `search_tools` gave them directly, under the same policy).
#[derive(Clone)]
struct OnlyMeta {
    listed: Arc<Vec<Value>>,
}

impl RpcLayer for OnlyMeta {
    fn layer(&self, inner: Next) -> Arc<dyn RpcService> {
        Arc::new(OnlyMetaService {
            listed: self.listed.clone(),
            next: inner,
        })
    }
}

struct OnlyMetaService {
    listed: Arc<Vec<Value>>,
    next: Next,
}

impl RpcService for OnlyMetaService {
    fn call(&self, req: RpcRequest) -> ferromcp_server::BoxFuture<RpcResponse> {
        let next = self.next.clone();
        if req.method() != "tools/list" {
            return next.run(req);
        }
        let listed = self.listed.clone();
        Box::pin(async move {
            next.run(req).await.map_result(|r| {
                if let Value::Object(o) = r {
                    o.insert("tools".into(), Value::Array((*listed).clone()));
                    o.remove("nextCursor");
                }
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(name: &str, description: &str) -> Arc<Tool> {
        let mut t = Tool::new(name, Tool::no_arguments_schema());
        t.description = Some(description.to_owned());
        Arc::new(t)
    }

    fn ranked(b: &Built, query: &str) -> Vec<String> {
        let q = b.index.query(query);
        let (hits, _) = b.index.rank(&q, &mut Scratch::default(), 10, |id| {
            Some(
                b.index
                    .passage_boost(&q, &fields(b.tools.get(id as usize)?)),
            )
        });
        hits.iter()
            .map(|h| b.tools[h.id as usize].name.clone())
            .collect()
    }

    #[test]
    fn names_and_descriptions_rank_tools() {
        let b = Built::new(
            1,
            vec![
                t(
                    "files__read_file",
                    "Read the complete contents of a file from the file system.",
                ),
                t(
                    "files__write_file",
                    "Create a new file or overwrite an existing one.",
                ),
                t(
                    "time__get_current_time",
                    "Get the current time in a specific timezone.",
                ),
                t(
                    "memory__create_entities",
                    "Create multiple new entities in the knowledge graph.",
                ),
                t("ev__echo", "Echoes back the input."),
            ],
        );
        assert_eq!(
            ranked(&b, "what time is it in Tokyo")[0],
            "time__get_current_time"
        );
        assert_eq!(ranked(&b, "read a file")[0], "files__read_file");
        assert_eq!(ranked(&b, "echo")[0], "ev__echo");
        assert_eq!(
            ranked(&b, "knowledge graph entity")[0],
            "memory__create_entities"
        );
        // A whole name ranks its tool first.
        assert_eq!(ranked(&b, "files__write_file")[0], "files__write_file");
        assert!(ranked(&b, "kubernetes").is_empty());
    }

    #[test]
    fn a_huge_description_is_indexed_only_in_part() {
        let long = format!("{} needle", "word ".repeat(INDEXED_DESCRIPTION_BYTES));
        let b = Built::new(1, vec![t("a__b", &long), t("a__c", "a needle")]);
        assert_eq!(ranked(&b, "needle"), ["a__c"]);
    }
}
