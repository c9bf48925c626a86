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
        json!({"$ref": "#/$defs/a", "$defs": {"a": {"type": "string"}}}),
        json!({"$defs": {"a": {"type": "string"}}}),
        json!({"allOf": [{"type": "object"}]}),
        json!({"anyOf": [{"type": "object"}]}),
        json!({"oneOf": [{"type": "object"}]}),
        json!({"not": {"type": "string"}}),
        json!({"if": true, "then": true}),
        json!({"properties": {"a": {"type": "string", "pattern": "^x"}}}),
        json!({"patternProperties": {"^x": true}}),
        json!({"properties": {"a": {"multipleOf": 2}}}),
        json!({"properties": {"a": {"prefixItems": [true]}}}),
        json!({"properties": {"a": {"contains": true}}}),
        json!({"minProperties": 1}),
        json!({"propertyNames": {"maxLength": 3}}),
        json!({"unevaluatedProperties": false}),
        json!({"dependentRequired": {"a": ["b"]}}),
        json!({"$id": "urn:x"}),
        json!({"$schema": "http://json-schema.org/draft-07/schema#"}),
        json!({"$schema": "https://json-schema.org/draft/2020-12/schema#"}),
        json!({"properties": {"a": {"$schema": "https://json-schema.org/draft/2020-12/schema"}}}),
        json!({"nullable": true}),
        // A number this checker cannot compare exactly is left to jsonschema.
        json!({"properties": {"a": {"minLength": 1.0}}}),
    ];
    for mut schema in outside {
        schema["type"] = json!("object");
        let c = compile(&schema).expect("a valid schema compiles");
        assert!(!c.is_plain(), "{schema} must take the full validator");
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
        let Kind::Plain { node, .. } = &c.kind else {
            unreachable!()
        };
        assert_eq!(
            node.accepts(&args),
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

fn checks(inner: BoxedStrategy<Value>) -> impl Strategy<Value = Value> {
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
    (structure, values, sizes).prop_map(|(s, v, z)| {
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
        if z.5 {
            put("description", Some(json!("d")));
            put("format", Some(json!("date-time")));
            put("x-note", Some(json!([1])));
        }
        Value::Object(m)
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
        let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig::with_cases(1024));
        let cases = (
            checks(schema().boxed()),
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
            let node = plain_root(map);
            prop_assert!(node.is_some(), "not plain: {}", root);
            let node = node.unwrap();
            let full = jsonschema::validator_for(&root);
            prop_assert!(full.is_ok(), "jsonschema refuses {}", root);
            let full = full.unwrap();
            for i in &instances {
                accepted.set(accepted.get() + usize::from(full.is_valid(i)));
                total.set(total.get() + 1);
                prop_assert_eq!(node.accepts(i), full.is_valid(i), "{} on {}", root, i);
            }
            Ok(())
        });
        (outcome, accepted.get(), total.get())
    };
    let (outcome, accepted, total) = std::thread::Builder::new()
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
}
