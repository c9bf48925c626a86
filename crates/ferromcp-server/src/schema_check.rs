//! Tool schemas compiled for checking: a small checker for the plain
//! subset of JSON Schema 2020-12 that most tool schemas use, with the
//! `jsonschema` engine behind it for everything else.
//!
//! The plain subset is `type` (a name or an array of names), `properties`,
//! `required`, `additionalProperties`, `items` (one schema), `enum`,
//! `const`, `minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum`,
//! `minLength`, `maxLength`, `minItems`, `maxItems`, `uniqueItems`,
//! boolean schemas, the applicators `allOf`, `anyOf`, `oneOf` (each a
//! non-empty array of schemas), `not`, `if`/`then`/`else` (`then` and
//! `else` without `if` are ignored but must still be plain schemas), the
//! root's `$defs` with local references to them, and the annotations
//! (`title`, `description`, `default`, `examples`, `$comment`,
//! `deprecated`, `readOnly`, `writeOnly`, `format`, which the 2020-12
//! dialect does not assert, `$anchor`, keywords starting with `x-`, and
//! `$schema` at the root when it names 2020-12). A schema using only
//! these, each with a well-formed value, is checked here without running
//! any `jsonschema` code. Any other schema (`pattern`, `prefixItems`,
//! `patternProperties`, `unevaluated*`, `$id`, `$dynamicRef`, other
//! dialects, unknown keywords, a malformed value) is compiled by
//! `jsonschema` at registration, as before, so its errors are reported
//! exactly as before.
//!
//! References: `$defs` is plain only at the root, as an object whose every
//! schema is plain (referenced or not); `$defs` inside a subschema is not.
//! A plain `$ref` is exactly `#/$defs/NAME` with NAME a definition of the
//! root's `$defs` made of ASCII letters, digits, `_`, `-` and `.` (not
//! starting with `-` or `.`), so no `~`/percent escape needs decoding; any
//! other reference (escaped, anchor-based like `#addr`, remote, `#`, a
//! deeper pointer, an unknown name) takes `jsonschema`, whose error is
//! then the registration error. A `$ref` with sibling keywords applies
//! both, as 2020-12 does. `$anchor` must match 2020-12's grammar
//! (`^[A-Za-z_][-A-Za-z0-9._]*$`) and be unique in the document.
//! Definitions are compiled once each into an arena and references are
//! indices into it, so sharing never copies a schema. A schema whose
//! references form a cycle (a definition that reaches itself, even through
//! `properties` or `items`) is not plain, nor is one whose expansion (every
//! reference inlined) would exceed [`MAX_EXPANDED_NODES`] schemas or
//! [`MAX_EXPANDED_DEPTH`] nested schemas: checking stays bounded and its
//! recursion shallow. The bound is measured only for schemas with `$defs`.
//!
//! An instance the plain checker does not accept is handed to the full
//! validator (built on first need, once per schema): its verdict is the
//! answer and its messages are the ones reported, so the plain checker can
//! only make the accepting path cheaper, never change what is reported.

use serde_json::{Map, Number, Value};
use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

/// The dialect URI a plain schema may name in `$schema`.
const DIALECT_2020_12: &str = "https://json-schema.org/draft/2020-12/schema";

/// How many messages an argument check reports at most.
const MAX_ARGUMENT_MESSAGES: usize = 8;

/// The most schemas a plain schema with `$defs` may expand to with every
/// reference inlined (it is compiled once per definition, not inlined).
const MAX_EXPANDED_NODES: u64 = 65_536;

/// The deepest nesting of schemas, references followed, that a plain
/// schema with `$defs` may have.
const MAX_EXPANDED_DEPTH: u32 = 128;

/// A tool schema ready for checking instances.
pub(crate) struct CompiledSchema {
    kind: Kind,
}

enum Kind {
    /// Inside the plain subset; the full validator is built on first need.
    Plain {
        plain: Plain,
        source: Value,
        full: OnceLock<Option<jsonschema::Validator>>,
    },
    /// Outside it: compiled by `jsonschema` at registration.
    Full(Box<jsonschema::Validator>),
}

