//! The pluggable token verifier and the claim rules shared by the built-in
//! verifiers (OAuth 2.1 §5.2, RFC 9068, RFC 7662).
// AUTH-21

use ferromcp_protocol::Principal;
use serde_json::{Map, Value};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub use crate::core::BoxFuture;

// AUTH-21
/// What a verifier learned from a valid access token. It never holds the
/// token itself.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct VerifiedToken {
    /// The subject (`sub`; for tokens without a resource owner, the client
    /// id, as RFC 9068 §2.2 suggests).
    pub subject: String,
    /// Granted scopes (`scope`, space-separated, or `scp`).
    pub scopes: Vec<String>,
    /// The OAuth client (`client_id`, else `azp`).
    pub client_id: Option<String>,
    /// Expiry as seconds since the Unix epoch, when the token has one.
    pub expires_at: Option<u64>,
    /// The RFC 7638 thumbprint of the key the token is bound to
    /// (`cnf.jkt`, RFC 9449 §6): such a token is accepted only with a
    /// matching DPoP proof.
    pub dpop_jkt: Option<String>,
}

impl VerifiedToken {
    /// A verified token for `subject` with `scopes`.
    pub fn new(subject: impl Into<String>, scopes: Vec<String>) -> Self {
        Self {
            subject: subject.into(),
            scopes,
            client_id: None,
            expires_at: None,
            dpop_jkt: None,
        }
    }

    /// Sets the client id.
    pub fn with_client_id(mut self, client_id: impl Into<String>) -> Self {
        self.client_id = Some(client_id.into());
        self
    }

    /// Binds the token to the DPoP key with thumbprint `jkt`.
    pub fn with_dpop_jkt(mut self, jkt: impl Into<String>) -> Self {
        self.dpop_jkt = Some(jkt.into());
        self
    }

    /// Sets the expiry (seconds since the Unix epoch).
    pub fn with_expires_at(mut self, unix_seconds: u64) -> Self {
        self.expires_at = Some(unix_seconds);
        self
    }

    /// The principal handed to MCP handlers (`ctx.principal()`).
    pub fn to_principal(&self) -> Principal {
        Principal {
            subject: self.subject.clone(),
            scopes: self.scopes.clone(),
            client_id: self.client_id.clone(),
        }
    }
}

/// Why a token was not accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VerifyError {
    /// The token is malformed, expired, not yet valid, for another
    /// audience, badly signed, inactive…: 401 `invalid_token`. The text
    /// becomes the challenge's `error_description`, so it must not leak
    /// secrets.
    Invalid(String),
    /// The token could not be checked (JWKS or introspection endpoint down
    /// or misbehaving): 503, so the client does not throw away a token
    /// that may be fine.
    Unavailable(String),
}

impl VerifyError {
    pub(crate) fn invalid(msg: impl Into<String>) -> Self {
        Self::Invalid(msg.into())
    }
    pub(crate) fn unavailable(msg: impl Into<String>) -> Self {
        Self::Unavailable(msg.into())
    }
}

impl std::fmt::Display for VerifyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Invalid(m) => write!(f, "invalid token: {m}"),
            Self::Unavailable(m) => write!(f, "token verification unavailable: {m}"),
        }
    }
}

impl std::error::Error for VerifyError {}

// AUTH-21
/// Checks a bearer token. Implement it to plug in any token format; the
/// crate ships [`JwtVerifier`](super::JwtVerifier) and
/// [`IntrospectionVerifier`](super::IntrospectionVerifier).
///
/// An implementation must validate the audience (the token was minted for
/// this resource, RFC 8707), expiry and issuer, and must not send
/// the token anywhere except to its own authorization server.
pub trait TokenVerifier: Send + Sync + 'static {
    /// Verifies `token` (the bearer credential, without the scheme).
    fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<VerifiedToken, VerifyError>>;
}

impl<T: TokenVerifier + ?Sized> TokenVerifier for Arc<T> {
    fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<VerifiedToken, VerifyError>> {
        (**self).verify(token)
    }
}

impl<T: TokenVerifier + ?Sized> TokenVerifier for Box<T> {
    fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<VerifiedToken, VerifyError>> {
        (**self).verify(token)
    }
}

/// Seconds since the Unix epoch.
pub(crate) fn now_unix() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Claim rules applied to a JWT payload or an introspection response.
#[derive(Debug, Clone)]
pub(crate) struct ClaimRules {
    /// Required exact `iss`, when set.
    pub(crate) issuer: Option<String>,
    /// `aud` must contain one of these (exact string match, RFC 8707).
    pub(crate) audiences: Vec<String>,
    /// Reject a token without `aud`.
    pub(crate) require_audience: bool,
    /// Reject a token without `exp`.
    pub(crate) require_expiry: bool,
    /// Tolerance for `exp` / `nbf` / `iat`.
    pub(crate) leeway: Duration,
}

