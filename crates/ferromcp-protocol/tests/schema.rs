//! What we emit validates against the official JSON schemas.
//!
//! Every message here is built from the typed structs (requests carry the
//! `_meta` envelope built from [`RequestMeta::modern`]), framed as a full
//! JSON-RPC message, and validated with `jsonschema` (2020-12) against
//! `{"$ref": "#/$defs/<Name>"}` merged into the whole schema document:
//! `schema-2026-07-28.json` for modern shapes, `schema-2025-11-25.json` for
//! handshake shapes. A few negative cases prove the validator really runs.
//!
//! The JSON Schemas of the MCP specification (`schema.json` of each revision)
//! are looked up beside the repository (CI provides them); when they are
//! absent the tests print why and pass (CI always has it).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests: a panic is the failure report"
)]

use ferromcp_protocol::jsonrpc::{
    OutgoingNotification, OutgoingRequest, OutgoingResult, RequestId,
};
use ferromcp_protocol::meta::RequestMeta;
use ferromcp_protocol::method::{self, ClientRequest, ServerRequest, WithMeta};
use ferromcp_protocol::types::*;
use ferromcp_protocol::version::ProtocolVersion;
use serde::Serialize;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::OnceLock;

const SPEC_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/spec/");
const MODERN: &str = "schema-2026-07-28.json";
const LEGACY: &str = "schema-2025-11-25.json";

/// One schema document.
struct Schema {
    name: &'static str,
    doc: Value,
}

impl Schema {
    /// Loads a schema, or `None` (with the reason printed) when the spec
    /// directory is absent.
    fn load(name: &'static str) -> Option<&'static Schema> {
        static MODERN_DOC: OnceLock<Option<Schema>> = OnceLock::new();
        static LEGACY_DOC: OnceLock<Option<Schema>> = OnceLock::new();
        let cell = if name == MODERN {
            &MODERN_DOC
        } else {
            &LEGACY_DOC
        };
        cell.get_or_init(|| {
            let dir = Path::new(SPEC_DIR);
            if !dir.is_dir() {
                eprintln!(
                    "skipping schema validation: {} is not a directory",
                    dir.display()
                );
                return None;
            }
            let text = std::fs::read_to_string(dir.join(name))
                .unwrap_or_else(|e| panic!("{name} is missing from {SPEC_DIR}: {e}"));
            let doc = serde_json::from_str(&text).expect("schema is JSON");
            Some(Schema { name, doc })
        })
        .as_ref()
    }

    fn validator(&self, def: &str) -> jsonschema::Validator {
        assert!(
            self.doc["$defs"].get(def).is_some(),
            "{}: no $defs/{def}",
            self.name
        );
        let mut root = self.doc.clone();
        root["$ref"] = Value::String(format!("#/$defs/{def}"));
        jsonschema::draft202012::new(&root)
            .unwrap_or_else(|e| panic!("{}: {def} does not compile: {e}", self.name))
    }

    /// Asserts `instance` is valid against `$defs/<def>` of this schema.
    fn accepts(&self, def: &str, instance: &Value) {
        let v = self.validator(def);
        let errors: Vec<String> = v
            .iter_errors(instance)
            .map(|e| format!("  at {}: {e}", e.instance_path()))
            .collect();
        assert!(
            errors.is_empty(),
            "{} rejects our {def}:\n{}\ninstance: {}",
            self.name,
            errors.join("\n"),
            serde_json::to_string_pretty(instance).unwrap_or_default()
        );
    }

    /// Asserts `instance` is invalid against `$defs/<def>` of this schema.
    fn rejects(&self, def: &str, instance: &Value) {
        assert!(
            !self.validator(def).is_valid(instance),
            "{} should reject this {def}: {instance}",
            self.name
        );
    }
}

fn id() -> RequestId {
    RequestId::number(1)
}

fn envelope() -> RequestMeta {
    let caps: ClientCapabilities = serde_json::from_value(json!({
        "elicitation": {"form": {}, "url": {}},
        "sampling": {"tools": {}},
        "roots": {},
        "extensions": {"com.example/ext": {}}
    }))
    .unwrap();
    let mut m = RequestMeta::modern(ProtocolVersion::V2026_07_28, caps);
    m.client_info = Some(Implementation::new("test-client", "0.1.0"));
    m
}

/// A modern request: params with the envelope put back in.
fn modern_request<P: Serialize>(method: &str, params: &P) -> Value {
    let meta = envelope();
    serde_json::to_value(OutgoingRequest::new(
        &id(),
        method,
        Some(WithMeta::new(&meta, params)),
    ))
    .unwrap()
}

/// A modern request built through [`ClientRequest::params_value`].
fn modern_client_request(r: &ClientRequest<'_>) -> Value {
    let params = r.params_value(Some(&envelope())).unwrap();
    serde_json::to_value(OutgoingRequest::new(&id(), r.method(), params)).unwrap()
}

/// A handshake-era request: params as they are, no envelope.
fn legacy_request<P: Serialize>(method: &str, params: Option<&P>) -> Value {
    serde_json::to_value(OutgoingRequest::new(&id(), method, params)).unwrap()
}

fn response<R: Serialize>(result: &R) -> Value {
    serde_json::to_value(OutgoingResult::new(&id(), result)).unwrap()
}

fn notification<P: Serialize>(method: &str, params: Option<&P>) -> Value {
    serde_json::to_value(OutgoingNotification::new(method, params)).unwrap()
}

/// Stamps what a modern server adds to every complete result.
fn modern<R: McpResult>(mut r: R) -> R {
    r.ensure_result_type();
    r.stamp_server_info(&Implementation::new("test-server", "1.0.0"));
    r
}

/// Same, plus cache hints.
fn cached<R: CacheableResult>(r: R) -> R {
    let mut r = modern(r);
    r.fill_cache_hint(CacheHint {
        ttl_ms: 60_000,
        scope: CacheScope::Private,
    });
    r
}

fn obj(v: Value) -> JsonObject {
    match v {
        Value::Object(o) => o,
        other => panic!("not an object: {other}"),
    }
}

fn tool() -> Tool {
    Tool {
        name: "get_weather".into(),
        title: Some("Weather".into()),
        description: Some("Current weather".into()),
        icons: Some(vec![Icon {
            src: "https://example.com/w.png".into(),
            mime_type: Some("image/png".into()),
            sizes: Some(vec!["48x48".into()]),
            theme: Some(IconTheme::Light),
        }]),
        input_schema: obj(json!({
            "type": "object",
            "$defs": {"u": {"$anchor": "u", "type": "string"}},
            "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "unit": {"$ref": "#u"}
            },
            "required": ["region"]
        })),
        output_schema: Some(obj(json!({
            "type": "object",
            "properties": {"temperature": {"type": "number"}}
        }))),
        annotations: Some(ToolAnnotations {
            read_only_hint: Some(true),
            open_world_hint: Some(false),
            ..Default::default()
        }),
        meta: Some(obj(json!({"com.example/owner": "team-a"}))),
        ..Tool::default()
    }
}

