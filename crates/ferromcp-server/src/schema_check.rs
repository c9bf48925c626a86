//! Tool schemas compiled for checking: a small checker for the plain
//! subset of JSON Schema 2020-12 that most tool schemas use, with the
//! `jsonschema` engine behind it for everything else.
//!
//! The plain subset is `type` (a name or an array of names), `properties`,
//! `required`, `additionalProperties`, `items` (one schema), `enum`,
//! `const`, `minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum`,
//! `minLength`, `maxLength`, `minItems`, `maxItems`, `uniqueItems`,
//! boolean schemas and the annotations (`title`, `description`, `default`,
//! `examples`, `$comment`, `deprecated`, `readOnly`, `writeOnly`, `format`,
//! which the 2020-12 dialect does not assert, keywords starting with `x-`,
//! and `$schema` at the root when it names 2020-12). A schema using only
//! these, each with a well-formed value, is checked here without running
//! any `jsonschema` code. Any other schema (`$ref`, `$defs`, combinators,
//! `pattern`, other dialects, unknown keywords, a malformed value) is
//! compiled by `jsonschema` at registration, as before, so its errors are
//! reported exactly as before.
//!
//! An instance the plain checker does not accept is handed to the full
//! validator (built on first need, once per schema): its verdict is the
//! answer and its messages are the ones reported, so the plain checker can
//! only make the accepting path cheaper, never change what is reported.

use serde_json::{Map, Number, Value};
use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// The dialect URI a plain schema may name in `$schema`.
const DIALECT_2020_12: &str = "https://json-schema.org/draft/2020-12/schema";

/// How many messages an argument check reports at most.
const MAX_ARGUMENT_MESSAGES: usize = 8;

/// A tool schema ready for checking instances.
pub(crate) struct CompiledSchema {
    kind: Kind,
}

enum Kind {
    /// Inside the plain subset; the full validator is built on first need.
    Plain {
        node: Node,
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
            Some(node) => Kind::Plain {
                node,
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
        if let Kind::Plain { node, .. } = &self.kind {
            if node.accepts(instance) {
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

    /// `None` when `value` is valid, otherwise the first error's message.
    pub(crate) fn first_error(&self, value: &Value) -> Option<String> {
        let v = self.failing(value)?;
        Some(
            v.and_then(|v| v.iter_errors(value).next().map(|e| e.to_string()))
                .unwrap_or_default(),
        )
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
fn plain_root(schema: &Map<String, Value>) -> Option<Node> {
    match schema.get("$schema") {
        None => {}
        Some(Value::String(s)) if s == DIALECT_2020_12 => {}
        Some(_) => return None,
    }
    plain_object(schema, true)
}

fn plain(schema: &Value) -> Option<Node> {
    match schema {
        Value::Bool(b) => Some(Node::Bool(*b)),
        Value::Object(o) => plain_object(o, false),
        _ => None,
    }
}

fn plain_object(schema: &Map<String, Value>, root: bool) -> Option<Node> {
    let mut c = Checks::default();
    for (key, value) in schema {
        match key.as_str() {
            "type" => c.types = Some(types(value)?),
            "properties" => {
                for (name, sub) in value.as_object()? {
                    c.properties.insert(name.clone(), plain(sub)?);
                }
            }
            "required" => c.required = unique_strings(value)?,
            "additionalProperties" => c.additional = Some(plain(value)?),
            "items" => c.items = Some(plain(value)?),
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
            "$schema" if root => {}
            k if k.starts_with("x-") => {}
            _ => return None,
        }
    }
    Some(Node::Checks(Box::new(c)))
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
    fn accepts(&self, v: &Value) -> bool {
        match self {
            Node::Bool(b) => *b,
            Node::Checks(c) => c.accepts(v),
        }
    }
}

impl Checks {
    fn accepts(&self, v: &Value) -> bool {
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
        match v {
            Value::Number(n) => self.number_ok(n),
            Value::String(s) => {
                let len = s.chars().count() as u64;
                self.min_length.is_none_or(|m| len >= m) && self.max_length.is_none_or(|m| len <= m)
            }
            Value::Array(a) => self.array_ok(a),
            Value::Object(o) => self.object_ok(o),
            Value::Null | Value::Bool(_) => true,
        }
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

    fn array_ok(&self, a: &[Value]) -> bool {
        let len = a.len() as u64;
        if self.min_items.is_some_and(|m| len < m) || self.max_items.is_some_and(|m| len > m) {
            return false;
        }
        if let Some(items) = &self.items {
            if !a.iter().all(|i| items.accepts(i)) {
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

    fn object_ok(&self, o: &Map<String, Value>) -> bool {
        if !self.required.iter().all(|r| o.contains_key(r)) {
            return false;
        }
        o.iter().all(|(k, v)| match self.properties.get(k) {
            Some(p) => p.accepts(v),
            None => self.additional.as_ref().is_none_or(|a| a.accepts(v)),
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
        Value::Number(n) => match exact(n) {
            Some(Exact::Int(_)) => NUMBER | INTEGER,
            Some(Exact::Float(f)) if f.fract() == 0.0 => NUMBER | INTEGER,
            _ => NUMBER,
        },
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
