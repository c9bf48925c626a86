//! RFC 6570 URI templates for MCP resource templates.
//!
//! A template is parsed once into a [`UriTemplate`]; it then
//!
//! - [expands](UriTemplate::expand) variables at levels 1–4 of RFC 6570
//!   (all eight expression types, the `:n` prefix and `*` explode modifiers,
//!   string, list and associative-array values), and
//! - [matches](UriTemplate::match_uri) a concrete URI from `resources/read`
//!   back to its variables, for the forms servers actually use.
//!
//! # Matching
//!
//! Matching is the inverse of expansion for these expression types, with
//! scalar (string) values and no modifiers:
//!
//! | form        | matches                                              |
//! |-------------|------------------------------------------------------|
//! | `{x}`       | a run without reserved characters (`:/?#[]@!$&'()*+,;=`); `{x,y}` splits on `,` |
//! | `{+x}`      | anything, including `/` (`{+x,y}`: split on the first `,`s) |
//! | `{#x}`      | `#` then as `{+x}`; nothing at all → undefined        |
//! | `{.x}`      | `.` then a run without `.` or reserved characters     |
//! | `{/x}`      | `/` then a run without reserved characters; `{/x,y}` → `/a/b` |
//! | `{?x,y}`    | `?name=value&…` in any order; names must be the expression's, values stop at `&` |
//! | `{&x}`      | as `{?x}` with a leading `&`                          |
//!
//! Templates using `{;x}`, a prefix `:n` or an explode `*` modifier still
//! parse and expand, but [`UriTemplate::match_uri`] always answers `None`
//! for them ([`UriTemplate::supports_matching`] tells which).
//!
//! Ambiguity is resolved deterministically, without backtracking, so
//! matching is linear in the URI length even on hostile input:
//!
//! 1. Literal text must match exactly (byte for byte, case-sensitive,
//!    compared with the literal's percent-encoded form).
//! 2. A run of adjacent expressions is a *group*. If the group is followed
//!    only by literal text (the last group), that text must be a suffix of
//!    the URI and the group takes everything before it — so `{id}.json`
//!    against `a.b.json` gives `id = "a.b"`. Otherwise the group ends at the
//!    *first* occurrence of the literal that follows it (leftmost match).
//! 3. Inside a group, an expression ends at the first character that starts
//!    one of the following expressions (`.`, `/`, `?`, `&`, `#`), so
//!    `{name}{.ext}` against `a.tar.gz` is refused (`ext` cannot contain
//!    `.`), and `{+path}{?q}` splits at the first `?`. A group may start with
//!    a simple or reserved expression, but such an expression cannot follow
//!    another one directly (`{a}{b}` is ambiguous; such templates do not
//!    match).
//! 4. An operator expression whose leading character is absent matches as
//!    "all variables undefined" (they are left out of the result), exactly
//!    as expansion drops undefined variables. A simple `{x}` facing an empty
//!    region yields `x = ""`. Fewer pieces than variables leave the trailing
//!    variables undefined; more pieces than variables do not match.
//! 5. Values are percent-decoded and must be UTF-8. `+` in a query value is
//!    a literal `+` (RFC 3986, not form encoding). A reserved expansion
//!    leaves existing `%XX` triplets alone, so `{+x}` cannot tell `%41` in a
//!    value from `A`; the decoded form is returned.
//! 6. A variable occurring twice must match the same value both times.
//!
//! `{+path}` values may contain `..` segments: sanitize them before use as
//! file paths.
// RES-04, RES-05

use crate::percent::{is_sub_delim, is_unreserved};
use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

/// Why a template failed to parse, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateError {
    kind: TemplateErrorKind,
    offset: usize,
}

/// The reason a template is malformed (RFC 6570 §2).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TemplateErrorKind {
    /// A `{` without its `}`.
    UnclosedExpression,
    /// A `}` outside any expression.
    UnmatchedClose,
    /// `{}`.
    EmptyExpression,
    /// An operator reserved by RFC 6570 for future use (`=`, `,`, `!`, `@`, `|`).
    BadOperator(char),
    /// An empty or ill-formed variable name (allowed: `ALPHA / DIGIT / "_" /
    /// pct-encoded`, with single `.` between them).
    BadVarName,
    /// A modifier other than `*` or `:1`..`:9999`.
    BadModifier,
    /// A character not allowed in a template literal (space, `"`, `'`, `<`,
    /// `>`, `\`, `^`, `` ` ``, `|`, control characters).
    InvalidLiteral(char),
    /// A `%` not followed by two hexadecimal digits.
    BadPercentEncoding,
}

impl TemplateError {
    /// The reason.
    pub fn kind(&self) -> &TemplateErrorKind {
        &self.kind
    }

    /// Byte offset in the template where the problem was found.
    pub fn offset(&self) -> usize {
        self.offset
    }
}

impl fmt::Display for TemplateErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnclosedExpression => f.write_str("unclosed expression, missing '}'"),
            Self::UnmatchedClose => f.write_str("'}' outside an expression"),
            Self::EmptyExpression => f.write_str("empty expression"),
            Self::BadOperator(c) => write!(f, "reserved operator {c:?}"),
            Self::BadVarName => f.write_str("invalid variable name"),
            Self::BadModifier => f.write_str("invalid modifier (expected '*' or ':1'..':9999')"),
            Self::InvalidLiteral(c) => write!(f, "character {c:?} not allowed in a template"),
            Self::BadPercentEncoding => f.write_str("'%' not followed by two hex digits"),
        }
    }
}

impl fmt::Display for TemplateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid URI template at byte {}: {}",
            self.offset, self.kind
        )
    }
}

impl std::error::Error for TemplateError {}

/// A variable's value for [`UriTemplate::expand`] (RFC 6570 §2.3).
///
/// An empty list or map is *undefined* (the variable is skipped); an empty
/// string is defined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VarValue {
    /// A string.
    String(String),
    /// A list of strings.
    List(Vec<String>),
    /// An associative array, in expansion order.
    Map(Vec<(String, String)>),
}

impl From<&str> for VarValue {
    fn from(s: &str) -> Self {
        Self::String(s.to_owned())
    }
}

