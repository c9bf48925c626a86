//! Header codec, `x-mcp-header` rules and `Mcp-Param-*` emit/validate
//! (the conformance suite's `http-custom-headers`,
//! `http-invalid-tool-headers` and `http-custom-header-server-validation`
//! scenarios).
// HDR-05…HDR-20

use std::borrow::Cow;
use std::collections::BTreeMap;

use ferromcp_protocol::ErrorCode;
use ferromcp_protocol::header::codec::{
    DecodeError, base64_decode, base64_encode, decode_header_value, encode_header_value,
    is_plain_header_value, is_valid_field_value, try_decode_header_value,
};
use ferromcp_protocol::header::params::parse_canonical_integer;
use ferromcp_protocol::header::x_mcp_header::{
    HeaderParam, ParamHeaderMap, ParamKind, find_invalid_x_mcp_header, x_mcp_header_map,
};
use serde_json::{Map, Value, json};

fn decode(raw: &str) -> Option<String> {
    decode_header_value(raw.as_bytes()).map(Cow::into_owned)
}

// ---------------------------------------------------------------------------
// Codec: the spec's value-encoding table (streamable-http.mdx, "Encoding
// examples"), every row verbatim, both directions (HDR-06, HDR-08).
// ---------------------------------------------------------------------------

const SPEC_ENCODING_TABLE: &[(&str, &str, &str)] = &[
    // (original value, header name, encoded header value)
    ("us-west1", "Mcp-Param-Region", "us-west1"),
    (
        "Hello, 世界",
        "Mcp-Param-Greeting",
        "=?base64?SGVsbG8sIOS4lueVjA==?=",
    ),
    (" padded ", "Mcp-Param-Text", "=?base64?IHBhZGRlZCA=?="),
    (
        "line1\nline2",
        "Mcp-Param-Text",
        "=?base64?bGluZTEKbGluZTI=?=",
    ),
    (
        "=?base64?literal?=",
        "Mcp-Param-Val",
        "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=",
    ),
];

#[test]
fn spec_encoding_table_encodes_verbatim() {
    for &(value, _, encoded) in SPEC_ENCODING_TABLE {
        assert_eq!(encode_header_value(value), encoded, "encoding {value:?}");
    }
}

#[test]
fn spec_encoding_table_decodes_back() {
    for &(value, _, encoded) in SPEC_ENCODING_TABLE {
        assert_eq!(
            decode(encoded).as_deref(),
            Some(value),
            "decoding {encoded:?}"
        );
    }
}

#[test]
fn spec_encoding_table_through_emit() {
    // The table's header names, produced from an annotated schema.
    for &(value, header, encoded) in SPEC_ENCODING_TABLE {
        let name = header.trim_start_matches("Mcp-Param-");
        let map = map_of(json!({
            "type": "object",
            "properties": { "v": { "type": "string", "x-mcp-header": name } }
        }));
        let args = args(json!({ "v": value }));
        assert_eq!(
            map.emit(Some(&args)),
            vec![(header.to_owned(), encoded.to_owned())]
        );
    }
}

// SEP-2243 "Value Encoding Edge Cases" table (string and empty rows; the
// boolean/integer rows are covered through emit below).
const SEP_ENCODING_TABLE: &[(&str, &str)] = &[
    ("us-west1", "us-west1"),
    (" us-west1", "=?base64?IHVzLXdlc3Qx?="),
    ("us-west1 ", "=?base64?dXMtd2VzdDEg?="),
    (" us-west1 ", "=?base64?IHVzLXdlc3QxIA==?="),
    ("us west 1", "us west 1"),
    ("3.14159", "3.14159"),
    ("日本語", "=?base64?5pel5pys6Kqe?="),
    ("line1\nline2", "=?base64?bGluZTEKbGluZTI=?="),
    ("line1\r\nline2", "=?base64?bGluZTENCmxpbmUy?="),
    ("\tindented", "=?base64?CWluZGVudGVk?="),
    ("", ""),
];

#[test]
fn sep_2243_encoding_edge_cases() {
    for &(value, encoded) in SEP_ENCODING_TABLE {
        assert_eq!(encode_header_value(value), encoded, "encoding {value:?}");
        assert_eq!(
            decode(encoded).as_deref(),
            Some(value),
            "decoding {encoded:?}"
        );
    }
}

#[test]
fn plain_values_are_borrowed() {
    assert!(matches!(
        encode_header_value("us-west1"),
        Cow::Borrowed("us-west1")
    ));
    assert!(matches!(encode_header_value(""), Cow::Borrowed("")));
    assert!(matches!(encode_header_value("Hello, 世界"), Cow::Owned(_)));
    assert!(matches!(
        decode_header_value(b"us-west1"),
        Some(Cow::Borrowed("us-west1"))
    ));
}

#[test]
fn plain_rule_edges() {
    // Every visible ASCII char and inner spaces stay plain.
    let all: String = (0x21u8..=0x7E).map(char::from).collect();
    assert!(is_plain_header_value(&all));
    assert!(is_plain_header_value("a b"));
    assert!(is_plain_header_value("~"));
    // Tab, DEL, other controls, non-ASCII and edge spaces are not.
    for v in ["a\tb", "a\x7Fb", "a\0b", "é", " a", "a ", " "] {
        assert!(!is_plain_header_value(v), "{v:?} must not be plain");
    }
    assert_eq!(encode_header_value("a\x7Fb"), "=?base64?YX9i?=");
    assert_eq!(encode_header_value(" "), "=?base64?IA==?=");
}

#[test]
fn sentinel_lookalikes_are_wrapped() {
    // HDR-08, including the degenerate shapes.
    assert_eq!(
        encode_header_value("=?base64??="),
        "=?base64?PT9iYXNlNjQ/Pz0=?="
    );
    // Markers overlapping: still wrapped by the encoder ...
    assert_eq!(
        encode_header_value("=?base64?="),
        "=?base64?PT9iYXNlNjQ/PQ==?="
    );
    // ... and literal for the decoder, which needs both markers in full.
    assert_eq!(decode("=?base64?=").as_deref(), Some("=?base64?="));
    // Near misses are plain.
    for v in ["=?base64?abc", "abc?=", "=?BASE64?abc?=", "x=?base64?abc?="] {
        assert_eq!(encode_header_value(v), v);
    }
}

