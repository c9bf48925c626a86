//! The `Bearer` authentication challenge carried by `WWW-Authenticate`
//! (RFC 6750 §3, RFC 9728 §5.1).
//!
//! A resource server formats one on every 401 and 403;
//! a client parses it to find the metadata document
//! and the scopes to ask for.
// AUTH-04, AUTH-16, AUTH-18, LEGACY-27, AUTH-05, AUTH-17

use std::fmt;

/// `error="invalid_request"`: the request is malformed (HTTP 400).
pub const INVALID_REQUEST: &str = "invalid_request";
/// `error="invalid_token"`: the token is expired, revoked, malformed or
/// otherwise invalid (HTTP 401).
pub const INVALID_TOKEN: &str = "invalid_token";
/// `error="insufficient_scope"`: the token lacks scopes the request needs
/// (HTTP 403).
pub const INSUFFICIENT_SCOPE: &str = "insufficient_scope";

/// One `Bearer` challenge.
///
/// `Display` renders the full header value (`Bearer error="…", …`) with
/// every parameter as a quoted string; [`BearerChallenge::parse`] reads one
/// back out of a header that may hold several challenges.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BearerChallenge {
    /// `error`: one of [`INVALID_REQUEST`], [`INVALID_TOKEN`],
    /// [`INSUFFICIENT_SCOPE`], or an extension code.
    pub error: Option<String>,
    /// `error_description`: human-readable text for developers.
    pub error_description: Option<String>,
    /// `scope`: the scopes needed, space-separated on the wire.
    pub scope: Vec<String>,
    // AUTH-04
    /// `resource_metadata`: URL of the Protected Resource Metadata
    /// document (RFC 9728 §5.1).
    pub resource_metadata: Option<String>,
    /// `realm`, rarely used by MCP servers.
    pub realm: Option<String>,
}

impl BearerChallenge {
    /// Finds the first `Bearer` challenge in a `WWW-Authenticate` value
    /// (scheme matched case-insensitively, RFC 9110 §11.1), ignoring other
    /// schemes and unknown parameters. `None` if there is none or the value
    /// is not well-formed enough to read.
    pub fn parse(header_value: &str) -> Option<Self> {
        let mut p = Parser {
            s: header_value.as_bytes(),
            i: 0,
        };
        let mut current: Option<Self> = None;
        let mut in_bearer = false;
        loop {
            p.skip_ows_and_commas();
            if p.at_end() {
                break;
            }
            let token = p.token()?;
            p.skip_ws();
            if p.peek() == Some(b'=') && !p.is_token68_tail() {
                // auth-param of the current challenge
                p.i += 1;
                p.skip_ws();
                let value = if p.peek() == Some(b'"') {
                    p.quoted()?
                } else {
                    p.token()?.to_owned()
                };
                if in_bearer && let Some(c) = current.as_mut() {
                    c.set(token, value);
                }
            } else {
                // A new challenge: `token` is its scheme.
                if in_bearer {
                    break;
                }
                in_bearer = token.eq_ignore_ascii_case("bearer");
                if in_bearer {
                    current = Some(Self::default());
                }
                // A token68 may follow the scheme; Bearer does not use one.
                if !p.at_end() && p.peek() != Some(b',') {
                    let save = p.i;
                    if let Some(_t) = p.token() {
                        p.skip_ws();
                        if p.peek() == Some(b'=') && !p.is_token68_tail() {
                            p.i = save; // it was the first auth-param
                        } else {
                            while p.peek() == Some(b'=') {
                                p.i += 1;
                            }
                        }
                    }
                }
            }
        }
        current
    }

    fn set(&mut self, name: &str, value: String) {
        match name.to_ascii_lowercase().as_str() {
            "error" => self.error = Some(value),
            "error_description" => self.error_description = Some(value),
            "scope" => {
                self.scope = value
                    .split(' ')
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned)
                    .collect()
            }
            "resource_metadata" => self.resource_metadata = Some(value),
            "realm" => self.realm = Some(value),
            _ => {}
        }
    }
}

impl fmt::Display for BearerChallenge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Bearer")?;
        let mut first = true;
        let mut param = |f: &mut fmt::Formatter<'_>, name: &str, value: &str| -> fmt::Result {
            f.write_str(if first { " " } else { ", " })?;
            first = false;
            write!(f, "{name}=\"")?;
            for c in value.chars() {
                match c {
                    '"' | '\\' => write!(f, "\\{c}")?,
                    // Field values cannot carry controls or non-ASCII; drop them.
                    c if c == ' ' || c.is_ascii_graphic() => write!(f, "{c}")?,
                    _ => {}
                }
            }
            f.write_str("\"")
        };
        if let Some(r) = &self.realm {
            param(f, "realm", r)?;
        }
        if let Some(e) = &self.error {
            param(f, "error", e)?;
        }
        if !self.scope.is_empty() {
            param(f, "scope", &self.scope.join(" "))?;
        }
        if let Some(u) = &self.resource_metadata {
            param(f, "resource_metadata", u)?;
        }
        if let Some(d) = &self.error_description {
            // RFC 6750 §3: error_description excludes `"` and `\`.
            let clean: String = d
                .chars()
                .map(|c| if c == '"' || c == '\\' { '\'' } else { c })
                .collect();
            param(f, "error_description", &clean)?;
        }
        Ok(())
    }
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

