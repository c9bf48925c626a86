//! The `_meta` envelope of an admitted request, decoded or only checked.
//!
//! The general path decodes `params._meta` into a [`RequestMeta`]. The
//! one-pass `tools/call` path ([`crate::ladder::decode_tools_call`]) only
//! checks it in place, in the same scan ([`CheckedMeta`]): every known key
//! has the shape the decode accepts, nothing is copied, and the members a
//! server reads on every request (progress token, log level) are typed.
//! The ladder then hands on a checked [`Envelope`], which is decoded into
//! the same [`RequestMeta`] from the request text when something first asks
//! for it ([`Envelope::decode_from`]; most handlers never do).
// META-03, META-04, LADDER-08, LADDER-10, LADDER-12: the check accepts only
// envelopes the decode types without a problem; anything else takes the
// decode, which owns every error text.
use crate::meta::{self, ProgressToken, RequestMeta};
use crate::types::tagged::Str;
use crate::types::{IconTheme, LoggingLevel};
use serde::Deserialize;
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use std::fmt;

/// A `_meta` object that decodes into a [`RequestMeta`] with the modern
/// protocol-version key as a string, client capabilities, and no problem;
/// checked in place, borrowed from the request text.
#[derive(Debug, Clone)]
pub struct CheckedMeta<'a> {
    protocol_version: &'a str,
    progress_token: Option<ProgressToken>,
    log_level: Option<LoggingLevel>,
}

impl<'a> CheckedMeta<'a> {
    /// Checks the text of a `_meta` value. `None` when it is not an
    /// object, lacks the protocol version (as a plain string) or the client
    /// capabilities, repeats a known key, or has a known key the decode
    /// would not type (or would type only after unescaping): the decode
    /// then reports exactly what is wrong.
    pub fn check(text: &'a str) -> Option<Self> {
        let mut de = serde_json::Deserializer::from_str(text);
        let checked = CheckSeed.deserialize(&mut de).ok()?;
        de.end().ok()?;
        Some(checked)
    }

    /// The protocol version, exactly as sent.
    pub fn protocol_version(&self) -> &'a str {
        self.protocol_version
    }

    /// The owned envelope.
    pub fn into_envelope(self) -> Envelope {
        Envelope {
            form: Form::Checked {
                progress_token: self.progress_token,
                log_level: self.log_level,
            },
        }
    }
}

/// Checks a `_meta` value where it stands in a larger text (the one-pass
/// probe): an error for anything [`CheckedMeta::check`] answers `None` to.
pub(crate) struct CheckSeed;

impl<'de> DeserializeSeed<'de> for CheckSeed {
    type Value = CheckedMeta<'de>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(CheckVisitor)
    }
}

/// The `_meta` of an admitted request: decoded, or checked and decoded
/// from the request text on demand ([`Envelope::decode_from`]).
#[derive(Debug, Clone)]
pub struct Envelope {
    form: Form,
}

#[derive(Debug, Clone)]
enum Form {
    Decoded(Box<RequestMeta>),
    Checked {
        progress_token: Option<ProgressToken>,
        log_level: Option<LoggingLevel>,
    },
}

impl Default for Envelope {
    fn default() -> Self {
        Self::decoded(Box::default())
    }
}

impl From<RequestMeta> for Envelope {
    fn from(meta: RequestMeta) -> Self {
        Self::decoded(Box::new(meta))
    }
}

impl Envelope {
    /// An envelope that is already decoded.
    pub fn decoded(meta: Box<RequestMeta>) -> Self {
        Self {
            form: Form::Decoded(meta),
        }
    }

    /// The decoded envelope, when it is held decoded.
    pub fn as_decoded(&self) -> Option<&RequestMeta> {
        match &self.form {
            Form::Decoded(m) => Some(m),
            Form::Checked { .. } => None,
        }
    }

