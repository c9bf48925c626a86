//! The gates before any JSON-RPC is read, in order: the header count
//! and endpoint path, Host and Origin ([`front`]), then for a POST
//! `Content-Type`, `Accept` and `Content-Length` ([`post`]), and the
//! bounded body read.
// LADDER-01…LADDER-04

use super::McpBody;
use super::reject::Rejection;
use super::{HttpInner, serves_path};
use crate::transport::origin::{OriginVerdict, WebOrigin, parse_host};
use bytes::Bytes;
use ferromcp_protocol::authority::Authority;
use ferromcp_protocol::header::trim_ows;
use http::Response;
use http::header::{self, HeaderMap, HeaderValue};
use http_body_util::BodyExt;
use std::time::Duration;

/// The gates every request passes before its HTTP method is looked at:
/// the header count (HTTP/2; hyper counts HTTP/1 lines itself), the
/// endpoint path (404), an ambiguous Host or Origin (400 / 403), then Host
/// (421) and Origin (403) against the policy, which decides on parsed
/// values (the Host header is parsed once, for its own 400 and the policy).
pub(super) fn front(inner: &HttpInner, parts: &http::request::Parts) -> Result<(), Rejection> {
    if parts.version >= http::Version::HTTP_2
        && parts.headers.len() > inner.shared.limits().max_headers
    {
        return Err(Rejection::TooManyHeaders);
    }
    if let Some(p) = &inner.config.path {
        if !serves_path(p, parts.uri.path()) {
            tracing::debug!(
                path = parts.uri.path(),
                endpoint = %p,
                "404: not the MCP endpoint; when the service is routed at another path, set HttpConfig::path to it (or HttpConfig::any_path)"
            );
            return Err(Rejection::NotFound);
        }
    }
    // LADDER-01: Origin / Host.
    let host_header = checked_host_and_origin(parts)?;
    let policy = &inner.config.origin;
    if !policy.is_enabled() {
        return Ok(());
    }
    let host = addressed_host(parts, host_header);
    let origin = parts
        .headers
        .get(header::ORIGIN)
        .map(|o| WebOrigin::parse(o.as_bytes()));
    match policy.verdict(host, origin) {
        OriginVerdict::Allowed => Ok(()),
        OriginVerdict::BadHost => Err(Rejection::HostNotAllowed),
        OriginVerdict::BadOrigin => Err(Rejection::OriginNotAllowed),
    }
}

/// The gates of a POST before its body is read: `Content-Type` (415),
/// `Accept` (406) and a declared `Content-Length` over the body limit
/// (413). What the client accepts decides JSON or SSE later.
pub(super) fn post(headers: &HeaderMap, max_body_bytes: usize) -> Result<Accepts, Rejection> {
    if !is_json_content_type(headers) {
        return Err(Rejection::UnsupportedMediaType);
    }
    let accept = accepts(headers);
    if !accept.json && !accept.sse {
        return Err(Rejection::NotAcceptable);
    }
    if let Some(len) = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
    {
        if len > max_body_bytes as u64 {
            return Err(Rejection::BodyTooLarge);
        }
    }
    Ok(accept)
}

/// What the client's `Accept` header allows.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Accepts {
    pub(crate) json: bool,
    pub(crate) sse: bool,
}

impl Accepts {
    // HTTP-06
    /// Whether a response may be an SSE stream: the client accepts it, and
    /// either the server is not configured for JSON only or JSON is not
    /// acceptable (then SSE is the one answer left).
    pub(crate) fn sse_allowed(self, json_only: bool) -> bool {
        self.sse && (!json_only || !self.json)
    }
}

pub(crate) fn accepts(headers: &HeaderMap) -> Accepts {
    let values = headers.get_all(header::ACCEPT);
    // The values nearly every client sends, compared as bytes before any
    // parsing (`common_accept_values_answer_as_parsed` pins the answers).
    let mut each = values.iter();
    if let (Some(v), None) = (each.next(), each.next()) {
        if let Some(a) = common_accept(v.as_bytes()) {
            return a;
        }
    }
    parsed_accepts(values)
}

/// The answer for an `Accept` value most clients send, without parsing it.
fn common_accept(v: &[u8]) -> Option<Accepts> {
    let (json, sse) = match v {
        b"application/json, text/event-stream" | b"text/event-stream, application/json" => {
            (true, true)
        }
        b"application/json" => (true, false),
        b"text/event-stream" => (false, true),
        _ => return None,
    };
    Some(Accepts { json, sse })
}

