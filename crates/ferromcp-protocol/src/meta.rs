//! The `_meta` envelope and `_meta` key rules.
//!
//! [`RequestMeta`] is the typed form of a request's `params._meta`, decoded
//! once per request. Known keys are typed; every other key is kept verbatim
//! in [`RequestMeta::other`].
//!
//! Decoding is lenient on purpose: a wrongly typed known key does not fail
//! the decode but is recorded in [`RequestMeta::problems`], so the ladder can
//! report the right rung in the right order (envelope shape before version).
// META-*, META-12; the rungs are LADDER-08 and LADDER-10.
// Foreign type: serde_json (`Value`, `Map`, `RawValue`, `Number`, `Error`) in this module's public
// signatures: it is the JSON data model users pass in and get back (arbitrary params, results,
// schemas, `_meta`); the SDK is built on serde_json by design.

use crate::jsonrpc::RequestId;
use crate::types::{ClientCapabilities, Implementation, JsonObject, LoggingLevel};
use crate::version::ProtocolVersion;
use serde::de::{Deserializer, MapAccess, Visitor};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;
use std::fmt;

// META-03
/// `io.modelcontextprotocol/protocolVersion`.
pub const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
// META-04
/// `io.modelcontextprotocol/clientInfo`.
pub const CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
// META-03
/// `io.modelcontextprotocol/clientCapabilities`.
pub const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
// LOG-01
/// `io.modelcontextprotocol/logLevel`.
pub const LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
// META-08
/// `io.modelcontextprotocol/serverInfo` on results.
pub const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
// META-11
/// `io.modelcontextprotocol/subscriptionId` on listen-stream notifications.
pub const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
// PROG-01
/// `progressToken`.
pub const PROGRESS_TOKEN: &str = "progressToken";
/// W3C trace context `traceparent`.
pub const TRACEPARENT: &str = "traceparent";
/// W3C trace context `tracestate`.
pub const TRACESTATE: &str = "tracestate";
/// W3C `baggage`.
pub const BAGGAGE: &str = "baggage";

// PROG-01
/// A progress token: a string or an integer. Reuses the id type,
/// which has exactly that shape and preserves the JSON type.
pub type ProgressToken = RequestId;

/// A known key whose value had the wrong shape.
#[derive(Debug, Clone, PartialEq)]
pub struct MetaProblem {
    /// The key.
    pub key: &'static str,
    /// What was wrong, one sentence.
    pub reason: String,
}

/// The typed per-request `_meta` envelope.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RequestMeta {
    /// The protocol version, exactly as sent, when it is a string.
    pub protocol_version: Option<String>,
    /// The client's self-description.
    pub client_info: Option<Implementation>,
    /// The client's capabilities for this request.
    pub client_capabilities: Option<ClientCapabilities>,
    /// Requested log level (opt-in to `notifications/message`).
    pub log_level: Option<LoggingLevel>,
    /// Progress token (opt-in to `notifications/progress`).
    pub progress_token: Option<ProgressToken>,
    /// W3C `traceparent`.
    pub traceparent: Option<String>,
    /// W3C `tracestate`.
    pub tracestate: Option<String>,
    /// W3C `baggage`.
    pub baggage: Option<String>,
    /// Every other key, verbatim.
    pub other: JsonObject,
    /// Known keys that were present with a wrong shape.
    pub problems: Vec<MetaProblem>,
    /// Whether `io.modelcontextprotocol/protocolVersion` was present at all.
    pub has_protocol_version_key: bool,
}

impl RequestMeta {
    /// A modern envelope for `version` with the given capabilities.
    pub fn modern(version: ProtocolVersion, caps: ClientCapabilities) -> Self {
        Self {
            protocol_version: Some(version.as_str().to_owned()),
            has_protocol_version_key: true,
            client_capabilities: Some(caps),
            ..Self::default()
        }
    }

    /// True when nothing would be serialized.
    pub fn is_empty(&self) -> bool {
        self.protocol_version.is_none()
            && self.client_info.is_none()
            && self.client_capabilities.is_none()
            && self.log_level.is_none()
            && self.progress_token.is_none()
            && self.traceparent.is_none()
            && self.tracestate.is_none()
            && self.baggage.is_none()
            && self.other.is_empty()
    }

    // ERA-*
    /// Whether the envelope carries the modern protocol-version key.
    pub fn is_modern_envelope(&self) -> bool {
        self.has_protocol_version_key
    }