fn every_content_block() -> Vec<ContentBlock> {
    vec![
        ContentBlock::Text(TextContent {
            text: "hello".into(),
            annotations: Some(Annotations {
                audience: Some(vec![Role::User]),
                priority: Some(0.5),
                last_modified: Some("2025-01-12T15:00:58Z".into()),
            }),
            meta: None,
        }),
        ContentBlock::image("iVBORw0KGgo=", "image/png"),
        ContentBlock::audio("UklGRg==", "audio/wav"),
        ContentBlock::ResourceLink(Resource {
            mime_type: Some("text/x-rust".into()),
            size: Some(12),
            ..Resource::new("file:///src/main.rs", "main.rs")
        }),
        ContentBlock::embedded(ResourceContents::text(
            "file:///a.txt",
            Some("text/plain".into()),
            "hi",
        )),
        ContentBlock::embedded(ResourceContents::blob("file:///a.bin", None, "AAEC")),
    ]
}

fn elicit_form() -> ElicitRequestParams {
    let props: OrderedMap<PrimitiveSchemaDefinition> = serde_json::from_value(json!({
        "name": {"type": "string", "title": "Name", "minLength": 1, "maxLength": 50, "format": "email", "default": "a@b.c"},
        "age": {"type": "integer", "minimum": 0, "maximum": 150, "default": 30},
        "score": {"type": "number", "minimum": 0.5},
        "ok": {"type": "boolean", "default": true},
        "color": {"type": "string", "enum": ["red", "green"]},
        "size": {"type": "string", "oneOf": [{"const": "s", "title": "Small"}]},
        "legacy": {"type": "string", "enum": ["a"], "enumNames": ["A"]},
        "tags": {"type": "array", "minItems": 1, "maxItems": 2, "items": {"type": "string", "enum": ["x", "y"]}},
        "toppings": {"type": "array", "items": {"anyOf": [{"const": "c", "title": "Cheese"}]}, "default": ["c"]}
    }))
    .unwrap();
    ElicitRequestParams::Form(ElicitRequestFormParams {
        message: "Tell us about yourself".into(),
        requested_schema: ElicitationSchema {
            properties: props,
            required: Some(vec!["name".into()]),
            ..Default::default()
        },
    })
}

fn elicit_url(id: Option<&str>) -> ElicitRequestParams {
    ElicitRequestParams::Url(ElicitRequestUrlParams {
        message: "Authorize".into(),
        url: "https://example.com/authorize".into(),
        elicitation_id: id.map(Into::into),
    })
}

