//! `x-mcp-header` annotations in a tool's `inputSchema`.
//!
//! [`x_mcp_header_map`] walks the schema once, checks every annotation and
//! returns the [`ParamHeaderMap`] (property path → header name) that both the
//! client ([`ParamHeaderMap::emit`]) and the server
//! ([`ParamHeaderMap::validate`]) use, so both ends agree by construction.
//!
//! # Rules
//!
//! An annotation is valid only when all of these hold; one invalid
//! annotation makes the whole tool invalid:
//!
//! - its value is a non-empty RFC 9110 token (``^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$``);
//! - it is unique, ASCII case-insensitively, across the whole schema;
//! - the annotated schema has `type` exactly `"string"`, `"integer"` or
//!   `"boolean"` (`"number"`, `"null"`, `"object"`, `"array"`, type arrays
//!   such as `["string","null"]` and a missing `type` are invalid);
//! - it is reached from the root schema through `properties` keys only (any
//!   depth). On the root schema itself, or below any other subschema keyword
//!   (`items`, `prefixItems`, `additionalItems`, `contains`,
//!   `additionalProperties`, `patternProperties`, `propertyNames`,
//!   `unevaluatedItems`, `unevaluatedProperties`, `dependentSchemas`,
//!   `dependencies`, `allOf`, `anyOf`, `oneOf`, `not`, `if`, `then`, `else`,
//!   `contentSchema`, `$defs`, `definitions`) it is invalid.
//!
//! The walk never enters instance keywords (`default`, `examples`, `const`,
//! `enum`) or unknown keywords, so data that merely *mentions*
//! `x-mcp-header` is ignored, and it never dereferences `$ref`.
//!
//! # Safe-integer decision
//!
//! The spec says integer values MUST lie in −(2^53−1)…2^53−1 but not whether
//! that constrains the schema or the runtime values. We check the schema:
//! an integer-typed annotated property whose declared `minimum`/`maximum`
//! lies outside that range (or `exclusiveMinimum`/`exclusiveMaximum` outside
//! ±2^53, which still admits exactly the safe range) is invalid, as is one
//! whose bounds exclude the whole safe range. Unbounded integer properties
//! are valid (the conformance suite uses `{"type":"integer"}`). At runtime,
//! out-of-range integer arguments are still mirrored exactly and compared
//! exactly (see [`crate::header::params`]), so nothing is lost either way.
//!
//! # Hostile input
//!
//! The walk uses an explicit heap stack (no recursion), so arbitrarily deep
//! values cannot overflow the call stack, and it stops with a "too deep"
//! reason once a schema object sits more than [`MAX_SCHEMA_DEPTH`] JSON
//! nesting levels below the root. That limit equals `serde_json`'s default
//! parser recursion limit, so no schema parsed by a default `serde_json`
//! (which is always nested inside a larger message) can trip it; it only
//! bounds programmatically built values and the cost of reconstructing
//! property paths.
// HDR-11…HDR-14, HDR-12, HDR-13; handbook Appendix C.6, Appendix C.5
// Foreign type: serde_json (`Value`, `Map`, `RawValue`, `Number`, `Error`) in this module's public
// signatures: it is the JSON data model users pass in and get back (arbitrary params, results,
// schemas, `_meta`); the SDK is built on serde_json by design.

use serde_json::{Map, Number, Value};
use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::Arc;

use super::MCP_PARAM_PREFIX;

// HDR-11
/// The annotation keyword.
pub const X_MCP_HEADER: &str = "x-mcp-header";

/// Maximum JSON nesting depth of a schema object below the root schema.
pub const MAX_SCHEMA_DEPTH: usize = 128;

// HDR-12
/// Largest integer exactly representable in an IEEE 754 double, 2^53−1.
pub const MAX_SAFE_INTEGER: i64 = 9_007_199_254_740_991;

// HDR-12
/// The primitive JSON Schema type of an annotated property.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ParamKind {
    /// `"type": "string"`: mirrored as-is.
    String,
    // HDR-18
    /// `"type": "integer"`: mirrored in decimal, compared numerically.
    Integer,
    /// `"type": "boolean"`: mirrored as `true` / `false`.
    Boolean,
}