    /// Decodes the `_meta` member of a raw params object, if any.
    ///
    /// `Ok(None)` when params or `_meta` are absent; `Err` when `_meta` is
    /// present but not an object (or params are not valid JSON).
    pub fn from_params(
        params: Option<&serde_json::value::RawValue>,
    ) -> Result<Option<Self>, String> {
        let Some(params) = params else {
            return Ok(None);
        };
        #[derive(Deserialize)]
        struct Probe {
            #[serde(rename = "_meta", default)]
            meta: Option<RequestMeta>,
        }
        serde_json::from_str::<Probe>(params.get())
            .map(|p| p.meta)
            .map_err(|e| e.to_string())
    }
}

fn problem(meta: &mut RequestMeta, key: &'static str, reason: impl fmt::Display) {
    meta.problems.push(MetaProblem {
        key,
        reason: reason.to_string(),
    });
}

/// Decodes a `_meta` object. `strict` decodes `clientInfo` and
/// `clientCapabilities` in place and fails on a malformed one (the caller
/// then decodes again without `strict`, which records the problem instead).
pub(crate) struct MetaVisitor {
    pub(crate) strict: bool,
}

impl<'de> Visitor<'de> for MetaVisitor {
    type Value = RequestMeta;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a _meta object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RequestMeta, A::Error> {
        let mut m = RequestMeta::default();
        while let Some(crate::types::tagged::Str(key)) =
            map.next_key::<crate::types::tagged::Str<'de>>()?
        {
            match &*key {
                PROTOCOL_VERSION => {
                    m.has_protocol_version_key = true;
                    match map.next_value::<StrOrKind>()? {
                        StrOrKind::Str(s) => m.protocol_version = Some(s),
                        StrOrKind::Other(k) => problem(
                            &mut m,
                            PROTOCOL_VERSION,
                            format_args!("must be a string, got {k}"),
                        ),
                    }
                }
                CLIENT_INFO if self.strict => m.client_info = Some(map.next_value()?),
                CLIENT_CAPABILITIES if self.strict => {
                    m.client_capabilities = Some(map.next_value()?);
                }
                CLIENT_INFO => match typed::<Implementation>(&map.next_value::<Box<RawValue>>()?) {
                    Ok(v) => m.client_info = Some(v),
                    Err(e) => problem(&mut m, CLIENT_INFO, e),
                },
                CLIENT_CAPABILITIES => {
                    match typed::<ClientCapabilities>(&map.next_value::<Box<RawValue>>()?) {
                        Ok(v) => m.client_capabilities = Some(v),
                        Err(e) => problem(&mut m, CLIENT_CAPABILITIES, e),
                    }
                }
                LOG_LEVEL => match map.next_value::<StrOrKind>()? {
                    StrOrKind::Str(s) => match LoggingLevel::parse(&s) {
                        Some(l) => m.log_level = Some(l),
                        None => problem(&mut m, LOG_LEVEL, format_args!("unknown log level {s:?}")),
                    },
                    StrOrKind::Other(k) => {
                        problem(&mut m, LOG_LEVEL, format_args!("must be a string, got {k}"))
                    }
                },
                PROGRESS_TOKEN => {
                    let v: Value = map.next_value()?;
                    match RequestId::from_value(&v) {
                        Some(t) => m.progress_token = Some(t),
                        None => problem(&mut m, PROGRESS_TOKEN, "must be a string or an integer"),
                    }
                }
                TRACEPARENT | TRACESTATE | BAGGAGE => {
                    let k: &'static str = match &*key {
                        TRACEPARENT => TRACEPARENT,
                        TRACESTATE => TRACESTATE,
                        _ => BAGGAGE,
                    };
                    match map.next_value::<StrOrKind>()? {
                        StrOrKind::Str(s) => match k {
                            TRACEPARENT => m.traceparent = Some(s),
                            TRACESTATE => m.tracestate = Some(s),
                            _ => m.baggage = Some(s),
                        },
                        StrOrKind::Other(_) => problem(&mut m, k, "must be a string"),
                    }
                }
                _ => {
                    let v: Value = map.next_value()?;
                    m.other.insert(key.into_owned(), v);
                }
            }
        }
        Ok(m)
    }
}

