//! `everything-client URL`: the conformance client.
//!
//! The harness sets `MCP_CONFORMANCE_SCENARIO`, `MCP_CONFORMANCE_PROTOCOL_VERSION`
//! and, for some scenarios, `MCP_CONFORMANCE_CONTEXT`; the mock server's URL
//! is the last argument. 2025-11-25 runs use the initialize handshake;
//! 2026-07-28 runs are stateless (every request carries the envelope and
//! the MCP headers). Unknown scenarios run a generic flow (list tools, call
//! the first). The process always exits within a bounded time.
//!
//! `auth/*` scenarios run the OAuth client (`ferromcp_auth::client`) with the
//! headless authorization handler against the harness's mock PRM and AS,
//! which listen on `http://localhost` (so loopback and plain http are
//! allowed here, and nowhere else by default); `auth/pre-registration`
//! takes its credentials from `MCP_CONFORMANCE_CONTEXT`. After
//! authorization: `tools/list`, then `tools/call` of the first tool.

use ferromcp_auth::client::{
    HeadlessAuthorization, HttpClient, NetPolicy, OAuthClient, PreRegistered,
};
use ferromcp_client::protocol::types::{
    CallToolRequestParams, ContentBlock, CreateMessageResult, ElicitAction, ElicitRequestParams,
    ElicitResult, ElicitValue, ElicitationSchema, JsonObject, ListRootsResult,
    PrimitiveSchemaDefinition, Role, Root, SamplingContent, StopReason, Tool,
};
use ferromcp_client::{Client, ClientBuilder, EraPreference, HandlerError, HttpAuth};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

// The authorization extension scenarios (client credentials, JWT bearer,
// enterprise-managed, DPoP) live in their own file.
#[path = "../client_auth_ext.rs"]
mod auth_ext;

/// The Client ID Metadata Document URL the conformance suite expects.
const CIMD_URL: &str = "https://conformance-test.local/client-metadata.json";

/// The whole run must end well inside the harness's 30 s client timeout.
const OVERALL_TIMEOUT: Duration = Duration::from_secs(25);

type Flow = Result<(), String>;

/// Accepts a form with every field filled from its schema default, or a
/// plain value of the field's type (SEP-1034).
fn default_content(schema: &ElicitationSchema) -> BTreeMap<String, ElicitValue> {
    let mut out = BTreeMap::new();
    for (key, prop) in &schema.properties {
        let v = match prop {
            PrimitiveSchemaDefinition::String(s) => {
                let first = s
                    .choices()
                    .and_then(|c| c.first().map(|(v, _)| (*v).to_owned()));
                ElicitValue::String(s.default.clone().or(first).unwrap_or_else(|| "test".into()))
            }
            PrimitiveSchemaDefinition::Number(n) | PrimitiveSchemaDefinition::Integer(n) => {
                ElicitValue::Number(n.default.clone().unwrap_or_else(|| 0.into()))
            }
            PrimitiveSchemaDefinition::Boolean(b) => ElicitValue::Bool(b.default.unwrap_or(true)),
            PrimitiveSchemaDefinition::Array(a) => {
                ElicitValue::StringArray(a.default.clone().unwrap_or_default())
            }
            PrimitiveSchemaDefinition::Other(_) => continue,
        };
        out.insert(key.clone(), v);
    }
    out
}

async fn elicit(p: ElicitRequestParams) -> Result<ElicitResult, HandlerError> {
    Ok(match p {
        ElicitRequestParams::Form(f) => ElicitResult::accept(default_content(&f.requested_schema)),
        ElicitRequestParams::Url(_) => ElicitResult::new(ElicitAction::Accept),
    })
}