#[test]
fn empty_payload_decodes_to_empty_string() {
    assert_eq!(decode("=?base64??=").as_deref(), Some(""));
}

// ---------------------------------------------------------------------------
// Codec: decoding rules (HDR-07, HDR-09, HDR-10; conformance
// http-custom-header-server-validation; SEP-2243 "Base64 Decoding" table).
// ---------------------------------------------------------------------------

#[test]
fn conformance_valid_base64() {
    assert_eq!(decode("=?base64?SGVsbG8=?=").as_deref(), Some("Hello"));
}

#[test]
fn conformance_bad_padding_is_no_value() {
    assert_eq!(decode("=?base64?SGVsbG8?="), None);
    assert_eq!(
        try_decode_header_value(b"=?base64?SGVsbG8?="),
        Err(DecodeError::InvalidBase64)
    );
}

#[test]
fn conformance_bad_characters_are_no_value() {
    assert_eq!(decode("=?base64?SGVs!!!bG8=?="), None);
}

#[test]
fn non_canonical_base64_is_no_value() {
    // '9' carries a non-zero trailing bit; the canonical form is SGVsbG8=.
    assert_eq!(decode("=?base64?SGVsbG9=?="), None);
    assert_eq!(decode("=?base64?SGVsbG8=?=").as_deref(), Some("Hello"));
    // Single-byte tail: 'h' has non-zero low bits (canonical: Zg==).
    assert_eq!(decode("=?base64?Zh==?="), None);
    assert_eq!(decode("=?base64?Zg==?=").as_deref(), Some("f"));
}

#[test]
fn missing_wrapper_parts_are_literal() {
    assert_eq!(decode("SGVsbG8=").as_deref(), Some("SGVsbG8="));
    assert_eq!(
        decode("=?base64?SGVsbG8=").as_deref(),
        Some("=?base64?SGVsbG8=")
    );
    assert_eq!(decode("SGVsbG8=?=").as_deref(), Some("SGVsbG8=?="));
}

#[test]
fn uppercase_markers_are_literal() {
    assert_eq!(
        decode("=?BASE64?SGVsbG8=?=").as_deref(),
        Some("=?BASE64?SGVsbG8=?=")
    );
    assert_eq!(
        decode("=?Base64?SGVsbG8=?=").as_deref(),
        Some("=?Base64?SGVsbG8=?=")
    );
}

#[test]
fn invalid_utf8_payload_is_no_value() {
    assert_eq!(decode("=?base64?/w==?="), None);
    assert_eq!(
        try_decode_header_value(b"=?base64?/w==?="),
        Err(DecodeError::InvalidUtf8)
    );
}

#[test]
fn other_base64_defects_are_no_value() {
    for raw in [
        "=?base64?SGVsbG8=\n?=", // whitespace
        "=?base64? SGVsbG8=?=",  // leading space inside
        "=?base64?SGVsbG8==?=",  // wrong length
        "=?base64?SGVs=bG8?=",   // padding in the middle
        "=?base64?SG==bG8=?=",   // padding before the last quad
        "=?base64?S===?=",       // three padding chars
        "=?base64?====?=",       // padding only
        "=?base64?Zm9v_w==?=",   // URL-safe alphabet
        "=?base64?Zm-v?=",       // URL-safe alphabet
        "=?base64?Zm9=?=",       // two-byte tail with non-zero bits
        "=?base64?SGVsbG8=?=?=", // suffix twice: payload contains '?'
    ] {
        assert_eq!(decode(raw), None, "{raw:?} must not decode");
    }
}

#[test]
fn literal_values_must_be_field_safe() {
    // HDR-10: visible ASCII, SP and HTAB only.
    assert_eq!(decode("a b\tc").as_deref(), Some("a b\tc"));
    assert_eq!(decode("").as_deref(), Some(""));
    for raw in [
        &b"caf\xC3\xA9"[..],
        b"a\x7Fb",
        b"a\nb",
        b"a\rb",
        b"a\0b",
        b"\xFF",
    ] {
        assert_eq!(decode_header_value(raw), None, "{raw:?}");
        assert_eq!(
            try_decode_header_value(raw),
            Err(DecodeError::InvalidCharacters)
        );
        assert!(!is_valid_field_value(raw));
    }
    assert!(is_valid_field_value(b" \t!~"));
    assert!(is_valid_field_value(b""));
}

#[test]
fn base64_rfc4648_vectors() {
    let vectors: &[(&[u8], &str)] = &[
        (b"", ""),
        (b"f", "Zg=="),
        (b"fo", "Zm8="),
        (b"foo", "Zm9v"),
        (b"foob", "Zm9vYg=="),
        (b"fooba", "Zm9vYmE="),
        (b"foobar", "Zm9vYmFy"),
        (b"\xFB\xFF\xBF", "+/+/"),
        (b"\x00\x00\x00", "AAAA"),
    ];
    for &(bytes, text) in vectors {
        assert_eq!(base64_encode(bytes), text);
        assert_eq!(base64_decode(text.as_bytes()).as_deref(), Some(bytes));
    }
    for bad in [
        "Zg", "Zg=", "Zg===", "Z===", "=Zg=", "Zm9v\n", "Zh==", "Zm9=",
    ] {
        assert_eq!(base64_decode(bad.as_bytes()), None, "{bad:?}");
    }
}

// ---------------------------------------------------------------------------
// x-mcp-header validity (HDR-12, HDR-13; conformance http-invalid-tool-headers).
// ---------------------------------------------------------------------------

fn map_of(schema: Value) -> ParamHeaderMap {
    match x_mcp_header_map(&schema) {
        Ok(map) => map,
        Err(reason) => panic!("schema unexpectedly invalid: {reason}"),
    }
}