impl CompiledSchema {
    /// Compiles `schema`; an invalid schema is an error with `jsonschema`'s
    /// message.
    pub(crate) fn compile(schema: &Map<String, Value>) -> Result<Self, String> {
        let source = Value::Object(schema.clone());
        let kind = match plain_root(schema) {
            Some(plain) => Kind::Plain {
                plain,
                source,
                full: OnceLock::new(),
            },
            None => Kind::Full(Box::new(
                jsonschema::validator_for(&source).map_err(|e| e.to_string())?,
            )),
        };
        Ok(Self { kind })
    }

    /// Whether the plain checker handles this schema (no `jsonschema` code
    /// runs for instances it accepts).
    pub(crate) fn is_plain(&self) -> bool {
        matches!(self.kind, Kind::Plain { .. })
    }

    /// The full validator, built on first need for a plain schema; `None`
    /// only if `jsonschema` refuses a schema the plain compiler accepted.
    fn full(&self) -> Option<&jsonschema::Validator> {
        match &self.kind {
            Kind::Full(v) => Some(v),
            Kind::Plain { source, full, .. } => full
                .get_or_init(|| jsonschema::validator_for(source).ok())
                .as_ref(),
        }
    }

    /// `Some(failing validator)` when `instance` is invalid, `None` when
    /// valid.
    fn failing(&self, instance: &Value) -> Option<Option<&jsonschema::Validator>> {
        if let Kind::Plain { plain, .. } = &self.kind {
            if plain.accepts(instance) {
                return None;
            }
        }
        match self.full() {
            Some(v) if v.is_valid(instance) => None,
            v => Some(v),
        }
    }

    /// `None` when `args` are valid, otherwise the messages (at most eight,
    /// each with the argument it is about) joined with `; `.
    pub(crate) fn argument_errors(&self, args: &Value) -> Option<String> {
        let v = self.failing(args)?;
        let Some(v) = v else {
            return Some("the arguments do not match the inputSchema".to_owned());
        };
        let msgs: Vec<String> = v
            .iter_errors(args)
            .take(MAX_ARGUMENT_MESSAGES)
            .map(|e| {
                let at = crate::tool::argument_location(&e.instance_path().to_string());
                format!("{e} at {at}")
            })
            .collect();
        Some(msgs.join("; "))
    }

    /// Whether the plain checker accepts the JSON text `text` as it
    /// stands, without making a `Value` of it: `true` only when
    /// [`Self::argument_errors`] of its `Value` finds nothing. `false`
    /// means "not known here" (a schema outside what the text walk checks:
    /// `enum`, `const`, `uniqueItems`, references and combinators) as
    /// well as "refused"; the caller then checks the `Value`.
    pub(crate) fn accepts_json(&self, text: &str) -> bool {
        let Kind::Plain { plain, .. } = &self.kind else {
            return false;
        };
        let mut de = serde_json::Deserializer::from_str(text);
        let seed = NodeSeed {
            node: &plain.root,
            defs: &plain.defs,
        };
        serde::de::DeserializeSeed::deserialize(seed, &mut de).is_ok() && de.end().is_ok()
    }

    /// `None` when `value` is valid, otherwise the first error's message.
    pub(crate) fn first_error(&self, value: &Value) -> Option<String> {
        let v = self.failing(value)?;
        Some(
            v.and_then(|v| v.iter_errors(value).next().map(|e| e.to_string()))
                .unwrap_or_default(),
        )
    }
}

/// A compiled plain root schema and the root's `$defs`, which its
/// references index.
struct Plain {
    root: Node,
    defs: Box<[Node]>,
}

impl Plain {
    fn accepts(&self, v: &Value) -> bool {
        self.root.accepts(v, &self.defs)
    }
}

/// A compiled plain schema.
enum Node {
    Bool(bool),
    Checks(Box<Checks>),
}

/// The keywords of one plain object schema.
#[derive(Default)]
struct Checks {
    types: Option<u8>,
    properties: BTreeMap<String, Node>,
    required: Vec<String>,
    additional: Option<Node>,
    items: Option<Node>,
    enumeration: Option<Vec<Value>>,
    constant: Option<Value>,
    minimum: Option<Number>,
    maximum: Option<Number>,
    exclusive_minimum: Option<Number>,
    exclusive_maximum: Option<Number>,
    min_length: Option<u64>,
    max_length: Option<u64>,
    min_items: Option<u64>,
    max_items: Option<u64>,
    unique_items: bool,
    /// `$ref` and the combinators, boxed apart so that a schema without
    /// them pays one field test.
    applicators: Option<Box<Applicators>>,
}