fn sampling_request() -> CreateMessageRequestParams {
    CreateMessageRequestParams {
        messages: vec![
            SamplingMessage::new(Role::User, ContentBlock::text("Weather in Paris?")),
            SamplingMessage {
                role: Role::Assistant,
                content: SamplingContent::Multiple(vec![ContentBlock::ToolUse(ToolUseContent {
                    id: "call_1".into(),
                    name: "get_weather".into(),
                    input: obj(json!({"city": "Paris"})),
                    meta: None,
                })]),
                meta: None,
            },
            SamplingMessage {
                role: Role::User,
                content: SamplingContent::Multiple(vec![ContentBlock::ToolResult(
                    ToolResultContent {
                        tool_use_id: "call_1".into(),
                        content: vec![ContentBlock::text("18C")],
                        structured_content: Some(json!({"t": 18})),
                        is_error: Some(false),
                        meta: None,
                    },
                )]),
                meta: None,
            },
        ],
        model_preferences: Some(ModelPreferences {
            hints: Some(vec![ModelHint {
                name: Some("claude".into()),
            }]),
            intelligence_priority: Some(0.8),
            ..Default::default()
        }),
        system_prompt: Some("Be brief.".into()),
        include_context: Some(IncludeContext::None),
        temperature: Some(0.7),
        max_tokens: 100,
        stop_sequences: Some(vec!["\n\n".into()]),
        metadata: Some(obj(json!({"provider": "x"}))),
        tools: Some(vec![tool()]),
        tool_choice: Some(ToolChoice {
            mode: Some(ToolChoiceMode::Auto),
        }),
    }
}

fn elicit_result() -> ElicitResult {
    let mut content = BTreeMap::new();
    content.insert("name".to_owned(), ElicitValue::from("Ada"));
    content.insert("age".to_owned(), ElicitValue::from(36));
    content.insert("ok".to_owned(), ElicitValue::from(true));
    content.insert("tags".to_owned(), ElicitValue::from(vec!["x".to_owned()]));
    ElicitResult::accept(content)
}

fn create_message_result() -> CreateMessageResult {
    CreateMessageResult {
        role: Role::Assistant,
        content: SamplingContent::Single(ContentBlock::text("Paris is sunny.")),
        model: "claude-3-sonnet".into(),
        stop_reason: Some(StopReason::EndTurn),
        meta: None,
    }
}

fn list_roots_result() -> ListRootsResult {
    ListRootsResult {
        roots: vec![Root {
            name: Some("project".into()),
            ..Root::new("file:///home/u/project")
        }],
        meta: None,
    }
}

fn input_responses() -> InputResponses {
    let mut r = InputResponses::new();
    r.insert("confirm", &elicit_result()).unwrap();
    r.insert("summary", &create_message_result()).unwrap();
    r.insert("roots", &list_roots_result()).unwrap();
    r
}

fn input_required() -> InputRequiredResult {
    let mut r = InputRequiredResult::new()
        .with_request("confirm", InputRequest::Elicitation(elicit_form()))
        .with_request("authorize", InputRequest::Elicitation(elicit_url(None)))
        .with_request("summary", InputRequest::Sampling(sampling_request()))
        .with_request("roots", InputRequest::list_roots())
        .with_request("roots2", InputRequest::ListRoots(Some(EmptyParams {})))
        .with_state("v1.sealed-state");
    r.meta = Some(obj(json!({
        "io.modelcontextprotocol/serverInfo": {"name": "test-server", "version": "1.0.0"}
    })));
    r
}

// ------------------------------------------------------------ 2026-07-28