/// Decodes a `_meta` member held as raw JSON (no `serde_json::Value` tree
/// on the way: the hot path of every modern request). On failure the value
/// is decoded again through `Value`, so the problem text is the same as
/// `serde_json::from_value` gives (no line/column of the raw slice).
fn typed<T: serde::de::DeserializeOwned>(raw: &RawValue) -> Result<T, serde_json::Error> {
    serde_json::from_str::<T>(raw.get())
        .or_else(|_| serde_json::from_str::<Value>(raw.get()).and_then(serde_json::from_value::<T>))
}

/// A string member, or the kind of JSON value found instead; decoded
/// without building a `Value` for the common (string) case.
enum StrOrKind {
    Str(String),
    Other(&'static str),
}

impl<'de> Deserialize<'de> for StrOrKind {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = StrOrKind;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<StrOrKind, E> {
                Ok(StrOrKind::Str(v.to_owned()))
            }
            fn visit_string<E: serde::de::Error>(self, v: String) -> Result<StrOrKind, E> {
                Ok(StrOrKind::Str(v))
            }
            fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<StrOrKind, E> {
                Ok(StrOrKind::Other("a boolean"))
            }
            fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<StrOrKind, E> {
                Ok(StrOrKind::Other("a number"))
            }
            fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<StrOrKind, E> {
                Ok(StrOrKind::Other("a number"))
            }
            fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<StrOrKind, E> {
                Ok(StrOrKind::Other("a number"))
            }
            fn visit_unit<E: serde::de::Error>(self) -> Result<StrOrKind, E> {
                Ok(StrOrKind::Other("null"))
            }
            fn visit_none<E: serde::de::Error>(self) -> Result<StrOrKind, E> {
                Ok(StrOrKind::Other("null"))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<StrOrKind, A::Error> {
                while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
                Ok(StrOrKind::Other("an array"))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<StrOrKind, A::Error> {
                while map
                    .next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?
                    .is_some()
                {}
                Ok(StrOrKind::Other("an object"))
            }
        }
        d.deserialize_any(V)
    }
}

impl<'de> Deserialize<'de> for RequestMeta {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(MetaVisitor { strict: false })
    }
}

impl Serialize for RequestMeta {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        if let Some(v) = &self.protocol_version {
            map.serialize_entry(PROTOCOL_VERSION, v)?;
        }
        if let Some(v) = &self.client_info {
            map.serialize_entry(CLIENT_INFO, v)?;
        }
        if let Some(v) = &self.client_capabilities {
            map.serialize_entry(CLIENT_CAPABILITIES, v)?;
        }
        if let Some(v) = &self.log_level {
            map.serialize_entry(LOG_LEVEL, v)?;
        }
        if let Some(v) = &self.progress_token {
            map.serialize_entry(PROGRESS_TOKEN, v)?;
        }
        if let Some(v) = &self.traceparent {
            map.serialize_entry(TRACEPARENT, v)?;
        }
        if let Some(v) = &self.tracestate {
            map.serialize_entry(TRACESTATE, v)?;
        }
        if let Some(v) = &self.baggage {
            map.serialize_entry(BAGGAGE, v)?;
        }
        for (k, v) in &self.other {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

// META-01, META-02
/// Why a `_meta` key is not acceptable for a sender.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MetaKeyError {
    /// A prefix label breaks the label syntax.
    BadLabel(String),
    /// The name part breaks the name syntax.
    BadName(String),
    /// A non-spec key under a reserved prefix.
    Reserved(String),
}

impl fmt::Display for MetaKeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::BadLabel(l) => write!(
                f,
                "prefix label {l:?} must start with a letter, end with a letter or digit, and contain only letters, digits and '-'"
            ),
            Self::BadName(n) => write!(
                f,
                "name {n:?} must start and end with a letter or digit and contain only letters, digits, '-', '_' and '.'"
            ),
            Self::Reserved(p) => write!(f, "prefix {p:?} is reserved for MCP"),
        }
    }
}

impl std::error::Error for MetaKeyError {}

fn valid_label(l: &str) -> bool {
    let b = l.as_bytes();
    match (b.first(), b.last()) {
        (Some(f), Some(e)) => {
            f.is_ascii_alphabetic()
                && e.is_ascii_alphanumeric()
                && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'-')
        }
        _ => false,
    }
}

fn valid_name(n: &str) -> bool {
    let b = n.as_bytes();
    match (b.first(), b.last()) {
        (None, _) => true,
        (Some(f), Some(e)) => {
            f.is_ascii_alphanumeric()
                && e.is_ascii_alphanumeric()
                && b.iter()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
        }
        _ => false,
    }
}