    /// The decoded envelope: the one held, or, for a checked one,
    /// `params._meta` decoded from `message`, the request text it was
    /// checked in (as the general path decodes it). `None` only when
    /// `message` is not that text.
    pub fn decode_from(&self, message: &[u8]) -> Option<RequestMeta> {
        match &self.form {
            Form::Decoded(m) => Some(RequestMeta::clone(m)),
            Form::Checked { .. } => serde_json::from_slice::<MessageMeta>(message)
                .ok()
                .map(|m| m.params.meta),
        }
    }

    /// The client's progress token, if it asked for progress.
    pub fn progress_token(&self) -> Option<&ProgressToken> {
        match &self.form {
            Form::Decoded(m) => m.progress_token.as_ref(),
            Form::Checked { progress_token, .. } => progress_token.as_ref(),
        }
    }

    /// The requested log level, if any.
    pub fn log_level(&self) -> Option<LoggingLevel> {
        match &self.form {
            Form::Decoded(m) => m.log_level,
            Form::Checked { log_level, .. } => *log_level,
        }
    }
}

/// `params._meta` of a request text; every other member skipped.
#[derive(Deserialize)]
struct MessageMeta {
    params: ParamsMeta,
}

#[derive(Deserialize)]
struct ParamsMeta {
    #[serde(rename = "_meta", default)]
    meta: RequestMeta,
}

/// Walks a `_meta` object the way `meta::MetaVisitor` does, failing where
/// that decode would record a problem (or might: a repeated known key, an
/// escaped string), or where the protocol version or the capabilities are
/// missing.
struct CheckVisitor;

impl<'de> Visitor<'de> for CheckVisitor {
    type Value = CheckedMeta<'de>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a _meta object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<CheckedMeta<'de>, A::Error> {
        let (mut protocol_version, mut progress_token, mut log_level) = (None, None, None);
        // One bit per known key: a repeat is left to the decode.
        let mut seen = 0u16;
        let again = || serde::de::Error::custom("not a plain envelope");
        while let Some(Str(key)) = map.next_key::<Str<'de>>()? {
            let bit = match &*key {
                meta::PROTOCOL_VERSION => 1,
                meta::CLIENT_INFO => 2,
                meta::CLIENT_CAPABILITIES => 4,
                meta::LOG_LEVEL => 8,
                meta::PROGRESS_TOKEN => 16,
                meta::TRACEPARENT => 32,
                meta::TRACESTATE => 64,
                meta::BAGGAGE => 128,
                _ => {
                    map.next_value_seed(Skip(MAX_SKIPPED_DEPTH))?;
                    continue;
                }
            };
            if seen & bit != 0 {
                return Err(again());
            }
            seen |= bit;
            match bit {
                1 => protocol_version = Some(map.next_value::<&'de str>()?),
                2 => {
                    map.next_value::<ImplementationCheck<'de>>()?;
                }
                4 => map.next_value_seed(ObjectOf(CAPABILITIES))?,
                8 => {
                    let level = map.next_value::<&'de str>()?;
                    log_level = Some(LoggingLevel::parse(level).ok_or_else(again)?);
                }
                16 => {
                    // As the decode reads it: any JSON value, then a
                    // string or an integer.
                    let v = map.next_value::<serde_json::Value>()?;
                    progress_token = Some(ProgressToken::from_value(&v).ok_or_else(again)?);
                }
                _ => {
                    map.next_value::<&'de str>()?;
                }
            }
        }
        // Both required keys (the capabilities' bit is 4).
        match protocol_version {
            Some(protocol_version) if seen & 4 != 0 => Ok(CheckedMeta {
                protocol_version,
                progress_token,
                log_level,
            }),
            _ => Err(again()),
        }
    }
}

/// How deep a value the check skips may nest. The decode reads these
/// values as `serde_json::Value`s, which stop at serde_json's recursion
/// limit (128 levels from the text's top); a deeper value is left to the
/// decode, well before any decode of the same text could refuse it.
const MAX_SKIPPED_DEPTH: u8 = 64;

