//! Tests of the plain schema checker: verdicts equal jsonschema's, every
//! other schema falls back, and registration refuses what jsonschema refuses.

// TOOL-06, TOOL-09, SCHEMA-01, SCHEMA-02: the plain checker agrees with
// jsonschema, falls back for everything else, and registration still refuses
// what jsonschema refuses, with the same message.

use super::*;
use proptest::prelude::*;
use serde_json::json;

fn compile(schema: &Value) -> Result<CompiledSchema, String> {
    match schema {
        Value::Object(o) => CompiledSchema::compile(o),
        _ => Err("not an object".to_owned()),
    }
}

/// Whether the full validator of a plain schema has been built.
fn full_built(c: &CompiledSchema) -> bool {
    match &c.kind {
        Kind::Plain { full, .. } => full.get().is_some(),
        Kind::Full(_) => true,
    }
}

#[test]
fn each_keyword_outside_the_subset_takes_the_full_validator() {
    let outside = [
        json!({"properties": {"a": {"type": "string", "pattern": "^x"}}}),
        json!({"patternProperties": {"^x": true}}),
        json!({"properties": {"a": {"multipleOf": 2}}}),
        json!({"properties": {"a": {"prefixItems": [true]}}}),
        json!({"properties": {"a": {"contains": true}}}),
        json!({"minProperties": 1}),
        json!({"propertyNames": {"maxLength": 3}}),
        json!({"unevaluatedProperties": false}),
        json!({"unevaluatedItems": false}),
        json!({"dependentRequired": {"a": ["b"]}}),
        json!({"dependentSchemas": {"a": {"required": ["b"]}}}),
        json!({"$id": "urn:x"}),
        json!({"$defs": {"a": {"$id": "urn:y"}}}),
        json!({"$dynamicAnchor": "m"}),
        json!({"$dynamicAnchor": "m", "properties": {"a": {"$dynamicRef": "#m"}}}),
        json!({"$schema": "http://json-schema.org/draft-07/schema#"}),
        json!({"$schema": "https://json-schema.org/draft/2020-12/schema#"}),
        json!({"properties": {"a": {"$schema": "https://json-schema.org/draft/2020-12/schema"}}}),
        json!({"nullable": true}),
        json!({"definitions": {"a": true}}),
        // A number this checker cannot compare exactly is left to jsonschema.
        json!({"properties": {"a": {"minLength": 1.0}}}),
        // Combinators whose parts are not plain.
        json!({"allOf": [{"pattern": "x"}]}),
        json!({"anyOf": [true, {"pattern": "x"}]}),
        json!({"oneOf": [{"multipleOf": 2}]}),
        json!({"not": {"pattern": "x"}}),
        json!({"if": {"pattern": "x"}, "then": true}),
        json!({"if": true, "then": {"pattern": "x"}}),
        json!({"else": {"pattern": "x"}}),
        // `$defs` anywhere but the root, or with a definition that is not
        // plain even though nothing refers to it.
        json!({"properties": {"a": {"$defs": {"b": true}}}}),
        json!({"$defs": {"a": {"pattern": "x"}}}),
        json!({"$defs": {"a": {"$defs": {"b": true}}}}),
        // References other than `#/$defs/NAME` with a plain NAME.
        json!({"$defs": {"a": {"$anchor": "addr"}}, "$ref": "#addr"}),
        json!({"$defs": {"a": true}, "properties": {"x": {"$ref": "#"}}}),
        json!({"$defs": {"a": {"properties": {"b": true}}}, "$ref": "#/$defs/a/properties/b"}),
        json!({"$defs": {"a~b": true}, "$ref": "#/$defs/a~0b"}),
        json!({"$defs": {"a/b": true}, "$ref": "#/$defs/a~1b"}),
        json!({"$defs": {"a b": true}, "$ref": "#/$defs/a%20b"}),
        json!({"$defs": {"-a": true}, "$ref": "#/$defs/-a"}),
        // Anchors outside the grammar are refused by jsonschema's meta
        // schema; a repeated one is left to jsonschema too.
        json!({"$defs": {"a": {"$anchor": "x"}, "b": {"$anchor": "x"}}}),
    ];
    for mut schema in outside {
        schema["type"] = json!("object");
        let c = compile(&schema).expect("a valid schema compiles");
        assert!(!c.is_plain(), "{schema} must take the full validator");
    }
}