/// The keywords of one plain schema that apply subschemas to the instance
/// itself.
#[derive(Default)]
struct Applicators {
    /// An index into the root's `$defs`.
    reference: Option<usize>,
    all_of: Vec<Node>,
    any_of: Vec<Node>,
    one_of: Vec<Node>,
    not: Option<Node>,
    /// `if`, kept only with a `then` or an `else` (alone it is a no-op).
    condition: Option<Node>,
    then: Option<Node>,
    otherwise: Option<Node>,
}

impl Applicators {
    fn is_empty(&self) -> bool {
        self.reference.is_none()
            && self.all_of.is_empty()
            && self.any_of.is_empty()
            && self.one_of.is_empty()
            && self.not.is_none()
            && self.condition.is_none()
    }

    /// Every subschema, for measuring the expansion.
    fn children(&self) -> impl Iterator<Item = &Node> {
        self.all_of
            .iter()
            .chain(&self.any_of)
            .chain(&self.one_of)
            .chain(&self.not)
            .chain(&self.condition)
            .chain(&self.then)
            .chain(&self.otherwise)
    }
}

/// What compiling one document needs across its subschemas.
#[derive(Default)]
struct Context<'a> {
    /// The root's `$defs`, by name, as indices into the arena.
    names: BTreeMap<&'a str, usize>,
    /// Every `$anchor` seen so far (a repeated one is not plain).
    anchors: BTreeSet<&'a str>,
}

const NULL: u8 = 1;
const BOOLEAN: u8 = 2;
const OBJECT: u8 = 4;
const ARRAY: u8 = 8;
const NUMBER: u8 = 16;
const INTEGER: u8 = 32;
const STRING: u8 = 64;

fn type_bit(name: &str) -> Option<u8> {
    Some(match name {
        "null" => NULL,
        "boolean" => BOOLEAN,
        "object" => OBJECT,
        "array" => ARRAY,
        "number" => NUMBER,
        "integer" => INTEGER,
        "string" => STRING,
        _ => return None,
    })
}

/// The plain form of a root schema, or `None` when it is not plain.
fn plain_root(schema: &Map<String, Value>) -> Option<Plain> {
    match schema.get("$schema") {
        None => {}
        Some(Value::String(s)) if s == DIALECT_2020_12 => {}
        Some(_) => return None,
    }
    let mut cx = Context::default();
    let sources = match schema.get("$defs") {
        None => None,
        Some(Value::Object(d)) => Some(d),
        Some(_) => return None,
    };
    let mut defs = Vec::new();
    if let Some(sources) = sources {
        // Names first: definitions may refer to each other in any order.
        for (i, name) in sources.keys().enumerate() {
            cx.names.insert(name, i);
        }
        defs.reserve_exact(sources.len());
        for sub in sources.values() {
            defs.push(plain(sub, &mut cx)?);
        }
    }
    let root = plain_object(schema, true, &mut cx)?;
    if !defs.is_empty() {
        Measure::new(&defs).all(&root)?;
    }
    Some(Plain {
        root,
        defs: defs.into_boxed_slice(),
    })
}

fn plain<'a>(schema: &'a Value, cx: &mut Context<'a>) -> Option<Node> {
    match schema {
        Value::Bool(b) => Some(Node::Bool(*b)),
        Value::Object(o) => plain_object(o, false, cx),
        _ => None,
    }
}

/// A non-empty array of plain schemas.
fn plain_list<'a>(value: &'a Value, cx: &mut Context<'a>) -> Option<Vec<Node>> {
    let list = value.as_array()?;
    if list.is_empty() {
        return None;
    }
    list.iter().map(|s| plain(s, cx)).collect()
}