#[test]
fn modern_requests_validate() {
    let Some(s) = Schema::load(MODERN) else {
        return;
    };
    let call = CallToolRequestParams {
        name: "get_weather".into(),
        arguments: Some(obj(json!({"region": "eu-west-1", "n": 2}))),
        input_responses: Some(input_responses()),
        request_state: Some("v1.sealed-state".into()),
    };
    let get_prompt = GetPromptRequestParams {
        arguments: Some([("code".to_owned(), "x = 1".to_owned())].into()),
        ..GetPromptRequestParams::new("code_review")
    };
    let read = ReadResourceRequestParams {
        input_responses: Some(input_responses()),
        request_state: Some("st".into()),
        ..ReadResourceRequestParams::new("file:///a.txt")
    };
    let complete_prompt = CompleteRequestParams {
        reference: CompletionReference::Prompt(PromptReference {
            name: "code_review".into(),
            title: None,
        }),
        argument: CompletionArgument {
            name: "language".into(),
            value: "py".into(),
        },
        context: Some(CompletionContext {
            arguments: Some([("framework".to_owned(), "flask".to_owned())].into()),
        }),
    };
    let complete_resource = CompleteRequestParams {
        reference: CompletionReference::ResourceTemplate(ResourceTemplateReference {
            uri: "file:///{path}".into(),
        }),
        argument: CompletionArgument {
            name: "path".into(),
            value: "src/".into(),
        },
        context: None,
    };
    let listen = SubscriptionsListenRequestParams {
        notifications: SubscriptionFilter {
            tools_list_changed: Some(true),
            prompts_list_changed: Some(true),
            resources_list_changed: Some(false),
            resource_subscriptions: Some(vec!["file:///a.txt".into()]),
        },
    };
    let page = PaginatedRequestParams {
        cursor: Some("c2".into()),
    };
    let cases: Vec<(&str, Value)> = vec![
        (
            "DiscoverRequest",
            modern_client_request(&ClientRequest::Discover(EmptyParams {})),
        ),
        (
            "ListToolsRequest",
            modern_request(method::TOOLS_LIST, &PaginatedRequestParams::default()),
        ),
        (
            "ListToolsRequest",
            modern_client_request(&ClientRequest::ListTools(page.clone())),
        ),
        ("CallToolRequest", modern_request(method::TOOLS_CALL, &call)),
        (
            "CallToolRequest",
            modern_client_request(&ClientRequest::CallTool(call.clone())),
        ),
        (
            "ListResourcesRequest",
            modern_request(method::RESOURCES_LIST, &page),
        ),
        (
            "ListResourceTemplatesRequest",
            modern_request(method::RESOURCES_TEMPLATES_LIST, &page),
        ),
        (
            "ReadResourceRequest",
            modern_request(method::RESOURCES_READ, &read),
        ),
        (
            "ListPromptsRequest",
            modern_request(method::PROMPTS_LIST, &page),
        ),
        (
            "GetPromptRequest",
            modern_request(method::PROMPTS_GET, &get_prompt),
        ),
        (
            "CompleteRequest",
            modern_request(method::COMPLETION_COMPLETE, &complete_prompt),
        ),
        (
            "CompleteRequest",
            modern_request(method::COMPLETION_COMPLETE, &complete_resource),
        ),
        (
            "SubscriptionsListenRequest",
            modern_client_request(&ClientRequest::Listen(listen)),
        ),
    ];
    for (def, msg) in &cases {
        s.accepts(def, msg);
        s.accepts("ClientRequest", msg);
        s.accepts("JSONRPCMessage", msg);
        // What we emit, we read back to the same request.
        let params = serde_json::value::to_raw_value(&msg["params"]).unwrap();
        let method = msg["method"].as_str().unwrap();
        let back = ClientRequest::decode(method, Some(&params)).unwrap();
        assert_eq!(
            back.params_value(None).unwrap().map(|mut v| {
                v.as_object_mut().map(|o| o.remove("_meta"));
                v
            }),
            {
                let mut v = msg["params"].clone();
                v.as_object_mut().map(|o| o.remove("_meta"));
                Some(v)
            },
            "{def} does not read back"
        );
    }
}