fn is_mcp_word(l: &str) -> bool {
    l == "modelcontextprotocol" || l == "mcp"
}

/// Whether `key`'s prefix is reserved for MCP under `version`'s wording.
///
/// - 2025-11-25 and 2026-07-28: the *second* label is `modelcontextprotocol`
///   or `mcp` (`io.modelcontextprotocol/`, `dev.mcp/`, `com.mcp.tools/`;
///   not `com.example.mcp/`).
/// - 2025-06-18: any label that is `modelcontextprotocol` or `mcp` and is
///   followed by another label (`modelcontextprotocol.io/`, `tools.mcp.com/`).
/// - 2025-03-26 and 2024-11-05 define no key rules.
pub fn is_reserved_key(key: &str, version: ProtocolVersion) -> bool {
    let Some((prefix, _)) = key.split_once('/') else {
        return false;
    };
    let labels: Vec<&str> = prefix.split('.').collect();
    match version {
        ProtocolVersion::V2024_11_05 | ProtocolVersion::V2025_03_26 => false,
        ProtocolVersion::V2025_06_18 => labels
            .iter()
            .take(labels.len().saturating_sub(1))
            .any(|l| is_mcp_word(l)),
        ProtocolVersion::V2025_11_25 | ProtocolVersion::V2026_07_28 => {
            labels.get(1).is_some_and(|l| is_mcp_word(l))
        }
    }
}

// META-02
/// Keys the specification itself defines, which may sit under reserved
/// prefixes or be unprefixed.
pub fn is_spec_key(key: &str) -> bool {
    // SEP-2640 "Resource Metadata": a skill's extra front-matter fields
    // on its SKILL.md resource.
    key.starts_with(crate::types::SKILLS_META_PREFIX)
        || matches!(
            key,
            PROTOCOL_VERSION
                | CLIENT_INFO
                | CLIENT_CAPABILITIES
                | LOG_LEVEL
                | SERVER_INFO
                | SUBSCRIPTION_ID
                | PROGRESS_TOKEN
                | TRACEPARENT
                | TRACESTATE
                | BAGGAGE
                | "io.modelcontextprotocol/related-task"
                | "io.modelcontextprotocol/model-immediate-response"
        )
}

// META-01
/// Checks the syntax of a `_meta` key. Applies from 2025-06-18 on;
/// earlier revisions accept any key.
pub fn validate_key_syntax(key: &str, version: ProtocolVersion) -> Result<(), MetaKeyError> {
    if matches!(
        version,
        ProtocolVersion::V2024_11_05 | ProtocolVersion::V2025_03_26
    ) {
        return Ok(());
    }
    let (prefix, name) = match key.rsplit_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    if let Some(p) = prefix {
        for l in p.split('.') {
            if !valid_label(l) {
                return Err(MetaKeyError::BadLabel(l.to_owned()));
            }
        }
    }
    if !valid_name(name) {
        return Err(MetaKeyError::BadName(name.to_owned()));
    }
    Ok(())
}

// META-01, META-02
/// Checks a key an application wants to *send*: valid syntax, and not a
/// non-spec key under a reserved prefix.
pub fn validate_outgoing_key(key: &str, version: ProtocolVersion) -> Result<(), MetaKeyError> {
    validate_key_syntax(key, version)?;
    if !is_spec_key(key) && is_reserved_key(key, version) {
        let prefix = key.split_once('/').map_or(key, |(p, _)| p);
        return Err(MetaKeyError::Reserved(format!("{prefix}/")));
    }
    Ok(())
}

/// The revisions whose key rules differ: 2026-07-28 (as 2025-11-25) and
/// 2025-06-18's older reading of reserved prefixes. A key that passes both
/// may be sent in either era.
pub const KEY_RULE_REVISIONS: [ProtocolVersion; 2] =
    [ProtocolVersion::V2026_07_28, ProtocolVersion::V2025_06_18];