/// Skips any JSON value nested at most this many levels deep; deeper is
/// an error (not the one-pass case). Strings and member names are decoded
/// on the way, so a lone surrogate is an error too, as for a `Value`.
#[derive(Clone, Copy)]
pub(crate) struct Skip(u8);

impl Skip {
    /// Skips what `serde_json::Value`'s decode accepts: the bound lies
    /// beyond serde_json's own recursion limit (128), which answers first.
    pub(crate) const AS_DECODE: Self = Self(u8::MAX);
}

impl<'de> DeserializeSeed<'de> for Skip {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Skip {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E: serde::de::Error>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let inner = self.deeper()?;
        while seq.next_element_seed(inner)?.is_some() {}
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let inner = self.deeper()?;
        while map.next_key::<IgnoredAny>()?.is_some() {
            map.next_value_seed(inner)?;
        }
        Ok(())
    }
}

impl Skip {
    fn deeper<E: serde::de::Error>(self) -> Result<Self, E> {
        match self.0.checked_sub(1) {
            Some(d) => Ok(Self(d)),
            None => Err(E::custom("nested too deep for the one-pass check")),
        }
    }
}

/// What a member of a checked object must be: `null` or the kind named.
#[derive(Clone, Copy)]
enum Shape {
    /// Any JSON object (`JsonObject`).
    Object,
    /// A boolean.
    Bool,
    /// An object whose named members have these shapes; other members
    /// may be anything (a struct with a flattened rest).
    Members(&'static [(&'static str, Shape)]),
}

// Mirrors `types::ClientCapabilities` and the capability structs it holds
// (every one a struct of optional members with a flattened rest); the
// envelope tests compare this check with the typed decode.
const CAPABILITIES: &[(&str, Shape)] = &[
    (
        "elicitation",
        Shape::Members(&[("form", Shape::Object), ("url", Shape::Object)]),
    ),
    (
        "sampling",
        Shape::Members(&[("context", Shape::Object), ("tools", Shape::Object)]),
    ),
    ("roots", Shape::Members(&[("listChanged", Shape::Bool)])),
    ("experimental", Shape::Object),
    ("extensions", Shape::Object),
];

/// An object (not `null`) whose named members have these shapes.
struct ObjectOf(&'static [(&'static str, Shape)]);

impl<'de> DeserializeSeed<'de> for ObjectOf {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(Shape::Members(self.0))
    }
}

impl<'de> DeserializeSeed<'de> for Shape {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Shape {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a capability member")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let members = match self {
            // A `JsonObject`: its members as skipped anywhere else.
            Shape::Object => return Skip(MAX_SKIPPED_DEPTH + 1).visit_map(map),
            Shape::Bool => return Err(serde::de::Error::custom("not a boolean")),
            Shape::Members(members) => members,
        };
        // One bit per named member: a repeat is left to the decode.
        let mut seen = 0u8;
        while let Some(Str(key)) = map.next_key::<Str<'de>>()? {
            match members.iter().position(|(name, _)| *name == &*key) {
                Some(i) => {
                    let bit = 1u8 << i;
                    if seen & bit != 0 {
                        return Err(serde::de::Error::custom("repeated member"));
                    }
                    seen |= bit;
                    map.next_value_seed(members[i].1)?;
                }
                None => {
                    map.next_value_seed(Skip(MAX_SKIPPED_DEPTH))?;
                }
            }
        }
        Ok(())
    }
    fn visit_unit<E: serde::de::Error>(self) -> Result<(), E> {
        // `null` is an absent optional member (the capabilities object
        // itself is read through `ObjectOf`, which wants an object).
        Ok(())
    }
    fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<(), E> {
        match self {
            Shape::Bool => Ok(()),
            _ => Err(E::custom("not an object")),
        }
    }
}