fn plain_object<'a>(
    schema: &'a Map<String, Value>,
    root: bool,
    cx: &mut Context<'a>,
) -> Option<Node> {
    let mut c = Checks::default();
    let mut a = Applicators::default();
    for (key, value) in schema {
        match key.as_str() {
            "type" => c.types = Some(types(value)?),
            "properties" => {
                for (name, sub) in value.as_object()? {
                    c.properties.insert(name.clone(), plain(sub, cx)?);
                }
            }
            "required" => c.required = unique_strings(value)?,
            "additionalProperties" => c.additional = Some(plain(value, cx)?),
            "items" => c.items = Some(plain(value, cx)?),
            "enum" => c.enumeration = Some(value.as_array()?.clone()),
            "const" => c.constant = Some(value.clone()),
            "minimum" => c.minimum = Some(number(value)?),
            "maximum" => c.maximum = Some(number(value)?),
            "exclusiveMinimum" => c.exclusive_minimum = Some(number(value)?),
            "exclusiveMaximum" => c.exclusive_maximum = Some(number(value)?),
            "minLength" => c.min_length = Some(value.as_u64()?),
            "maxLength" => c.max_length = Some(value.as_u64()?),
            "minItems" => c.min_items = Some(value.as_u64()?),
            "maxItems" => c.max_items = Some(value.as_u64()?),
            "uniqueItems" => c.unique_items = value.as_bool()?,
            "$ref" => a.reference = Some(reference(value, cx)?),
            "allOf" => a.all_of = plain_list(value, cx)?,
            "anyOf" => a.any_of = plain_list(value, cx)?,
            "oneOf" => a.one_of = plain_list(value, cx)?,
            "not" => a.not = Some(plain(value, cx)?),
            "if" => a.condition = Some(plain(value, cx)?),
            "then" => a.then = Some(plain(value, cx)?),
            "else" => a.otherwise = Some(plain(value, cx)?),
            "$anchor" => {
                let anchor = value.as_str()?;
                if !anchor_grammar(anchor) || !cx.anchors.insert(anchor) {
                    return None;
                }
            }
            "title" | "description" | "$comment" | "format" => {
                value.as_str()?;
            }
            "deprecated" | "readOnly" | "writeOnly" => {
                value.as_bool()?;
            }
            "examples" => {
                value.as_array()?;
            }
            "default" => {}
            // Compiled by `plain_root`.
            "$schema" | "$defs" if root => {}
            k if k.starts_with("x-") => {}
            _ => return None,
        }
    }
    if a.condition.is_none() || (a.then.is_none() && a.otherwise.is_none()) {
        // `then`/`else` without `if`, and `if` alone, assert nothing.
        a.condition = None;
        a.then = None;
        a.otherwise = None;
    }
    if !a.is_empty() {
        c.applicators = Some(Box::new(a));
    }
    Some(Node::Checks(Box::new(c)))
}

/// The index of the root definition `value` names, if it is a reference
/// the plain checker takes: exactly `#/$defs/NAME`, NAME needing no
/// unescaping.
fn reference(value: &Value, cx: &Context<'_>) -> Option<usize> {
    let name = value.as_str()?.strip_prefix("#/$defs/")?;
    let mut bytes = name.bytes();
    let first = bytes.next()?;
    let plain = (first.is_ascii_alphanumeric() || first == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
    if !plain {
        return None;
    }
    cx.names.get(name).copied()
}

/// 2020-12's `$anchor` grammar: `^[A-Za-z_][-A-Za-z0-9._]*$`.
fn anchor_grammar(anchor: &str) -> bool {
    let mut bytes = anchor.bytes();
    bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_'))
}

/// A definition's state while the expansion is measured.
#[derive(Clone, Copy)]
enum Mark {
    New,
    /// Being measured: reaching it again is a cycle.
    Open,
    /// Its expansion: schemas and nesting depth.
    Done(u64, u32),
}

/// Measures the expansion of a plain schema with `$defs`, refusing cycles
/// and expansions beyond the limits. Recursion is as deep as the nesting
/// it measures, which is refused beyond [`MAX_EXPANDED_DEPTH`].
struct Measure<'d> {
    defs: &'d [Node],
    marks: Vec<Mark>,
}

impl<'d> Measure<'d> {
    fn new(defs: &'d [Node]) -> Self {
        Self {
            defs,
            marks: vec![Mark::New; defs.len()],
        }
    }

    /// `Some` when the root and every definition are within the limits.
    fn all(mut self, root: &Node) -> Option<()> {
        for i in 0..self.defs.len() {
            self.def(i, 1)?;
        }
        self.node(root, 1).map(|_| ())
    }

    /// The expansion of definition `i` reached at nesting depth `at`.
    fn def(&mut self, i: usize, at: u32) -> Option<(u64, u32)> {
        match *self.marks.get(i)? {
            Mark::Open => None,
            Mark::Done(nodes, depth) => {
                (at + depth - 1 <= MAX_EXPANDED_DEPTH).then_some((nodes, depth))
            }
            Mark::New => {
                *self.marks.get_mut(i)? = Mark::Open;
                let (nodes, depth) = self.node(self.defs.get(i)?, at)?;
                *self.marks.get_mut(i)? = Mark::Done(nodes, depth);
                Some((nodes, depth))
            }
        }
    }