impl<'a> Parser<'a> {
    fn at_end(&self) -> bool {
        self.i >= self.s.len()
    }
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }
    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.i += 1;
        }
    }
    fn skip_ows_and_commas(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b',')) {
            self.i += 1;
        }
    }
    /// At a run of `=` that ends the item (token68 padding), not `name=value`.
    fn is_token68_tail(&self) -> bool {
        let mut j = self.i;
        while self.s.get(j) == Some(&b'=') {
            j += 1;
        }
        while matches!(self.s.get(j), Some(b' ' | b'\t')) {
            j += 1;
        }
        j > self.i + 1 || matches!(self.s.get(j), None | Some(b','))
    }
    fn token(&mut self) -> Option<&'a str> {
        let start = self.i;
        while let Some(c) = self.peek() {
            if is_tchar(c) || c == b'/' {
                self.i += 1;
            } else {
                break;
            }
        }
        if self.i == start {
            return None;
        }
        std::str::from_utf8(self.s.get(start..self.i)?).ok()
    }
    fn quoted(&mut self) -> Option<String> {
        // at the opening quote
        self.i += 1;
        let mut out = Vec::new();
        loop {
            let c = self.peek()?;
            self.i += 1;
            match c {
                b'"' => break,
                b'\\' => {
                    out.push(self.peek()?);
                    self.i += 1;
                }
                c => out.push(c),
            }
        }
        String::from_utf8(out).ok()
    }
}

fn is_tchar(c: u8) -> bool {
    c.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&c)
}

#[cfg_attr(not(feature = "resource"), allow(dead_code))]
/// True if `s` is a valid RFC 6749 §3.3 scope token (`%x21 / %x23-5B / %x5D-7E`).
pub(crate) fn is_scope_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b == 0x21 || (0x23..=0x5b).contains(&b) || (0x5d..=0x7e).contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_a_401_challenge() {
        // AUTH-04, AUTH-16: resource_metadata and scope on a 401.
        let c = BearerChallenge {
            scope: vec!["mcp:read".into(), "mcp:write".into()],
            resource_metadata: Some(
                "https://mcp.example.com/.well-known/oauth-protected-resource/mcp".into(),
            ),
            ..Default::default()
        };
        assert_eq!(
            c.to_string(),
            "Bearer scope=\"mcp:read mcp:write\", resource_metadata=\"https://mcp.example.com/.well-known/oauth-protected-resource/mcp\""
        );
    }

    #[test]
    fn formats_a_403_challenge_and_escapes() {
        // AUTH-18: error="insufficient_scope" with every needed scope.
        let c = BearerChallenge {
            error: Some(INSUFFICIENT_SCOPE.into()),
            error_description: Some("needs \"admin\"\\\n".into()),
            scope: vec!["admin".into()],
            resource_metadata: Some("https://x/.well-known/oauth-protected-resource".into()),
            realm: None,
        };
        let s = c.to_string();
        assert_eq!(
            s,
            "Bearer error=\"insufficient_scope\", scope=\"admin\", resource_metadata=\"https://x/.well-known/oauth-protected-resource\", error_description=\"needs 'admin''\""
        );
        // A valid field value: visible ASCII and spaces only.
        assert!(s.bytes().all(|b| b == b' ' || b.is_ascii_graphic()));
    }

    #[test]
    fn round_trips() {
        let c = BearerChallenge {
            error: Some(INVALID_TOKEN.into()),
            error_description: Some("token expired".into()),
            scope: vec!["a".into(), "b:c".into()],
            resource_metadata: Some(
                "http://127.0.0.1:1/.well-known/oauth-protected-resource/mcp".into(),
            ),
            realm: Some("mcp".into()),
        };
        assert_eq!(BearerChallenge::parse(&c.to_string()), Some(c));
    }

    #[test]
    fn parses_among_other_schemes_and_token_values() {
        let h = r#"Basic realm="x", Bearer error=invalid_token, scope="files:read  files:write", Resource_Metadata="https://a/b", other="q\"uoted", DPoP algs="ES256""#;
        let c = BearerChallenge::parse(h).unwrap_or_default();
        assert_eq!(c.error.as_deref(), Some("invalid_token"));
        assert_eq!(c.scope, vec!["files:read", "files:write"]);
        assert_eq!(c.resource_metadata.as_deref(), Some("https://a/b"));
        // Parameters after the next scheme belong to it, not to Bearer.
        let only = BearerChallenge::parse("bearer").unwrap_or_default();
        assert_eq!(only, BearerChallenge::default());
        assert!(BearerChallenge::parse("Basic realm=\"x\"").is_none());
        assert!(
            BearerChallenge::parse("Negotiate abc==, Bearer scope=\"s\"")
                .is_some_and(|c| c.scope == ["s"])
        );
        assert!(BearerChallenge::parse("Bearer scope=\"unterminated").is_none());
        assert!(BearerChallenge::parse("").is_none());
    }

    #[test]
    fn scope_tokens() {
        assert!(is_scope_token("mcp:tools.read"));
        assert!(!is_scope_token(""));
        assert!(!is_scope_token("a b"));
        assert!(!is_scope_token("a\"b"));
        assert!(!is_scope_token("a\\b"));
        assert!(!is_scope_token("é"));
    }
}