#[test]
fn modern_results_validate() {
    let Some(s) = Schema::load(MODERN) else {
        return;
    };
    let discover = cached(DiscoverResult {
        supported_versions: vec!["2026-07-28".into(), "2025-11-25".into()],
        capabilities: serde_json::from_value(json!({
            "tools": {"listChanged": true},
            "resources": {"subscribe": true, "listChanged": true},
            "prompts": {"listChanged": true},
            "completions": {},
            "logging": {},
            "extensions": {"io.modelcontextprotocol/tasks": {}}
        }))
        .unwrap(),
        instructions: Some("Use search first.".into()),
        ..Default::default()
    });
    let tools = cached(ListToolsResult {
        tools: vec![tool(), Tool::new("noop", Tool::no_arguments_schema())],
        next_cursor: Some("next".into()),
        ..Default::default()
    });
    let call = modern(CallToolResult {
        content: every_content_block(),
        structured_content: Some(json!({"temperature": 22})),
        is_error: Some(false),
        ..Default::default()
    });
    let call_error = modern(CallToolResult::error(vec![ContentBlock::text("bad date")]));
    let resources = cached(ListResourcesResult {
        resources: vec![Resource {
            title: Some("Main".into()),
            description: Some("Entry point".into()),
            annotations: Some(Annotations {
                audience: Some(vec![Role::Assistant]),
                priority: Some(1.0),
                last_modified: None,
            }),
            ..Resource::new("file:///src/main.rs", "main.rs")
        }],
        ..Default::default()
    });
    let templates = cached(ListResourceTemplatesResult {
        resource_templates: vec![ResourceTemplate {
            uri_template: "file:///{path}".into(),
            name: "files".into(),
            mime_type: Some("application/octet-stream".into()),
            ..Default::default()
        }],
        ..Default::default()
    });
    let read = cached(ReadResourceResult {
        contents: vec![
            ResourceContents::text("file:///a.txt", Some("text/plain".into()), "hi"),
            ResourceContents::blob(
                "file:///a.bin",
                Some("application/octet-stream".into()),
                "AAEC",
            ),
        ],
        ..Default::default()
    });
    let prompts = cached(ListPromptsResult {
        prompts: vec![Prompt {
            name: "code_review".into(),
            title: Some("Code review".into()),
            arguments: Some(vec![PromptArgument {
                name: "code".into(),
                required: Some(true),
                ..Default::default()
            }]),
            ..Default::default()
        }],
        ..Default::default()
    });
    let prompt = modern(GetPromptResult {
        description: Some("Review".into()),
        messages: every_content_block()
            .into_iter()
            .map(|c| PromptMessage::new(Role::User, c))
            .collect(),
        ..Default::default()
    });
    let complete = modern(CompleteResult {
        completion: Completion::from_values(vec!["python".into(), "pytorch".into()]),
        ..Default::default()
    });
    let listen_end = SubscriptionsListenResult::ended(&RequestId::string("listen-1"));

    // (response def, result def, message). The result def is checked too:
    // the MRTR responses are `anyOf [InputRequiredResult, X]`, and
    // InputRequiredResult alone accepts anything with a `resultType`.
    let cases: Vec<(&str, &str, Value)> = vec![
        (
            "DiscoverResultResponse",
            "DiscoverResult",
            response(&discover),
        ),
        (
            "ListToolsResultResponse",
            "ListToolsResult",
            response(&tools),
        ),
        (
            "CallToolResultResponse",
            "CallToolResult",
            response(&MaybeInputRequired::Complete(call)),
        ),
        (
            "CallToolResultResponse",
            "CallToolResult",
            response(&call_error),
        ),
        (
            "CallToolResultResponse",
            "InputRequiredResult",
            response(&MaybeInputRequired::<CallToolResult>::InputRequired(
                input_required(),
            )),
        ),
        (
            "ListResourcesResultResponse",
            "ListResourcesResult",
            response(&resources),
        ),
        (
            "ListResourceTemplatesResultResponse",
            "ListResourceTemplatesResult",
            response(&templates),
        ),
        (
            "ReadResourceResultResponse",
            "ReadResourceResult",
            response(&read),
        ),
        (
            "ReadResourceResultResponse",
            "InputRequiredResult",
            response(&input_required()),
        ),
        (
            "ListPromptsResultResponse",
            "ListPromptsResult",
            response(&prompts),
        ),
        (
            "GetPromptResultResponse",
            "GetPromptResult",
            response(&prompt),
        ),
        (
            "GetPromptResultResponse",
            "InputRequiredResult",
            response(&input_required()),
        ),
        (
            "CompleteResultResponse",
            "CompleteResult",
            response(&complete),
        ),
        (
            "SubscriptionsListenResultResponse",
            "SubscriptionsListenResult",
            response(&listen_end),
        ),
    ];
    for (def, result_def, msg) in &cases {
        s.accepts(def, msg);
        s.accepts(result_def, &msg["result"]);
        s.accepts("JSONRPCResultResponse", msg);
        s.accepts("JSONRPCMessage", msg);
        s.accepts("ServerResult", &msg["result"]);
    }
    s.accepts("DiscoverResult", &serde_json::to_value(&discover).unwrap());
    s.accepts(
        "InputRequiredResult",
        &serde_json::to_value(input_required()).unwrap(),
    );
}

#[test]
fn modern_input_requests_and_responses_validate() {
    let Some(s) = Schema::load(MODERN) else {
        return;
    };
    for (key, req) in input_required().input_requests.unwrap() {
        let v = serde_json::to_value(&req).unwrap();
        s.accepts("InputRequest", &v);
        let def = match req {
            InputRequest::Elicitation(_) => "ElicitRequest",
            InputRequest::Sampling(_) => "CreateMessageRequest",
            InputRequest::ListRoots(_) => "ListRootsRequest",
        };
        s.accepts(def, &v);
        assert!(v.get("id").is_none() && v.get("jsonrpc").is_none(), "{key}");
    }
    for (def, v) in [
        (
            "ElicitResult",
            serde_json::to_value(elicit_result()).unwrap(),
        ),
        (
            "ElicitResult",
            serde_json::to_value(ElicitResult::new(ElicitAction::Decline)).unwrap(),
        ),
        (
            "CreateMessageResult",
            serde_json::to_value(create_message_result()).unwrap(),
        ),
        (
            "ListRootsResult",
            serde_json::to_value(list_roots_result()).unwrap(),
        ),
    ] {
        s.accepts(def, &v);
        s.accepts("InputResponse", &v);
        // Input responses are not Results: no resultType (RESULT-05).
        assert!(v.get("resultType").is_none());
    }
    s.accepts(
        "InputResponses",
        &serde_json::to_value(input_responses()).unwrap(),
    );
}