/// [`accepts`] by parsing every range of every `Accept` line.
fn parsed_accepts(values: http::header::GetAll<'_, HeaderValue>) -> Accepts {
    // For each type we can produce, the most specific matching range wins
    // (RFC 9110 §12.5.1: `type/subtype` over `type/*` over `*/*`), and
    // `q=0` means "not acceptable". Among ranges equally specific, any
    // non-zero weight makes the type acceptable.
    #[derive(Clone, Copy)]
    struct Best {
        level: u8,
        ok: bool,
    }
    fn note(b: &mut Best, level: u8, ok: bool) {
        if level > b.level {
            *b = Best { level, ok };
        } else if level == b.level {
            b.ok |= ok;
        }
    }
    let mut json = Best {
        level: 0,
        ok: false,
    };
    let mut sse = Best {
        level: 0,
        ok: false,
    };
    let mut seen = false;
    for v in values {
        seen = true;
        for item in v.as_bytes().split(|b| *b == b',') {
            let mut fields = item.split(|b| *b == b';');
            let media = fields.next().map(trim_ows).unwrap_or_default();
            if media.is_empty() {
                continue;
            }
            let ok = !fields.any(|p| {
                let p = trim_ows(p);
                match p.split_first() {
                    Some((q, rest)) if q.eq_ignore_ascii_case(&b'q') => {
                        let w = trim_ows(rest);
                        w.first() == Some(&b'=') && is_zero_weight(trim_ows(&w[1..]))
                    }
                    _ => false,
                }
            });
            let is = |m: &str| media.eq_ignore_ascii_case(m.as_bytes());
            if is("application/json") {
                note(&mut json, 3, ok);
            } else if is("text/event-stream") {
                note(&mut sse, 3, ok);
            } else if is("application/*") {
                note(&mut json, 2, ok);
            } else if is("text/*") {
                note(&mut sse, 2, ok);
            } else if is("*/*") {
                note(&mut json, 1, ok);
                note(&mut sse, 1, ok);
            }
        }
    }
    if !seen {
        // No Accept header: anything goes (RFC 9110 §12.5.1).
        return Accepts {
            json: true,
            sse: true,
        };
    }
    Accepts {
        json: json.ok,
        sse: sse.ok,
    }
}

/// `qvalue = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] )`: whether
/// the weight is zero. A malformed weight is not taken as a refusal.
pub(super) fn is_zero_weight(w: &[u8]) -> bool {
    match w.split_first() {
        Some((b'0', rest)) => match rest.split_first() {
            None => true,
            Some((b'.', digits)) => digits.len() <= 3 && digits.iter().all(|d| *d == b'0'),
            Some(_) => false,
        },
        _ => false,
    }
}

pub(super) fn is_json_content_type(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|m| m.trim().eq_ignore_ascii_case("application/json"))
}

/// Why a request body could not be read.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum BodyError {
    TooLarge,
    TimedOut,
    Io,
}

/// Reads a whole request body, at most `limit` bytes, within `timeout`.
///
/// A body that arrives as one frame (the common case) is kept as that
/// frame, without a copy. Otherwise every frame is copied into one buffer
/// as it arrives and then freed, so memory is the body size plus one frame.
/// Collecting the frames themselves (as `http_body_util::Collected` does)
/// keeps one `Bytes` handle per frame, and the read buffers they point
/// into, until the end: a 4 MiB body sent as one-byte chunks cost about
/// 150 MB that way.
pub(super) async fn collect_body<B>(
    body: B,
    limit: usize,
    timeout: Duration,
) -> Result<Bytes, BodyError>
where
    B: http_body::Body,
{
    use bytes::{Buf, BufMut};
    let read = async move {
        let mut body = std::pin::pin!(body);
        // The first frame, kept whole until a second one arrives.
        let mut first: Option<Bytes> = None;
        let mut buf: Vec<u8> = Vec::new();
        while let Some(frame) = body.frame().await {
            let Ok(mut data) = frame.map_err(|_| BodyError::Io)?.into_data() else {
                continue; // trailers
            };
            let held = first.as_ref().map_or(buf.len(), Bytes::len);
            if data.remaining() > limit.saturating_sub(held) {
                return Err(BodyError::TooLarge);
            }
            if let Some(f) = first.take() {
                buf.reserve(f.len() + data.remaining());
                buf.put(f);
                buf.put(data);
            } else if buf.is_empty() {
                first = Some(data.copy_to_bytes(data.remaining()));
            } else {
                buf.put(data);
            }
        }
        Ok(first.unwrap_or_else(|| Bytes::from(buf)))
    };
    // A body that is already here (the common case: it came with the
    // head) is read without reading the clock or arming a timer.
    let mut read = std::pin::pin!(read);
    if let std::task::Poll::Ready(r) = futures_util::poll!(read.as_mut()) {
        return r;
    }
    tokio::time::timeout(timeout, read)
        .await
        .unwrap_or(Err(BodyError::TimedOut))
}

pub(super) async fn read_body<B>(
    body: B,
    limit: usize,
    timeout: Duration,
) -> Result<Bytes, Response<McpBody>>
where
    B: http_body::Body + Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    collect_body(body, limit, timeout)
        .await
        .map_err(|e| match e {
            BodyError::TimedOut => Rejection::BodyTimedOut.into_response(),
            BodyError::TooLarge => Rejection::BodyTooLarge.into_response(),
            BodyError::Io => Rejection::BodyUnreadable.into_response(),
        })
}