/// Simple values for a tool's top-level properties.
fn sample_arguments(tool: &Tool) -> Option<JsonObject> {
    let props = tool.input_schema.get("properties")?.as_object()?;
    let mut args = JsonObject::new();
    for (k, schema) in props {
        let v = match schema.get("type").and_then(Value::as_str) {
            Some("string") => json!("test"),
            Some("integer") => json!(1),
            Some("number") => json!(1.5),
            Some("boolean") => json!(true),
            Some("array") => json!([]),
            Some("object") => json!({}),
            _ => continue,
        };
        args.insert(k.clone(), v);
    }
    Some(args)
}

/// The conformance context (`MCP_CONFORMANCE_CONTEXT`), or `null`.
fn context() -> Value {
    std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|c| serde_json::from_str(&c).ok())
        .unwrap_or(Value::Null)
}

/// The OAuth client for an `auth/*` scenario.
fn oauth(url: &str) -> Result<Arc<dyn HttpAuth>, String> {
    // The harness's mocks are on http://localhost: allow loopback only.
    let policy = NetPolicy::loopback_allowed();
    let http = HttpClient::new(policy);
    let mut b = OAuthClient::builder(url)
        .http_client(http.clone())
        .authorization_handler(Arc::new(HeadlessAuthorization::new(http)))
        .client_metadata_url(CIMD_URL)
        .client_name("mcp-rs-everything-client");
    let ctx = context();
    if let (Some(id), Some(issuer)) = (
        ctx.get("client_id").and_then(Value::as_str),
        ctx.get("issuer").and_then(Value::as_str),
    ) {
        let client = match ctx.get("client_secret").and_then(Value::as_str) {
            Some(secret) => PreRegistered::Secret {
                client_id: id.into(),
                client_secret: secret.into(),
            },
            None => PreRegistered::Public {
                client_id: id.into(),
            },
        };
        b = b.pre_registered(issuer, client);
    }
    Ok(Arc::new(b.build().map_err(|e| format!("oauth: {e}"))?))
}

async fn connect(
    url: &str,
    version: &str,
    auth: Option<Arc<dyn HttpAuth>>,
) -> Result<Client, String> {
    let era = if version == "2026-07-28" {
        EraPreference::ModernNoProbe
    } else {
        EraPreference::Handshake
    };
    let mut builder = ClientBuilder::new("mcp-rs-everything-client", env!("CARGO_PKG_VERSION"));
    if let Some(a) = auth {
        builder = builder.http_auth(a);
    }
    builder
        .era(era)
        .request_timeout(Duration::from_secs(20))
        .on_elicitation(elicit)
        .on_sampling(|_p| async {
            Ok(CreateMessageResult {
                role: Role::Assistant,
                content: SamplingContent::Single(ContentBlock::text("This is a sampled answer.")),
                model: "everything-client-model".into(),
                stop_reason: Some(StopReason::EndTurn),
                meta: None,
            })
        })
        .on_roots(|| async {
            Ok(ListRootsResult {
                roots: vec![Root {
                    uri: "file:///tmp/everything-client".into(),
                    name: Some("workspace".into()),
                    meta: None,
                }],
                meta: None,
            })
        })
        .connect_url(url)
        .await
        .map_err(|e| format!("connect: {e}"))
}

async fn call(client: &Client, name: &str, args: Option<JsonObject>) -> Flow {
    let r = client
        .call_tool_with(CallToolRequestParams::new(name, args), Default::default())
        .await
        .map_err(|e| format!("tools/call {name}: {e}"))?;
    eprintln!("tools/call {name}: isError={:?}", r.is_error);
    Ok(())
}

async fn generic(client: &Client) -> Flow {
    let tools = client
        .list_tools()
        .await
        .map_err(|e| format!("tools/list: {e}"))?;
    if let Some(t) = tools.first() {
        call(client, &t.name, sample_arguments(t)).await?;
    }
    Ok(())
}

async fn run(scenario: &str, version: &str, url: &str) -> Flow {
    if auth_ext::handles(scenario) {
        return auth_ext::run(scenario, version, url).await;
    }
    let auth = if scenario.starts_with("auth/") {
        Some(oauth(url)?)
    } else {
        None
    };
    let client = connect(url, version, auth).await?;
    let result = scenario_flow(&client, scenario).await;
    client.close().await;
    result
}