impl ParamKind {
    // HDR-12
    /// The kind for a JSON Schema `type` name; `None` for any other type,
    /// including `"number"`.
    pub fn from_type_name(name: &str) -> Option<Self> {
        match name {
            "string" => Some(ParamKind::String),
            "integer" => Some(ParamKind::Integer),
            "boolean" => Some(ParamKind::Boolean),
            _ => None,
        }
    }

    /// The JSON Schema `type` name of this kind.
    pub fn type_name(self) -> &'static str {
        match self {
            ParamKind::String => "string",
            ParamKind::Integer => "integer",
            ParamKind::Boolean => "boolean",
        }
    }
}

/// One valid `x-mcp-header` annotation.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct HeaderParam {
    /// The chain of `properties` keys from the root schema to the annotated
    /// property; never empty. Also the argument's path in `arguments`.
    pub path: Vec<String>,
    /// The annotation value, case preserved: the header is `Mcp-Param-<name>`.
    pub name: String,
    /// The property's declared primitive type.
    pub kind: ParamKind,
}

impl HeaderParam {
    // HDR-15
    /// The full header name, `Mcp-Param-<name>`.
    pub fn header_name(&self) -> String {
        let mut s = String::with_capacity(MCP_PARAM_PREFIX.len() + self.name.len());
        s.push_str(MCP_PARAM_PREFIX);
        s.push_str(&self.name);
        s
    }

    // HDR-04
    /// True when `header` names this parameter's header, compared ASCII
    /// case-insensitively as HTTP field names are.
    pub fn matches_header_name(&self, header: &str) -> bool {
        match header.as_bytes().split_at_checked(MCP_PARAM_PREFIX.len()) {
            Some((prefix, rest)) => {
                prefix.eq_ignore_ascii_case(MCP_PARAM_PREFIX.as_bytes())
                    && rest.eq_ignore_ascii_case(self.name.as_bytes())
            }
            None => false,
        }
    }

    // HDR-17
    /// The argument at [`path`](Self::path) in `arguments`, following object
    /// members only; `None` when any step is missing or not an object. A
    /// JSON `null` is returned as is (callers treat it as absent).
    pub fn argument<'a>(&self, arguments: &'a Map<String, Value>) -> Option<&'a Value> {
        let (last, parents) = self.path.split_last()?;
        let mut object = arguments;
        for key in parents {
            object = object.get(key)?.as_object()?;
        }
        object.get(last)
    }
}

/// The `x-mcp-header` map of one tool: every annotated property path with
/// its header name and kind, sorted by path.
///
/// Built only by [`x_mcp_header_map`], so every entry is valid and names
/// are unique case-insensitively. Cloning is cheap (shared storage).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ParamHeaderMap {
    params: Arc<[HeaderParam]>,
}

impl ParamHeaderMap {
    /// Same as [`x_mcp_header_map`].
    pub fn from_input_schema(input_schema: &Value) -> Result<Self, String> {
        x_mcp_header_map(input_schema)
    }

    /// All annotations, sorted by property path.
    pub fn params(&self) -> &[HeaderParam] {
        &self.params
    }

    /// Iterates over the annotations, sorted by property path.
    pub fn iter(&self) -> std::slice::Iter<'_, HeaderParam> {
        self.params.iter()
    }

    /// Number of annotated properties.
    pub fn len(&self) -> usize {
        self.params.len()
    }

    /// True when the tool mirrors no argument into a header.
    pub fn is_empty(&self) -> bool {
        self.params.is_empty()
    }

    /// The annotation named `name` (the part after `Mcp-Param-`), compared
    /// case-insensitively.
    pub fn get(&self, name: &str) -> Option<&HeaderParam> {
        self.params
            .iter()
            .find(|p| p.name.eq_ignore_ascii_case(name))
    }

    /// The annotation whose full header name is `header` (`Mcp-Param-<name>`),
    /// compared case-insensitively; `None` for unrecognized headers.
    pub fn find_header(&self, header: &str) -> Option<&HeaderParam> {
        self.params.iter().find(|p| p.matches_header_name(header))
    }
}

impl<'a> IntoIterator for &'a ParamHeaderMap {
    type Item = &'a HeaderParam;
    type IntoIter = std::slice::Iter<'a, HeaderParam>;

    fn into_iter(self) -> Self::IntoIter {
        self.params.iter()
    }
}