fn reason_of(schema: Value) -> String {
    match find_invalid_x_mcp_header(&schema) {
        Some(reason) => reason,
        None => panic!("schema unexpectedly valid: {schema}"),
    }
}

fn single(prop: Value) -> Value {
    json!({ "type": "object", "properties": { "value": prop }, "required": ["value"] })
}

#[test]
fn conformance_valid_tool() {
    let map = map_of(json!({
        "type": "object",
        "properties": { "region": { "type": "string", "x-mcp-header": "Region" } },
        "required": ["region"]
    }));
    assert_eq!(
        map.params(),
        &[HeaderParam {
            path: vec!["region".into()],
            name: "Region".into(),
            kind: ParamKind::String,
        }]
    );
}

#[test]
fn conformance_invalid_tools_are_rejected() {
    let cases = [
        (
            "invalid_empty_header",
            single(json!({"type": "string", "x-mcp-header": ""})),
            "is empty",
        ),
        (
            "invalid_object_header",
            single(json!({"type": "object", "x-mcp-header": "Data"})),
            "\"object\"",
        ),
        (
            "invalid_array_header",
            single(json!({"type": "array", "items": {"type": "string"}, "x-mcp-header": "Items"})),
            "\"array\"",
        ),
        (
            "invalid_null_header",
            single(json!({"type": "null", "x-mcp-header": "Nil"})),
            "\"null\"",
        ),
        (
            "invalid_duplicate_same_case",
            json!({"type": "object", "properties": {
                "field1": {"type": "string", "x-mcp-header": "Region"},
                "field2": {"type": "string", "x-mcp-header": "Region"}}}),
            "duplicates",
        ),
        (
            "invalid_duplicate_diff_case",
            json!({"type": "object", "properties": {
                "field1": {"type": "string", "x-mcp-header": "MyField"},
                "field2": {"type": "string", "x-mcp-header": "myfield"}}}),
            "duplicates",
        ),
        (
            "invalid_space_in_name",
            single(json!({"type": "string", "x-mcp-header": "My Region"})),
            "token",
        ),
        (
            "invalid_colon_in_name",
            single(json!({"type": "string", "x-mcp-header": "Region:Primary"})),
            "token",
        ),
        (
            "invalid_non_ascii_name",
            single(json!({"type": "string", "x-mcp-header": "Région"})),
            "token",
        ),
        (
            "invalid_control_char_name",
            single(json!({"type": "string", "x-mcp-header": "Region\t1"})),
            "token",
        ),
    ];
    for (tool, schema, needle) in cases {
        let reason = reason_of(schema);
        assert!(reason.contains(needle), "{tool}: {reason}");
        assert!(reason.contains("x-mcp-header"), "{tool}: {reason}");
    }
}

#[test]
fn more_invalid_names() {
    for name in [
        "Region\r\n",
        "Re\ngion",
        "a/b",
        "a(b)",
        "a\"b",
        "a,b",
        "a;b",
        "a=b",
        "a@b",
        "[a]",
        "{a}",
        "a\\b",
        "a?b",
        "\u{7F}",
    ] {
        let reason = reason_of(single(json!({"type": "string", "x-mcp-header": name})));
        assert!(reason.contains("token"), "{name:?}: {reason}");
    }
    let reason = reason_of(single(json!({"type": "string", "x-mcp-header": 5})));
    assert!(reason.contains("must be a string"), "{reason}");
    let reason = reason_of(single(json!({"type": "string", "x-mcp-header": null})));
    assert!(reason.contains("must be a string"), "{reason}");
}

#[test]
fn every_tchar_is_accepted() {
    let map = map_of(single(json!({
        "type": "string",
        "x-mcp-header": "!#$%&'*+-.^_`|~09azAZ"
    })));
    assert_eq!(map.params()[0].name, "!#$%&'*+-.^_`|~09azAZ");
    assert_eq!(
        map.params()[0].header_name(),
        "Mcp-Param-!#$%&'*+-.^_`|~09azAZ"
    );
}

#[test]
fn only_string_integer_boolean_types() {
    for (ty, kind) in [
        ("string", ParamKind::String),
        ("integer", ParamKind::Integer),
        ("boolean", ParamKind::Boolean),
    ] {
        let map = map_of(single(json!({"type": ty, "x-mcp-header": "X"})));
        assert_eq!(map.params()[0].kind, kind);
    }
    let reason = reason_of(single(json!({"type": "number", "x-mcp-header": "X"})));
    assert!(reason.contains("\"number\""), "{reason}");
    let reason = reason_of(single(
        json!({"type": ["string", "null"], "x-mcp-header": "X"}),
    ));
    assert!(reason.contains("an array"), "{reason}");
    let reason = reason_of(single(json!({"type": ["string"], "x-mcp-header": "X"})));
    assert!(reason.contains("an array"), "{reason}");
    let reason = reason_of(single(json!({"x-mcp-header": "X"})));
    assert!(reason.contains("without `type`"), "{reason}");
    let reason = reason_of(single(json!({"type": "String", "x-mcp-header": "X"})));
    assert!(reason.contains("\"String\""), "{reason}");
}