#[test]
fn remote_and_relative_refs_take_jsonschema_whatever_it_says() {
    for schema in [
        json!({"$defs": {"a": true}, "$ref": "/$defs/a"}),
        json!({"$defs": {"a": true}, "$ref": "urn:x#/$defs/a"}),
        json!({"$defs": {"a": true}, "$ref": "https://example.com/s.json#/$defs/a"}),
        json!({"$defs": {"a": true}, "$ref": "#/%24defs/a"}),
        json!({"$defs": {"a": true}, "$ref": "#/$defs/a/"}),
    ] {
        match jsonschema::validator_for(&schema) {
            Err(e) => assert_eq!(compile(&schema).err(), Some(e.to_string()), "{schema}"),
            Ok(_) => assert!(!compile(&schema).expect("valid").is_plain(), "{schema}"),
        }
    }
}

#[test]
fn defs_refs_and_combinators_are_plain() {
    let plain = [
        json!({"$ref": "#/$defs/a", "$defs": {"a": {"type": "string"}}}),
        json!({"$defs": {"a": {"type": "string"}}}),
        json!({"$defs": {"A_b-1.x": {"$anchor": "_a-1.x"}}, "$ref": "#/$defs/A_b-1.x"}),
        json!({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"required": ["x"]}},
               "properties": {"p": {"$ref": "#/$defs/a"}, "q": {"items": {"$ref": "#/$defs/a"}}}}),
        json!({"allOf": [{"type": "object"}]}),
        json!({"anyOf": [{"type": "object"}]}),
        json!({"oneOf": [{"type": "object"}]}),
        json!({"not": {"type": "string"}}),
        json!({"if": true, "then": true}),
        json!({"if": true}),
        json!({"then": false, "else": false}),
    ];
    for schema in plain {
        let c = compile(&schema).expect("a valid schema compiles");
        assert!(c.is_plain(), "{schema} must be plain");
    }
}

#[test]
fn a_ref_cycle_takes_the_full_validator_without_hanging() {
    let cycles = [
        // Through `properties` (a tree): jsonschema handles it.
        json!({"$defs": {"node": {"type": "object",
                                  "properties": {"kids": {"items": {"$ref": "#/$defs/node"}}}}},
               "$ref": "#/$defs/node"}),
        json!({"$defs": {"a": {"properties": {"x": {"$ref": "#/$defs/b"}}},
                         "b": {"items": {"$ref": "#/$defs/a"}}},
               "type": "object"}),
    ];
    for schema in cycles {
        let Value::Object(map) = &schema else {
            unreachable!()
        };
        assert!(plain_root(map).is_none(), "{schema}");
        let c = compile(&schema).expect("jsonschema takes a recursive schema");
        assert!(!c.is_plain());
        let tree = json!({"kids": [{"kids": []}, {"x": [{}]}]});
        assert_eq!(
            c.first_error(&tree).is_none(),
            jsonschema::is_valid(&schema, &tree)
        );
    }
    // Cycles that never descend into the instance: refused before any
    // checking (jsonschema is not asked here).
    for schema in [
        json!({"$defs": {"a": {"$ref": "#/$defs/a"}}}),
        json!({"$defs": {"a": {"allOf": [{"$ref": "#/$defs/b"}]},
                         "b": {"not": {"$ref": "#/$defs/a"}}}}),
        json!({"$defs": {"a": {"if": {"$ref": "#/$defs/a"}, "then": true}},
               "properties": {"x": true}}),
    ] {
        let Value::Object(map) = &schema else {
            unreachable!()
        };
        assert!(plain_root(map).is_none(), "{schema}");
    }
}