#[test]
fn modern_notifications_validate() {
    let Some(s) = Schema::load(MODERN) else {
        return;
    };
    let listen = RequestId::string("listen-1");
    let on_stream = NotificationParams {
        meta: Some(subscription_meta(&listen)),
    };
    let cases: Vec<(&str, Value)> = vec![
        (
            "CancelledNotification",
            notification(
                method::NOTIFICATIONS_CANCELLED,
                Some(&CancelledNotificationParams::new(
                    RequestId::number(7),
                    Some("user aborted".into()),
                )),
            ),
        ),
        (
            "ProgressNotification",
            notification(
                method::NOTIFICATIONS_PROGRESS,
                Some(&ProgressNotificationParams {
                    message: Some("halfway".into()),
                    ..ProgressNotificationParams::new(RequestId::string("tok"), 0.5, Some(1.0))
                }),
            ),
        ),
        (
            "LoggingMessageNotification",
            notification(
                method::NOTIFICATIONS_MESSAGE,
                Some(&LoggingMessageNotificationParams {
                    logger: Some("db".into()),
                    ..LoggingMessageNotificationParams::new(
                        LoggingLevel::Warning,
                        json!({"msg": "slow query", "ms": 1200}),
                    )
                }),
            ),
        ),
        (
            "ResourceUpdatedNotification",
            notification(
                method::NOTIFICATIONS_RESOURCES_UPDATED,
                Some(&ResourceUpdatedNotificationParams {
                    uri: "file:///a.txt".into(),
                    meta: Some(subscription_meta(&listen)),
                }),
            ),
        ),
        (
            "ResourceListChangedNotification",
            notification(
                method::NOTIFICATIONS_RESOURCES_LIST_CHANGED,
                Some(&on_stream),
            ),
        ),
        (
            "ToolListChangedNotification",
            notification(method::NOTIFICATIONS_TOOLS_LIST_CHANGED, Some(&on_stream)),
        ),
        (
            "ToolListChangedNotification",
            notification::<NotificationParams>(method::NOTIFICATIONS_TOOLS_LIST_CHANGED, None),
        ),
        (
            "PromptListChangedNotification",
            notification(method::NOTIFICATIONS_PROMPTS_LIST_CHANGED, Some(&on_stream)),
        ),
        (
            "SubscriptionsAcknowledgedNotification",
            notification(
                method::NOTIFICATIONS_SUBSCRIPTIONS_ACKNOWLEDGED,
                Some(&SubscriptionsAcknowledgedNotificationParams::new(
                    &RequestId::number(3),
                    SubscriptionFilter {
                        tools_list_changed: Some(true),
                        resource_subscriptions: Some(vec!["file:///a.txt".into()]),
                        ..Default::default()
                    },
                )),
            ),
        ),
    ];
    for (def, msg) in &cases {
        s.accepts(def, msg);
        s.accepts("ServerNotification", msg);
        s.accepts("JSONRPCMessage", msg);
    }
    s.accepts("ClientNotification", &cases[0].1);
}

#[test]
fn modern_schema_rejects_what_it_should() {
    let Some(s) = Schema::load(MODERN) else {
        return;
    };
    // A request without the envelope (META-03).
    let bare = legacy_request(
        method::TOOLS_CALL,
        Some(&CallToolRequestParams::new("echo", None)),
    );
    s.rejects("CallToolRequest", &bare);
    // A discover result without cache hints (CACHE-01) or resultType (RESULT-01).
    let unstamped = DiscoverResult {
        supported_versions: vec!["2026-07-28".into()],
        ..Default::default()
    };
    s.rejects("DiscoverResultResponse", &response(&unstamped));
    s.accepts("DiscoverResultResponse", &response(&cached(unstamped)));
    s.rejects(
        "CallToolResultResponse",
        &response(&CallToolResult::text("no resultType")),
    );
    // An unknown content block is kept by us but is not a 2026-07-28 block.
    let hologram: ContentBlock =
        serde_json::from_value(json!({"type": "hologram", "frames": 3})).unwrap();
    s.rejects(
        "CallToolResult",
        &serde_json::to_value(modern(CallToolResult::success(vec![hologram]))).unwrap(),
    );
    // The listen result needs its subscription id.
    s.rejects(
        "SubscriptionsListenResultResponse",
        &response(&modern(SubscriptionsListenResult::default())),
    );
    // A method that is not an input request.
    s.rejects(
        "InputRequest",
        &json!({"method": "tools/call", "params": {"name": "x"}}),
    );
}

// ------------------------------------------------------------ 2025-11-25