#[test]
fn integer_bounds_must_stay_in_safe_range() {
    const MAX: i64 = 9_007_199_254_740_991;
    for ok in [
        json!({"type": "integer", "minimum": -MAX, "maximum": MAX}),
        json!({"type": "integer", "exclusiveMinimum": -(MAX + 1), "exclusiveMaximum": MAX + 1}),
        json!({"type": "integer", "minimum": 0, "maximum": 100.0}),
        json!({"type": "integer", "exclusiveMaximum": true}), // draft-04 form, ignored
        json!({"type": "integer"}),
        json!({"type": "string", "maximum": 1e300}), // bounds only matter for integers
    ] {
        let mut prop = ok;
        prop["x-mcp-header"] = json!("N");
        assert!(
            find_invalid_x_mcp_header(&single(prop.clone())).is_none(),
            "{prop}"
        );
    }
    for (bad, keyword) in [
        (json!({"type": "integer", "maximum": MAX + 1}), "maximum"),
        (json!({"type": "integer", "minimum": -(MAX + 1)}), "minimum"),
        (
            json!({"type": "integer", "exclusiveMaximum": MAX + 2}),
            "exclusiveMaximum",
        ),
        (
            json!({"type": "integer", "exclusiveMinimum": -(MAX + 2)}),
            "exclusiveMinimum",
        ),
        (json!({"type": "integer", "maximum": u64::MAX}), "maximum"),
        (json!({"type": "integer", "maximum": 1e300}), "maximum"),
        (json!({"type": "integer", "minimum": 1e20}), "minimum"),
        (
            json!({"type": "integer", "maximum": 9_007_199_254_740_992.0}),
            "maximum",
        ),
    ] {
        let mut prop = bad;
        prop["x-mcp-header"] = json!("N");
        let reason = reason_of(single(prop));
        assert!(reason.contains(&format!("`{keyword}`")), "{reason}");
        assert!(reason.contains("safe integer range"), "{reason}");
    }
}

#[test]
fn nested_properties_are_reachable() {
    let map = map_of(json!({
        "type": "object",
        "properties": {
            "a": { "type": "object", "properties": {
                "b": { "type": "object", "properties": {
                    "c": { "type": "integer", "x-mcp-header": "Deep" }
                }}
            }},
            "top": { "type": "boolean", "x-mcp-header": "Top" }
        }
    }));
    assert_eq!(
        map.params(),
        &[
            HeaderParam {
                path: vec!["a".into(), "b".into(), "c".into()],
                name: "Deep".into(),
                kind: ParamKind::Integer,
            },
            HeaderParam {
                path: vec!["top".into()],
                name: "Top".into(),
                kind: ParamKind::Boolean,
            },
        ]
    );
    assert_eq!(map.len(), 2);
    assert!(map.get("deep").is_some());
    assert!(map.find_header("MCP-PARAM-TOP").is_some());
    assert!(map.find_header("Mcp-Param-Nope").is_none());
    assert_eq!((&map).into_iter().count(), 2);
}

#[test]
fn annotations_off_the_properties_chain_are_invalid() {
    let ann = json!({"type": "string", "x-mcp-header": "X"});
    let positions = [
        ("items", json!({"type": "array", "items": ann})),
        ("items/0", json!({"type": "array", "items": [ann]})),
        ("prefixItems/0", json!({"prefixItems": [ann]})),
        ("additionalItems", json!({"additionalItems": ann})),
        ("contains", json!({"contains": ann})),
        ("additionalProperties", json!({"additionalProperties": ann})),
        (
            "patternProperties/^a",
            json!({"patternProperties": {"^a": ann}}),
        ),
        ("propertyNames", json!({"propertyNames": ann})),
        ("unevaluatedItems", json!({"unevaluatedItems": ann})),
        (
            "unevaluatedProperties",
            json!({"unevaluatedProperties": ann}),
        ),
        (
            "dependentSchemas/a",
            json!({"dependentSchemas": {"a": ann}}),
        ),
        (
            "dependencies/a",
            json!({"dependencies": {"a": ann, "b": ["c"]}}),
        ),
        ("allOf/0", json!({"allOf": [ann]})),
        ("anyOf/1", json!({"anyOf": [{}, ann]})),
        ("oneOf/0", json!({"oneOf": [ann]})),
        ("not", json!({"not": ann})),
        ("if", json!({"if": ann})),
        ("then", json!({"then": ann})),
        ("else", json!({"else": ann})),
        ("contentSchema", json!({"contentSchema": ann})),
        ("$defs/t", json!({"$defs": {"t": ann}})),
        ("definitions/t", json!({"definitions": {"t": ann}})),
    ];
    for (pointer, sub) in positions {
        // Under a property, so the position is off-chain, not the root.
        let schema = json!({"type": "object", "properties": {"p": sub}});
        let reason = reason_of(schema);
        assert!(
            reason.contains(&format!("#/properties/p/{pointer}")),
            "{pointer}: {reason}"
        );
        assert!(reason.contains("not reachable"), "{pointer}: {reason}");
    }
    // Once off the chain, `properties` does not bring it back.
    let reason = reason_of(json!({
        "type": "object",
        "properties": {"list": {"type": "array", "items": {
            "type": "object", "properties": {"x": ann}
        }}}
    }));
    assert!(
        reason.contains("#/properties/list/items/properties/x"),
        "{reason}"
    );
    let reason = reason_of(json!({"allOf": [{"properties": {"x": ann}}]}));
    assert!(reason.contains("#/allOf/0/properties/x"), "{reason}");
}

#[test]
fn root_annotation_is_invalid() {
    let reason = reason_of(json!({"type": "string", "x-mcp-header": "Root"}));
    assert!(reason.contains("root schema"), "{reason}");
}

#[test]
fn instance_keywords_are_not_walked() {
    let map = map_of(json!({
        "type": "object",
        "default": {"x-mcp-header": "Nope", "properties": {"a": {"x-mcp-header": ""}}},
        "examples": [{"x-mcp-header": "Nope"}],
        "const": {"x-mcp-header": 1},
        "enum": [{"x-mcp-header": "Nope"}],
        "properties": {
            "a": {
                "type": "object",
                "default": {"x-mcp-header": "Nope"},
                "examples": [{"properties": {"b": {"x-mcp-header": "Nope"}}}],
                "const": {"x-mcp-header": "Nope"},
                "enum": [{"x-mcp-header": "Nope"}],
                "x-vendor": {"x-mcp-header": "Nope"},
                "description": "mentions x-mcp-header"
            }
        }
    }));
    assert!(map.is_empty());
}

