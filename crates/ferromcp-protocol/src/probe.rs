//! The params members the ladder and typed decoding need, read in one pass
//! over the raw params and borrowed from the body: [`ParamsProbe`] and the
//! [`ProbedMembers`] that type `tools/call` params from it.
// Split out of the ladder so that `method` (typed decoding) and `ladder`
// (validation) both build on it without reaching into each other.

use crate::envelope::{CheckSeed, CheckedMeta};
use crate::meta::{self, RequestMeta};
use crate::types::tagged::Str;
use serde::Deserialize;
use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;
use std::fmt;

/// The members of a request's params the ladder needs, parsed once and
/// borrowed from the body. Also used by era classification.
#[derive(Debug, Default)]
pub struct ParamsProbe<'a> {
    /// The decoded `_meta`, when it is an object (boxed: it is large).
    pub meta: Option<Box<RequestMeta>>,
    /// The `_meta` checked in place instead of decoded (the one-pass
    /// `tools/call` path, which takes only a plain modern envelope);
    /// `meta` is then `None`.
    pub checked_meta: Option<CheckedMeta<'a>>,
    /// `_meta` was present but not an object (or undecodable): why.
    pub meta_error: Option<String>,
    /// Raw `params.name`.
    pub name: Option<&'a RawValue>,
    /// Raw `params.uri`.
    pub uri: Option<&'a RawValue>,
    /// Raw `params.arguments`.
    pub arguments: Option<&'a RawValue>,
    /// Raw `params.taskId` (tasks extension: mirrored in `Mcp-Name`).
    pub task_id: Option<&'a RawValue>,
    /// Params could not be read as an object at all: why.
    pub params_error: Option<String>,
    /// Raw `params.inputResponses` (MRTR), so that `tools/call` params can
    /// be typed from the members already separated here ([`ProbedMembers`]).
    pub input_responses: Option<&'a RawValue>,
    /// Raw `params.requestState` (MRTR), likewise.
    pub request_state: Option<&'a RawValue>,
    /// `inputResponses` or `requestState` appeared twice: the typed decode
    /// of the whole params must report it.
    pub mrtr_duplicate: bool,
}

/// The members of a probed params object that type `tools/call` params:
/// copied out of the [`ParamsProbe`] before the ladder takes it.
#[derive(Debug, Clone, Copy, Default)]
pub struct ProbedMembers<'a> {
    /// Raw `name`.
    pub name: Option<&'a RawValue>,
    /// Raw `arguments`.
    pub arguments: Option<&'a RawValue>,
    /// Raw `inputResponses`.
    pub input_responses: Option<&'a RawValue>,
    /// Raw `requestState`.
    pub request_state: Option<&'a RawValue>,
    /// The members are complete and unambiguous (no params error, no
    /// duplicate); otherwise only the whole params may be decoded.
    pub usable: bool,
}

impl<'a> ParamsProbe<'a> {
    /// Reads `_meta`, `name`, `uri` and `arguments` from raw params. Never fails:
    /// problems are recorded for the ladder to report in order.
    pub fn parse(params: Option<&'a RawValue>) -> Self {
        let Some(p) = params else {
            return Self::default();
        };
        // One pass: `_meta` is decoded where it stands. Anything unusual
        // (a `_meta` that fails to decode, invalid params) takes the path
        // below, which owns the exact problem texts.
        let mut de = serde_json::Deserializer::from_str(p.get());
        match de.deserialize_map(ProbeVisitor(MetaMode::Inline)) {
            Ok(probe) => probe.out,
            Err(_) => Self::parse_slow(p),
        }
    }

    /// The member-by-member path: `_meta` kept raw, then decoded leniently
    /// so that every problem gets its own text.
    pub(crate) fn parse_slow(p: &'a RawValue) -> Self {
        let mut de = serde_json::Deserializer::from_str(p.get());
        match de.deserialize_map(ProbeVisitor(MetaMode::Raw)) {
            Ok(mut probe) => {
                if let Some(raw) = probe.raw_meta.take() {
                    if raw.get().starts_with('{') {
                        match serde_json::from_str::<RequestMeta>(raw.get()) {
                            Ok(m) => probe.out.meta = Some(Box::new(m)),
                            Err(e) => probe.out.meta_error = Some(e.to_string()),
                        }
                    } else {
                        probe.out.meta_error = Some("\"_meta\" must be an object".into());
                    }
                }
                probe.out
            }
            Err(e) => Self {
                params_error: Some(e.to_string()),
                ..Self::default()
            },
        }
    }