// META-01, META-02
/// Checks every key of a `_meta` object an application wants to send
/// under each of `versions`; the first bad key and why.
pub fn validate_outgoing_meta<'a, V>(
    keys: impl IntoIterator<Item = &'a String>,
    versions: V,
) -> Result<(), (String, MetaKeyError)>
where
    V: IntoIterator<Item = ProtocolVersion> + Clone,
{
    for k in keys {
        for v in versions.clone() {
            validate_outgoing_key(k, v).map_err(|e| (k.clone(), e))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_whole_meta_object_is_checked_under_both_readings() {
        let keys = |ks: &[&str]| ks.iter().map(|k| (*k).to_owned()).collect::<Vec<String>>();
        assert!(
            validate_outgoing_meta(
                &keys(&["com.example/a", "progressToken"]),
                KEY_RULE_REVISIONS
            )
            .is_ok()
        );
        // Reserved only under 2025-06-18's reading.
        let bad = keys(&["com.example/a", "modelcontextprotocol.io/x"]);
        let (k, e) = validate_outgoing_meta(&bad, KEY_RULE_REVISIONS).unwrap_err();
        assert_eq!(k, "modelcontextprotocol.io/x");
        assert!(matches!(e, MetaKeyError::Reserved(_)));
        assert!(validate_outgoing_meta(&keys(&["bad key"]), KEY_RULE_REVISIONS).is_err());
    }

    #[test]
    fn decodes_the_envelope_once_into_typed_fields() {
        let raw = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "c", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {"sampling": {}, "elicitation": {"url": {}}, "x-custom": {"a": 1}},
            "io.modelcontextprotocol/logLevel": "warning",
            "progressToken": "p-1",
            "traceparent": "00-abc-def-01",
            "com.example/extra": [1, 2]
        });
        let m: RequestMeta = serde_json::from_value(raw.clone()).unwrap_or_default();
        assert_eq!(m.protocol_version.as_deref(), Some("2026-07-28"));
        assert_eq!(m.client_info.as_ref().map(|c| c.name.as_str()), Some("c"));
        let caps = m.client_capabilities.clone().unwrap_or_default();
        assert!(caps.sampling.is_some());
        assert!(
            caps.elicitation
                .as_ref()
                .is_some_and(|e| e.supports_url() && !e.supports_form())
        );
        assert_eq!(caps.other.get("x-custom"), Some(&json!({"a": 1})));
        assert_eq!(m.log_level, Some(LoggingLevel::Warning));
        assert_eq!(m.progress_token, Some(RequestId::string("p-1")));
        assert!(m.problems.is_empty());
        // Round trip keeps every key, including unknown ones.
        assert_eq!(serde_json::to_value(&m).unwrap_or_default(), raw);
    }

    #[test]
    fn wrong_shapes_are_problems_not_failures() {
        let m: RequestMeta = serde_json::from_value(json!({
            "io.modelcontextprotocol/protocolVersion": 2026,
            "io.modelcontextprotocol/logLevel": "loud",
            "progressToken": 1.5
        }))
        .unwrap_or_default();
        assert!(m.has_protocol_version_key);
        assert_eq!(m.protocol_version, None);
        assert_eq!(m.problems.len(), 3);
    }

    #[test]
    fn key_syntax_and_reserved_prefixes() {
        let v = ProtocolVersion::V2026_07_28;
        for ok in [
            "progressToken",
            "com.example/key",
            "com.example/",
            "a/b.c-d_e",
            "x",
            "com.example.mcp/thing",
        ] {
            assert_eq!(validate_outgoing_key(ok, v), Ok(()), "{ok}");
        }
        for bad in [
            "-x",
            "x-",
            "1abc.com/k",
            "com..example/k",
            "com.example/-k",
            "a-/k",
            "com.example/k_",
        ] {
            assert!(validate_key_syntax(bad, v).is_err(), "{bad}");
        }
        for reserved in [
            "io.modelcontextprotocol/custom",
            "dev.mcp/x",
            "org.modelcontextprotocol.api/y",
            "com.mcp.tools/z",
        ] {
            assert!(
                matches!(
                    validate_outgoing_key(reserved, v),
                    Err(MetaKeyError::Reserved(_))
                ),
                "{reserved}"
            );
        }
        assert_eq!(validate_outgoing_key(PROTOCOL_VERSION, v), Ok(()));
        // 2025-06-18 wording: a reserved word followed by another label.
        assert!(is_reserved_key(
            "modelcontextprotocol.io/x",
            ProtocolVersion::V2025_06_18
        ));
        assert!(is_reserved_key(
            "tools.mcp.com/x",
            ProtocolVersion::V2025_06_18
        ));
        assert!(!is_reserved_key(
            "modelcontextprotocol.io/x",
            ProtocolVersion::V2026_07_28
        ));
        // 2025-03-26 has no rules.
        assert_eq!(
            validate_outgoing_key("-anything-", ProtocolVersion::V2025_03_26),
            Ok(())
        );
    }
}