/// A request that names its host or origin more than once is refused before
/// the Origin/Host check: components reading the first and the last copy
/// would disagree, so one `Host: localhost` line could carry a foreign
/// `Host` past the DNS-rebinding check (RFC 9112 §3.2: more than one Host →
/// 400). Browsers never send two `Origin` lines. When the checks pass, the
/// one `Host` value parsed (`None`: no `Host` header; `Some(None)`: an
/// empty one, which names no authority).
pub(super) fn checked_host_and_origin(
    parts: &http::request::Parts,
) -> Result<Option<Option<Authority<'_>>>, Rejection> {
    // RFC 9112 §3.2: 400 to an HTTP/1.1 request without Host, to one with
    // more than one Host line, and to an invalid Host value. HTTP/1.0 may
    // omit it; HTTP/2 and HTTP/3 carry `:authority` instead (checked below).
    let mut hosts = parts.headers.get_all(header::HOST).iter();
    let parsed = match (hosts.next(), hosts.next()) {
        (_, Some(_)) => return Err(Rejection::DuplicateHost),
        (None, None) if parts.version == http::Version::HTTP_11 => {
            return Err(Rejection::MissingHost);
        }
        (None, _) => None,
        (Some(h), None) => match host_value(h.as_bytes()) {
            Some(a) => Some(a),
            None => return Err(Rejection::InvalidHost),
        },
    };
    // RFC 9113 §8.3.1 (RFC 9114 §4.3.1 likewise): an `http`/`https`
    // request with neither `:authority` nor `Host` is malformed (MUST),
    // and so, here, is a `Host` naming another entity than `:authority`
    // (SHOULD): a proxy routing on `Host` and the rebinding check reading
    // `:authority` would disagree. HTTP/1.1 absolute-form targets are not
    // this case: there the target wins and `Host` is ignored (RFC 9112
    // §3.2.2). SEC-04, LADDER-01
    if parts.version >= http::Version::HTTP_2 {
        let host = parts.headers.get(header::HOST).map(HeaderValue::as_bytes);
        match (parts.uri.authority(), host) {
            (None, None) => return Err(Rejection::MissingAuthority),
            (Some(a), Some(h)) if !a.as_str().as_bytes().eq_ignore_ascii_case(h) => {
                return Err(Rejection::HostDiffersFromAuthority);
            }
            _ => {}
        }
    }
    if parts
        .headers
        .get_all(header::ORIGIN)
        .iter()
        .nth(1)
        .is_some()
    {
        return Err(Rejection::OriginNotAllowed);
    }
    Ok(parsed)
}

/// `Host = uri-host [ ":" port ]` (RFC 9110 §7.2): an authority without
/// userinfo, as the workspace's one authority parser reads it (a port that
/// fits 16 bits, an IPv6 literal that is one). Empty is allowed (RFC 9112
/// §3.2: a target without authority). The parsed value when it is valid
/// (`Some(None)` for an empty one, which names no authority), `None` when
/// it is not.
pub(super) fn host_value(v: &[u8]) -> Option<Option<Authority<'_>>> {
    if v.is_empty() {
        return Some(None);
    }
    Authority::parse_bytes(v).ok().map(Some)
}

/// The host the request is addressed to, parsed: the authority of an
/// absolute-form target (or HTTP/2 `:authority`), which RFC 9112 §3.2.2
/// says wins over `Host`, else `host_header`, the `Host` value
/// [`checked_host_and_origin`] already parsed (not parsed again).
pub(super) fn addressed_host<'a>(
    parts: &'a http::request::Parts,
    host_header: Option<Option<Authority<'a>>>,
) -> Option<Option<Authority<'a>>> {
    match parts.uri.authority() {
        Some(a) => Some(parse_host(a.as_str().as_bytes())),
        None => host_header,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(values: &[&'static str]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for v in values {
            h.append(header::ACCEPT, HeaderValue::from_static(v));
        }
        h
    }

    // HTTP-06: the byte comparison answers exactly as the parser would.
    #[test]
    fn common_accept_values_answer_as_parsed() {
        for v in [
            "application/json, text/event-stream",
            "text/event-stream, application/json",
            "application/json",
            "text/event-stream",
        ] {
            let h = headers(&[v]);
            let fast = common_accept(v.as_bytes()).expect("a common value");
            let parsed = parsed_accepts(h.get_all(header::ACCEPT));
            assert_eq!((fast.json, fast.sse), (parsed.json, parsed.sse), "{v}");
            let a = accepts(&h);
            assert_eq!((a.json, a.sse), (parsed.json, parsed.sse), "{v}");
        }
        // Anything else is parsed: other spacing, weights, case, two lines.
        for v in [
            "application/json,text/event-stream",
            "application/json;q=0, text/event-stream",
            "Application/JSON",
        ] {
            assert!(common_accept(v.as_bytes()).is_none(), "{v}");
        }
        let two = headers(&["application/json", "text/event-stream;q=0"]);
        let a = accepts(&two);
        assert_eq!((a.json, a.sse), (true, false));
        let a = accepts(&headers(&["application/json;q=0", "application/json"]));
        assert_eq!((a.json, a.sse), (true, false));
    }
}