#[test]
fn legacy_client_messages_validate() {
    let Some(s) = Schema::load(LEGACY) else {
        return;
    };
    let init = InitializeRequestParams {
        protocol_version: "2025-11-25".into(),
        capabilities: serde_json::from_value(json!({
            "roots": {"listChanged": true},
            "sampling": {},
            "elicitation": {"form": {}, "url": {}}
        }))
        .unwrap(),
        client_info: Implementation {
            title: Some("Example Client".into()),
            website_url: Some("https://example.com".into()),
            ..Implementation::new("ExampleClient", "1.0.0")
        },
    };
    let init_msg = legacy_request(method::INITIALIZE, Some(&init));
    s.accepts("InitializeRequest", &init_msg);
    // Read back through the dispatcher.
    let raw = serde_json::value::to_raw_value(&init_msg["params"]).unwrap();
    assert!(matches!(
        ClientRequest::decode(method::INITIALIZE, Some(&raw)).unwrap(),
        ClientRequest::Initialize(ref p) if **p == init
    ));

    let cases: Vec<(&str, Value)> = vec![
        ("InitializeRequest", init_msg.clone()),
        (
            "PingRequest",
            legacy_request::<EmptyParams>(method::PING, None),
        ),
        (
            "PingRequest",
            legacy_request(method::PING, Some(&EmptyParams {})),
        ),
        (
            "SetLevelRequest",
            legacy_request(
                method::LOGGING_SET_LEVEL,
                Some(&SetLevelRequestParams {
                    level: LoggingLevel::Info,
                }),
            ),
        ),
        (
            "SubscribeRequest",
            legacy_request(
                method::RESOURCES_SUBSCRIBE,
                Some(&SubscribeRequestParams {
                    uri: "file:///a.txt".into(),
                }),
            ),
        ),
        (
            "UnsubscribeRequest",
            legacy_request(
                method::RESOURCES_UNSUBSCRIBE,
                Some(&UnsubscribeRequestParams {
                    uri: "file:///a.txt".into(),
                }),
            ),
        ),
        (
            "ListToolsRequest",
            legacy_request::<PaginatedRequestParams>(method::TOOLS_LIST, None),
        ),
        (
            "CallToolRequest",
            legacy_request(
                method::TOOLS_CALL,
                Some(&CallToolRequestParams::new(
                    "echo",
                    Some(obj(json!({"text": "hi"}))),
                )),
            ),
        ),
        (
            "ReadResourceRequest",
            legacy_request(
                method::RESOURCES_READ,
                Some(&ReadResourceRequestParams::new("file:///a.txt")),
            ),
        ),
        (
            "GetPromptRequest",
            legacy_request(method::PROMPTS_GET, Some(&GetPromptRequestParams::new("p"))),
        ),
    ];
    for (def, msg) in &cases {
        s.accepts(def, msg);
        s.accepts("ClientRequest", msg);
        s.accepts("JSONRPCMessage", msg);
    }

    let notes: Vec<(&str, Value)> = vec![
        (
            "InitializedNotification",
            notification::<NotificationParams>(method::NOTIFICATIONS_INITIALIZED, None),
        ),
        (
            "InitializedNotification",
            notification(
                method::NOTIFICATIONS_INITIALIZED,
                Some(&NotificationParams::default()),
            ),
        ),
        (
            "RootsListChangedNotification",
            notification::<NotificationParams>(method::NOTIFICATIONS_ROOTS_LIST_CHANGED, None),
        ),
        (
            "CancelledNotification",
            notification(
                method::NOTIFICATIONS_CANCELLED,
                Some(&CancelledNotificationParams::new(
                    RequestId::string("r-1"),
                    None,
                )),
            ),
        ),
        (
            "ProgressNotification",
            notification(
                method::NOTIFICATIONS_PROGRESS,
                Some(&ProgressNotificationParams::new(
                    RequestId::number(1),
                    3.0,
                    None,
                )),
            ),
        ),
    ];
    for (def, msg) in &notes {
        s.accepts(def, msg);
        s.accepts("ClientNotification", msg);
    }
    // Answers to server→client requests.
    for (def, v) in [
        (
            "ElicitResult",
            serde_json::to_value(elicit_result()).unwrap(),
        ),
        (
            "CreateMessageResult",
            serde_json::to_value(create_message_result()).unwrap(),
        ),
        (
            "ListRootsResult",
            serde_json::to_value(list_roots_result()).unwrap(),
        ),
        (
            "EmptyResult",
            serde_json::to_value(EmptyResult::default()).unwrap(),
        ),
    ] {
        s.accepts(def, &v);
        s.accepts("ClientResult", &v);
        s.accepts("JSONRPCResultResponse", &response(&v));
    }
}