impl From<String> for VarValue {
    fn from(s: String) -> Self {
        Self::String(s)
    }
}

impl From<Vec<String>> for VarValue {
    fn from(items: Vec<String>) -> Self {
        Self::List(items)
    }
}

impl From<Vec<(String, String)>> for VarValue {
    fn from(pairs: Vec<(String, String)>) -> Self {
        Self::Map(pairs)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Simple,
    Reserved,
    Fragment,
    Label,
    Path,
    PathParam,
    Query,
    Continuation,
}

impl Op {
    fn from_char(c: char) -> Option<Self> {
        Some(match c {
            '+' => Self::Reserved,
            '#' => Self::Fragment,
            '.' => Self::Label,
            '/' => Self::Path,
            ';' => Self::PathParam,
            '?' => Self::Query,
            '&' => Self::Continuation,
            _ => return None,
        })
    }

    /// The leading character of a non-empty expansion (RFC 6570 Appendix A "first").
    fn first(self) -> Option<char> {
        match self {
            Self::Simple | Self::Reserved => None,
            Self::Fragment => Some('#'),
            Self::Label => Some('.'),
            Self::Path => Some('/'),
            Self::PathParam => Some(';'),
            Self::Query => Some('?'),
            Self::Continuation => Some('&'),
        }
    }

    fn sep(self) -> char {
        match self {
            Self::Simple | Self::Reserved | Self::Fragment => ',',
            Self::Label => '.',
            Self::Path => '/',
            Self::PathParam => ';',
            Self::Query | Self::Continuation => '&',
        }
    }

    fn named(self) -> bool {
        matches!(self, Self::PathParam | Self::Query | Self::Continuation)
    }

    fn if_empty(self) -> &'static str {
        match self {
            Self::Query | Self::Continuation => "=",
            _ => "",
        }
    }

