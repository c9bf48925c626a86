//! Property tests: JSON-RPC decoding, the `_meta` envelope, era
//! classification and the validation ladder never panic, whatever arrives,
//! and their verdicts are internally consistent.

use ferromcp_protocol::era::{SessionHint, StdioEra, classify_http};
use ferromcp_protocol::header::HeaderList;
use ferromcp_protocol::jsonrpc::{Message, decode_message};
use ferromcp_protocol::ladder::{ParamsProbe, Verdict, classify_inbound_request};
use ferromcp_protocol::method::ClientRequest;
use ferromcp_protocol::{ErrorCode, ProtocolVersion};
use proptest::prelude::*;
use serde_json::{Value, json};

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| json!(f)),
        ".{0,12}".prop_map(Value::String),
        prop_oneof![
            Just("2026-07-28".to_string()),
            Just("2025-11-25".to_string()),
            Just("tools/call".to_string()),
            Just("echo".to_string())
        ]
        .prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::btree_map(
                prop_oneof![
                    ".{0,8}",
                    Just("_meta".to_string()),
                    Just("name".to_string()),
                    Just("arguments".to_string()),
                    Just("io.modelcontextprotocol/protocolVersion".to_string()),
                    Just("io.modelcontextprotocol/clientCapabilities".to_string()),
                    Just("io.modelcontextprotocol/logLevel".to_string()),
                    Just("progressToken".to_string()),
                ],
                inner,
                0..5
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// A request-shaped body with arbitrary params, so the deeper rungs run.
fn arb_request() -> impl Strategy<Value = Value> {
    (
        prop_oneof![
            Just("tools/call"),
            Just("tools/list"),
            Just("resources/read"),
            Just("prompts/get"),
            Just("initialize"),
            Just("x/custom")
        ],
        arb_json(),
        prop::option::of(arb_json()),
    )
        .prop_map(|(m, params, id)| {
            let mut v = json!({"jsonrpc": "2.0", "method": m, "params": params});
            if let Some(id) = id {
                v["id"] = id;
            }
            v
        })
}

fn arb_headers() -> impl Strategy<Value = Vec<(String, Vec<u8>)>> {
    prop::collection::vec(
        (
            prop_oneof![
                Just("MCP-Protocol-Version".to_string()),
                Just("Mcp-Method".to_string()),
                Just("Mcp-Name".to_string()),
                Just("mcp-param-region".to_string()),
                "[a-zA-Z-]{1,12}"
            ],
            prop::collection::vec(any::<u8>(), 0..24),
        ),
        0..6,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn decode_never_panics_on_bytes(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        let _ = decode_message(&bytes);
    }

    #[test]
    fn decode_never_panics_on_json(v in arb_json()) {
        let s = v.to_string();
        let _ = decode_message(s.as_bytes());
    }

    #[test]
    fn ladder_never_panics_and_rejections_are_4xx_codes(
        body in arb_request(),
        headers in prop::option::of(arb_headers()),
    ) {
        let text = body.to_string();
        let Ok(msg) = decode_message(text.as_bytes()) else { return Ok(()) };
        let supported = [ProtocolVersion::V2026_07_28];
        let h = headers.as_ref().map(|h| h as &dyn HeaderList);
        match classify_inbound_request(&msg, h, &supported, None) {
            Ok(Verdict::Request(route)) => {
                // An accepted request always has a supported version and capabilities.
                prop_assert!(supported.contains(&route.version));
                let meta = route.meta.decode_from(text.as_bytes());
                prop_assert!(meta.is_some_and(|m| m.client_capabilities.is_some()));
                if let Message::Request(r) = &msg {
                    let _ = ClientRequest::decode(&r.method, r.params);
                }
            }
            Ok(Verdict::Notification) => prop_assert!(matches!(msg, Message::Notification(_))),
            Err(rej) => {
                let c = rej.error.code;
                prop_assert!(
                    [ErrorCode::INVALID_REQUEST, ErrorCode::INVALID_PARAMS, ErrorCode::HEADER_MISMATCH, ErrorCode::UNSUPPORTED_PROTOCOL_VERSION].contains(&c),
                    "unexpected code {c}"
                );
                prop_assert_eq!(rej.error.http_status(), 400);
            }
        }
    }

    #[test]
    fn era_rules_never_panic(
        body in arb_request(),
        version in prop::option::of(prop::collection::vec(any::<u8>(), 0..16)),
        hint in 0u8..3,
    ) {
        let text = body.to_string();
        let Ok(Message::Request(r)) = decode_message(text.as_bytes()) else { return Ok(()) };
        let probe = ParamsProbe::parse(r.params);
        let hint = [SessionHint::Absent, SessionHint::Live, SessionHint::Unknown][hint as usize];
        let _ = classify_http(hint, version.as_deref(), probe.has_modern_envelope());
        let mut era = StdioEra::default();
        let _ = era.admit(&r.method, probe.has_modern_envelope(), None, &[ProtocolVersion::V2026_07_28]);
    }
}

/// Members of `tools/call` params, any of them possibly mistyped,
/// duplicated or absent, next to unknown members and a `_meta`.
fn arb_call_params() -> impl Strategy<Value = String> {
    let member = prop_oneof![
        Just(("name", json!("echo"))),
        Just(("arguments", json!({"text": "hi", "n": [1, {"a": null}]}))),
        Just(("arguments", Value::Null)),
        Just(("inputResponses", json!({"k": {"action": "accept"}}))),
        Just(("requestState", json!("opaque"))),
        Just(("requestState", Value::Null)),
        Just((
            "_meta",
            json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28"})
        )),
        Just(("other", json!([1, 2]))),
        (
            prop_oneof![
                Just("name"),
                Just("arguments"),
                Just("inputResponses"),
                Just("requestState")
            ],
            arb_json()
        ),
    ];
    prop::collection::vec(member, 0..7).prop_map(|members| {
        let body: Vec<String> = members
            .iter()
            .map(|(k, v)| format!("{}:{v}", json!(k)))
            .collect();
        format!("{{{}}}", body.join(","))
    })
}

proptest! {
    /// `tools/call` params typed from the probe's members are exactly what
    /// the full decode gives, and the fast path never accepts params that
    /// the full decode rejects.
    #[test]
    fn probed_tools_call_decode_equals_full_decode(params in arb_call_params()) {
        let raw: Box<serde_json::value::RawValue> = serde_json::from_str(&params).unwrap();
        let probe = ParamsProbe::parse(Some(&raw));
        let members = probe.members();
        let fast = ClientRequest::decode_probed("tools/call", Some(&raw), &members);
        let full = ClientRequest::decode("tools/call", Some(&raw));
        prop_assert_eq!(format!("{fast:?}"), format!("{full:?}"), "params: {}", params);
    }
}