// HDR-14, HDR-19
/// Why `input_schema` has an invalid `x-mcp-header` annotation, naming the
/// schema location and the problem; `None` when every annotation is valid
/// (or there is none). Clients drop such tools; servers skip
/// `Mcp-Param-*` validation for them.
pub fn find_invalid_x_mcp_header(input_schema: &Value) -> Option<String> {
    x_mcp_header_map(input_schema).err()
}

// HDR-12, HDR-13
/// Validates every `x-mcp-header` annotation in `input_schema`
/// and returns the header map, or the reason of the first invalid
/// annotation found. A non-object schema has no annotations.
pub fn x_mcp_header_map(input_schema: &Value) -> Result<ParamHeaderMap, String> {
    let Value::Object(root) = input_schema else {
        return Ok(ParamHeaderMap::default());
    };
    let mut params = Walker::default().run(root)?;
    params.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(ParamHeaderMap {
        params: params.into(),
    })
}

// HDR-13
/// Subschema keywords whose value is one schema.
const SINGLE_SCHEMA_KEYWORDS: &[&str] = &[
    "additionalItems",
    "contains",
    "unevaluatedItems",
    "additionalProperties",
    "propertyNames",
    "unevaluatedProperties",
    "not",
    "if",
    "then",
    "else",
    "contentSchema",
];

// HDR-13
/// Subschema keywords whose value is an array of schemas.
const SCHEMA_ARRAY_KEYWORDS: &[&str] = &["allOf", "anyOf", "oneOf", "prefixItems"];

// HDR-13
/// Subschema keywords whose value maps names to schemas. For the
/// draft-07 `dependencies`, string-array members are not schemas and are
/// skipped like every non-object.
const SCHEMA_MAP_KEYWORDS: &[&str] = &[
    "patternProperties",
    "dependentSchemas",
    "dependencies",
    "$defs",
    "definitions",
];

/// One step from a schema object to a child schema object.
#[derive(Debug, Clone, Copy)]
enum Step<'a> {
    /// The root schema (no step).
    Root,
    /// `keyword` holds the child directly (`items`, `not`, …).
    Keyword(&'a str),
    /// `keyword` maps `key` to the child (`properties`, `$defs`, …).
    Member(&'a str, &'a str),
    /// `keyword` is an array holding the child at `index` (`allOf`, …).
    Element(&'a str, usize),
}

/// A visited schema object: how it was reached from its parent.
struct Link<'a> {
    parent: usize,
    step: Step<'a>,
}

/// A schema object waiting to be visited.
struct Frame<'a> {
    schema: &'a Map<String, Value>,
    parent: usize,
    step: Step<'a>,
    depth: usize,
    /// Reached from the root through `properties` keys only.
    on_chain: bool,
}

/// Iterative schema walk state.
#[derive(Default)]
struct Walker<'a> {
    /// Every visited schema object, so locations can be rebuilt on demand.
    links: Vec<Link<'a>>,
    stack: Vec<Frame<'a>>,
    // HDR-12
    /// Lowercased annotation → location of its first use (uniqueness).
    seen: HashMap<String, usize>,
    params: Vec<HeaderParam>,
}

impl<'a> Walker<'a> {
    fn run(mut self, root: &'a Map<String, Value>) -> Result<Vec<HeaderParam>, String> {
        self.stack.push(Frame {
            schema: root,
            parent: usize::MAX,
            step: Step::Root,
            depth: 0,
            on_chain: true,
        });
        while let Some(frame) = self.stack.pop() {
            let index = self.links.len();
            self.links.push(Link {
                parent: frame.parent,
                step: frame.step,
            });
            if frame.depth > MAX_SCHEMA_DEPTH {
                return Err(format!(
                    "inputSchema is nested too deeply (more than {MAX_SCHEMA_DEPTH} levels) at {}",
                    self.pointer(index)
                ));
            }
            if let Some(annotation) = frame.schema.get(X_MCP_HEADER) {
                self.annotation(index, &frame, annotation)?;
            }
            self.push_children(index, &frame);
        }
        Ok(self.params)
    }