    fn allow_reserved(self) -> bool {
        matches!(self, Self::Reserved | Self::Fragment)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Modifier {
    None,
    Prefix(usize),
    Explode,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct VarSpec {
    name: String,
    modifier: Modifier,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Expression {
    op: Op,
    vars: Vec<VarSpec>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    /// Literal text, already in its expanded (percent-encoded) form.
    Literal(String),
    Expr(Expression),
}

// RES-04
/// A parsed RFC 6570 URI template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UriTemplate {
    source: String,
    parts: Vec<Part>,
    matchable: bool,
}

impl FromStr for UriTemplate {
    type Err = TemplateError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl fmt::Display for UriTemplate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}

impl UriTemplate {
    /// Parses and validates a template (RFC 6570 §2).
    pub fn parse(template: &str) -> Result<Self, TemplateError> {
        let err = |kind, offset| Err(TemplateError { kind, offset });
        let bytes = template.as_bytes();
        let mut parts = Vec::new();
        let mut literal = String::new();
        let mut pos = 0;
        while let Some(c) = template.get(pos..).and_then(|rest| rest.chars().next()) {
            match c {
                '{' => {
                    let body_start = pos + 1;
                    let Some(len) = template.get(body_start..).and_then(|r| r.find('}')) else {
                        return err(TemplateErrorKind::UnclosedExpression, pos);
                    };
                    let body = template.get(body_start..body_start + len).unwrap_or("");
                    let expr = parse_expression(body, body_start)?;
                    if !literal.is_empty() {
                        parts.push(Part::Literal(std::mem::take(&mut literal)));
                    }
                    parts.push(Part::Expr(expr));
                    pos = body_start + len + 1;
                    continue;
                }
                '}' => return err(TemplateErrorKind::UnmatchedClose, pos),
                '%' => {
                    let triplet = bytes.get(pos..pos + 3);
                    match triplet {
                        Some([_, h, l]) if h.is_ascii_hexdigit() && l.is_ascii_hexdigit() => {
                            literal.push_str(template.get(pos..pos + 3).unwrap_or(""));
                        }
                        _ => return err(TemplateErrorKind::BadPercentEncoding, pos),
                    }
                    pos += 3;
                    continue;
                }
                c if is_literal_char(c) => {
                    if c.is_ascii() {
                        literal.push(c);
                    } else {
                        push_pct_encoded(&mut literal, c.encode_utf8(&mut [0; 4]).as_bytes());
                    }
                }
                c => return err(TemplateErrorKind::InvalidLiteral(c), pos),
            }
            pos += c.len_utf8();
        }
        if !literal.is_empty() {
            parts.push(Part::Literal(literal));
        }
        let matchable = is_matchable(&parts);
        Ok(Self {
            source: template.to_owned(),
            parts,
            matchable,
        })
    }

    /// The template text as given.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// The variable names in order of first appearance, without duplicates.
    pub fn variable_names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = Vec::new();
        for part in &self.parts {
            if let Part::Expr(e) = part {
                for v in &e.vars {
                    if !names.contains(&v.name.as_str()) {
                        names.push(&v.name);
                    }
                }
            }
        }
        names
    }

    /// Whether [`match_uri`](Self::match_uri) can ever succeed for this
    /// template (see the module docs for the supported forms).
    pub fn supports_matching(&self) -> bool {
        self.matchable
    }

    /// Expands the template (RFC 6570 §3, levels 1–4). Variables missing
    /// from `vars` are undefined and skipped.
    pub fn expand(&self, vars: &BTreeMap<String, VarValue>) -> String {
        let mut out = String::with_capacity(self.source.len());
        for part in &self.parts {
            match part {
                Part::Literal(text) => out.push_str(text),
                Part::Expr(e) => expand_expression(e, vars, &mut out),
            }
        }
        out
    }

    /// Matches a concrete URI against the template and returns the variables
    /// it binds, percent-decoded; `None` when it does not match (or the
    /// template does not [support matching](Self::supports_matching)).
    ///
    /// Runs in time linear in `uri.len()`; see the module docs for how
    /// ambiguity is resolved.
    pub fn match_uri(&self, uri: &str) -> Option<BTreeMap<String, String>> {
        if !self.matchable {
            return None;
        }
        let mut out = BTreeMap::new();
        let mut pos = 0;
        let mut i = 0;
        while let Some(part) = self.parts.get(i) {
            match part {
                Part::Literal(text) => {
                    if !uri.get(pos..)?.starts_with(text.as_str()) {
                        return None;
                    }
                    pos += text.len();
                    i += 1;
                }
                Part::Expr(_) => {
                    let group_end = self.parts[i..]
                        .iter()
                        .position(|p| matches!(p, Part::Literal(_)))
                        .map_or(self.parts.len(), |n| i + n);
                    let group: Vec<&Expression> = self.parts[i..group_end]
                        .iter()
                        .filter_map(|p| match p {
                            Part::Expr(e) => Some(e),
                            Part::Literal(_) => None,
                        })
                        .collect();
                    let rest = uri.get(pos..)?;
                    let region_len = match self.parts.get(group_end) {
                        None => rest.len(),
                        Some(Part::Literal(text)) if group_end + 1 == self.parts.len() => {
                            // Last group: the trailing literal anchors at the end.
                            if !rest.ends_with(text.as_str()) {
                                return None;
                            }
                            rest.len() - text.len()
                        }
                        Some(Part::Literal(text)) => rest.find(text.as_str())?,
                        Some(Part::Expr(_)) => return None,
                    };
                    match_group(&group, rest.get(..region_len)?, &mut out)?;
                    pos += region_len;
                    i = group_end;
                }
            }
        }
        (pos == uri.len()).then_some(out)
    }
}

// ---------------------------------------------------------------------------
// Parsing
// ---------------------------------------------------------------------------

/// RFC 6570 §2.1 literals, minus `%` (handled as pct-encoded) and braces.
fn is_literal_char(c: char) -> bool {
    match c {
        '\u{21}' | '\u{23}'..='\u{24}' | '\u{26}' | '\u{28}'..='\u{3B}' | '\u{3D}' => true,
        '\u{3F}'..='\u{5B}' | '\u{5D}' | '\u{5F}' | '\u{61}'..='\u{7A}' | '\u{7E}' => true,
        // ucschar / iprivate; C1 controls excluded.
        c => c >= '\u{A0}',
    }
}

fn parse_expression(body: &str, offset: usize) -> Result<Expression, TemplateError> {
    let err = |kind, offset| Err(TemplateError { kind, offset });
    let Some(first) = body.chars().next() else {
        return err(TemplateErrorKind::EmptyExpression, offset.saturating_sub(1));
    };
    let (op, list, list_offset) = match Op::from_char(first) {
        Some(op) => (op, body.get(1..).unwrap_or(""), offset + 1),
        None if matches!(first, '=' | ',' | '!' | '@' | '|') => {
            return err(TemplateErrorKind::BadOperator(first), offset);
        }
        None => (Op::Simple, body, offset),
    };
    let mut vars = Vec::new();
    let mut spec_offset = list_offset;
    for spec in list.split(',') {
        vars.push(parse_varspec(spec, spec_offset)?);
        spec_offset += spec.len() + 1;
    }
    Ok(Expression { op, vars })
}

fn parse_varspec(spec: &str, offset: usize) -> Result<VarSpec, TemplateError> {
    let err = |kind, at| Err(TemplateError { kind, offset: at });
    let name_len = spec.find([':', '*']).unwrap_or(spec.len());
    let (name, modifier) = spec.split_at(name_len);
    if let Some(bad) = invalid_varname_at(name) {
        return err(TemplateErrorKind::BadVarName, offset + bad);
    }
    let modifier = match modifier {
        "" => Modifier::None,
        "*" => Modifier::Explode,
        m => {
            let digits = m.strip_prefix(':').unwrap_or("");
            let ok = (1..=4).contains(&digits.len())
                && digits.bytes().all(|b| b.is_ascii_digit())
                && !digits.starts_with('0');
            match digits.parse::<usize>() {
                Ok(n) if ok => Modifier::Prefix(n),
                _ => return err(TemplateErrorKind::BadModifier, offset + name_len),
            }
        }
    };
    Ok(VarSpec {
        name: name.to_owned(),
        modifier,
    })
}

/// `varname = varchar *( ["."] varchar )`, `varchar = ALPHA / DIGIT / "_" /
/// pct-encoded`; returns the offset of the first offending byte.
fn invalid_varname_at(name: &str) -> Option<usize> {
    let b = name.as_bytes();
    if b.is_empty() {
        return Some(0);
    }
    let mut i = 0;
    let mut after_varchar = false;
    while let Some(&c) = b.get(i) {
        match c {
            b'%' => {
                let hex = |j: usize| b.get(j).is_some_and(u8::is_ascii_hexdigit);
                if !(hex(i + 1) && hex(i + 2)) {
                    return Some(i);
                }
                i += 3;
                after_varchar = true;
                continue;
            }
            b'.' if after_varchar && i + 1 < b.len() => after_varchar = false,
            c if c.is_ascii_alphanumeric() || c == b'_' => after_varchar = true,
            _ => return Some(i),
        }
        i += 1;
    }
    None
}

/// Whether the matcher supports every expression and the group structure.
fn is_matchable(parts: &[Part]) -> bool {
    let mut previous_was_expr = false;
    for part in parts {
        match part {
            Part::Literal(_) => previous_was_expr = false,
            Part::Expr(e) => {
                if e.op == Op::PathParam
                    || e.vars.iter().any(|v| v.modifier != Modifier::None)
                    || (previous_was_expr && e.op.first().is_none())
                {
                    return false;
                }
                previous_was_expr = true;
            }
        }
    }
    true
}

// ---------------------------------------------------------------------------
// Expansion (RFC 6570 §3.2, Appendix A)
// ---------------------------------------------------------------------------

/// RFC 3986 §2.2 `reserved`: gen-delims and sub-delims.
fn is_reserved(b: u8) -> bool {
    matches!(b, b':' | b'/' | b'?' | b'#' | b'[' | b']' | b'@') || is_sub_delim(b)
}

fn push_pct_encoded(out: &mut String, bytes: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    for &b in bytes {
        out.push('%');
        out.push(char::from(HEX[usize::from(b >> 4)]));
        out.push(char::from(HEX[usize::from(b & 0x0F)]));
    }
}

/// Appends `value`, percent-encoding everything outside `unreserved` (or
/// outside `unreserved / reserved / pct-encoded` when `allow_reserved`).
fn encode_into(out: &mut String, value: &str, allow_reserved: bool) {
    let b = value.as_bytes();
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        if is_unreserved(c) || (allow_reserved && is_reserved(c)) {
            out.push(char::from(c));
        } else if allow_reserved
            && c == b'%'
            && b.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
            && b.get(i + 2).is_some_and(u8::is_ascii_hexdigit)
        {
            out.push_str(value.get(i..i + 3).unwrap_or(""));
            i += 3;
            continue;
        } else {
            push_pct_encoded(out, &[c]);
        }
        i += 1;
    }
}

fn prefix_chars(s: &str, n: usize) -> &str {
    s.char_indices().nth(n).map_or(s, |(i, _)| &s[..i])
}

fn expand_expression(e: &Expression, vars: &BTreeMap<String, VarValue>, out: &mut String) {
    let op = e.op;
    let allow = op.allow_reserved();
    let mut first = true;
    for spec in &e.vars {
        let Some(value) = vars.get(&spec.name) else {
            continue;
        };
        let defined = match value {
            VarValue::String(_) => true,
            VarValue::List(items) => !items.is_empty(),
            VarValue::Map(pairs) => !pairs.is_empty(),
        };
        if !defined {
            continue;
        }
        if first {
            if let Some(c) = op.first() {
                out.push(c);
            }
            first = false;
        } else {
            out.push(op.sep());
        }
        let explode = spec.modifier == Modifier::Explode;
        match value {
            VarValue::String(s) => {
                if op.named() {
                    out.push_str(&spec.name);
                    out.push_str(if s.is_empty() { op.if_empty() } else { "=" });
                }
                let s = match spec.modifier {
                    Modifier::Prefix(n) => prefix_chars(s, n),
                    _ => s,
                };
                encode_into(out, s, allow);
            }
            // Prefix modifiers do not apply to composite values (RFC 6570
            // §2.4.1); they are ignored here.
            VarValue::List(items) if !explode => {
                if op.named() {
                    out.push_str(&spec.name);
                    out.push('=');
                }
                for (k, item) in items.iter().enumerate() {
                    if k > 0 {
                        out.push(',');
                    }
                    encode_into(out, item, allow);
                }
            }
            VarValue::Map(pairs) if !explode => {
                if op.named() {
                    out.push_str(&spec.name);
                    out.push('=');
                }
                for (k, (key, val)) in pairs.iter().enumerate() {
                    if k > 0 {
                        out.push(',');
                    }
                    encode_into(out, key, allow);
                    out.push(',');
                    encode_into(out, val, allow);
                }
            }
            VarValue::List(items) => {
                for (k, item) in items.iter().enumerate() {
                    if k > 0 {
                        out.push(op.sep());
                    }
                    if op.named() {
                        out.push_str(&spec.name);
                        out.push_str(if item.is_empty() { op.if_empty() } else { "=" });
                    }
                    encode_into(out, item, allow);
                }
            }
            VarValue::Map(pairs) => {
                for (k, (key, val)) in pairs.iter().enumerate() {
                    if k > 0 {
                        out.push(op.sep());
                    }
                    encode_into(out, key, allow);
                    if op.named() && val.is_empty() {
                        out.push_str(op.if_empty());
                    } else {
                        out.push('=');
                    }
                    encode_into(out, val, allow);
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Matching
// ---------------------------------------------------------------------------

/// Splits a group's region among its expressions (rule 3 of the module docs).
fn match_group(
    group: &[&Expression],
    region: &str,
    out: &mut BTreeMap<String, String>,
) -> Option<()> {
    let mut rest = region;
    for (k, e) in group.iter().enumerate() {
        let Some(following) = group.get(k + 1..).filter(|f| !f.is_empty()) else {
            return match_expression(e, rest, out);
        };
        let starts: Vec<char> = following.iter().filter_map(|f| f.op.first()).collect();
        let skip = match e.op.first() {
            None => 0,
            Some(c) if rest.starts_with(c) => c.len_utf8(),
            // The leading character is absent: every variable is undefined.
            Some(_) => continue,
        };
        let cut = rest
            .get(skip..)?
            .find(starts.as_slice())
            .map_or(rest.len(), |n| n + skip);
        match_expression(e, rest.get(..cut)?, out)?;
        rest = rest.get(cut..)?;
    }
    Some(())
}

fn match_expression(
    e: &Expression,
    region: &str,
    out: &mut BTreeMap<String, String>,
) -> Option<()> {
    let body = match e.op.first() {
        None => region,
        Some(_) if region.is_empty() => return Some(()),
        Some(c) => region.strip_prefix(c)?,
    };
    match e.op {
        Op::Simple | Op::Label | Op::Path => {
            let mut pieces = body.split(e.op.sep());
            for spec in &e.vars {
                let Some(piece) = pieces.next() else { break };
                if piece.bytes().any(is_reserved) {
                    return None;
                }
                bind(out, &spec.name, piece)?;
            }
            pieces.next().is_none().then_some(())
        }
        Op::Reserved | Op::Fragment => {
            for (spec, piece) in e.vars.iter().zip(body.splitn(e.vars.len(), ',')) {
                bind(out, &spec.name, piece)?;
            }
            Some(())
        }
        Op::Query | Op::Continuation => {
            for pair in body.split('&') {
                // A raw `#` starts a fragment the template does not have.
                if pair.contains('#') {
                    return None;
                }
                let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
                if name.is_empty() || !e.vars.iter().any(|v| v.name == name) {
                    return None;
                }
                bind(out, name, value)?;
            }
            Some(())
        }
        Op::PathParam => None,
    }
}

/// Percent-decodes `raw` and records it, refusing a conflicting earlier value.
fn bind(out: &mut BTreeMap<String, String>, name: &str, raw: &str) -> Option<()> {
    let value = crate::percent::decode(raw)?;
    match out.get(name) {
        Some(existing) if *existing != value => None,
        Some(_) => Some(()),
        None => {
            out.insert(name.to_owned(), value);
            Some(())
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn list(items: &[&str]) -> VarValue {
        VarValue::List(items.iter().map(|s| (*s).to_owned()).collect())
    }

    /// The example variables of RFC 6570 §1.2 and §3.2.
    fn rfc_vars() -> BTreeMap<String, VarValue> {
        let mut v = BTreeMap::new();
        let mut set = |k: &str, val: VarValue| {
            v.insert(k.to_owned(), val);
        };
        set("count", list(&["one", "two", "three"]));
        set("dom", list(&["example", "com"]));
        set("dub", "me/too".into());
        set("hello", "Hello World!".into());
        set("half", "50%".into());
        set("var", "value".into());
        set("who", "fred".into());
        set("base", "http://example.com/home/".into());
        set("path", "/foo/bar".into());
        set("list", list(&["red", "green", "blue"]));
        set(
            "keys",
            VarValue::Map(vec![
                ("semi".into(), ";".into()),
                ("dot".into(), ".".into()),
                ("comma".into(), ",".into()),
            ]),
        );
        set("v", "6".into());
        set("x", "1024".into());
        set("y", "768".into());
        set("empty", "".into());
        set("empty_keys", VarValue::Map(vec![]));
        // `undef` is left out: undefined.
        v
    }

    fn check(cases: &[(&str, &str)]) {
        let vars = rfc_vars();
        for (template, expected) in cases {
            let t = UriTemplate::parse(template).unwrap();
            assert_eq!(t.expand(&vars), *expected, "template {template}");
        }
    }

    #[test]
    fn rfc6570_level1() {
        check(&[("{var}", "value"), ("{hello}", "Hello%20World%21")]);
    }

    #[test]
    fn rfc6570_level2() {
        check(&[
            ("{+var}", "value"),
            ("{+hello}", "Hello%20World!"),
            ("{+path}/here", "/foo/bar/here"),
            ("here?ref={+path}", "here?ref=/foo/bar"),
            ("X{#var}", "X#value"),
            ("X{#hello}", "X#Hello%20World!"),
        ]);
    }

    #[test]
    fn rfc6570_level3() {
        check(&[
            ("map?{x,y}", "map?1024,768"),
            ("{x,hello,y}", "1024,Hello%20World%21,768"),
            ("{+x,hello,y}", "1024,Hello%20World!,768"),
            ("{+path,x}/here", "/foo/bar,1024/here"),
            ("{#x,hello,y}", "#1024,Hello%20World!,768"),
            ("{#path,x}/here", "#/foo/bar,1024/here"),
            ("X{.var}", "X.value"),
            ("X{.x,y}", "X.1024.768"),
            ("{/var}", "/value"),
            ("{/var,x}/here", "/value/1024/here"),
            ("{;x,y}", ";x=1024;y=768"),
            ("{;x,y,empty}", ";x=1024;y=768;empty"),
            ("{?x,y}", "?x=1024&y=768"),
            ("{?x,y,empty}", "?x=1024&y=768&empty="),
            ("?fixed=yes{&x}", "?fixed=yes&x=1024"),
            ("{&x,y,empty}", "&x=1024&y=768&empty="),
        ]);
    }

    #[test]
    fn rfc6570_level4() {
        check(&[
            ("{var:3}", "val"),
            ("{var:30}", "value"),
            ("{list}", "red,green,blue"),
            ("{list*}", "red,green,blue"),
            ("{keys}", "semi,%3B,dot,.,comma,%2C"),
            ("{keys*}", "semi=%3B,dot=.,comma=%2C"),
            ("{+path:6}/here", "/foo/b/here"),
            ("{+list}", "red,green,blue"),
            ("{+list*}", "red,green,blue"),
            ("{+keys}", "semi,;,dot,.,comma,,"),
            ("{+keys*}", "semi=;,dot=.,comma=,"),
            ("{#path:6}/here", "#/foo/b/here"),
            ("{#list}", "#red,green,blue"),
            ("{#list*}", "#red,green,blue"),
            ("{#keys}", "#semi,;,dot,.,comma,,"),
            ("{#keys*}", "#semi=;,dot=.,comma=,"),
            ("X{.var:3}", "X.val"),
            ("X{.list}", "X.red,green,blue"),
            ("X{.list*}", "X.red.green.blue"),
            ("X{.keys}", "X.semi,%3B,dot,.,comma,%2C"),
            ("X{.keys*}", "X.semi=%3B.dot=..comma=%2C"),
            ("{/var:1,var}", "/v/value"),
            ("{/list}", "/red,green,blue"),
            ("{/list*}", "/red/green/blue"),
            ("{/list*,path:4}", "/red/green/blue/%2Ffoo"),
            ("{/keys}", "/semi,%3B,dot,.,comma,%2C"),
            ("{/keys*}", "/semi=%3B/dot=./comma=%2C"),
            ("{;hello:5}", ";hello=Hello"),
            ("{;list}", ";list=red,green,blue"),
            ("{;list*}", ";list=red;list=green;list=blue"),
            ("{;keys}", ";keys=semi,%3B,dot,.,comma,%2C"),
            ("{;keys*}", ";semi=%3B;dot=.;comma=%2C"),
            ("{?var:3}", "?var=val"),
            ("{?list}", "?list=red,green,blue"),
            ("{?list*}", "?list=red&list=green&list=blue"),
            ("{?keys}", "?keys=semi,%3B,dot,.,comma,%2C"),
            ("{?keys*}", "?semi=%3B&dot=.&comma=%2C"),
            ("{&var:3}", "&var=val"),
            ("{&list}", "&list=red,green,blue"),
            ("{&list*}", "&list=red&list=green&list=blue"),
            ("{&keys}", "&keys=semi,%3B,dot,.,comma,%2C"),
            ("{&keys*}", "&semi=%3B&dot=.&comma=%2C"),
        ]);
    }

    #[test]
    fn rfc6570_section3_examples() {
        check(&[
            // §3.2.1
            ("{count}", "one,two,three"),
            ("{count*}", "one,two,three"),
            ("{/count}", "/one,two,three"),
            ("{/count*}", "/one/two/three"),
            ("{;count}", ";count=one,two,three"),
            ("{;count*}", ";count=one;count=two;count=three"),
            ("{?count}", "?count=one,two,three"),
            ("{?count*}", "?count=one&count=two&count=three"),
            ("{&count*}", "&count=one&count=two&count=three"),
            // §3.2.2
            ("{half}", "50%25"),
            ("O{empty}X", "OX"),
            ("O{undef}X", "OX"),
            ("{x,y}", "1024,768"),
            ("?{x,empty}", "?1024,"),
            ("?{x,undef}", "?1024"),
            ("?{undef,y}", "?768"),
            // §3.2.3
            ("{+half}", "50%25"),
            ("{base}index", "http%3A%2F%2Fexample.com%2Fhome%2Findex"),
            ("{+base}index", "http://example.com/home/index"),
            ("O{+empty}X", "OX"),
            ("O{+undef}X", "OX"),
            ("up{+path}{var}/here", "up/foo/barvalue/here"),
            // §3.2.4
            ("{#half}", "#50%25"),
            ("foo{#empty}", "foo#"),
            ("foo{#undef}", "foo"),
            // §3.2.5
            ("{.who}", ".fred"),
            ("{.who,who}", ".fred.fred"),
            ("{.half,who}", ".50%25.fred"),
            ("www{.dom*}", "www.example.com"),
            ("X{.empty}", "X."),
            ("X{.undef}", "X"),
            ("X{.empty_keys}", "X"),
            ("X{.empty_keys*}", "X"),
            // §3.2.6
            ("{/who}", "/fred"),
            ("{/who,who}", "/fred/fred"),
            ("{/half,who}", "/50%25/fred"),
            ("{/who,dub}", "/fred/me%2Ftoo"),
            ("{/var,empty}", "/value/"),
            ("{/var,undef}", "/value"),
            // §3.2.7
            ("{;who}", ";who=fred"),
            ("{;half}", ";half=50%25"),
            ("{;empty}", ";empty"),
            ("{;v,empty,who}", ";v=6;empty;who=fred"),
            ("{;v,bar,who}", ";v=6;who=fred"),
            ("{;x,y,undef}", ";x=1024;y=768"),
            // §3.2.8
            ("{?who}", "?who=fred"),
            ("{?half}", "?half=50%25"),
            ("{?x,y,undef}", "?x=1024&y=768"),
            // §3.2.9
            ("{&who}", "&who=fred"),
            ("{&half}", "&half=50%25"),
        ]);
    }

    #[test]
    fn literals_are_encoded_on_expansion() {
        let t = UriTemplate::parse("x://h/é%20{var}").unwrap();
        assert_eq!(t.expand(&rfc_vars()), "x://h/%C3%A9%20value");
        assert_eq!(t.as_str(), "x://h/é%20{var}");
        assert_eq!(t.to_string(), "x://h/é%20{var}");
        let m = t.match_uri("x://h/%C3%A9%20abc").unwrap();
        assert_eq!(m["var"], "abc");
    }

    #[test]
    fn non_ascii_values_are_utf8_percent_encoded() {
        let t = UriTemplate::parse("{x}{+y}").unwrap();
        let mut vars = BTreeMap::new();
        vars.insert("x".to_owned(), VarValue::from("é €"));
        vars.insert("y".to_owned(), VarValue::from("ü/%zz%41"));
        assert_eq!(t.expand(&vars), "%C3%A9%20%E2%82%AC%C3%BC/%25zz%41");
    }

    #[test]
    fn parse_errors() {
        use TemplateErrorKind as K;
        let cases: &[(&str, K, usize)] = &[
            ("a{b", K::UnclosedExpression, 1),
            ("{", K::UnclosedExpression, 0),
            ("a}b", K::UnmatchedClose, 1),
            ("x{}", K::EmptyExpression, 1),
            ("{=x}", K::BadOperator('='), 1),
            ("{,x}", K::BadOperator(','), 1),
            ("{!x}", K::BadOperator('!'), 1),
            ("{@x}", K::BadOperator('@'), 1),
            ("{|x}", K::BadOperator('|'), 1),
            ("{+}", K::BadVarName, 2),
            ("{x,}", K::BadVarName, 3),
            ("{x,,y}", K::BadVarName, 3),
            ("{a b}", K::BadVarName, 2),
            ("{a-b}", K::BadVarName, 2),
            ("{.a.}", K::BadVarName, 3),
            ("{a..b}", K::BadVarName, 3),
            ("{%zz}", K::BadVarName, 1),
            ("{a{b}", K::BadVarName, 2),
            ("{é}", K::BadVarName, 1),
            ("{x:}", K::BadModifier, 2),
            ("{x:0}", K::BadModifier, 2),
            ("{x:01}", K::BadModifier, 2),
            ("{x:10000}", K::BadModifier, 2),
            ("{x:a}", K::BadModifier, 2),
            ("{x*:3}", K::BadModifier, 2),
            ("{x**}", K::BadModifier, 2),
            ("{x:3*}", K::BadModifier, 2),
            ("a b", K::InvalidLiteral(' '), 1),
            ("a\"b", K::InvalidLiteral('"'), 1),
            ("a<b", K::InvalidLiteral('<'), 1),
            ("a|b", K::InvalidLiteral('|'), 1),
            ("a\u{7}b", K::InvalidLiteral('\u{7}'), 1),
            ("a%", K::BadPercentEncoding, 1),
            ("a%4", K::BadPercentEncoding, 1),
            ("a%g1", K::BadPercentEncoding, 1),
        ];
        for (template, kind, offset) in cases {
            let e = UriTemplate::parse(template).expect_err(template);
            assert_eq!(
                (e.kind(), e.offset()),
                (kind, *offset),
                "template {template}"
            );
            assert!(e.to_string().starts_with("invalid URI template at byte"));
        }
        for ok in [
            "",
            "plain",
            "{a.b}",
            "{a_1,B2}",
            "{a%20b}",
            "{x:9999}",
            "{x*}",
            "%41{x}",
            "x://é/{x}",
        ] {
            assert!(UriTemplate::parse(ok).is_ok(), "{ok}");
        }
    }

    fn m(template: &str, uri: &str) -> Option<BTreeMap<String, String>> {
        UriTemplate::parse(template).unwrap().match_uri(uri)
    }

    fn pairs(items: &[(&str, &str)]) -> Option<BTreeMap<String, String>> {
        Some(
            items
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        )
    }

    #[test]
    fn match_simple() {
        let t = "test://template/{id}/data";
        assert_eq!(m(t, "test://template/123/data"), pairs(&[("id", "123")]));
        assert_eq!(m(t, "test://template/123/other"), None);
        assert_eq!(m(t, "test://template/1/2/data"), None);
        assert_eq!(m(t, "test://other/123/data"), None);
        assert_eq!(m(t, "test://template/123/data/"), None);
        assert_eq!(m(t, "test://template/123"), None);
        assert_eq!(m(t, ""), None);
        assert_eq!(m(t, "test://template//data"), pairs(&[("id", "")]));
        assert_eq!(
            m(t, "test://template/a%20b%2Fc/data"),
            pairs(&[("id", "a b/c")])
        );
        assert_eq!(m(t, "test://template/%C3%A9/data"), pairs(&[("id", "é")]));
        assert_eq!(m(t, "test://template/%zz/data"), None);
        assert_eq!(m(t, "test://template/%FF/data"), None, "not UTF-8");
        assert_eq!(m(t, "test://template/a?b/data"), None);
        assert_eq!(m(t, "test://template/a,b/data"), None);

        assert_eq!(
            m("db://{table}/{id}", "db://users/42"),
            pairs(&[("table", "users"), ("id", "42")])
        );
        assert_eq!(
            m("db://{a},{b}", "db://1,2"),
            pairs(&[("a", "1"), ("b", "2")])
        );
        assert_eq!(m("x:{a,b}", "x:1,2"), pairs(&[("a", "1"), ("b", "2")]));
        assert_eq!(m("x:{a,b}", "x:1"), pairs(&[("a", "1")]));
        assert_eq!(m("x:{a,b}", "x:1,2,3"), None);
        assert_eq!(
            m("users://{id}.json", "users://a.b.json"),
            pairs(&[("id", "a.b")])
        );
        assert_eq!(
            m("x://{id}-details/x", "x://12-details/x"),
            pairs(&[("id", "12")])
        );
        assert_eq!(m("plain://a", "plain://a"), pairs(&[]));
        assert_eq!(m("plain://a", "plain://ab"), None);
        assert_eq!(m("x://{a}/{a}", "x://1/1"), pairs(&[("a", "1")]));
        assert_eq!(m("x://{a}/{a}", "x://1/2"), None);
    }

    #[test]
    fn match_reserved_and_fragment() {
        assert_eq!(
            m("file:///{+path}", "file:///a/b/c.txt"),
            pairs(&[("path", "a/b/c.txt")])
        );
        assert_eq!(
            m("file:///{+path}", "file:///a%20b"),
            pairs(&[("path", "a b")])
        );
        assert_eq!(
            m("x://{+path}/data", "x://a/data/b/data"),
            pairs(&[("path", "a/data/b")])
        );
        assert_eq!(
            m("x://{+a}/sep/{b}", "x://p/q/sep/r"),
            pairs(&[("a", "p/q"), ("b", "r")])
        );
        assert_eq!(
            m("x://{+a,b}", "x://p/q,r,s"),
            pairs(&[("a", "p/q"), ("b", "r,s")])
        );
        assert_eq!(m("x://h{#frag}", "x://h#a/b"), pairs(&[("frag", "a/b")]));
        assert_eq!(m("x://h{#frag}", "x://h"), pairs(&[]));
        assert_eq!(m("x://h{#frag}", "x://hx"), None);
        assert_eq!(
            m("x://{+path}{?q}", "x://a/b?q=1"),
            pairs(&[("path", "a/b"), ("q", "1")])
        );
        assert_eq!(m("x://{+path}{?q}", "x://a/b"), pairs(&[("path", "a/b")]));
        assert_eq!(
            m("x://{+path}{#f}", "x://a?b#c"),
            pairs(&[("path", "a?b"), ("f", "c")])
        );
    }

    #[test]
    fn match_label_and_path() {
        assert_eq!(m("x://f{.ext}", "x://f.txt"), pairs(&[("ext", "txt")]));
        assert_eq!(m("x://f{.ext}", "x://f"), pairs(&[]));
        assert_eq!(m("x://f{.ext}", "x://f.tar.gz"), None);
        assert_eq!(
            m("x://f{.a,b}", "x://f.tar.gz"),
            pairs(&[("a", "tar"), ("b", "gz")])
        );
        assert_eq!(
            m("x://{name}{.ext}", "x://a.b"),
            pairs(&[("name", "a"), ("ext", "b")])
        );
        assert_eq!(m("x://{name}{.ext}", "x://a.b.c"), None);
        assert_eq!(
            m("x://h{/a,b}", "x://h/1/2"),
            pairs(&[("a", "1"), ("b", "2")])
        );
        assert_eq!(m("x://h{/a,b}", "x://h/1"), pairs(&[("a", "1")]));
        assert_eq!(m("x://h{/a,b}", "x://h/1/2/3"), None);
        assert_eq!(m("x://h{/a}", "x://h1"), None);
        assert_eq!(
            m("x://h{/a}{.b}{?c}", "x://h/1.2?c=3"),
            pairs(&[("a", "1"), ("b", "2"), ("c", "3")])
        );
        assert_eq!(
            m("x://h{/a}{.b}{?c}", "x://h/1?c=3"),
            pairs(&[("a", "1"), ("c", "3")])
        );
        assert_eq!(m("x://h{/a}{.b}{?c}", "x://h.2"), pairs(&[("b", "2")]));
    }

    #[test]
    fn match_query() {
        let t = "search://items{?q,limit}";
        assert_eq!(
            m(t, "search://items?q=rust&limit=5"),
            pairs(&[("q", "rust"), ("limit", "5")])
        );
        assert_eq!(
            m(t, "search://items?limit=5&q=rust"),
            pairs(&[("q", "rust"), ("limit", "5")])
        );
        assert_eq!(m(t, "search://items?q=a%26b+c"), pairs(&[("q", "a&b+c")]));
        assert_eq!(m(t, "search://items?q="), pairs(&[("q", "")]));
        assert_eq!(m(t, "search://items?q"), pairs(&[("q", "")]));
        assert_eq!(m(t, "search://items"), pairs(&[]));
        assert_eq!(m(t, "search://items?"), None);
        assert_eq!(m(t, "search://items?q=1&&limit=2"), None);
        assert_eq!(m(t, "search://items?other=1"), None);
        assert_eq!(m(t, "search://items?q=1&q=2"), None);
        assert_eq!(m(t, "search://items?=1"), None);
        assert_eq!(m(t, "search://itemsX"), None);
        assert_eq!(m(t, "search://items?q=1#frag"), None);
        let t = "x://s?fixed=yes{&x,y}";
        assert_eq!(
            m(t, "x://s?fixed=yes&x=1&y=2"),
            pairs(&[("x", "1"), ("y", "2")])
        );
        assert_eq!(m(t, "x://s?fixed=yes"), pairs(&[]));
        assert_eq!(m(t, "x://s?fixed=yes?x=1"), None);
    }

    #[test]
    fn unsupported_forms_never_match() {
        for t in [
            "x://{;a}",
            "x://{a*}",
            "x://{a:3}",
            "x://{a}{b}",
            "x://{+a}{b}",
            "{a}{+b}",
        ] {
            let t = UriTemplate::parse(t).unwrap();
            assert!(!t.supports_matching());
            assert_eq!(t.match_uri("x://1"), None);
        }
        assert!(
            UriTemplate::parse("x://{a}{/b}")
                .unwrap()
                .supports_matching()
        );
    }

    #[test]
    fn variable_names() {
        let t = UriTemplate::parse("x://{a}/{+b,a}{?c,b}").unwrap();
        assert_eq!(t.variable_names(), vec!["a", "b", "c"]);
        assert_eq!(
            "x{y}".parse::<UriTemplate>().unwrap().variable_names(),
            vec!["y"]
        );
    }

    #[test]
    fn matching_is_linear_on_hostile_input() {
        let long = "a".repeat(200_000);
        let t = UriTemplate::parse("x://{a}x{b}x{c}x{d}y").unwrap();
        assert_eq!(t.match_uri(&format!("x://{long}")), None);
        let t = UriTemplate::parse("{+a}ab{+b}ab{+c}ab{+d}ac").unwrap();
        assert_eq!(t.match_uri(&"ab".repeat(100_000)), None);
        let t = UriTemplate::parse("x:{/a}{.b}{?c}{#d}").unwrap();
        assert_eq!(t.match_uri(&format!("x:/{}", "./?#".repeat(50_000))), None);
        let t = UriTemplate::parse("x:{?q}").unwrap();
        assert_eq!(t.match_uri(&format!("x:?{}", "q=1&".repeat(50_000))), None);
    }

    fn round_trip(template: &str, values: &[(&str, String)]) -> Result<(), TestCaseError> {
        let t = UriTemplate::parse(template).unwrap();
        let vars: BTreeMap<String, VarValue> = values
            .iter()
            .map(|(k, v)| ((*k).to_owned(), VarValue::String(v.clone())))
            .collect();
        let uri = t.expand(&vars);
        let expected: BTreeMap<String, String> = values
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect();
        prop_assert_eq!(t.match_uri(&uri), Some(expected), "uri {}", uri);
        Ok(())
    }

    proptest! {
        #[test]
        fn expand_then_match_simple(a in "[A-Za-z0-9._~-]{0,20}", b in "[A-Za-z0-9._~-]{0,20}") {
            round_trip("test://template/{id}/data", &[("id", a.clone())])?;
            round_trip("db://{table}/{id}", &[("table", a.clone()), ("id", b.clone())])?;
            round_trip("x://h/{a}.json", &[("a", a.clone())])?;
            round_trip("x://h/{a,b}", &[("a", a.clone()), ("b", b.clone())])?;
        }

        #[test]
        fn expand_then_match_arbitrary_values(a in any::<String>(), b in any::<String>()) {
            round_trip("test://template/{id}/data", &[("id", a.clone())])?;
            round_trip("db://{table}/{id}", &[("table", a.clone()), ("id", b.clone())])?;
            round_trip("x://h{/a,b}", &[("a", a.clone()), ("b", b.clone())])?;
            round_trip("x://h/{a}{?q,r}", &[("a", a.clone()), ("q", b.clone()), ("r", a.clone())])?;
            // `.` is unreserved, so a label value containing it cannot round-trip;
            // a fragment passes `%XX` through, so `%` cannot either.
            round_trip("x://h/f{.ext}{#frag}", &[("ext", a.replace('.', "")), ("frag", b.replace('%', ""))])?;
        }

        #[test]
        fn expand_then_match_reserved(p in "[A-Za-z0-9/._~:@!$'()*+;=-]{0,30}", q in "[a-z]{0,5}") {
            round_trip("file:///{+path}", &[("path", p.clone())])?;
            round_trip("x://{+path}/data", &[("path", p.clone())])?;
            round_trip("x://{+path}{?q}", &[("path", p.replace('?', "")), ("q", q.clone())])?;
        }

        #[test]
        fn parse_never_panics(template in any::<String>()) {
            if let Ok(t) = UriTemplate::parse(&template) {
                let _ = t.expand(&rfc_vars());
                let _ = t.match_uri(&template);
            }
        }

        #[test]
        fn parse_never_panics_on_template_like(template in "[{}a-z,.:*+#/;?&=!%0-9]{0,24}",
                                               uri in "[a-z0-9/.?&=#%,;:-]{0,24}") {
            if let Ok(t) = UriTemplate::parse(&template) {
                let _ = t.expand(&rfc_vars());
                if let Some(vars) = t.match_uri(&uri) {
                    // Every bound name is one of the template's variables.
                    let names = t.variable_names();
                    prop_assert!(vars.keys().all(|k| names.contains(&k.as_str())));
                }
            }
        }

        #[test]
        fn match_never_panics(uri in any::<String>()) {
            for t in ["test://template/{id}/data", "file:///{+path}", "x://{a}{.b}{/c}{?d,e}{#f}",
                      "x:{&a}", "{+a,b}x{c}y"] {
                let _ = UriTemplate::parse(t).unwrap().match_uri(&uri);
            }
        }
    }
}