    /// The expansion of `node` at nesting depth `at` (the root is at 1).
    fn node(&mut self, node: &Node, at: u32) -> Option<(u64, u32)> {
        if at > MAX_EXPANDED_DEPTH {
            return None;
        }
        let Node::Checks(c) = node else {
            return Some((1, 1));
        };
        let applied = c.applicators.as_deref();
        let children = c
            .properties
            .values()
            .chain(&c.additional)
            .chain(&c.items)
            .chain(applied.into_iter().flat_map(Applicators::children));
        let (mut nodes, mut depth) = (1_u64, 0_u32);
        for child in children {
            let (n, d) = self.node(child, at + 1)?;
            nodes = nodes.saturating_add(n);
            depth = depth.max(d);
            if nodes > MAX_EXPANDED_NODES {
                return None;
            }
        }
        if let Some(i) = applied.and_then(|a| a.reference) {
            let (n, d) = self.def(i, at + 1)?;
            nodes = nodes.saturating_add(n);
            depth = depth.max(d);
        }
        (nodes <= MAX_EXPANDED_NODES).then_some((nodes, depth + 1))
    }
}

fn types(value: &Value) -> Option<u8> {
    match value {
        Value::String(s) => type_bit(s),
        Value::Array(names) if !names.is_empty() => {
            let mut bits = 0;
            for n in names {
                let bit = type_bit(n.as_str()?)?;
                if bits & bit != 0 {
                    return None;
                }
                bits |= bit;
            }
            Some(bits)
        }
        _ => None,
    }
}

fn unique_strings(value: &Value) -> Option<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    for v in value.as_array()? {
        let s = v.as_str()?;
        if out.iter().any(|o| o == s) {
            return None;
        }
        out.push(s.to_owned());
    }
    Some(out)
}

fn number(value: &Value) -> Option<Number> {
    match value {
        // Only numbers this checker can compare exactly.
        Value::Number(n) if exact(n).is_some() => Some(n.clone()),
        _ => None,
    }
}

impl Node {
    /// Whether `v` is valid; `defs` are the root's definitions.
    fn accepts(&self, v: &Value, defs: &[Node]) -> bool {
        match self {
            Node::Bool(b) => *b,
            Node::Checks(c) => c.accepts(v, defs),
        }
    }
}

impl Applicators {
    fn accepts(&self, v: &Value, defs: &[Node]) -> bool {
        if let Some(i) = self.reference {
            // The index was resolved at compile time.
            if !defs.get(i).is_some_and(|d| d.accepts(v, defs)) {
                return false;
            }
        }
        if !self.all_of.iter().all(|s| s.accepts(v, defs)) {
            return false;
        }
        if !self.any_of.is_empty() && !self.any_of.iter().any(|s| s.accepts(v, defs)) {
            return false;
        }
        if !self.one_of.is_empty() {
            // Exactly one: a second match refuses, no match refuses.
            let mut matched = self.one_of.iter().filter(|s| s.accepts(v, defs));
            if matched.next().is_none() || matched.next().is_some() {
                return false;
            }
        }
        if self.not.as_ref().is_some_and(|s| s.accepts(v, defs)) {
            return false;
        }
        if let Some(condition) = &self.condition {
            let branch = if condition.accepts(v, defs) {
                &self.then
            } else {
                &self.otherwise
            };
            if !branch.as_ref().is_none_or(|s| s.accepts(v, defs)) {
                return false;
            }
        }
        true
    }
}

impl Checks {
    fn accepts(&self, v: &Value, defs: &[Node]) -> bool {
        if let Some(types) = self.types {
            if types & type_of(v) == 0 {
                return false;
            }
        }
        if let Some(options) = &self.enumeration {
            if !options.iter().any(|o| equal(o, v)) {
                return false;
            }
        }
        if let Some(c) = &self.constant {
            if !equal(c, v) {
                return false;
            }
        }
        let own = match v {
            Value::Number(n) => self.number_ok(n),
            Value::String(s) => {
                let len = s.chars().count() as u64;
                self.min_length.is_none_or(|m| len >= m) && self.max_length.is_none_or(|m| len <= m)
            }
            Value::Array(a) => self.array_ok(a, defs),
            Value::Object(o) => self.object_ok(o, defs),
            Value::Null | Value::Bool(_) => true,
        };
        own && self.applicators.as_ref().is_none_or(|a| a.accepts(v, defs))
    }