#[test]
fn ref_is_not_followed() {
    // The referenced schema is off-chain (in $defs) and is therefore invalid
    // on its own; a $ref to a valid-looking annotation does not make the
    // referring property annotated.
    let reason = reason_of(json!({
        "type": "object",
        "$defs": {"r": {"type": "string", "x-mcp-header": "R"}},
        "properties": {"a": {"$ref": "#/$defs/r"}}
    }));
    assert!(reason.contains("#/$defs/r"), "{reason}");
    let map = map_of(json!({
        "type": "object",
        "$defs": {"r": {"type": "string"}},
        "properties": {
            "a": {"$ref": "#/$defs/r"},
            "b": {"$ref": "https://example.invalid/schema.json", "type": "string", "x-mcp-header": "B"}
        }
    }));
    assert_eq!(map.len(), 1);
    assert_eq!(map.params()[0].path, vec!["b".to_owned()]);
}

#[test]
fn property_named_x_mcp_header_is_just_a_property() {
    let map = map_of(json!({
        "type": "object",
        "properties": {"x-mcp-header": {"type": "string", "x-mcp-header": "Odd"}},
        "patternProperties": {"x-mcp-header": {"type": "string"}}
    }));
    assert_eq!(map.params()[0].path, vec!["x-mcp-header".to_owned()]);
}

#[test]
fn non_object_schemas_have_no_annotations() {
    for schema in [
        json!(null),
        json!(true),
        json!("x-mcp-header"),
        json!([{"x-mcp-header": "A"}]),
    ] {
        assert!(map_of(schema).is_empty());
    }
}

fn wrap(key: &str, value: Value) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert(key.to_owned(), value);
    m
}

#[test]
fn hostile_depth_is_bounded() {
    // Cloning or dropping a 100k-deep `Value` recurses, so these values are
    // only borrowed and then leaked (test only).
    let mut schema = json!({"type": "string", "x-mcp-header": "Deep"});
    for _ in 0..100_000 {
        // Not `json!`: it serializes interpolated values recursively.
        schema = Value::Object(wrap("properties", Value::Object(wrap("p", schema))));
    }
    let reason = find_invalid_x_mcp_header(&schema).unwrap_or_default();
    assert!(
        reason.contains("too deeply"),
        "{}",
        reason.chars().take(120).collect::<String>()
    );
    std::mem::forget(schema);

    let mut schema = json!({});
    for _ in 0..100_000 {
        schema = Value::Object(wrap("items", schema));
    }
    let reason = find_invalid_x_mcp_header(&schema).unwrap_or_default();
    assert!(
        reason.contains("too deeply"),
        "{}",
        reason.chars().take(120).collect::<String>()
    );
    std::mem::forget(schema);

    // 60 nested properties (120 JSON levels) are fine.
    let mut schema = json!({"type": "string", "x-mcp-header": "Deep"});
    for _ in 0..59 {
        schema = json!({"type": "object", "properties": {"p": schema}});
    }
    let map = map_of(json!({"type": "object", "properties": {"p": schema}}));
    assert_eq!(map.params()[0].path.len(), 60);
}

// ---------------------------------------------------------------------------
// Client emit (HDR-15; conformance http-custom-headers).
// ---------------------------------------------------------------------------

fn args(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        other => panic!("not an object: {other}"),
    }
}

fn conformance_custom_headers_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "priority": {"type": "integer", "x-mcp-header": "Priority"},
            "verbose": {"type": "boolean", "x-mcp-header": "Verbose"},
            "debug": {"type": "boolean", "x-mcp-header": "Debug"},
            "empty_val": {"type": "string", "x-mcp-header": "EmptyVal"},
            "method_val": {"type": "string", "x-mcp-header": "Method"},
            "float_val": {"type": "number"},
            "non_ascii_val": {"type": "string", "x-mcp-header": "NonAscii"},
            "whitespace_val": {"type": "string", "x-mcp-header": "Whitespace"},
            "leading_space_val": {"type": "string", "x-mcp-header": "LeadingSpace"},
            "trailing_space_val": {"type": "string", "x-mcp-header": "TrailingSpace"},
            "internal_space_val": {"type": "string", "x-mcp-header": "InternalSpace"},
            "control_char_val": {"type": "string", "x-mcp-header": "ControlChar"},
            "crlf_val": {"type": "string", "x-mcp-header": "CrLf"},
            "tab_val": {"type": "string", "x-mcp-header": "Tab"},
            "query": {"type": "string"}
        },
        "required": ["region", "priority", "query"]
    })
}

#[test]
#[allow(clippy::approx_constant)] // 3.14159 is the conformance suite's literal
fn conformance_custom_headers_emit() {
    let map = map_of(conformance_custom_headers_schema());
    let arguments = args(json!({
        "region": "us-west1",
        "priority": 42,
        "verbose": false,
        "debug": true,
        "empty_val": "",
        "method_val": "test-method",
        "float_val": 3.14159,
        "non_ascii_val": "Hello, 世界",
        "whitespace_val": " padded ",
        "leading_space_val": " us-west1",
        "trailing_space_val": "us-west1 ",
        "internal_space_val": "us west 1",
        "control_char_val": "line1\nline2",
        "crlf_val": "line1\r\nline2",
        "tab_val": "\tindented",
        "query": "SELECT * FROM users"
    }));
    let emitted = map.emit(Some(&arguments));
    let got: BTreeMap<&str, &str> = emitted
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect();
    let want: BTreeMap<&str, &str> = [
        ("Mcp-Param-Region", "us-west1"),
        ("Mcp-Param-Priority", "42"),
        ("Mcp-Param-Verbose", "false"),
        ("Mcp-Param-Debug", "true"),
        ("Mcp-Param-EmptyVal", ""),
        ("Mcp-Param-Method", "test-method"),
        ("Mcp-Param-NonAscii", "=?base64?SGVsbG8sIOS4lueVjA==?="),
        ("Mcp-Param-Whitespace", "=?base64?IHBhZGRlZCA=?="),
        ("Mcp-Param-LeadingSpace", "=?base64?IHVzLXdlc3Qx?="),
        ("Mcp-Param-TrailingSpace", "=?base64?dXMtd2VzdDEg?="),
        ("Mcp-Param-InternalSpace", "us west 1"),
        ("Mcp-Param-ControlChar", "=?base64?bGluZTEKbGluZTI=?="),
        ("Mcp-Param-CrLf", "=?base64?bGluZTENCmxpbmUy?="),
        ("Mcp-Param-Tab", "=?base64?CWluZGVudGVk?="),
    ]
    .into_iter()
    .collect();
    assert_eq!(got, want);
    assert_eq!(emitted.len(), want.len(), "no duplicates");
    // And the server side accepts exactly what the client sent.
    assert_eq!(map.validate(Some(&arguments), &emitted), Ok(()));
}