#[test]
fn an_exploding_or_deep_expansion_is_not_plain() {
    // d0 refers to d1 twice, d1 to d2 twice, ...: 2^40 schemas inlined.
    let chain = |n: usize, refs: usize| {
        let mut defs = Map::new();
        for i in 0..n {
            let next = json!({"$ref": format!("#/$defs/d{}", i + 1)});
            let def = if i + 1 == n {
                json!({"type": "integer"})
            } else {
                json!({"allOf": vec![next; refs]})
            };
            defs.insert(format!("d{i}"), def);
        }
        let mut root = Map::new();
        root.insert("$defs".to_owned(), Value::Object(defs));
        root.insert("$ref".to_owned(), json!("#/$defs/d0"));
        root
    };
    let started = std::time::Instant::now();
    assert!(plain_root(&chain(40, 2)).is_none(), "2^40 schemas");
    // A long single chain nests deeper than the limit.
    assert!(plain_root(&chain(200, 1)).is_none(), "200 deep");
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    // Within the limits: 2^10 schemas, 21 deep.
    let small = chain(11, 2);
    let plain = plain_root(&small).expect("within the limits");
    let v = jsonschema::validator_for(&Value::Object(small)).expect("valid");
    for i in [json!(1), json!(1.5), json!("x")] {
        assert_eq!(plain.accepts(&i), v.is_valid(&i), "{i}");
    }
}

#[test]
fn an_unresolvable_or_malformed_new_keyword_is_refused_with_jsonschemas_message() {
    for bad in [
        json!({"$ref": "#/$defs/missing", "$defs": {"a": true}}),
        json!({"properties": {"x": {"$ref": "#/$defs/missing"}}}),
        json!({"$defs": 1}),
        json!({"$defs": {"a": 1}}),
        json!({"$defs": {"a": {"type": "strin"}}}),
        json!({"$ref": 1, "$defs": {"a": true}}),
        json!({"allOf": []}),
        json!({"anyOf": {}}),
        json!({"oneOf": [1]}),
        json!({"not": 1}),
        json!({"if": 1, "then": true}),
        // `then`/`else` without `if` still have to be schemas.
        json!({"then": 1}),
        json!({"else": {"type": "strin"}}),
        json!({"$anchor": "1a"}),
        json!({"$anchor": 1}),
    ] {
        let before = jsonschema::validator_for(&bad).err().map(|e| e.to_string());
        assert!(before.is_some(), "jsonschema refuses {bad}");
        assert_eq!(compile(&bad).err(), before, "{bad}");
    }
}

/// The `json_schema_2020_12_tool` fixture of `ferromcp-everything`.
fn fixture_2020_12() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {"address": {"$anchor": "addressDef", "type": "object",
                              "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
        "properties": {
            "name": {"type": "string"},
            "address": {"$ref": "#/$defs/address"},
            "contactMethod": {"type": "string", "enum": ["phone", "email"]},
            "phone": {"type": "string"},
            "email": {"type": "string"}
        },
        "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
        "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
        "then": {"required": ["phone"]},
        "else": {"required": ["email"]},
        "additionalProperties": false
    })
}

#[test]
fn the_2020_12_fixture_is_plain_with_jsonschemas_verdicts() {
    let schema = fixture_2020_12();
    let c = compile(&schema).expect("valid");
    assert!(c.is_plain());
    let v = jsonschema::validator_for(&schema).expect("valid");
    let cases = [
        (
            json!({"name": "A", "contactMethod": "phone", "phone": "1"}),
            true,
        ),
        (
            json!({"email": "a@b", "address": {"street": "s", "zip": 1}}),
            true,
        ),
        (
            json!({"contactMethod": "email", "email": "e", "phone": "1"}),
            true,
        ),
        (json!({"contactMethod": "phone", "email": "e"}), false),
        (json!({"contactMethod": "email", "phone": "1"}), false),
        (json!({"phone": "1"}), false),
        (json!({}), false),
        (json!({"email": "e", "extra": 1}), false),
        (json!({"email": "e", "address": {"street": 1}}), false),
        (json!({"email": "e", "address": "here"}), false),
        (json!({"email": "e", "contactMethod": "fax"}), false),
        (json!([]), false),
    ];
    for (args, valid) in &cases {
        assert_eq!(v.is_valid(args), *valid, "jsonschema on {args}");
        assert_eq!(c.argument_errors(args).is_none(), *valid, "{args}");
    }
    let fresh = compile(&schema).expect("valid");
    for (args, valid) in &cases {
        if *valid {
            assert_eq!(fresh.argument_errors(args), None);
        }
    }
    assert!(!full_built(&fresh), "valid calls ran jsonschema");
    // Refusals carry jsonschema's messages.
    let args = json!({"contactMethod": "phone", "extra": 1});
    let first = v.iter_errors(&args).next().map(|e| e.to_string());
    assert_eq!(c.first_error(&args), first);
}

