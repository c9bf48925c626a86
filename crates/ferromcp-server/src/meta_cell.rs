//! A request's `_meta` as a handler's context holds it: the admitted
//! envelope, decoded the first time something asks for the whole of it
//! (from the request text it was checked in, which the cell keeps).
// META-07, META-09: the envelope is this request's own; nothing is carried
// over from other requests.

use bytes::Bytes;
use ferromcp_protocol::RequestMeta;
use ferromcp_protocol::envelope::Envelope;
use ferromcp_protocol::meta::ProgressToken;
use ferromcp_protocol::types::LoggingLevel;
use std::sync::OnceLock;

/// The envelope, the request text a checked one is decoded from, and the
/// decoded form once asked for (kept: asked once, decoded once).
#[derive(Debug, Clone)]
pub(crate) struct MetaCell {
    envelope: Envelope,
    message: Bytes,
    decoded: OnceLock<Box<RequestMeta>>,
}

/// The longest stdio line a checked envelope keeps a copy of; the
/// envelope of a longer one is decoded at once instead.
const MAX_KEPT_LINE: usize = 16 * 1024;

impl From<Box<RequestMeta>> for MetaCell {
    fn from(meta: Box<RequestMeta>) -> Self {
        Self::new(Envelope::decoded(meta), Bytes::new())
    }
}

impl MetaCell {
    fn new(envelope: Envelope, message: Bytes) -> Self {
        Self {
            envelope,
            message,
            decoded: OnceLock::new(),
        }
    }

    /// `envelope`, admitted from the request text `message` (HTTP: the
    /// body, shared, not copied), which is kept for a checked envelope.
    pub(crate) fn admitted(envelope: Envelope, message: &Bytes) -> Self {
        let message = match envelope.as_decoded() {
            Some(_) => Bytes::new(),
            None => message.clone(),
        };
        Self::new(envelope, message)
    }

    /// `envelope`, admitted from a stdio `line`, which a checked envelope
    /// keeps a copy of (up to [`MAX_KEPT_LINE`] bytes; beyond, the envelope
    /// is decoded now rather than the line copied).
    pub(crate) fn admitted_from_line(envelope: Envelope, line: &[u8]) -> Self {
        match envelope.as_decoded() {
            Some(_) => Self::new(envelope, Bytes::new()),
            None if line.len() <= MAX_KEPT_LINE => {
                Self::new(envelope, Bytes::copy_from_slice(line))
            }
            None => Box::new(decoded_or_empty(&envelope, line)).into(),
        }
    }

    /// The decoded envelope.
    pub(crate) fn get(&self) -> &RequestMeta {
        match self.envelope.as_decoded() {
            Some(m) => m,
            None => self
                .decoded
                .get_or_init(|| Box::new(decoded_or_empty(&self.envelope, &self.message))),
        }
    }

    /// The client's progress token, without decoding the rest.
    pub(crate) fn progress_token(&self) -> Option<&ProgressToken> {
        self.envelope.progress_token()
    }

    /// The requested log level, without decoding the rest.
    pub(crate) fn log_level(&self) -> Option<LoggingLevel> {
        self.envelope.log_level()
    }
}

/// The envelope decoded from the text it was checked in. That decode
/// succeeds by construction (the envelope tests pin it); should it ever
/// fail, the handler sees an empty envelope and the failure is logged as
/// an error, never a panic.
fn decoded_or_empty(envelope: &Envelope, message: &[u8]) -> RequestMeta {
    envelope.decode_from(message).unwrap_or_else(|| {
        tracing::error!(
            target: "ferromcp_server::request",
            "a checked _meta envelope did not decode from its request; the handler sees it empty"
        );
        RequestMeta::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferromcp_protocol::envelope::CheckedMeta;

    #[test]
    fn a_checked_envelope_is_decoded_once_when_asked_for() {
        let text = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"sampling":{}},"io.modelcontextprotocol/clientInfo":{"name":"c","version":"2"},"progressToken":"p","com.example/k":[1]}"#;
        let message = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"t","_meta":{text}}}}}"#
        );
        let envelope = || {
            CheckedMeta::check(text)
                .unwrap_or_else(|| panic!("not checked"))
                .into_envelope()
        };
        let cell = MetaCell::admitted(envelope(), &Bytes::from(message.clone()));
        // The hot members answer without a decode.
        assert_eq!(cell.progress_token(), Some(&ProgressToken::from("p")));
        assert!(cell.decoded.get().is_none());
        let want: RequestMeta = serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(cell.get(), &want);
        // Decoded once, then kept.
        let first: *const RequestMeta = cell.get();
        assert!(std::ptr::eq(first, cell.get()));
        assert_eq!(cell.clone().get(), &want);
        // From a stdio line: copied while short, decoded at once when long.
        let line = MetaCell::admitted_from_line(envelope(), message.as_bytes());
        assert!(line.decoded.get().is_none() && line.envelope.as_decoded().is_none());
        assert_eq!(line.get(), &want);
        let long = message.replace(
            r#""name":"t""#,
            &format!(r#""name":"{}""#, "t".repeat(MAX_KEPT_LINE)),
        );
        let line = MetaCell::admitted_from_line(envelope(), long.as_bytes());
        assert!(line.message.is_empty());
        assert_eq!(line.envelope.as_decoded(), Some(&want));
        // Kept with the wrong text (a bug, not an input): empty, no panic.
        let wrong = MetaCell::admitted(envelope(), &Bytes::from_static(b"{\"jsonrpc\""));
        assert_eq!(wrong.get(), &RequestMeta::default());
    }

    #[test]
    fn a_decoded_envelope_is_answered_as_held() {
        let m = RequestMeta {
            log_level: Some(LoggingLevel::Warning),
            ..RequestMeta::default()
        };
        let cell = MetaCell::from(Box::new(m.clone()));
        assert_eq!(cell.get(), &m);
        assert_eq!(cell.log_level(), Some(LoggingLevel::Warning));
        assert!(cell.decoded.get().is_none());
    }
}