    fn number_ok(&self, n: &Number) -> bool {
        let within = |limit: &Option<Number>, ok: fn(Ordering) -> bool| {
            limit.as_ref().is_none_or(|l| compare(n, l).is_some_and(ok))
        };
        within(&self.minimum, Ordering::is_ge)
            && within(&self.maximum, Ordering::is_le)
            && within(&self.exclusive_minimum, Ordering::is_gt)
            && within(&self.exclusive_maximum, Ordering::is_lt)
    }

    fn array_ok(&self, a: &[Value], defs: &[Node]) -> bool {
        let len = a.len() as u64;
        if self.min_items.is_some_and(|m| len < m) || self.max_items.is_some_and(|m| len > m) {
            return false;
        }
        if let Some(items) = &self.items {
            if !a.iter().all(|i| items.accepts(i, defs)) {
                return false;
            }
        }
        if self.unique_items {
            for (i, x) in a.iter().enumerate() {
                if a.iter().skip(i + 1).any(|y| equal(x, y)) {
                    return false;
                }
            }
        }
        true
    }

    fn object_ok(&self, o: &Map<String, Value>, defs: &[Node]) -> bool {
        if !self.required.iter().all(|r| o.contains_key(r)) {
            return false;
        }
        o.iter().all(|(k, v)| match self.properties.get(k) {
            Some(p) => p.accepts(v, defs),
            None => self.additional.as_ref().is_none_or(|a| a.accepts(v, defs)),
        })
    }
}

fn type_of(v: &Value) -> u8 {
    match v {
        Value::Null => NULL,
        Value::Bool(_) => BOOLEAN,
        Value::Object(_) => OBJECT,
        Value::Array(_) => ARRAY,
        Value::String(_) => STRING,
        Value::Number(n) => number_type(n),
    }
}

fn number_type(n: &Number) -> u8 {
    match exact(n) {
        Some(Exact::Int(_)) => NUMBER | INTEGER,
        Some(Exact::Float(f)) if f.fract() == 0.0 => NUMBER | INTEGER,
        _ => NUMBER,
    }
}

// The text walk: `Checks::accepts` over JSON text, for the keywords that
// need no whole value (`type`, the number, string, array and object
// keywords); a node with `enum`, `const`, `uniqueItems` or applicators is
// "not known here". A refusal is an error, which ends the walk.

/// One schema node applied to the next value of a deserializer.
#[derive(Clone, Copy)]
struct NodeSeed<'s> {
    node: &'s Node,
    defs: &'s [Node],
}

/// The walk's refusal (or "not known here").
fn refused<E: serde::de::Error>() -> E {
    E::custom("not accepted by the plain text walk")
}

impl<'de> serde::de::DeserializeSeed<'de> for NodeSeed<'_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        match self.node {
            Node::Bool(true) => d.deserialize_ignored_any(serde::de::IgnoredAny).map(|_| ()),
            Node::Bool(false) => Err(refused()),
            Node::Checks(c)
                if c.applicators.is_none()
                    && c.enumeration.is_none()
                    && c.constant.is_none()
                    && !c.unique_items =>
            {
                d.deserialize_any(ChecksVisitor {
                    checks: c,
                    defs: self.defs,
                })
            }
            Node::Checks(_) => Err(refused()),
        }
    }
}

/// The value a schema does not constrain, or the node that does.
fn seed_for<'s>(node: Option<&'s Node>, defs: &'s [Node]) -> NodeSeed<'s> {
    const ANY: Node = Node::Bool(true);
    NodeSeed {
        node: node.unwrap_or(&ANY),
        defs,
    }
}

struct ChecksVisitor<'s> {
    checks: &'s Checks,
    defs: &'s [Node],
}

impl ChecksVisitor<'_> {
    fn typed<E: serde::de::Error>(&self, t: u8) -> Result<(), E> {
        match self.checks.types {
            Some(types) if types & t == 0 => Err(refused()),
            _ => Ok(()),
        }
    }

    fn number<E: serde::de::Error>(&self, n: Option<Number>) -> Result<(), E> {
        let n = n.ok_or_else(refused)?;
        self.typed(number_type(&n))?;
        if self.checks.number_ok(&n) {
            Ok(())
        } else {
            Err(refused())
        }
    }
}