#[test]
fn combinator_corners_match_jsonschema() {
    let cases = [
        // `additionalProperties` sees only its sibling `properties`.
        (
            json!({"allOf": [{"properties": {"a": true}}], "additionalProperties": false}),
            vec![json!({"a": 1}), json!({})],
        ),
        // `$ref` with siblings applies both.
        (
            json!({"$defs": {"n": {"type": "integer"}}, "$ref": "#/$defs/n", "minimum": 2}),
            vec![json!(1), json!(2), json!(2.5), json!("x")],
        ),
        // `if` alone, `then`/`else` without `if`: no assertion.
        (json!({"if": false}), vec![json!(1)]),
        (json!({"then": false, "else": false}), vec![json!(1)]),
        (
            json!({"if": {"type": "string"}, "else": false}),
            vec![json!("s"), json!(1)],
        ),
        (
            json!({"if": {"type": "string"}, "then": false}),
            vec![json!("s"), json!(1)],
        ),
        // Exactly one.
        (
            json!({"oneOf": [{"type": "integer"}, {"minimum": 2}, true]}),
            vec![json!(1), json!(3), json!(2.5), json!("x")],
        ),
        (
            json!({"oneOf": [{"type": "integer"}, {"minimum": 2}]}),
            vec![json!(1), json!(3), json!(2.5), json!(0.5)],
        ),
        (
            json!({"anyOf": [{"type": "integer"}, {"minimum": 2}], "not": {"const": 3}}),
            vec![json!(1), json!(3), json!(2.5), json!(0.5)],
        ),
    ];
    for (schema, instances) in cases {
        let Value::Object(map) = &schema else {
            unreachable!()
        };
        let plain = plain_root(map).expect("plain");
        let v = jsonschema::validator_for(&schema).expect("valid");
        for i in &instances {
            assert_eq!(plain.accepts(i), v.is_valid(i), "{schema} on {i}");
        }
    }
}

#[test]
fn plain_schemas_with_annotations_stay_plain() {
    let schema = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "title": "t", "description": "d", "$comment": "c",
        "examples": [{}], "default": {}, "deprecated": false,
        "x-mcp-header": "X", "x-anything": {"k": 1},
        "properties": {
            "n": {"type": ["integer", "null"], "format": "uint32", "minimum": 0,
                  "readOnly": true, "writeOnly": false},
            "s": {"type": "string", "format": "email", "maxLength": 5},
            "l": {"type": "array", "items": {"enum": [1, "a"]}, "uniqueItems": true}
        },
        "required": ["n"],
        "additionalProperties": false
    });
    let c = compile(&schema).expect("valid");
    assert!(c.is_plain());
    // `format` is an annotation in 2020-12: not asserted, as jsonschema does.
    let args = json!({"n": 3, "s": "nope"});
    assert_eq!(c.argument_errors(&args), None);
    assert!(jsonschema::is_valid(&schema, &args));
}

#[test]
fn malformed_subset_keywords_are_refused_with_jsonschemas_message() {
    for bad in [
        json!({"type": "object", "properties": {"a": {"type": "strin"}}}),
        json!({"type": ["object", "object"]}),
        json!({"type": "object", "required": "a"}),
        json!({"type": "object", "required": ["a", "a"]}),
        json!({"type": "object", "required": [1]}),
        json!({"type": "object", "properties": {"a": {"minLength": -1}}}),
        json!({"type": "object", "properties": {"a": {"maxItems": 1.5}}}),
        json!({"type": "object", "properties": {"a": {"minimum": "1"}}}),
        json!({"type": "object", "properties": {"a": {"enum": 1}}}),
        json!({"type": "object", "properties": {"a": {"uniqueItems": 1}}}),
        json!({"type": "object", "properties": {"a": {"title": 1}}}),
        json!({"type": "object", "properties": {"a": {"format": 1}}}),
        json!({"type": "object", "additionalProperties": 1}),
        json!({"type": "object", "properties": {"a": 1}}),
        json!({"type": "object", "properties": []}),
        json!({"type": "object", "properties": {"a": {"items": [true]}}}),
    ] {
        let before = jsonschema::validator_for(&bad).err().map(|e| e.to_string());
        assert!(before.is_some(), "jsonschema refuses {bad}");
        assert_eq!(compile(&bad).err(), before, "{bad}");
    }
}

