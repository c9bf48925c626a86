//! Shaping answers: `resultType`, `serverInfo` and cache hints on
//! 2026-07-28 results, the per-revision sieve on handshake-era ones.
// RESULT-01, META-08, CACHE-01, LEGACY-25

use crate::shared::Shared;
use bytes::Bytes;
use ferromcp_protocol::ProtocolVersion;
use ferromcp_protocol::jsonrpc::{OutgoingResult, RequestId, to_vec};
use ferromcp_protocol::types::{
    CacheHint, CacheableResult, InputRequiredResult, McpResult, ResultType,
};
use serde::Serialize;
use serde_json::Value;

impl Shared {
    /// Stamps and serializes a result for the request's era.
    pub(crate) fn finish<R: McpResult + Serialize>(
        &self,
        id: &RequestId,
        mut r: R,
        version: ProtocolVersion,
    ) -> Bytes {
        if !version.is_modern() {
            r.set_result_type(None);
            return Bytes::from(to_vec(&OutgoingResult::new(id, &r)));
        }
        r.ensure_result_type();
        if !self.stamp_server_info() {
            return Bytes::from(to_vec(&OutgoingResult::new(id, &r)));
        }
        if r.meta().is_some() {
            r.stamp_server_info(self.info());
            return Bytes::from(to_vec(&OutgoingResult::new(id, &r)));
        }
        // Fast path (META-08): the result has no `_meta`, so append the
        // pre-serialized `"_meta":{"…/serverInfo":…}` member just before the
        // result object's closing brace. The response ends with `}}` (result,
        // then envelope) and the result always has `resultType`, so a comma
        // is correct.
        let mut out = to_vec(&OutgoingResult::new(id, &r));
        if out.ends_with(b"}}") {
            out.truncate(out.len() - 2);
            out.extend_from_slice(self.server_info_member());
            out.extend_from_slice(b"}}");
        }
        Bytes::from(out)
    }

    // MRTR-12
    /// Serializes an interim MRTR result: never cache hints.
    pub(crate) fn finish_input_required(
        &self,
        id: &RequestId,
        mut r: InputRequiredResult,
    ) -> Bytes {
        crate::trace::note_input_required();
        if self.stamp_server_info() {
            if let Ok(v) = serde_json::to_value(self.info()) {
                r.meta
                    .get_or_insert_with(Default::default)
                    .insert(ferromcp_protocol::meta::SERVER_INFO.to_owned(), v);
            }
        }
        Bytes::from(to_vec(&OutgoingResult::new(id, &r)))
    }

    pub(crate) fn finish_cacheable<R: CacheableResult + Serialize>(
        &self,
        id: &RequestId,
        mut r: R,
        hint: CacheHint,
        version: ProtocolVersion,
    ) -> Bytes {
        if version.is_modern() && r.result_type().is_none_or(|t| *t == ResultType::Complete) {
            r.fill_cache_hint(hint);
        }
        self.finish(id, r, version)
    }

    // RESULT-01, META-08
    /// Serializes a fallback handler's result: on the modern wire an
    /// object gets `resultType: "complete"` and the `serverInfo` stamp
    /// when it has neither; anything else is sent as is.
    pub(super) fn finish_value(
        &self,
        id: &RequestId,
        mut r: Value,
        version: ProtocolVersion,
    ) -> Bytes {
        if version.is_modern() {
            if let Value::Object(m) = &mut r {
                m.entry("resultType")
                    .or_insert_with(|| Value::from("complete"));
                if self.stamp_server_info() {
                    let meta = m
                        .entry("_meta")
                        .or_insert_with(|| Value::Object(Default::default()));
                    if let Value::Object(meta) = meta {
                        if !meta.contains_key(ferromcp_protocol::meta::SERVER_INFO) {
                            if let Ok(info) = serde_json::to_value(self.info()) {
                                meta.insert(ferromcp_protocol::meta::SERVER_INFO.to_owned(), info);
                            }
                        }
                    }
                }
            }
        }
        Bytes::from(to_vec(&OutgoingResult::new(id, &r)))
    }
}

#[derive(Serialize)]
pub(super) struct ServerInfoMeta<'a> {
    #[serde(rename = "io.modelcontextprotocol/serverInfo")]
    pub(super) info: &'a ferromcp_protocol::types::Implementation,
}