impl<'de> serde::de::Visitor<'de> for ChecksVisitor<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E: serde::de::Error>(self) -> Result<(), E> {
        self.typed(NULL)
    }
    fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<(), E> {
        self.typed(BOOLEAN)
    }
    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<(), E> {
        self.number(Some(Number::from(v)))
    }
    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<(), E> {
        self.number(Some(Number::from(v)))
    }
    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<(), E> {
        self.number(Number::from_f64(v))
    }
    fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<(), E> {
        self.typed(STRING)?;
        let len = s.chars().count() as u64;
        let c = self.checks;
        if c.min_length.is_none_or(|m| len >= m) && c.max_length.is_none_or(|m| len <= m) {
            Ok(())
        } else {
            Err(refused())
        }
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        self.typed(ARRAY)?;
        let item = seed_for(self.checks.items.as_ref(), self.defs);
        let mut len = 0u64;
        while seq.next_element_seed(item)?.is_some() {
            len += 1;
        }
        let c = self.checks;
        if c.min_items.is_some_and(|m| len < m) || c.max_items.is_some_and(|m| len > m) {
            return Err(refused());
        }
        Ok(())
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        self.typed(OBJECT)?;
        let c = self.checks;
        // Which required members were seen, by index (a bit each).
        if c.required.len() > 64 {
            return Err(refused());
        }
        let mut seen = 0u64;
        while let Some(crate::raw_result::Key(key)) = map.next_key()? {
            if let Some(i) = c.required.iter().position(|r| *r == *key) {
                seen |= 1 << i;
            }
            let node = match c.properties.get(&*key) {
                Some(p) => Some(p),
                None => c.additional.as_ref(),
            };
            map.next_value_seed(seed_for(node, self.defs))?;
        }
        let all = u64::MAX
            .checked_shr(64 - c.required.len() as u32)
            .unwrap_or(0);
        if seen == all { Ok(()) } else { Err(refused()) }
    }
}

/// A JSON number in a form that compares exactly.
#[derive(Clone, Copy)]
enum Exact {
    Int(i128),
    Float(f64),
}

fn exact(n: &Number) -> Option<Exact> {
    if let Some(u) = n.as_u64() {
        Some(Exact::Int(i128::from(u)))
    } else if let Some(i) = n.as_i64() {
        Some(Exact::Int(i128::from(i)))
    } else {
        n.as_f64().filter(|f| f.is_finite()).map(Exact::Float)
    }
}

/// The exact order of two numbers (an `f64` taken as the binary value it
/// holds); `None` for a number that has no finite `f64` form.
fn compare(a: &Number, b: &Number) -> Option<Ordering> {
    Some(match (exact(a)?, exact(b)?) {
        (Exact::Int(x), Exact::Int(y)) => x.cmp(&y),
        (Exact::Float(x), Exact::Float(y)) => x.partial_cmp(&y)?,
        (Exact::Int(x), Exact::Float(y)) => int_vs_float(x, y),
        (Exact::Float(x), Exact::Int(y)) => int_vs_float(y, x).reverse(),
    })
}

/// `i` against the finite `f`, exactly.
fn int_vs_float(i: i128, f: f64) -> Ordering {
    // 2^127: every i128 lies in [-2^127, 2^127).
    const BOUND: f64 = 170_141_183_460_469_231_731_687_303_715_884_105_728.0;
    if f >= BOUND {
        return Ordering::Less;
    }
    if f < -BOUND {
        return Ordering::Greater;
    }
    let whole = f.trunc();
    // In range and integral, so the conversion is exact.
    #[allow(clippy::cast_possible_truncation)]
    let w = whole as i128;
    let fraction = f - whole;
    i.cmp(&w).then(if fraction > 0.0 {
        Ordering::Less
    } else if fraction < 0.0 {
        Ordering::Greater
    } else {
        Ordering::Equal
    })
}

/// JSON Schema equality: numbers by value (`1` equals `1.0`).
fn equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => compare(x, y) == Some(Ordering::Equal),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| equal(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, xv)| y.get(k).is_some_and(|yv| equal(xv, yv)))
        }
        _ => a == b,
    }
}

#[cfg(test)]
#[path = "schema_check_tests.rs"]
mod tests;