#[test]
fn a_valid_instance_never_builds_the_full_validator() {
    let schema = json!({"type": "object", "properties": {"a": {"type": "integer"}},
                        "required": ["a"]});
    let c = compile(&schema).expect("valid");
    assert!(c.is_plain());
    assert_eq!(c.argument_errors(&json!({"a": 1})), None);
    assert_eq!(c.first_error(&json!({"a": 2.0})), None);
    assert!(!full_built(&c), "the accepting path ran jsonschema");
    assert!(c.argument_errors(&json!({"a": "x"})).is_some());
    assert!(full_built(&c));
}

#[test]
fn invalid_instances_get_jsonschemas_messages() {
    let schema = json!({"type": "object",
        "properties": {"a": {"type": "integer", "maximum": 3},
                       "b": {"type": "array", "items": {"type": "string"}}},
        "required": ["a", "c"], "additionalProperties": false});
    let args = json!({"a": 4, "b": [1, "x", 2], "d": 0});
    let v = jsonschema::validator_for(&schema).expect("valid");
    // What the call site produced before the plain checker existed.
    let before: Vec<String> = v
        .iter_errors(&args)
        .take(8)
        .map(|e| {
            let at = crate::tool::argument_location(&e.instance_path().to_string());
            format!("{e} at {at}")
        })
        .collect();
    let c = compile(&schema).expect("valid");
    assert!(c.is_plain());
    assert_eq!(c.argument_errors(&args), Some(before.join("; ")));
    let first = v.iter_errors(&args).next().map(|e| e.to_string());
    assert_eq!(c.first_error(&args), first);
}

#[test]
fn numbers_compare_exactly_across_representations() {
    let cases = [
        (
            json!({"maximum": 9_007_199_254_740_992.0_f64}),
            json!(9_007_199_254_740_993_u64),
        ),
        (
            json!({"minimum": u64::MAX}),
            json!(18_446_744_073_709_551_616.0_f64),
        ),
        (json!({"exclusiveMaximum": 1}), json!(1.0)),
        (json!({"const": 1}), json!(1.0)),
        (json!({"enum": [[1, {"a": 2}]]}), json!([1.0, {"a": 2.0}])),
        (json!({"type": "integer"}), json!(1e300)),
        (json!({"type": "integer"}), json!(0.5)),
        (
            json!({"minimum": i64::MIN}),
            json!(-9_223_372_036_854_775_809.0_f64),
        ),
        (json!({"maximum": -0.5}), json!(0)),
        (json!({"uniqueItems": true}), json!([1, 1.0])),
        (json!({"maxLength": 1}), json!("é")),
    ];
    for (sub, instance) in cases {
        let schema = json!({"type": "object", "properties": {"v": sub}});
        let args = json!({"v": instance});
        let c = compile(&schema).expect("valid");
        assert!(c.is_plain(), "{schema}");
        let Kind::Plain { plain, .. } = &c.kind else {
            unreachable!()
        };
        assert_eq!(
            plain.accepts(&args),
            jsonschema::is_valid(&schema, &args),
            "{schema} on {args}"
        );
    }
}

// -- property test: plain schemas and instances, verdict vs jsonschema --

fn number() -> impl Strategy<Value = Value> {
    prop_oneof![
        (-3_i64..=3).prop_map(Value::from),
        prop::sample::select(vec![
            json!(1.0),
            json!(-0.0),
            json!(2.5),
            json!(-0.5),
            json!(u64::MAX),
            json!(i64::MIN),
            json!(1e20),
            json!(18_446_744_073_709_551_616.0_f64),
            json!(9_007_199_254_740_993_u64),
            json!(9_007_199_254_740_992.0_f64),
        ]),
    ]
}

fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        1 => Just(Value::Null),
        1 => any::<bool>().prop_map(Value::Bool),
        3 => number(),
        2 => prop::sample::select(vec!["", "a", "ab", "é", "abc"]).prop_map(Value::from),
    ]
}

fn instance() -> impl Strategy<Value = Value> {
    scalar().prop_recursive(3, 24, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(
                prop::sample::select(vec!["a", "b", "c"]).prop_map(str::to_owned),
                inner,
                0..4
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

const TYPES: [&str; 7] = [
    "null", "boolean", "object", "array", "number", "integer", "string",
];

fn types() -> impl Strategy<Value = Value> {
    prop_oneof![
        // `integer` is the name whose semantics (1.0 is one) are subtle.
        2 => Just(json!("integer")),
        3 => prop::sample::select(TYPES.to_vec()).prop_map(Value::from),
        2 => prop::sample::subsequence(TYPES.to_vec(), 1..=3).prop_map(|t| json!(t)),
    ]
}

/// A keyword present in about one schema in six, so that instances pass
/// often enough for both verdicts to be exercised.
fn of<S: Strategy>(s: S) -> impl Strategy<Value = Option<S::Value>> {
    prop::option::weighted(0.15, s)
}

/// The definitions a generated document has, and refers to.
const DEFS: [&str; 3] = ["d0", "d1", "d2"];

/// An applicator keyword: rarer than the others, so that the schemas stay
/// small and instances still pass often.
fn rare<S: Strategy>(s: S) -> impl Strategy<Value = Option<S::Value>> {
    prop::option::weighted(0.08, s)
}

fn checks(inner: BoxedStrategy<Value>) -> impl Strategy<Value = Value> {
    let list = || prop::collection::vec(inner.clone(), 1..3);
    let applied = (
        rare(prop::sample::select(DEFS.to_vec())),
        rare(list()),
        rare(list()),
        rare(list()),
        rare(inner.clone()),
        // `if` with `then` and/or `else`; sometimes alone, sometimes
        // `then`/`else` without `if`.
        rare((
            prop::option::weighted(0.8, inner.clone()),
            prop::option::weighted(0.6, inner.clone()),
            prop::option::weighted(0.6, inner.clone()),
        )),
    );
    let structure = (
        prop::option::weighted(0.5, types()),
        prop::option::weighted(
            0.5,
            prop::collection::btree_map(
                prop::sample::select(vec!["a", "b"]).prop_map(str::to_owned),
                inner.clone(),
                0..3,
            ),
        ),
        of(prop::sample::subsequence(vec!["a", "b", "c"], 0..=3)),
        of(inner.clone()),
        of(inner),
    );
    let values = (
        of(prop::collection::vec(scalar(), 0..3)),
        of(scalar()),
        of(number()),
        of(number()),
        of(number()),
        of(number()),
    );
    let sizes = (
        of(0_u64..3),
        of(0_u64..3),
        of(0_u64..3),
        of(0_u64..3),
        of(any::<bool>()),
        any::<bool>(),
    );
    (structure, values, sizes, applied).prop_map(|(s, v, z, a)| {
        let mut m = Map::new();
        let mut put = |k: &str, v: Option<Value>| {
            if let Some(v) = v {
                m.insert(k.to_owned(), v);
            }
        };
        put("type", s.0);
        put(
            "properties",
            s.1.map(|p| Value::Object(p.into_iter().collect())),
        );
        put("required", s.2.map(|r| json!(r)));
        put("additionalProperties", s.3);
        put("items", s.4);
        put("enum", v.0.map(Value::Array));
        put("const", v.1);
        put("minimum", v.2);
        put("maximum", v.3);
        put("exclusiveMinimum", v.4);
        put("exclusiveMaximum", v.5);
        put("minLength", z.0.map(Value::from));
        put("maxLength", z.1.map(Value::from));
        put("minItems", z.2.map(Value::from));
        put("maxItems", z.3.map(Value::from));
        put("uniqueItems", z.4.map(Value::Bool));
        put("$ref", a.0.map(|d| json!(format!("#/$defs/{d}"))));
        put("allOf", a.1.map(Value::Array));
        put("anyOf", a.2.map(Value::Array));
        put("oneOf", a.3.map(Value::Array));
        put("not", a.4);
        if let Some((i, t, e)) = a.5 {
            put("if", i);
            put("then", t);
            put("else", e);
        }
        if z.5 {
            put("description", Some(json!("d")));
            put("format", Some(json!("date-time")));
            put("x-note", Some(json!([1])));
        }
        Value::Object(m)
    })
}

/// Points every `$ref` in `schema` at one of `DEFS[allowed]`, or drops it
/// when that range is empty (so definitions refer only to later ones and
/// references never form a cycle).
fn aim_refs(schema: &mut Value, allowed: std::ops::Range<usize>) {
    match schema {
        Value::Object(m) => {
            if let Some(r) = m.remove("$ref") {
                let wanted = DEFS
                    .iter()
                    .position(|d| r == json!(format!("#/$defs/{d}")))
                    .unwrap_or(0);
                if !allowed.is_empty() {
                    let d = DEFS[allowed.start + wanted % allowed.len()];
                    m.insert("$ref".to_owned(), json!(format!("#/$defs/{d}")));
                }
            }
            for v in m.values_mut() {
                aim_refs(v, allowed.clone());
            }
        }
        Value::Array(a) => {
            for v in a {
                aim_refs(v, allowed.clone());
            }
        }
        _ => {}
    }
}

/// A root schema, often with `$defs` (some anchored) that it and its
/// definitions refer to.
fn document() -> impl Strategy<Value = Value> {
    (
        checks(schema().boxed()),
        prop::option::weighted(0.6, (schema(), schema(), schema())),
        any::<[bool; 3]>(),
    )
        .prop_map(|(mut root, defs, anchored)| {
            let Some((d0, d1, d2)) = defs else {
                aim_refs(&mut root, 0..0);
                return root;
            };
            let mut defs = Map::new();
            for (i, mut def) in [d0, d1, d2].into_iter().enumerate() {
                aim_refs(&mut def, i + 1..DEFS.len());
                if let (Value::Object(m), true) = (&mut def, anchored[i]) {
                    m.insert("$anchor".to_owned(), json!(format!("anchor_{}", DEFS[i])));
                }
                defs.insert(DEFS[i].to_owned(), def);
            }
            aim_refs(&mut root, 0..DEFS.len());
            root["$defs"] = Value::Object(defs);
            root
        })
}

fn schema() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        1 => any::<bool>().prop_map(Value::Bool),
        4 => checks(Just(json!(true)).boxed()),
    ];
    leaf.prop_recursive(3, 16, 3, |inner| checks(inner.boxed()))
}

#[test]
fn plain_verdicts_equal_jsonschemas() {
    // Nested strategy trees and jsonschema's compiler in a debug build need
    // more than a test thread's default stack.
    let run = || {
        let (accepted, total) = (std::cell::Cell::new(0_usize), std::cell::Cell::new(0_usize));
        let walked_ok = std::cell::Cell::new(0_usize);
        let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig::with_cases(1024));
        let cases = (
            document(),
            prop::collection::vec(
                prop_oneof![
                    1 => instance(),
                    3 => prop::collection::btree_map(
                        prop::sample::select(vec!["a", "b", "c"]).prop_map(str::to_owned),
                        instance(),
                        0..4,
                    )
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
                ],
                1..8,
            ),
        );
        let outcome = runner.run(&cases, |(root, instances)| {
            let Value::Object(map) = &root else {
                unreachable!()
            };
            let plain = plain_root(map);
            prop_assert!(plain.is_some(), "not plain: {}", root);
            let plain = plain.unwrap();
            let full = jsonschema::validator_for(&root);
            prop_assert!(full.is_ok(), "jsonschema refuses {}", root);
            let full = full.unwrap();
            let compiled = CompiledSchema::compile(map).expect("plain");
            for i in &instances {
                accepted.set(accepted.get() + usize::from(full.is_valid(i)));
                total.set(total.get() + 1);
                prop_assert_eq!(plain.accepts(i), full.is_valid(i), "{} on {}", root, i);
                // The text walk accepts only what the checker accepts, with
                // or without escapes in the text.
                let text = i.to_string();
                for t in [text.clone(), text.replace('é', "\\u00e9")] {
                    let walked = compiled.accepts_json(&t);
                    walked_ok.set(walked_ok.get() + usize::from(walked));
                    prop_assert!(!walked || plain.accepts(i), "{} on {}", root, t);
                }
            }
            Ok(())
        });
        (outcome, accepted.get(), total.get(), walked_ok.get())
    };
    let (outcome, accepted, total, walked) = std::thread::Builder::new()
        .stack_size(64 << 20)
        .spawn(run)
        .expect("spawn")
        .join()
        .expect("the property test thread panicked");
    if let Err(e) = outcome {
        panic!("{e}");
    }
    // Both verdicts are exercised, not just rejections.
    assert!(
        accepted * 5 > total && accepted < total,
        "{accepted} of {total} instances valid"
    );
    // The text walk settles a good share of the valid ones by itself.
    assert!(
        walked * 4 > accepted,
        "{walked} texts accepted of {accepted} valid"
    );
}