    // HDR-13
    /// Queues the subschemas of `frame`. Instance keywords,
    /// `$ref` and unknown keywords are not entered.
    fn push_children(&mut self, index: usize, frame: &Frame<'a>) {
        for (keyword, value) in frame.schema {
            let keyword = keyword.as_str();
            if keyword == "properties" {
                self.push_members(index, frame, keyword, value, frame.on_chain);
            } else if keyword == "items" {
                // Schema (2020-12) or tuple array (draft-07); either leaves the chain.
                self.push_single(index, frame, keyword, value);
                self.push_elements(index, frame, keyword, value);
            } else if SINGLE_SCHEMA_KEYWORDS.contains(&keyword) {
                self.push_single(index, frame, keyword, value);
            } else if SCHEMA_ARRAY_KEYWORDS.contains(&keyword) {
                self.push_elements(index, frame, keyword, value);
            } else if SCHEMA_MAP_KEYWORDS.contains(&keyword) {
                self.push_members(index, frame, keyword, value, false);
            }
        }
    }

    fn push_single(&mut self, index: usize, frame: &Frame<'a>, keyword: &'a str, value: &'a Value) {
        if let Value::Object(schema) = value {
            self.stack.push(Frame {
                schema,
                parent: index,
                step: Step::Keyword(keyword),
                depth: frame.depth + 1,
                on_chain: false,
            });
        }
    }

    fn push_elements(
        &mut self,
        index: usize,
        frame: &Frame<'a>,
        keyword: &'a str,
        value: &'a Value,
    ) {
        if let Value::Array(items) = value {
            for (i, item) in items.iter().enumerate() {
                if let Value::Object(schema) = item {
                    self.stack.push(Frame {
                        schema,
                        parent: index,
                        step: Step::Element(keyword, i),
                        depth: frame.depth + 2,
                        on_chain: false,
                    });
                }
            }
        }
    }

    fn push_members(
        &mut self,
        index: usize,
        frame: &Frame<'a>,
        keyword: &'a str,
        value: &'a Value,
        on_chain: bool,
    ) {
        if let Value::Object(members) = value {
            for (key, member) in members {
                if let Value::Object(schema) = member {
                    self.stack.push(Frame {
                        schema,
                        parent: index,
                        step: Step::Member(keyword, key),
                        depth: frame.depth + 2,
                        on_chain,
                    });
                }
            }
        }
    }

    // HDR-12, HDR-13
    /// Checks one annotation found at schema object `index`.
    fn annotation(
        &mut self,
        index: usize,
        frame: &Frame<'a>,
        annotation: &Value,
    ) -> Result<(), String> {
        if index == 0 {
            return Err(format!(
                "{X_MCP_HEADER} on the root schema is not allowed; it must be on a property reached through `properties` (HDR-13)"
            ));
        }
        let at = self.pointer(index);
        if !frame.on_chain {
            return Err(format!(
                "{X_MCP_HEADER} at {at} is not reachable from the root through `properties` keys alone (HDR-13)"
            ));
        }
        let Value::String(name) = annotation else {
            return Err(format!(
                "{X_MCP_HEADER} at {at} must be a string, found {}",
                json_type(annotation)
            ));
        };
        if name.is_empty() {
            return Err(format!("{X_MCP_HEADER} at {at} is empty (HDR-12)"));
        }
        if !is_token(name) {
            return Err(format!(
                "{X_MCP_HEADER} {name:?} at {at} is not an RFC 9110 token (only ALPHA, DIGIT and !#$%&'*+-.^_`|~ are allowed; HDR-12)"
            ));
        }
        let kind = match frame.schema.get("type") {
            Some(Value::String(t)) => ParamKind::from_type_name(t).ok_or_else(|| {
                format!(
                    "{X_MCP_HEADER} {name:?} at {at} is on a property of type {t:?}; only \"string\", \"integer\" and \"boolean\" are allowed (HDR-12)"
                )
            })?,
            Some(other) => {
                return Err(format!(
                    "{X_MCP_HEADER} {name:?} at {at}: `type` must be exactly \"string\", \"integer\" or \"boolean\", found {} (HDR-12)",
                    json_type(other)
                ));
            }
            None => {
                return Err(format!(
                    "{X_MCP_HEADER} {name:?} at {at} is on a property without `type`; it must be \"string\", \"integer\" or \"boolean\" (HDR-12)"
                ));
            }
        };
        if kind == ParamKind::Integer {
            check_safe_bounds(frame.schema).map_err(|keyword| {
                format!(
                    "{X_MCP_HEADER} {name:?} at {at}: `{keyword}` is outside the safe integer range -(2^53-1)..2^53-1 (HDR-12)"
                )
            })?;
        }
        let folded = name.to_ascii_lowercase();
        if let Some(&first) = self.seen.get(&folded) {
            return Err(format!(
                "{X_MCP_HEADER} {name:?} at {at} duplicates the one at {} (names are case-insensitive; HDR-12)",
                self.pointer(first)
            ));
        }
        self.seen.insert(folded, index);
        self.params.push(HeaderParam {
            path: self.property_path(index),
            name: name.clone(),
            kind,
        });
        Ok(())
    }