/// `clientInfo` as `Implementation` types it, checked without a copy:
/// the same members, required and optional alike; strings borrowed, so an
/// escaped one fails here and is left to the decode.
// Mirrors `types::Implementation` and `types::Icon`; the envelope tests
// compare this check with the decode on generated values.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
struct ImplementationCheck<'a> {
    name: &'a str,
    version: &'a str,
    #[serde(default)]
    title: Option<&'a str>,
    #[serde(default)]
    description: Option<&'a str>,
    #[serde(default, borrow)]
    icons: Option<Vec<IconCheck<'a>>>,
    #[serde(default)]
    website_url: Option<&'a str>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
struct IconCheck<'a> {
    src: &'a str,
    #[serde(default)]
    mime_type: Option<&'a str>,
    #[serde(default, borrow)]
    sizes: Option<Vec<&'a str>>,
    #[serde(default)]
    theme: Option<IconTheme>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::{Value, json};

    /// A request carrying `meta` as its `_meta`.
    fn message(meta: &str) -> String {
        format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"t","_meta":{meta},"arguments":{{}}}}}}"#
        )
    }

    /// What the general path makes of the same text.
    fn decoded(text: &str) -> Option<RequestMeta> {
        serde_json::from_str::<RequestMeta>(text).ok()
    }

    /// A check that passes promises what the ladder relies on, and the
    /// envelope decodes to exactly what the general path decodes.
    fn agrees(text: &str) -> Result<bool, TestCaseError> {
        let Some(c) = CheckedMeta::check(text) else {
            return Ok(false);
        };
        let m = decoded(text);
        prop_assert!(m.is_some(), "checked but undecodable: {}", text);
        let m = m.unwrap_or_default();
        prop_assert!(
            m.problems.is_empty(),
            "checked with problems: {} {:?}",
            text,
            m.problems
        );
        prop_assert!(m.has_protocol_version_key && m.client_capabilities.is_some());
        prop_assert_eq!(m.protocol_version.as_deref(), Some(c.protocol_version()));
        let e = c.into_envelope();
        prop_assert_eq!(e.progress_token(), m.progress_token.as_ref());
        prop_assert_eq!(e.log_level(), m.log_level);
        let lazy = e.decode_from(message(text).as_bytes());
        prop_assert_eq!(lazy.as_ref(), Some(&m));
        prop_assert!(e.as_decoded().is_none());
        Ok(true)
    }

    fn any_string() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(json!("c")),
            Just(json!("")),
            Just(json!("a\"b")),
            Just(json!("\u{e9}")),
            "[a-z0-9 ]{0,6}".prop_map(Value::from),
        ]
    }

    fn any_value() -> impl Strategy<Value = Value> {
        prop_oneof![
            any_string(),
            Just(Value::Null),
            Just(json!(1)),
            Just(json!(-2.5)),
            Just(json!(true)),
            Just(json!([])),
            Just(json!({})),
            Just(json!(["48x48"])),
        ]
    }

    fn any_icon() -> impl Strategy<Value = Value> {
        let key = prop_oneof![
            Just("src"),
            Just("mimeType"),
            Just("sizes"),
            Just("theme"),
            Just("other"),
        ];
        let value = prop_oneof![any_value(), Just(json!("light")), Just(json!("dim"))];
        prop::collection::vec((key, value), 0..5)
            .prop_map(|v| Value::Object(v.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()))
    }

    fn any_client_info() -> impl Strategy<Value = Value> {
        let key = prop_oneof![
            Just("name"),
            Just("version"),
            Just("title"),
            Just("description"),
            Just("websiteUrl"),
            Just("icons"),
            Just("x"),
        ];
        let value = prop_oneof![
            any_value(),
            prop::collection::vec(any_icon(), 0..3).prop_map(Value::from),
        ];
        prop_oneof![
            1 => any_value(),
            6 => (prop::collection::vec((key, value), 0..5), 0..4u8).prop_map(|(v, fill)| {
                let mut o: serde_json::Map<String, Value> =
                    v.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
                // Mostly valid: name and version as strings, unless left out.
                if fill & 1 == 0 {
                    o.entry("name").or_insert(json!("c"));
                }
                if fill != 3 {
                    o.entry("version").or_insert(json!("1"));
                }
                Value::Object(o)
            }),
        ]
    }

    fn any_member() -> impl Strategy<Value = (String, Value)> {
        // Mostly values the decode accepts, so that many cases pass the
        // check and the few wrong ones sit among valid members.
        prop_oneof![
            1 => prop_oneof![3 => Just(json!("2026-07-28")), 1 => Just(json!("x")), 1 => any_value()]
                .prop_map(|v| (meta::PROTOCOL_VERSION.to_owned(), v)),
            1 => prop_oneof![
                2 => Just(json!({})),
                2 => Just(json!({"elicitation": {}, "sampling": {}})),
                2 => Just(json!({"roots": {"listChanged": true}, "experimental": {"a": 1}})),
                1 => Just(json!({"sampling": "no"})),
                1 => Just(json!({"elicitation": {"form": {}}, "other": [1]})),
                1 => Just(json!({"experimental": null, "extensions": {"x": {}}, "tasks": {"a": 1}})),
                1 => Just(json!({"roots": {"listChanged": "yes"}})),
                1 => Just(json!({"roots": null, "elicitation": null, "sampling": {"tools": null, "context": {}}})),
                1 => Just(json!({"experimental": []})),
                1 => Just(json!({"sampling": {"tools": 1}})),
                1 => Just(json!({"elicitation": {"url": 1, "form": {}}})),
                1 => Just(json!({"elicitation": [], "url": {}})),
                1 => Just(json!({"roots": {"listChanged": false, "x": [null]}})),
                1 => any_value(),
            ]
            .prop_map(|v| (meta::CLIENT_CAPABILITIES.to_owned(), v)),
            3 => any_client_info().prop_map(|v| (meta::CLIENT_INFO.to_owned(), v)),
            1 => prop_oneof![3 => Just(json!("debug")), 1 => Just(json!("loud")), 1 => any_value()]
                .prop_map(|v| (meta::LOG_LEVEL.to_owned(), v)),
            1 => prop_oneof![3 => Just(json!(7)), 3 => Just(json!("p")), 1 => Just(json!(1.5)), 1 => any_value()]
                .prop_map(|v| (meta::PROGRESS_TOKEN.to_owned(), v)),
            1 => prop_oneof![
                Just(meta::TRACEPARENT),
                Just(meta::TRACESTATE),
                Just(meta::BAGGAGE)
            ]
            .prop_flat_map(|k| {
                prop_oneof![3 => Just(json!("00-01-02-01")), 1 => any_value()]
                    .prop_map(move |v| (k.to_owned(), v))
            }),
            1 => ("[a-z./]{1,8}", any_value()),
        ]
    }

    /// Members as text: repeats kept (a JSON object in text may repeat a
    /// key); the two required keys are added most of the time.
    fn any_meta_text() -> impl Strategy<Value = String> {
        (prop::collection::vec(any_member(), 0..4), 0..8u8)
            .prop_map(|(mut members, drop)| {
                if drop != 1 {
                    members.push((meta::PROTOCOL_VERSION.to_owned(), json!("2026-07-28")));
                }
                if drop != 2 {
                    members.push((meta::CLIENT_CAPABILITIES.to_owned(), json!({})));
                }
                members
            })
            .prop_shuffle()
            .prop_map(|members| {
                let body: Vec<String> = members
                    .iter()
                    .map(|(k, v)| format!("{}:{v}", Value::from(k.as_str())))
                    .collect();
                format!("{{{}}}", body.join(","))
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2048))]
        #[test]
        fn a_checked_envelope_decodes_as_the_general_path_does(text in any_meta_text()) {
            agrees(&text)?;
        }
    }

    #[test]
    fn the_common_envelopes_are_checked() {
        for text in [
            r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"}}"#,
            r#"{"io.modelcontextprotocol/clientCapabilities":{"elicitation":{},"sampling":{}},"io.modelcontextprotocol/protocolVersion":"2026-07-28","progressToken":3,"io.modelcontextprotocol/logLevel":"info","traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01","com.example/x":{"y":[1]}}"#,
            r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1","title":null,"icons":[{"src":"data:,","sizes":["any"],"theme":"dark"}]}}"#,
        ] {
            assert_eq!(agrees(text).map_err(|e| e.to_string()), Ok(true), "{text}");
        }
    }

    #[test]
    fn anything_unusual_is_left_to_the_decode() {
        for text in [
            // Missing keys, wrong shapes, repeats, escapes.
            r#"{"io.modelcontextprotocol/clientCapabilities":{}}"#,
            r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}"#,
            r#"{"io.modelcontextprotocol/protocolVersion":7,"io.modelcontextprotocol/clientCapabilities":{}}"#,
            r#"{"io.modelcontextprotocol/protocolVersion":"2026\u002d07-28","io.modelcontextprotocol/clientCapabilities":{}}"#,
            r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":1,"version":"1"}}"#,
            r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"sampling":"no"}}"#,
            r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":null}"#,
            r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":1}}}"#,
            r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/logLevel":"loud"}"#,
            r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"progressToken":1.5}"#,
            r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"traceparent":1}"#,
            r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#,
            r#"[]"#,
            r#""x""#,
        ] {
            assert!(CheckedMeta::check(text).is_none(), "{text}");
        }
    }

    /// Values the decode reads as `serde_json::Value` stop at its recursion
    /// limit; the check leaves anything deeper than its own bound to the
    /// decode, so it never accepts what the decode refuses.
    #[test]
    fn deep_values_are_left_to_the_decode() {
        let nest = |d: usize| format!("{}{}", "[".repeat(d), "]".repeat(d));
        let env = |extra: &str| {
            format!(
                r#"{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{extra}}}"#
            )
        };
        let shallow = nest(usize::from(MAX_SKIPPED_DEPTH));
        let deep = nest(200);
        for (extra, checked) in [
            (format!(r#"{{}},"com.example/x":{shallow}"#), true),
            (format!(r#"{{}},"com.example/x":{deep}"#), false),
            (format!(r#"{{"x":{shallow}}}"#), true),
            (format!(r#"{{"x":{deep}}}"#), false),
            (format!(r#"{{"experimental":{{"a":{deep}}}}}"#), false),
            (
                format!(r#"{{"elicitation":{{"form":{{"a":{deep}}}}}}}"#),
                false,
            ),
            (format!(r#"{{"roots":{{"y":{deep}}}}}"#), false),
        ] {
            let text = env(&extra);
            let c = CheckedMeta::check(&text);
            assert_eq!(c.is_some(), checked, "{}", &text[..120]);
            // Whatever is checked decodes, from the whole request too.
            if let Some(c) = c {
                let m = decoded(&text);
                assert!(m.as_ref().is_some_and(|m| m.problems.is_empty()));
                assert_eq!(c.into_envelope().decode_from(message(&text).as_bytes()), m);
            }
            // And the decode refuses what the check left to it.
            if !checked {
                assert!(decoded(&text).is_none_or(|m| !m.problems.is_empty()));
            }
        }
    }

    #[test]
    fn a_decoded_envelope_answers_from_its_meta() {
        let m = RequestMeta {
            log_level: Some(LoggingLevel::Debug),
            progress_token: Some(ProgressToken::from(4)),
            ..RequestMeta::default()
        };
        let e = Envelope::from(m.clone());
        assert_eq!(e.as_decoded(), Some(&m));
        assert_eq!(e.decode_from(b"not even JSON"), Some(m.clone()));
        assert_eq!(e.log_level(), Some(LoggingLevel::Debug));
        assert_eq!(e.progress_token(), Some(&ProgressToken::from(4)));
    }
}