/// A NumericDate (RFC 7519 §2): a non-negative JSON number, fractions
/// allowed (truncated).
fn numeric_date(v: &Value) -> Option<u64> {
    match v {
        Value::Number(n) => n.as_u64().or_else(|| {
            n.as_f64()
                .filter(|f| f.is_finite() && *f >= 0.0 && *f < u64::MAX as f64)
                .map(|f| f as u64)
        }),
        _ => None,
    }
}

fn string_claim<'a>(
    claims: &'a Map<String, Value>,
    name: &str,
) -> Result<Option<&'a str>, VerifyError> {
    match claims.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(VerifyError::invalid(format!("malformed {name} claim"))),
    }
}

/// Scopes from `scope` (space-separated string, RFC 8693 §4.2 / RFC 9068)
/// or, failing that, `scp` (string or array of strings).
pub(crate) fn scopes_of(claims: &Map<String, Value>) -> Result<Vec<String>, VerifyError> {
    let split = |s: &str| -> Vec<String> {
        s.split(' ')
            .filter(|x| !x.is_empty())
            .map(str::to_owned)
            .collect()
    };
    match claims.get("scope") {
        Some(Value::String(s)) => return Ok(split(s)),
        None | Some(Value::Null) => {}
        Some(_) => return Err(VerifyError::invalid("malformed scope claim")),
    }
    match claims.get("scp") {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::String(s)) => Ok(split(s)),
        Some(Value::Array(a)) => a
            .iter()
            .map(|v| {
                v.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| VerifyError::invalid("malformed scp claim"))
            })
            .collect(),
        Some(_) => Err(VerifyError::invalid("malformed scp claim")),
    }
}

/// The `cnf` claim (RFC 7800): `jkt` binds the token to a DPoP key (RFC
/// 9449 §6). Any other confirmation method is one this server cannot
/// check, so such a token is refused rather than treated as a bearer token.
fn confirmation(claims: &Map<String, Value>) -> Result<Option<String>, VerifyError> {
    match claims.get("cnf") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(cnf)) => match cnf.get("jkt") {
            Some(Value::String(j)) if !j.is_empty() => Ok(Some(j.clone())),
            _ => Err(VerifyError::invalid(
                "unsupported token confirmation method",
            )),
        },
        Some(_) => Err(VerifyError::invalid("malformed cnf claim")),
    }
}