async fn scenario_flow(client: &Client, scenario: &str) -> Flow {
    match scenario {
        "initialize" => {
            client
                .list_tools()
                .await
                .map_err(|e| format!("tools/list: {e}"))?;
            Ok(())
        }
        "tools_call" => {
            client
                .list_tools()
                .await
                .map_err(|e| format!("tools/list: {e}"))?;
            let mut args = JsonObject::new();
            args.insert("a".into(), json!(5));
            args.insert("b".into(), json!(3));
            call(client, "add_numbers", Some(args)).await
        }
        "elicitation-sep1034-client-defaults" => {
            client
                .list_tools()
                .await
                .map_err(|e| format!("tools/list: {e}"))?;
            call(client, "test_client_elicitation_defaults", None).await
        }
        "sse-retry" => {
            client
                .list_tools()
                .await
                .map_err(|e| format!("tools/list: {e}"))?;
            call(client, "test_reconnection", None).await
        }
        "sep-2322-client-request-state" => {
            client
                .list_tools()
                .await
                .map_err(|e| format!("tools/list: {e}"))?;
            for t in [
                "test_mrtr_echo_state",
                "test_mrtr_unrelated",
                "test_mrtr_no_state",
                "test_mrtr_no_result_type",
            ] {
                call(client, t, None).await?;
            }
            Ok(())
        }
        "http-standard-headers" | "http-invalid-tool-headers" => {
            // Call every tool that survived HDR-14 filtering.
            let tools = client
                .list_tools()
                .await
                .map_err(|e| format!("tools/list: {e}"))?;
            for t in &tools {
                call(client, &t.name, sample_arguments(t)).await?;
            }
            Ok(())
        }
        "http-custom-headers" => {
            client
                .list_tools()
                .await
                .map_err(|e| format!("tools/list: {e}"))?;
            let ctx = context();
            let calls = ctx
                .get("toolCalls")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            for c in calls {
                let Some(name) = c.get("name").and_then(Value::as_str) else {
                    continue;
                };
                let args = c.get("arguments").and_then(Value::as_object).cloned();
                call(client, name, args).await?;
            }
            Ok(())
        }
        "json-schema-ref-no-deref" => {
            client
                .list_tools()
                .await
                .map_err(|e| format!("tools/list: {e}"))?;
            Ok(())
        }
        "json-schema-2020-12-preservation" => {
            // SEP-1613 / SEP-2106: the client keeps a tool's inputSchema
            // verbatim; echo the focal tool's schema back unchanged.
            let tools = client
                .list_tools()
                .await
                .map_err(|e| format!("tools/list: {e}"))?;
            let focal = tools
                .iter()
                .find(|t| t.name == "json_schema_2020_12_tool")
                .ok_or("tools/list has no json_schema_2020_12_tool")?;
            let mut args = JsonObject::new();
            args.insert("schema".into(), Value::Object(focal.input_schema.clone()));
            call(client, "json_schema_echo", Some(args)).await
        }
        _ => generic(client).await,
    }
}

fn main() -> ExitCode {
    let Some(url) = std::env::args().skip(1).last() else {
        eprintln!("usage: everything-client URL");
        return ExitCode::from(2);
    };
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let version =
        std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION").unwrap_or_else(|_| "2026-07-28".into());
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("everything-client: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let outcome = rt.block_on(async {
        tokio::time::timeout(OVERALL_TIMEOUT, run(&scenario, &version, &url))
            .await
            .unwrap_or_else(|_| Err("timed out".into()))
    });
    rt.shutdown_timeout(Duration::from_millis(200));
    match outcome {
        Ok(()) => {
            eprintln!("everything-client: {scenario} done");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("everything-client: {scenario}: {e}");
            ExitCode::FAILURE
        }
    }
}