    /// The members that type `tools/call` params.
    pub fn members(&self) -> ProbedMembers<'a> {
        ProbedMembers {
            name: self.name,
            arguments: self.arguments,
            input_responses: self.input_responses,
            request_state: self.request_state,
            usable: self.params_error.is_none() && !self.mrtr_duplicate,
        }
    }

    /// Whether the envelope carries the modern protocol-version key.
    pub fn has_modern_envelope(&self) -> bool {
        self.checked_meta.is_some() || self.meta.as_ref().is_some_and(|m| m.is_modern_envelope())
    }
}

pub(crate) struct ProbeOut<'a> {
    pub(crate) out: ParamsProbe<'a>,
    raw_meta: Option<&'a RawValue>,
}

/// What the probe does with `_meta`.
#[derive(Clone, Copy, PartialEq)]
enum MetaMode {
    /// Keep it raw (the member-by-member path decodes it afterwards).
    Raw,
    /// Decode it in place.
    Inline,
    /// Check it in place as a plain modern envelope; anything else fails
    /// the probe (the one-pass `tools/call` path).
    Check,
}

struct ProbeVisitor(MetaMode);

/// `_meta` decoded in place: an object becomes a [`RequestMeta`]; any other
/// value is skipped and reported as not an object.
struct InlineMeta(Option<Box<RequestMeta>>);

impl<'de> Deserialize<'de> for InlineMeta {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = InlineMeta;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<InlineMeta, A::Error> {
                meta::MetaVisitor { strict: true }
                    .visit_map(map)
                    .map(|m| InlineMeta(Some(Box::new(m))))
            }
            fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<InlineMeta, E> {
                Ok(InlineMeta(None))
            }
            fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<InlineMeta, E> {
                Ok(InlineMeta(None))
            }
            fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<InlineMeta, E> {
                Ok(InlineMeta(None))
            }
            fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<InlineMeta, E> {
                Ok(InlineMeta(None))
            }
            fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<InlineMeta, E> {
                Ok(InlineMeta(None))
            }
            fn visit_unit<E: serde::de::Error>(self) -> Result<InlineMeta, E> {
                Ok(InlineMeta(None))
            }
            fn visit_none<E: serde::de::Error>(self) -> Result<InlineMeta, E> {
                Ok(InlineMeta(None))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut a: A,
            ) -> Result<InlineMeta, A::Error> {
                while a.next_element::<IgnoredAny>()?.is_some() {}
                Ok(InlineMeta(None))
            }
        }
        d.deserialize_any(V)
    }
}

impl<'de> Visitor<'de> for ProbeVisitor {
    type Value = ProbeOut<'de>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a params object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ProbeOut<'de>, A::Error> {
        let mut o = ProbeOut {
            out: ParamsProbe::default(),
            raw_meta: None,
        };
        while let Some(Str(key)) = map.next_key::<Str<'de>>()? {
            let slot = match &*key {
                "_meta" if self.0 == MetaMode::Check => {
                    if o.out.checked_meta.is_some() {
                        return Err(duplicate(&key));
                    }
                    // Checked where it stands; anything but a plain modern
                    // envelope is not the one-pass case.
                    o.out.checked_meta = Some(map.next_value_seed(CheckSeed)?);
                    continue;
                }
                "_meta" if self.0 == MetaMode::Inline => {
                    if o.out.meta.is_some() || o.out.meta_error.is_some() {
                        return Err(duplicate(&key));
                    }
                    match map.next_value::<InlineMeta>()? {
                        InlineMeta(Some(m)) => o.out.meta = Some(m),
                        InlineMeta(None) => {
                            o.out.meta_error = Some("\"_meta\" must be an object".into());
                        }
                    }
                    continue;
                }
                "_meta" => &mut o.raw_meta,
                "name" => &mut o.out.name,
                "uri" => &mut o.out.uri,
                "arguments" => &mut o.out.arguments,
                "taskId" => &mut o.out.task_id,
                "inputResponses" | "requestState" => {
                    let slot = if &*key == "inputResponses" {
                        &mut o.out.input_responses
                    } else {
                        &mut o.out.request_state
                    };
                    // A duplicate is left for the typed decode to report.
                    o.out.mrtr_duplicate |= slot.is_some();
                    *slot = Some(map.next_value()?);
                    continue;
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                    continue;
                }
            };
            if slot.is_some() {
                return Err(duplicate(&key));
            }
            *slot = Some(map.next_value()?);
        }
        Ok(o)
    }
}

/// Probes a params value in place; anything but an object is an error
/// (the general path reports it).
pub(crate) struct ProbeSeed;

impl<'de> serde::de::DeserializeSeed<'de> for ProbeSeed {
    type Value = ProbeOut<'de>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(ProbeVisitor(MetaMode::Check))
    }
}

fn duplicate<E: serde::de::Error>(key: &str) -> E {
    E::custom(format_args!("duplicate params member {key:?}"))
}
