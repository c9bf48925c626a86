//! Property tests for the header codec, the `x-mcp-header` walker and
//! `Mcp-Param-*` emit/validate.
// HDR-06…HDR-20

use proptest::prelude::*;
use serde_json::{Map, Number, Value};

use ferromcp_protocol::header::codec::{
    SENTINEL_PREFIX, SENTINEL_SUFFIX, base64_decode, base64_encode, decode_header_value,
    encode_header_value, sentinel_payload,
};
use ferromcp_protocol::header::trim_ows;
use ferromcp_protocol::header::x_mcp_header::x_mcp_header_map;

/// Strings that stress the encoder: sentinel pieces, edge spaces, controls,
/// non-ASCII, alongside fully arbitrary strings.
fn tricky_string() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        proptest::collection::vec(
            prop_oneof![
                Just("=?base64?".to_owned()),
                Just("?=".to_owned()),
                Just(" ".to_owned()),
                Just("\t".to_owned()),
                Just("\r\n".to_owned()),
                Just("\u{7F}".to_owned()),
                Just("世界".to_owned()),
                "[ -~]{0,4}",
            ],
            0..8
        )
        .prop_map(|parts| parts.concat()),
    ]
}

/// Object keys biased towards JSON Schema keywords.
fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => prop_oneof![
            Just("properties"),
            Just("x-mcp-header"),
            Just("type"),
            Just("items"),
            Just("allOf"),
            Just("anyOf"),
            Just("$defs"),
            Just("additionalProperties"),
            Just("patternProperties"),
            Just("dependencies"),
            Just("not"),
            Just("if"),
            Just("default"),
            Just("enum"),
            Just("maximum"),
            Just("minimum"),
            Just("exclusiveMaximum"),
            Just("$ref"),
            Just("a"),
            Just("b"),
        ]
        .prop_map(str::to_owned),
        1 => "[a-zA-Z~/]{0,3}",
    ]
}

/// Leaf values biased towards the ones the rules care about.
fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(|f| Number::from_f64(f).map_or(Value::Null, Value::Number)),
        prop_oneof![
            Just("string"),
            Just("integer"),
            Just("boolean"),
            Just("number"),
            Just("object"),
            Just("Region"),
            Just("region"),
            Just("X"),
            Just(""),
            Just("My Region"),
        ]
        .prop_map(|s| Value::String(s.to_owned())),
        tricky_string().prop_map(Value::String),
    ]
}