/// Applies `rules` at time `now` and extracts the token's facts.
pub(crate) fn check_claims(
    claims: &Map<String, Value>,
    rules: &ClaimRules,
    now: u64,
) -> Result<VerifiedToken, VerifyError> {
    let leeway = rules.leeway.as_secs();
    if let Some(want) = &rules.issuer {
        match string_claim(claims, "iss")? {
            Some(iss) if iss == want => {}
            Some(_) => return Err(VerifyError::invalid("wrong issuer")),
            None => return Err(VerifyError::invalid("missing issuer")),
        }
    }
    match claims.get("aud") {
        None | Some(Value::Null) => {
            if rules.require_audience {
                return Err(VerifyError::invalid("missing audience"));
            }
        }
        Some(aud) => {
            let ok = match aud {
                Value::String(s) => rules.audiences.iter().any(|a| a == s),
                Value::Array(items) => items
                    .iter()
                    .filter_map(Value::as_str)
                    .any(|s| rules.audiences.iter().any(|a| a == s)),
                _ => false,
            };
            if !ok {
                // RFC 8707 / AUTH-21: only tokens minted for this resource.
                return Err(VerifyError::invalid("token audience is not this resource"));
            }
        }
    }
    let expires_at = match claims.get("exp") {
        None | Some(Value::Null) => {
            if rules.require_expiry {
                return Err(VerifyError::invalid("missing exp"));
            }
            None
        }
        Some(v) => Some(numeric_date(v).ok_or_else(|| VerifyError::invalid("malformed exp"))?),
    };
    if let Some(exp) = expires_at
        && now >= exp.saturating_add(leeway)
    {
        return Err(VerifyError::invalid("token expired"));
    }
    if let Some(v) = claims.get("nbf").filter(|v| !v.is_null()) {
        let nbf = numeric_date(v).ok_or_else(|| VerifyError::invalid("malformed nbf"))?;
        if nbf > now.saturating_add(leeway) {
            return Err(VerifyError::invalid("token not yet valid"));
        }
    }
    if let Some(v) = claims.get("iat").filter(|v| !v.is_null()) {
        let iat = numeric_date(v).ok_or_else(|| VerifyError::invalid("malformed iat"))?;
        if iat > now.saturating_add(leeway) {
            return Err(VerifyError::invalid("token issued in the future"));
        }
    }
    let client_id = match string_claim(claims, "client_id")? {
        Some(c) => Some(c.to_owned()),
        None => string_claim(claims, "azp")?.map(str::to_owned),
    };
    let subject = match string_claim(claims, "sub")? {
        Some(s) if !s.is_empty() => s.to_owned(),
        _ => match &client_id {
            // RFC 9068 §2.2: without a resource owner the client is the subject.
            Some(c) if !c.is_empty() => c.clone(),
            _ => return Err(VerifyError::invalid("missing subject")),
        },
    };
    Ok(VerifiedToken {
        subject,
        scopes: scopes_of(claims)?,
        client_id,
        expires_at,
        dpop_jkt: confirmation(claims)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rules() -> ClaimRules {
        ClaimRules {
            issuer: Some("https://as".into()),
            audiences: vec!["https://rs/mcp".into()],
            require_audience: true,
            require_expiry: true,
            leeway: Duration::from_secs(30),
        }
    }

    fn map(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    }

    const NOW: u64 = 1_800_000_000;

    fn good() -> Value {
        json!({"iss":"https://as","aud":"https://rs/mcp","sub":"alice","exp": NOW + 60,"scope":"a b  c","client_id":"app"})
    }

    fn check(v: Value) -> Result<VerifiedToken, VerifyError> {
        check_claims(&map(v), &rules(), NOW)
    }

    fn with(k: &str, v: Value) -> Value {
        let mut g = good();
        g[k] = v;
        g
    }

    fn without(k: &str) -> Value {
        let mut g = map(good());
        g.remove(k);
        Value::Object(g)
    }

    /// RFC 9449 §6: `cnf.jkt` binds the token; other confirmation
    /// methods are refused, not ignored.
    #[test]
    fn confirmation_claim() {
        assert_eq!(check(good()).map(|t| t.dpop_jkt), Ok(None));
        assert_eq!(
            check(with("cnf", json!({"jkt": "abc"}))).map(|t| t.dpop_jkt),
            Ok(Some("abc".to_owned()))
        );
        for bad in [json!({"x5t#S256": "x"}), json!({"jkt": 1}), json!("jkt")] {
            assert!(check(with("cnf", bad.clone())).is_err(), "{bad}");
        }
    }

    #[test]
    fn accepts_a_good_token() {
        let t = check(good()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(t.subject, "alice");
        assert_eq!(t.scopes, ["a", "b", "c"]);
        assert_eq!(t.client_id.as_deref(), Some("app"));
        assert_eq!(t.expires_at, Some(NOW + 60));
        let p = t.to_principal();
        assert_eq!((p.subject.as_str(), p.scopes.len()), ("alice", 3));
    }

    #[test]
    fn audience_must_be_this_resource() {
        // AUTH-21 / RFC 8707.
        assert!(check(with("aud", json!("https://other/mcp"))).is_err());
        assert!(check(with("aud", json!("https://rs/mcp/"))).is_err());
        assert!(check(with("aud", json!(["x", "https://rs/mcp"]))).is_ok());
        assert!(check(with("aud", json!(["x", "y"]))).is_err());
        assert!(check(with("aud", json!(7))).is_err());
        assert!(check(without("aud")).is_err());
    }

    #[test]
    fn issuer_exp_nbf_iat() {
        assert!(check(with("iss", json!("https://as/"))).is_err());
        assert!(check(without("iss")).is_err());
        assert!(check(without("exp")).is_err());
        assert!(check(with("exp", json!("soon"))).is_err());
        // Expired, but inside the leeway → accepted; beyond it → rejected.
        assert!(check(with("exp", json!(NOW - 10))).is_ok());
        assert_eq!(
            check(with("exp", json!(NOW - 30))),
            Err(VerifyError::Invalid("token expired".into()))
        );
        assert!(check(with("exp", json!((NOW + 5) as f64 + 0.5))).is_ok());
        assert!(check(with("nbf", json!(NOW + 20))).is_ok());
        assert_eq!(
            check(with("nbf", json!(NOW + 31))),
            Err(VerifyError::Invalid("token not yet valid".into()))
        );
        assert!(check(with("iat", json!(NOW + 3600))).is_err());
        assert!(check(with("nbf", json!(-1))).is_err());
    }

    #[test]
    fn scopes_from_scope_or_scp() {
        let s = |v: Value| scopes_of(&map(v)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(s(json!({"scope":"x y"})), ["x", "y"]);
        assert_eq!(s(json!({"scp":["x","y"]})), ["x", "y"]);
        assert_eq!(s(json!({"scp":"x y"})), ["x", "y"]);
        assert_eq!(s(json!({"scope":"x","scp":["z"]})), ["x"]);
        assert!(s(json!({})).is_empty());
        assert!(scopes_of(&map(json!({"scp":[1]}))).is_err());
        assert!(scopes_of(&map(json!({"scope":["x"]}))).is_err());
    }

    #[test]
    fn subject_and_client() {
        let t = check(with("client_id", Value::Null)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(t.client_id, None);
        let mut v = map(good());
        v.remove("client_id");
        v.insert("azp".into(), json!("azp-app"));
        let t = check(Value::Object(v.clone())).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(t.client_id.as_deref(), Some("azp-app"));
        v.remove("sub");
        let t = check(Value::Object(v.clone())).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(t.subject, "azp-app");
        v.remove("azp");
        assert!(check(Value::Object(v)).is_err());
        assert!(check(with("sub", json!(5))).is_err());
    }
}