#[test]
fn legacy_server_messages_validate() {
    let Some(s) = Schema::load(LEGACY) else {
        return;
    };
    let init = InitializeResult {
        protocol_version: "2025-11-25".into(),
        capabilities: serde_json::from_value(json!({
            "logging": {},
            "prompts": {"listChanged": true},
            "resources": {"subscribe": true, "listChanged": true},
            "tools": {"listChanged": true},
            "completions": {}
        }))
        .unwrap(),
        server_info: Implementation::new("ExampleServer", "1.0.0"),
        instructions: Some("Optional instructions".into()),
        meta: None,
    };
    // Handshake-era results: no resultType, no cache hints.
    let results: Vec<(&str, Value)> = vec![
        ("InitializeResult", serde_json::to_value(&init).unwrap()),
        (
            "EmptyResult",
            serde_json::to_value(EmptyResult::default()).unwrap(),
        ),
        (
            "ListToolsResult",
            serde_json::to_value(ListToolsResult {
                tools: vec![tool()],
                ..Default::default()
            })
            .unwrap(),
        ),
        (
            "CallToolResult",
            serde_json::to_value(CallToolResult {
                content: every_content_block(),
                structured_content: Some(json!({"temperature": 22})),
                ..Default::default()
            })
            .unwrap(),
        ),
        (
            "ReadResourceResult",
            serde_json::to_value(ReadResourceResult {
                contents: vec![ResourceContents::text("file:///a", None, "x")],
                ..Default::default()
            })
            .unwrap(),
        ),
        (
            "GetPromptResult",
            serde_json::to_value(GetPromptResult {
                messages: vec![PromptMessage::new(Role::User, ContentBlock::text("hi"))],
                ..Default::default()
            })
            .unwrap(),
        ),
        (
            "CompleteResult",
            serde_json::to_value(CompleteResult {
                completion: Completion::from_values(vec!["a".into()]),
                ..Default::default()
            })
            .unwrap(),
        ),
    ];
    for (def, v) in &results {
        s.accepts(def, v);
        s.accepts("ServerResult", v);
        s.accepts("JSONRPCResultResponse", &response(v));
    }

    // Server→client requests (LEGACY-18), through the dispatcher's encoder.
    let requests = [
        ("ElicitRequest", ServerRequest::Elicit(elicit_form())),
        (
            "ElicitRequest",
            ServerRequest::Elicit(elicit_url(Some("el-1"))),
        ),
        (
            "CreateMessageRequest",
            ServerRequest::CreateMessage(sampling_request()),
        ),
        ("ListRootsRequest", ServerRequest::ListRoots(EmptyParams {})),
        ("PingRequest", ServerRequest::Ping(EmptyParams {})),
    ];
    for (def, r) in &requests {
        let params = r.params_value(None).unwrap();
        let msg = serde_json::to_value(OutgoingRequest::new(&id(), r.method(), params)).unwrap();
        s.accepts(def, &msg);
        s.accepts("ServerRequest", &msg);
        s.accepts("JSONRPCMessage", &msg);
    }

    let notes: Vec<(&str, Value)> = vec![
        (
            "ElicitationCompleteNotification",
            notification(
                method::NOTIFICATIONS_ELICITATION_COMPLETE,
                Some(&ElicitationCompleteNotificationParams {
                    elicitation_id: "el-1".into(),
                    meta: None,
                }),
            ),
        ),
        (
            "ResourceUpdatedNotification",
            notification(
                method::NOTIFICATIONS_RESOURCES_UPDATED,
                Some(&ResourceUpdatedNotificationParams {
                    uri: "file:///a".into(),
                    meta: None,
                }),
            ),
        ),
        (
            "ToolListChangedNotification",
            notification::<NotificationParams>(method::NOTIFICATIONS_TOOLS_LIST_CHANGED, None),
        ),
        (
            "LoggingMessageNotification",
            notification(
                method::NOTIFICATIONS_MESSAGE,
                Some(&LoggingMessageNotificationParams::new(
                    LoggingLevel::Emergency,
                    json!("disk full"),
                )),
            ),
        ),
    ];
    for (def, msg) in &notes {
        s.accepts(def, msg);
        s.accepts("ServerNotification", msg);
    }
}

#[test]
fn legacy_schema_rejects_what_it_should() {
    let Some(s) = Schema::load(LEGACY) else {
        return;
    };
    // 2025-11-25 URL elicitation requires elicitationId (LEGACY-22).
    let no_id = ServerRequest::Elicit(elicit_url(None));
    let msg = serde_json::to_value(OutgoingRequest::new(
        &id(),
        no_id.method(),
        no_id.params_value(None).unwrap(),
    ))
    .unwrap();
    s.rejects("ElicitRequest", &msg);
    // initialize needs clientInfo.
    s.rejects(
        "InitializeRequest",
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": "2025-11-25", "capabilities": {}}}),
    );
    // structuredContent must be an object on 2025-11-25.
    s.rejects(
        "CallToolResult",
        &serde_json::to_value(CallToolResult {
            structured_content: Some(json!([1, 2])),
            ..Default::default()
        })
        .unwrap(),
    );
    // An unknown log level.
    s.rejects(
        "SetLevelRequest",
        &json!({"jsonrpc": "2.0", "id": 1, "method": "logging/setLevel", "params": {"level": "loud"}}),
    );
}