#[test]
fn conformance_custom_headers_null_emit() {
    let map = map_of(json!({
        "type": "object",
        "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "priority": {"type": "integer", "x-mcp-header": "Priority"},
            "verbose": {"type": "boolean", "x-mcp-header": "Verbose"},
            "query": {"type": "string"}
        }
    }));
    let arguments =
        args(json!({"region": "us-east1", "priority": 1, "verbose": null, "query": "SELECT 1"}));
    assert_eq!(
        map.emit(Some(&arguments)),
        vec![
            ("Mcp-Param-Priority".to_owned(), "1".to_owned()),
            ("Mcp-Param-Region".to_owned(), "us-east1".to_owned()),
        ]
    );
    assert_eq!(map.emit(None), vec![]);
    assert_eq!(map.emit(Some(&Map::new())), vec![]);
}

#[test]
fn emit_integers_and_type_mismatches() {
    let map = map_of(single(json!({"type": "integer", "x-mcp-header": "N"})));
    let one = |v: Value| {
        map.emit(Some(&args(json!({ "value": v }))))
            .pop()
            .map(|(_, v)| v)
    };
    assert_eq!(one(json!(42)).as_deref(), Some("42"));
    assert_eq!(one(json!(-7)).as_deref(), Some("-7"));
    assert_eq!(one(json!(0)).as_deref(), Some("0"));
    assert_eq!(one(json!(42.0)).as_deref(), Some("42"));
    assert_eq!(one(json!(-0.0)).as_deref(), Some("0"));
    assert_eq!(
        one(json!(u64::MAX)).as_deref(),
        Some("18446744073709551615")
    );
    assert_eq!(
        one(json!(i64::MIN)).as_deref(),
        Some("-9223372036854775808")
    );
    assert_eq!(one(json!(1e20)).as_deref(), Some("100000000000000000000"));
    // Not integers: omitted.
    assert_eq!(one(json!(3.5)), None);
    assert_eq!(one(json!(1e300)), None);
    assert_eq!(one(json!("42")), None);
    assert_eq!(one(json!(true)), None);
    assert_eq!(one(json!([1])), None);
    assert_eq!(one(json!({"a": 1})), None);
    assert_eq!(one(Value::Null), None);

    let map = map_of(single(json!({"type": "string", "x-mcp-header": "S"})));
    let one = |v: Value| {
        map.emit(Some(&args(json!({ "value": v }))))
            .pop()
            .map(|(_, v)| v)
    };
    assert_eq!(one(json!(42)), None);
    assert_eq!(one(json!(false)), None);

    let map = map_of(single(json!({"type": "boolean", "x-mcp-header": "B"})));
    let one = |v: Value| {
        map.emit(Some(&args(json!({ "value": v }))))
            .pop()
            .map(|(_, v)| v)
    };
    assert_eq!(one(json!("true")), None);
    assert_eq!(one(json!(1)), None);
}

#[test]
fn emit_reads_the_exact_nested_path() {
    let map = map_of(json!({
        "type": "object",
        "properties": {"a": {"type": "object", "properties": {
            "b": {"type": "string", "x-mcp-header": "AB"}
        }}}
    }));
    assert_eq!(
        map.emit(Some(&args(json!({"a": {"b": "x"}})))),
        vec![("Mcp-Param-AB".to_owned(), "x".to_owned())]
    );
    for absent in [
        json!({}),
        json!({"a": null}),
        json!({"a": "b"}),
        json!({"a": {"c": "x"}}),
        json!({"b": "x"}),
        json!({"a": [{"b": "x"}]}),
    ] {
        assert_eq!(map.emit(Some(&args(absent.clone()))), vec![], "{absent}");
    }
}

// ---------------------------------------------------------------------------
// Server validate (HDR-16…HDR-20; conformance http-custom-header-server-validation).
// ---------------------------------------------------------------------------

fn server_map() -> ParamHeaderMap {
    map_of(json!({
        "type": "object",
        "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "count": {"type": "integer", "x-mcp-header": "Count"},
            "flag": {"type": "boolean", "x-mcp-header": "Flag"},
            "other": {"type": "string"}
        }
    }))
}

fn check(arguments: Value, headers: &[(&str, &str)]) -> Result<(), String> {
    let arguments = args(arguments);
    let headers: Vec<(&str, &str)> = headers.to_vec();
    server_map()
        .validate(Some(&arguments), &headers)
        .map_err(|e| {
            assert_eq!(e.code, ErrorCode::HEADER_MISMATCH);
            assert_eq!(e.code.http_status(), 400);
            e.message
        })
}

#[test]
fn conformance_server_validation() {
    let map = map_of(json!({
        "type": "object",
        "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}
    }));
    let run = |body: &str, header: Option<&str>| {
        let arguments = args(json!({ "region": body }));
        let headers: Vec<(&str, &str)> = header
            .map(|h| ("Mcp-Param-Region", h))
            .into_iter()
            .collect();
        map.validate(Some(&arguments), &headers)
    };
    assert_eq!(run("Hello", Some("=?base64?SGVsbG8=?=")), Ok(()));
    assert_eq!(run("SGVsbG8=", Some("SGVsbG8=")), Ok(()));
    for (body, header) in [
        ("Hello", "=?base64?SGVsbG8?="),
        ("Hello", "=?base64?SGVs!!!bG8=?="),
    ] {
        let err = run(body, Some(header)).map_err(|e| (e.code, e.message));
        assert_eq!(
            err,
            Err((
                ErrorCode::HEADER_MISMATCH,
                "Header mismatch: invalid Mcp-Param-Region header encoding (invalid base64)"
                    .to_owned()
            ))
        );
    }
    let err = run("us-west1", None).map_err(|e| e.message);
    assert_eq!(
        err,
        Err("Header mismatch: missing Mcp-Param-Region header for argument 'region'".to_owned())
    );
}