    /// RFC 6901 JSON pointer (as a URI fragment) of schema object `index`.
    fn pointer(&self, index: usize) -> String {
        let mut steps = Vec::new();
        let mut i = index;
        while let Some(link) = self.links.get(i) {
            steps.push(link.step);
            i = link.parent;
        }
        let mut out = String::from("#");
        for step in steps.iter().rev() {
            match *step {
                Step::Root => {}
                Step::Keyword(k) => push_segment(&mut out, k),
                Step::Member(k, key) => {
                    push_segment(&mut out, k);
                    push_segment(&mut out, key);
                }
                Step::Element(k, n) => {
                    push_segment(&mut out, k);
                    let _ = write!(out, "/{n}");
                }
            }
        }
        out
    }

    /// The `properties` keys leading to on-chain schema object `index`.
    fn property_path(&self, index: usize) -> Vec<String> {
        let mut path = Vec::new();
        let mut i = index;
        while let Some(link) = self.links.get(i) {
            if let Step::Member(_, key) = link.step {
                path.push(key.to_owned());
            }
            i = link.parent;
        }
        path.reverse();
        path
    }
}

/// Appends `/segment` with RFC 6901 escaping (`~` → `~0`, `/` → `~1`).
fn push_segment(out: &mut String, segment: &str) {
    out.push('/');
    for c in segment.chars() {
        match c {
            '~' => out.push_str("~0"),
            '/' => out.push_str("~1"),
            c => out.push(c),
        }
    }
}

/// True for a non-empty RFC 9110 §5.6.2 `token` (`1*tchar`).
pub fn is_token(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(is_tchar)
}

/// RFC 9110 `tchar`: ALPHA / DIGIT / ``!#$%&'*+-.^_`|~``.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric()
        || matches!(
            b,
            b'!' | b'#'
                | b'$'
                | b'%'
                | b'&'
                | b'\''
                | b'*'
                | b'+'
                | b'-'
                | b'.'
                | b'^'
                | b'_'
                | b'`'
                | b'|'
                | b'~'
        )
}

// handbook Appendix C.5
/// Checks the declared numeric bounds of an integer property against the
/// safe range; the offending keyword on failure. Non-numeric
/// bounds (such as draft-04 boolean `exclusiveMaximum`) are ignored.
fn check_safe_bounds(schema: &Map<String, Value>) -> Result<(), &'static str> {
    const INCLUSIVE: f64 = 9_007_199_254_740_991.0; // 2^53 - 1, exact in f64
    const EXCLUSIVE: f64 = 9_007_199_254_740_992.0; // 2^53, exact in f64
    for (keyword, limit) in [
        ("minimum", INCLUSIVE),
        ("maximum", INCLUSIVE),
        ("exclusiveMinimum", EXCLUSIVE),
        ("exclusiveMaximum", EXCLUSIVE),
    ] {
        if let Some(Value::Number(n)) = schema.get(keyword) {
            if !number_within(n, limit) {
                return Err(keyword);
            }
        }
    }
    Ok(())
}

/// `|n| <= limit`, exact for integers and floats alike.
fn number_within(n: &Number, limit: f64) -> bool {
    // `limit` is an integer below 2^63, so it converts to i64 exactly.
    let limit_int = limit as i64;
    if let Some(i) = n.as_i64() {
        return i.unsigned_abs() <= limit_int.unsigned_abs();
    }
    if n.as_u64().is_some() {
        return false; // above i64::MAX
    }
    n.as_f64().is_some_and(|f| f.abs() <= limit)
}

/// The JSON type name of `v`, for messages.
fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