/// Arbitrary JSON values, a few levels deep.
fn json_value() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(6, 96, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::vec((key(), inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// Schemas that are mostly *valid*: nested `properties` with annotations
/// of the three kinds, unique names, to exercise emit → validate.
fn annotated_schema() -> impl Strategy<Value = Value> {
    let prop = prop_oneof![
        Just(("string", "S")),
        Just(("integer", "I")),
        Just(("boolean", "B")),
        Just(("object", "")),
    ];
    proptest::collection::vec((prop, "[a-c]{1,2}", any::<bool>()), 1..6).prop_map(|props| {
        let mut top = Map::new();
        let mut nested = Map::new();
        for (i, ((ty, tag), name, deep)) in props.into_iter().enumerate() {
            let mut schema = Map::new();
            schema.insert("type".into(), Value::String(ty.into()));
            if !tag.is_empty() {
                schema.insert("x-mcp-header".into(), Value::String(format!("{tag}{i}")));
            }
            let target = if deep { &mut nested } else { &mut top };
            target.insert(name, Value::Object(schema));
        }
        let mut obj = Map::new();
        obj.insert("type".into(), "object".into());
        obj.insert("properties".into(), Value::Object(nested));
        top.insert("n".into(), Value::Object(obj));
        let mut root = Map::new();
        root.insert("type".into(), "object".into());
        root.insert("properties".into(), Value::Object(top));
        Value::Object(root)
    })
}

/// Argument objects shaped like [`annotated_schema`] with arbitrary leaves.
fn arguments() -> impl Strategy<Value = Map<String, Value>> {
    (
        proptest::collection::vec(("[a-c]{1,2}|n", leaf()), 0..6),
        proptest::collection::vec(("[a-c]{1,2}|n", leaf()), 0..6),
    )
        .prop_map(|(top, nested)| {
            let mut top: Map<String, Value> = top.into_iter().collect();
            let nested: Map<String, Value> = nested.into_iter().collect();
            top.insert("n".into(), Value::Object(nested));
            top
        })
}

/// Raw header lines, mixing `Mcp-Param-*` names with arbitrary bytes.
fn header_lines() -> impl Strategy<Value = Vec<(String, Vec<u8>)>> {
    let name = prop_oneof![
        "(Mcp-Param-|mcp-param-|MCP-PARAM-)[SIBX][0-9]",
        "Mcp-Param-[A-Za-z]{0,3}",
        "[A-Za-z-]{0,12}",
    ];
    let value = prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..24),
        "[ -~]{0,16}".prop_map(String::into_bytes),
        "-?[0-9]{1,22}(\\.0{1,3})?".prop_map(String::into_bytes),
        Just(b"true".to_vec()),
        Just(b"false".to_vec()),
    ];
    proptest::collection::vec((name, value), 0..8)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    // HDR-06/HDR-09
    /// Every string survives encode → (trim) → decode.
    #[test]
    fn encode_decode_round_trips(s in tricky_string()) {
        let encoded = encode_header_value(&s);
        let decoded = decode_header_value(trim_ows(encoded.as_bytes()));
        prop_assert_eq!(decoded.as_deref(), Some(s.as_str()));
    }

    // HDR-06
    /// Encoded values are always safe, untrimmable field values.
    #[test]
    fn encoded_values_are_header_safe(s in tricky_string()) {
        let encoded = encode_header_value(&s);
        let bytes = encoded.as_bytes();
        prop_assert!(bytes.iter().all(|b| (0x20..=0x7E).contains(b)));
        prop_assert!(bytes.first() != Some(&b' ') && bytes.last() != Some(&b' '));
        prop_assert_eq!(trim_ows(bytes), bytes);
        // Plain iff unchanged; a plain value is never sentinel-shaped.
        if *encoded == *s {
            prop_assert!(!(s.starts_with(SENTINEL_PREFIX) && s.ends_with(SENTINEL_SUFFIX)));
        } else {
            prop_assert!(encoded.starts_with(SENTINEL_PREFIX) && encoded.ends_with(SENTINEL_SUFFIX));
        }
    }

    // HDR-09
    /// Decoding arbitrary bytes never panics, and whatever it
    /// accepts inside the markers is canonical base64 of UTF-8.
    #[test]
    fn decode_never_panics(raw in proptest::collection::vec(any::<u8>(), 0..64)) {
        let _ = decode_header_value(&raw);
        let mut wrapped = SENTINEL_PREFIX.as_bytes().to_vec();
        wrapped.extend_from_slice(&raw);
        wrapped.extend_from_slice(SENTINEL_SUFFIX.as_bytes());
        if let Some(decoded) = decode_header_value(&wrapped) {
            let reencoded = base64_encode(decoded.as_bytes());
            prop_assert_eq!(reencoded.as_bytes(), &raw[..]);
        }
    }

    /// Strict base64 accepts exactly the canonical encodings.
    #[test]
    fn base64_decode_is_canonical(text in "[A-Za-z0-9+/=]{0,16}") {
        if let Some(bytes) = base64_decode(text.as_bytes()) {
            prop_assert_eq!(base64_encode(&bytes), text);
        }
    }

    /// RFC 4648 round trip for arbitrary bytes.
    #[test]
    fn base64_round_trips(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
        let text = base64_encode(&bytes);
        prop_assert_eq!(text.len() % 4, 0);
        prop_assert_eq!(base64_decode(text.as_bytes()), Some(bytes));
    }

    /// A wrapped value the decoder accepts always has a payload.
    #[test]
    fn sentinel_payload_is_between_markers(s in tricky_string()) {
        if let Some(payload) = sentinel_payload(s.as_bytes()) {
            prop_assert_eq!(payload.len() + 11, s.len());
        }
    }

    /// The walker, emit and validate never panic on arbitrary JSON.
    #[test]
    fn walker_emit_validate_never_panic(
        schema in json_value(),
        args in json_value(),
        headers in header_lines(),
    ) {
        if let Ok(map) = x_mcp_header_map(&schema) {
            let args = args.as_object();
            let emitted = map.emit(args);
            for (name, value) in &emitted {
                prop_assert!(name.starts_with("Mcp-Param-"));
                prop_assert!(value.bytes().all(|b| (0x20..=0x7E).contains(&b)));
            }
            let _ = map.validate(args, &headers);
            let _ = map.validate(args, &emitted);
        }
    }

    /// Whatever a client emits, the server accepts, unless some annotated
    /// argument is present but has the wrong type (then nothing can match).
    #[test]
    fn emit_then_validate_agree(schema in annotated_schema(), args in arguments()) {
        let map = match x_mcp_header_map(&schema) {
            Ok(map) => map,
            // Every generated schema is valid by construction.
            Err(reason) => return Err(TestCaseError::fail(reason)),
        };
        let emitted = map.emit(Some(&args));
        let mismatched = map.iter().any(|p| {
            p.argument(&args)
                .is_some_and(|v| !v.is_null() && p.kind.render(v).is_none())
        });
        let verdict = map.validate(Some(&args), &emitted);
        prop_assert_eq!(verdict.is_ok(), !mismatched, "{:?}", verdict);
        // Dropping any emitted header makes validation fail.
        for skip in 0..emitted.len() {
            let fewer: Vec<_> = emitted.iter().enumerate()
                .filter(|(i, _)| *i != skip).map(|(_, h)| h.clone()).collect();
            prop_assert!(map.validate(Some(&args), &fewer).is_err());
        }
        // Duplicating any emitted header makes validation fail.
        if let Some(first) = emitted.first() {
            let mut more = emitted.clone();
            more.push(first.clone());
            prop_assert!(map.validate(Some(&args), &more).is_err());
        }
    }
}