// TOOL-06: the text walk of arguments gives the checker's verdict where it
// can, and "not known here" (false) for the keywords it leaves to the
// `Value`; escapes, duplicate members and integral floats included.
#[test]
fn the_text_walk_accepts_exactly_what_the_checker_accepts() {
    let schema = json!({
        "type": "object",
        "properties": {
            "text": {"type": "string", "minLength": 1, "maxLength": 2},
            "n": {"type": "integer", "minimum": 0, "exclusiveMaximum": 10},
            "list": {"type": "array", "items": {"type": "boolean"}, "maxItems": 2},
            "any": true,
            "never": false
        },
        "required": ["text"],
        "additionalProperties": {"type": "null"}
    });
    let c = compile(&schema).expect("plain");
    let Kind::Plain { plain, .. } = &c.kind else {
        unreachable!()
    };
    for (text, ok) in [
        (r#"{"text":"hé"}"#, true),
        (r#"{"\u0074ext":"h\u00e9"}"#, true),
        (r#"{"text":"hé!"}"#, false),
        (r#"{"text":""}"#, false),
        (r#"{"text":"a","n":3.0}"#, true),
        (r#"{"text":"a","n":3.5}"#, false),
        (r#"{"text":"a","n":10}"#, false),
        (r#"{"text":"a","n":-1}"#, false),
        (r#"{"text":"a","list":[true,false]}"#, true),
        (r#"{"text":"a","list":[true,false,true]}"#, false),
        (r#"{"text":"a","list":[1]}"#, false),
        (r#"{"text":"a","any":{"x":[1,{"y":null}]}}"#, true),
        (r#"{"text":"a","never":1}"#, false),
        (r#"{"text":"a","extra":null}"#, true),
        (r#"{"text":"a","extra":1}"#, false),
        (r#"{"n":1}"#, false),
        (r#"{"text":"a","text":"b"}"#, true),
        // The last of a duplicate counts for the `Value`; the walk refuses
        // when any occurrence fails, which is only ever more careful.
        (r#"{"text":"","text":"b"}"#, false),
    ] {
        let value: Value = serde_json::from_str(text).expect("json");
        assert_eq!(c.accepts_json(text), ok, "{text}");
        if ok {
            assert!(plain.accepts(&value), "{text}");
        }
    }
    // Keywords that need the whole value: "not known here".
    for sub in [
        json!({"enum": ["a"]}),
        json!({"const": "a"}),
        json!({"uniqueItems": true}),
        json!({"anyOf": [{"type": "string"}]}),
    ] {
        let schema = json!({"type": "object", "properties": {"v": sub}});
        let c = compile(&schema).expect("plain");
        assert!(c.is_plain(), "{schema}");
        // Valid, yet left to the `Value`; members it does not reach pass.
        assert!(c.argument_errors(&json!({"v": "a"})).is_none(), "{schema}");
        assert!(!c.accepts_json(r#"{"v":"a"}"#), "{schema}");
        assert!(c.accepts_json(r#"{"w":"a"}"#), "{schema}");
    }
}