#[test]
fn validate_match_and_mismatch() {
    assert_eq!(
        check(
            json!({"region": "us-west1", "count": 3, "flag": true, "other": "x"}),
            &[
                ("Mcp-Param-Region", "us-west1"),
                ("Mcp-Param-Count", "3"),
                ("Mcp-Param-Flag", "true")
            ]
        ),
        Ok(())
    );
    assert_eq!(
        check(json!({"region": "bar"}), &[("Mcp-Param-Region", "foo")]),
        Err(
            "Header mismatch: Mcp-Param-Region header value 'foo' does not match body value 'bar'"
                .to_owned()
        )
    );
    assert_eq!(
        check(json!({"flag": false}), &[("Mcp-Param-Flag", "true")]),
        Err(
            "Header mismatch: Mcp-Param-Flag header value 'true' does not match body value 'false'"
                .to_owned()
        )
    );
    // Values are case-sensitive (HDR-04).
    assert!(
        check(
            json!({"region": "us-west1"}),
            &[("Mcp-Param-Region", "US-WEST1")]
        )
        .is_err()
    );
    assert!(check(json!({"flag": true}), &[("Mcp-Param-Flag", "True")]).is_err());
    assert!(check(json!({"flag": true}), &[("Mcp-Param-Flag", "1")]).is_err());
    // Decoded comparison: a base64 header matching a plain body value.
    assert_eq!(
        check(
            json!({"region": "us-west1"}),
            &[("Mcp-Param-Region", "=?base64?dXMtd2VzdDE=?=")]
        ),
        Ok(())
    );
    // A sentinel-lookalike body must arrive encoded; the literal is literal.
    assert_eq!(
        check(
            json!({"region": "=?base64?literal?="}),
            &[("Mcp-Param-Region", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=")]
        ),
        Ok(())
    );
    assert!(
        check(
            json!({"region": "Hello"}),
            &[("Mcp-Param-Region", "=?BASE64?SGVsbG8=?=")]
        )
        .is_err()
    );
}

#[test]
fn validate_missing_and_unexpected_headers() {
    assert_eq!(
        check(json!({"count": 1}), &[]),
        Err("Header mismatch: missing Mcp-Param-Count header for argument 'count'".to_owned())
    );
    // Absent or null argument: the header must not be expected ...
    assert_eq!(check(json!({}), &[]), Ok(()));
    assert_eq!(
        check(json!({"region": null, "count": null, "flag": null}), &[]),
        Ok(())
    );
    // ... and must not be present (POLICY, HDR-17).
    assert_eq!(
        check(json!({}), &[("Mcp-Param-Region", "us-west1")]),
        Err("Header mismatch: Mcp-Param-Region header is present but argument 'region' is absent or null".to_owned())
    );
    assert_eq!(
        check(json!({"region": null}), &[("Mcp-Param-Region", "")]),
        Err("Header mismatch: Mcp-Param-Region header is present but argument 'region' is absent or null".to_owned())
    );
    // No arguments at all.
    let headers = vec![("Mcp-Param-Count", "1")];
    assert!(server_map().validate(None, &headers).is_err());
    let none: Vec<(&str, &str)> = vec![];
    assert_eq!(server_map().validate(None, &none), Ok(()));
}

#[test]
fn validate_duplicates_and_unrecognized() {
    assert_eq!(
        check(
            json!({"region": "a"}),
            &[("Mcp-Param-Region", "a"), ("mcp-param-region", "a")]
        ),
        Err("Header mismatch: duplicate Mcp-Param-Region header".to_owned())
    );
    assert_eq!(
        check(
            json!({}),
            &[("Mcp-Param-Region", "a"), ("Mcp-Param-Region", "b")]
        ),
        Err("Header mismatch: duplicate Mcp-Param-Region header".to_owned())
    );
    // Headers the schema does not declare are ignored, even malformed ones.
    assert_eq!(
        check(
            json!({"region": "a", "other": "x"}),
            &[
                ("Mcp-Param-Region", "a"),
                ("Mcp-Param-Other", "=?base64?!!?="),
                ("Mcp-Param-Other", "y"),
                ("Mcp-Param-", "z"),
                ("Mcp-Param-Regions", "q")
            ]
        ),
        Ok(())
    );
}

#[test]
fn validate_header_names_case_insensitive_and_ows() {
    assert_eq!(
        check(
            json!({"region": "us-west1", "count": 5}),
            &[
                ("MCP-PARAM-REGION", "  us-west1\t"),
                ("mcp-param-count", "\t5 ")
            ]
        ),
        Ok(())
    );
    // Trimming is of OWS only; inner spaces count.
    assert!(
        check(
            json!({"region": "us-west1"}),
            &[("Mcp-Param-Region", "us -west1")]
        )
        .is_err()
    );
}

#[test]
fn validate_invalid_characters() {
    let arguments = args(json!({"region": "café"}));
    let headers: Vec<(&str, &[u8])> = vec![("Mcp-Param-Region", "café".as_bytes())];
    assert_eq!(
        server_map()
            .validate(Some(&arguments), &headers)
            .map_err(|e| e.message),
        Err(
            "Header mismatch: Mcp-Param-Region header value contains invalid characters".to_owned()
        )
    );
    let headers: Vec<(&str, &[u8])> = vec![("Mcp-Param-Region", b"=?base64?Y2Fmw6k=?=")];
    assert_eq!(server_map().validate(Some(&arguments), &headers), Ok(()));
    let arguments = args(json!({"region": "a\nb"}));
    let headers: Vec<(&str, &[u8])> = vec![("Mcp-Param-Region", b"a\nb")];
    assert!(server_map().validate(Some(&arguments), &headers).is_err());
}

#[test]
fn validate_integers_numerically() {
    let ok =
        |body: Value, header: &str| check(json!({ "count": body }), &[("Mcp-Param-Count", header)]);
    assert_eq!(ok(json!(42), "42"), Ok(()));
    assert_eq!(ok(json!(42), "42.0"), Ok(()));
    assert_eq!(ok(json!(42), "42.000"), Ok(()));
    assert_eq!(ok(json!(42.0), "42"), Ok(()));
    assert_eq!(ok(json!(42), "042"), Ok(()));
    assert_eq!(ok(json!(0), "-0"), Ok(()));
    assert_eq!(ok(json!(-7), "-7"), Ok(()));
    assert_eq!(ok(json!(-7), "-7.0"), Ok(()));
    assert_eq!(ok(json!(42), "=?base64?NDI=?="), Ok(()));
    for bad in [
        "4.2e1",
        "42e0",
        "+42",
        "42.",
        ".0",
        "42.5",
        "42.01",
        "0x2A",
        "forty-two",
        "",
        "-",
        "4 2",
        "42 .0",
        "43",
        "-42",
        "=?base64?IDQy?=",
    ] {
        assert!(ok(json!(42), bad).is_err(), "{bad:?} must not match 42");
    }
    assert_eq!(
        ok(json!(42), "4.2e1"),
        Err(
            "Header mismatch: Mcp-Param-Count header value '4.2e1' does not match body value '42'"
                .to_owned()
        )
    );
    // Beyond i64 / the safe range: exact, never through floats.
    assert_eq!(ok(json!(u64::MAX), "18446744073709551615"), Ok(()));
    assert!(ok(json!(u64::MAX), "18446744073709551616").is_err());
    assert!(ok(json!(u64::MAX), "18446744073709551614").is_err());
    assert_eq!(
        ok(json!(9_007_199_254_740_993_u64), "9007199254740993"),
        Ok(())
    );
    assert!(ok(json!(9_007_199_254_740_993_u64), "9007199254740992").is_err());
    assert_eq!(ok(json!(i64::MIN), "-9223372036854775808"), Ok(()));
    assert_eq!(ok(json!(1e20), "100000000000000000000"), Ok(()));
    assert!(ok(json!(1e20), "100000000000000000001").is_err());
    // A header too large for i128 simply does not match.
    assert!(ok(json!(1), &"9".repeat(60)).is_err());
    assert_eq!(ok(json!(1), &format!("{}1", "0".repeat(200))), Ok(()));
}

#[test]
fn validate_type_mismatched_body_fails_closed() {
    let msg = "Header mismatch: Mcp-Param-Count header cannot mirror argument 'count': expected integer, found a non-integer number";
    assert_eq!(
        check(json!({"count": 3.5}), &[("Mcp-Param-Count", "3.5")]),
        Err(msg.to_owned())
    );
    assert_eq!(check(json!({"count": 3.5}), &[]), Err(msg.to_owned()));
    assert_eq!(
        check(json!({"region": 42}), &[("Mcp-Param-Region", "42")]),
        Err("Header mismatch: Mcp-Param-Region header cannot mirror argument 'region': expected string, found an integer".to_owned())
    );
    assert!(check(json!({"flag": "true"}), &[("Mcp-Param-Flag", "true")]).is_err());
    assert!(check(json!({"region": {"a": 1}}), &[]).is_err());
    assert!(check(json!({"count": "42"}), &[("Mcp-Param-Count", "42")]).is_err());
}

#[test]
fn validate_nested_paths() {
    let map = map_of(json!({
        "type": "object",
        "properties": {"a": {"type": "object", "properties": {
            "b": {"type": "string", "x-mcp-header": "AB"}
        }}}
    }));
    let h = vec![("Mcp-Param-AB", "x")];
    let none: Vec<(&str, &str)> = vec![];
    assert_eq!(
        map.validate(Some(&args(json!({"a": {"b": "x"}}))), &h),
        Ok(())
    );
    assert!(
        map.validate(Some(&args(json!({"a": {"b": "x"}}))), &none)
            .is_err()
    );
    assert!(
        map.validate(Some(&args(json!({"a": {"b": "y"}}))), &h)
            .is_err()
    );
    assert!(map.validate(Some(&args(json!({"a": "x"}))), &h).is_err());
    assert_eq!(map.validate(Some(&args(json!({"a": "x"}))), &none), Ok(()));
}

fn expect_err(r: Result<(), String>) -> String {
    match r {
        Err(e) => e,
        Ok(()) => panic!("expected a header mismatch"),
    }
}

#[test]
fn error_messages_escape_and_truncate() {
    let long = "x".repeat(500);
    let err = expect_err(check(
        json!({"region": "bar"}),
        &[("Mcp-Param-Region", &long)],
    ));
    assert!(err.len() < 250, "{err}");
    assert!(err.contains("xxx…'"), "{err}");
    // Decoded control characters are escaped in the message.
    let err = expect_err(check(
        json!({"region": "bar"}),
        &[("Mcp-Param-Region", "=?base64?YQpi?=")],
    ));
    assert!(err.contains("'a\\nb'"), "{err}");
}

#[test]
fn parse_canonical_integer_rules() {
    assert_eq!(parse_canonical_integer("0"), Some(0));
    assert_eq!(parse_canonical_integer("-0.00"), Some(0));
    assert_eq!(parse_canonical_integer("00042"), Some(42));
    assert_eq!(
        parse_canonical_integer("170141183460469231731687303715884105727"),
        Some(i128::MAX)
    );
    assert_eq!(
        parse_canonical_integer("170141183460469231731687303715884105728"),
        None
    );
    assert_eq!(
        parse_canonical_integer("-170141183460469231731687303715884105727"),
        Some(-i128::MAX)
    );
    for bad in [
        "", "-", "+1", "1.", ".1", "1.5", "1e3", "1E3", " 1", "1 ", "١", "--1", "1.0.0",
    ] {
        assert_eq!(parse_canonical_integer(bad), None, "{bad:?}");
    }
}
