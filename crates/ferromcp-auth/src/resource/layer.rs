//! The bearer-token gate: a tower `Layer` that serves the metadata
//! document, authenticates every request and enforces scopes.
// LADDER-02

use super::ConfigError;
use super::dpop::{DpopChecker, DpopPolicy, ProofRejection, ProofTarget};
use super::metadata::{PRM_WELL_KNOWN, ProtectedResourceMetadata, ResourceUri};
use super::peek::{Ops, operations};
use super::verifier::{BoxFuture, TokenVerifier, VerifyError};
use crate::challenge::{
    BearerChallenge, INSUFFICIENT_SCOPE, INVALID_REQUEST, INVALID_TOKEN, is_scope_token,
};
use bytes::Bytes;
use ferromcp_protocol::ProtocolVersion;
use ferromcp_protocol::header::codec::decode_header_value;
use ferromcp_protocol::header::{
    MCP_METHOD, MCP_NAME, MCP_PROTOCOL_VERSION, MCP_SESSION_ID, trim_ows,
};
use http::header::{self, HeaderMap, HeaderValue};
use http::{Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Either, Full};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

// Foreign type: the request body a tower middleware hands on: the caller's body or the buffered
// one, in http-body-util's types.
/// The request body handed to the wrapped service: the original body, or
/// the same bytes after the layer read them to find the operation.
pub type GuardedBody<B> = Either<B, Full<Bytes>>;

// Foreign type: the response body a tower middleware returns: the inner service's or the layer's
// own, in http-body-util's types.
/// The response body: the wrapped service's, or the layer's own (metadata,
/// 401, 403, …).
pub type GuardBody<RB> = Either<RB, Full<Bytes>>;

// AUTH-03/AUTH-04, AUTH-20, AUTH-16, LEGACY-27, AUTH-21, AUTH-18
/// Protects an HTTP service (normally `ferromcp_server::transport::http::McpService`)
/// with OAuth 2.1 bearer tokens. See the [module docs](super) for an example.
///
/// Per request, in order:
/// 1. `GET`/`HEAD`/`OPTIONS` on `/.well-known/oauth-protected-resource` or
///    its path-inserted form answer with the metadata document,
///    unauthenticated.
/// 2. A token in the query string (`access_token=`) or more than one
///    `Authorization` header → 400 `invalid_request`.
/// 3. No bearer token → 401 with `resource_metadata` and `scope`;
///    a malformed, invalid or expired one → 401
///    `error="invalid_token"`; verifier unavailable → 503.
/// 4. Scopes: the endpoint's, plus the method's, plus the tool's for
///    `tools/call`; missing any → 403 `error="insufficient_scope"` naming
///    every scope the operation needs.
/// 5. Otherwise the `Authorization` header is removed (the token never
///    reaches handlers or anything upstream), an
///    `ferromcp_protocol::Principal` (the type `ferromcp_server::Principal` names) is
///    inserted into the request extensions, and the wrapped service is
///    called.
#[derive(Clone)]
pub struct AuthLayer {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for AuthLayer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthLayer")
            .field("resource", &self.shared.resource.as_str())
            .finish_non_exhaustive()
    }
}

struct Shared {
    resource: ResourceUri,
    metadata: ProtectedResourceMetadata,
    metadata_json: Bytes,
    metadata_url: String,
    metadata_paths: Vec<String>,
    verifier: Arc<dyn TokenVerifier>,
    policy: ScopePolicy,
    challenge_scopes: Option<Vec<String>>,
    body_peek_limit: usize,
    body_read_timeout: Duration,
    max_token_bytes: usize,
    serve_metadata: bool,
    trust_routing_headers: bool,
    dpop: Option<DpopChecker>,
}

#[derive(Default)]
struct ScopePolicy {
    endpoint: Vec<String>,
    methods: HashMap<String, Vec<String>>,
    tools: HashMap<String, Vec<String>>,
    /// granted scope → scopes it implies (transitively closed).
    implies: HashMap<String, HashSet<String>>,
}

impl ScopePolicy {
    fn per_operation(&self) -> bool {
        !self.methods.is_empty() || !self.tools.is_empty()
    }

    fn add(out: &mut Vec<String>, scopes: &[String]) {
        for s in scopes {
            if !out.contains(s) {
                out.push(s.clone());
            }
        }
    }

    /// Every scope that can be required: the fail-closed answer.
    fn everything(&self) -> Vec<String> {
        let mut out = self.endpoint.clone();
        let mut methods: Vec<_> = self.methods.iter().collect();
        methods.sort();
        for (_, s) in methods {
            Self::add(&mut out, s);
        }
        let mut tools: Vec<_> = self.tools.iter().collect();
        tools.sort();
        for (_, s) in tools {
            Self::add(&mut out, s);
        }
        out
    }

    fn for_op(
        &self,
        out: &mut Vec<String>,
        method: Option<&str>,
        tool: Option<&str>,
        tool_unreadable: bool,
    ) {
        if let Some(s) = method.and_then(|m| self.methods.get(m)) {
            Self::add(out, s);
        }
        if let Some(s) = tool.and_then(|t| self.tools.get(t)) {
            Self::add(out, s);
        }
        if tool_unreadable {
            let mut tools: Vec<_> = self.tools.iter().collect();
            tools.sort();
            for (_, s) in tools {
                Self::add(out, s);
            }
        }
    }

    /// All scopes the operations need (endpoint first, in config order).
    fn required(&self, ops: &Ops) -> Vec<String> {
        let mut out = self.endpoint.clone();
        match ops {
            Ops::NotJson => {}
            Ops::Unreadable => return self.everything(),
            Ops::Known(ops) => {
                for op in ops {
                    self.for_op(
                        &mut out,
                        op.method.as_deref(),
                        op.tool.as_deref(),
                        op.tool_unreadable,
                    );
                }
            }
        }
        out
    }

    fn satisfied(&self, granted: &[String], required: &[String]) -> bool {
        required.iter().all(|r| {
            granted
                .iter()
                .any(|g| g == r || self.implies.get(g).is_some_and(|i| i.contains(r)))
        })
    }
}

/// Builder for [`AuthLayer`].
pub struct AuthLayerBuilder {
    resource: ResourceUri,
    verifier: Arc<dyn TokenVerifier>,
    authorization_servers: Vec<String>,
    scopes_supported: Option<Vec<String>>,
    policy: ScopePolicy,
    implies: Vec<(String, Vec<String>)>,
    challenge_scopes: Option<Vec<String>>,
    resource_name: Option<String>,
    resource_documentation: Option<String>,
    body_peek_limit: usize,
    body_read_timeout: Duration,
    max_token_bytes: usize,
    serve_metadata: bool,
    trust_routing_headers: bool,
    dpop: Option<DpopPolicy>,
}

impl std::fmt::Debug for AuthLayerBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthLayerBuilder")
            .field("resource", &self.resource.as_str())
            .finish_non_exhaustive()
    }
}

impl AuthLayer {
    /// Default cap on a request body read to find its operation: 4 MiB
    /// (the MCP server's own body limit).
    pub const DEFAULT_BODY_PEEK_LIMIT: usize = 4 * 1024 * 1024;
    /// Default time allowed to receive a body the layer reads: 30 s.
    pub const DEFAULT_BODY_READ_TIMEOUT: Duration = Duration::from_secs(30);
    /// Default longest bearer token accepted: 16 KiB.
    pub const DEFAULT_MAX_TOKEN_BYTES: usize = 16 * 1024;

    /// A builder for protecting `resource` (the canonical URI clients
    /// use, e.g. `https://mcp.example.com/mcp`) with `verifier`.
    pub fn builder(resource: ResourceUri, verifier: impl TokenVerifier) -> AuthLayerBuilder {
        AuthLayerBuilder {
            resource,
            verifier: Arc::new(verifier),
            authorization_servers: Vec::new(),
            scopes_supported: None,
            policy: ScopePolicy::default(),
            implies: Vec::new(),
            challenge_scopes: None,
            resource_name: None,
            resource_documentation: None,
            body_peek_limit: Self::DEFAULT_BODY_PEEK_LIMIT,
            body_read_timeout: Self::DEFAULT_BODY_READ_TIMEOUT,
            max_token_bytes: Self::DEFAULT_MAX_TOKEN_BYTES,
            serve_metadata: true,
            trust_routing_headers: true,
            dpop: None,
        }
    }

    /// The metadata document this layer serves.
    pub fn metadata(&self) -> &ProtectedResourceMetadata {
        &self.shared.metadata
    }

    /// The metadata URL named in challenges (path-inserted well-known URI).
    pub fn metadata_url(&self) -> &str {
        &self.shared.metadata_url
    }

    // Foreign type: this is an HTTP transport; `http`/`http-body` are the shared vocabulary of
    // hyper, axum and tower, so it plugs into them without conversion.
    /// The metadata document as an HTTP response, for mounting it yourself
    /// (e.g. in an axum router) when [`AuthLayerBuilder::serve_metadata`]
    /// is off.
    pub fn metadata_response(&self) -> Response<Full<Bytes>> {
        metadata_response(&self.shared, &Method::GET)
    }
}

fn valid_scopes(scopes: &[String]) -> Result<(), ConfigError> {
    match scopes.iter().find(|s| !is_scope_token(s)) {
        Some(s) => Err(ConfigError::new(format!(
            "invalid scope {s:?} (RFC 6749 §3.3)"
        ))),
        None => Ok(()),
    }
}

fn collect(scopes: impl IntoIterator<Item = impl Into<String>>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for s in scopes {
        let s = s.into();
        if !out.contains(&s) {
            out.push(s);
        }
    }
    out
}

impl AuthLayerBuilder {
    // AUTH-03
    /// Adds an authorization server (issuer identifier) to the metadata
    /// document; at least one is required.
    pub fn authorization_server(mut self, issuer: impl Into<String>) -> Self {
        self.authorization_servers.push(issuer.into());
        self
    }

    /// `scopes_supported` of the metadata document. Default: every scope
    /// named by the requirements below, if any.
    pub fn scopes_supported(mut self, scopes: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.scopes_supported = Some(collect(scopes));
        self
    }

    /// Scopes every request needs.
    pub fn require_scopes(mut self, scopes: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.policy.endpoint = collect(scopes);
        self
    }

    /// Extra scopes a JSON-RPC method needs (e.g. `tools/list`).
    pub fn require_method_scopes(
        mut self,
        method: impl Into<String>,
        scopes: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        self.policy.methods.insert(method.into(), collect(scopes));
        self
    }

    /// Extra scopes a `tools/call` of tool `name` needs.
    pub fn require_tool_scopes(
        mut self,
        name: impl Into<String>,
        scopes: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        self.policy.tools.insert(name.into(), collect(scopes));
        self
    }

    // AUTH-18
    /// Scope hierarchy: a token granted `scope` also satisfies
    /// requirements for each of `implied` (transitively).
    pub fn scope_implies(
        mut self,
        scope: impl Into<String>,
        implied: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        self.implies.push((scope.into(), collect(implied)));
        self
    }

    // AUTH-16
    /// Scopes named in 401 challenges. Default: the endpoint scopes plus,
    /// when the request's `Mcp-Method` / `Mcp-Name` headers name an
    /// operation, that operation's scopes.
    pub fn challenge_scopes(mut self, scopes: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.challenge_scopes = Some(collect(scopes));
        self
    }

    /// `resource_name` of the metadata document.
    pub fn resource_name(mut self, name: impl Into<String>) -> Self {
        self.resource_name = Some(name.into());
        self
    }

    /// `resource_documentation` of the metadata document.
    pub fn resource_documentation(mut self, url: impl Into<String>) -> Self {
        self.resource_documentation = Some(url.into());
        self
    }

    /// Largest body the layer reads to find a request's operation (only
    /// for authenticated POSTs, and only when method or tool scopes are
    /// configured); larger bodies get 413.
    pub fn body_peek_limit(mut self, bytes: usize) -> Self {
        self.body_peek_limit = bytes;
        self
    }

    /// Time allowed to receive a body the layer reads; slower ones get 408.
    pub fn body_read_timeout(mut self, timeout: Duration) -> Self {
        self.body_read_timeout = timeout;
        self
    }

    /// Longest bearer token accepted; longer ones are `invalid_token`.
    pub fn max_token_bytes(mut self, bytes: usize) -> Self {
        self.max_token_bytes = bytes;
        self
    }

    /// Serve the metadata document at the well-known paths (default on).
    pub fn serve_metadata(mut self, on: bool) -> Self {
        self.serve_metadata = on;
        self
    }

    // LADDER-09
    /// Take a modern request's operation from its `Mcp-Method` / `Mcp-Name`
    /// headers instead of reading the body (default on).
    ///
    /// Used only when the request is certain to be served on the modern
    /// wire, where the MCP server rejects any header that disagrees with
    /// the body: exactly one `MCP-Protocol-Version` naming a
    /// modern revision, no `Mcp-Session-Id`, exactly one `Mcp-Method` (and
    /// `Mcp-Name` for `tools/call`). Handshake-era requests and batches
    /// are always read from the body. Turn this off when the wrapped
    /// service does not reject headers that disagree with the body.
    pub fn trust_routing_headers(mut self, on: bool) -> Self {
        self.trust_routing_headers = on;
        self
    }

    /// Validates the configuration.
    /// Accepts DPoP-bound tokens (RFC 9449; see [`DpopPolicy`]):
    /// `Authorization: DPoP` with a proof checked against the token's
    /// `cnf.jkt`. Without it, bound tokens are refused (never downgraded
    /// to bearer tokens).
    pub fn dpop(mut self, policy: DpopPolicy) -> Self {
        self.dpop = Some(policy);
        self
    }

    /// Checks the configuration and builds the layer.
    pub fn build(self) -> Result<AuthLayer, ConfigError> {
        if self
            .dpop
            .as_ref()
            .is_some_and(|d| d.algorithms.is_empty() || d.max_replay_entries == 0)
        {
            return Err(ConfigError::new(
                "DPoP needs at least one algorithm and a replay cache",
            ));
        }
        if self.authorization_servers.is_empty() {
            return Err(ConfigError::new(
                "at least one authorization server is required (AUTH-03)",
            ));
        }
        let mut policy = self.policy;
        valid_scopes(&policy.endpoint)?;
        for s in policy.methods.values().chain(policy.tools.values()) {
            valid_scopes(s)?;
        }
        if let Some(s) = &self.challenge_scopes {
            valid_scopes(s)?;
        }
        // Transitive closure of the scope hierarchy.
        let direct: HashMap<String, Vec<String>> = self.implies.into_iter().collect();
        for (scope, implied) in &direct {
            valid_scopes(std::slice::from_ref(scope))?;
            valid_scopes(implied)?;
            let mut seen: HashSet<String> = HashSet::new();
            let mut stack: Vec<&String> = implied.iter().collect();
            while let Some(s) = stack.pop() {
                if seen.insert(s.clone())
                    && let Some(more) = direct.get(s)
                {
                    stack.extend(more.iter());
                }
            }
            policy.implies.insert(scope.clone(), seen);
        }
        let scopes_supported = match self.scopes_supported {
            Some(s) => {
                valid_scopes(&s)?;
                Some(s)
            }
            None => Some(policy.everything()).filter(|s| !s.is_empty()),
        };
        let mut metadata =
            ProtectedResourceMetadata::new(&self.resource, self.authorization_servers);
        metadata.scopes_supported = scopes_supported;
        metadata.resource_name = self.resource_name;
        metadata.resource_documentation = self.resource_documentation;
        let metadata_json = Bytes::from(
            serde_json::to_vec(&metadata).map_err(|e| ConfigError::new(e.to_string()))?,
        );
        let metadata_url = self.resource.metadata_url();
        if HeaderValue::from_str(&metadata_url).is_err() {
            return Err(ConfigError::new("metadata URL is not a valid header value"));
        }
        let mut metadata_paths = vec![PRM_WELL_KNOWN.to_owned()];
        if !self.resource.path().is_empty() {
            metadata_paths.push(format!("{PRM_WELL_KNOWN}{}", self.resource.path()));
        }
        Ok(AuthLayer {
            shared: Arc::new(Shared {
                resource: self.resource,
                metadata,
                metadata_json,
                metadata_url,
                metadata_paths,
                verifier: self.verifier,
                policy,
                challenge_scopes: self.challenge_scopes,
                body_peek_limit: self.body_peek_limit,
                body_read_timeout: self.body_read_timeout,
                max_token_bytes: self.max_token_bytes,
                serve_metadata: self.serve_metadata,
                trust_routing_headers: self.trust_routing_headers,
                dpop: self.dpop.map(DpopChecker::new),
            }),
        })
    }
}

// Foreign type: tower `Service`/`Layer` is how HTTP middleware (auth, CORS, limits) composes with
// hyper and axum.
impl<S> tower_layer::Layer<S> for AuthLayer {
    type Service = RequireBearer<S>;

    fn layer(&self, inner: S) -> RequireBearer<S> {
        RequireBearer {
            inner,
            shared: self.shared.clone(),
        }
    }
}

/// The service produced by [`AuthLayer`].
#[derive(Clone)]
pub struct RequireBearer<S> {
    inner: S,
    shared: Arc<Shared>,
}

impl<S: std::fmt::Debug> std::fmt::Debug for RequireBearer<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequireBearer")
            .field("inner", &self.inner)
            .field("resource", &self.shared.resource.as_str())
            .finish()
    }
}

// Foreign type: tower `Service`/`Layer` is how HTTP middleware (auth, CORS, limits) composes with
// hyper and axum.
impl<S, B, RB> tower_service::Service<Request<B>> for RequireBearer<S>
where
    S: tower_service::Service<Request<GuardedBody<B>>, Response = Response<RB>>
        + Clone
        + Send
        + 'static,
    S::Future: Send,
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Response = Response<GuardBody<RB>>;
    type Error = S::Error;
    type Future = BoxFuture<'static, Result<Self::Response, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        let shared = self.shared.clone();
        // The readied service serves this request; the clone waits for the next.
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        Box::pin(async move {
            match admit(&shared, req).await {
                Ok(req) => inner.call(req).await.map(|r| r.map(Either::Left)),
                Err(resp) => Ok(resp.map(Either::Right)),
            }
        })
    }
}

/// How the request presented a token.
enum Presented<'a> {
    /// No `Authorization` header, or another scheme (RFC 6750 §3.1: no
    /// error code then).
    Nothing,
    /// A token, and whether the scheme was `DPoP` (else `Bearer`).
    Token(&'a str, bool),
    Malformed(&'static str),
}

fn presented(headers: &HeaderMap, max: usize, dpop: bool) -> Result<Presented<'_>, &'static str> {
    let mut all = headers.get_all(header::AUTHORIZATION).iter();
    let Some(v) = all.next() else {
        return Ok(Presented::Nothing);
    };
    if all.next().is_some() {
        return Err("more than one Authorization header");
    }
    let Ok(v) = v.to_str() else {
        return Ok(Presented::Malformed("malformed Authorization header"));
    };
    let v = v.trim_matches(|c| c == ' ' || c == '\t');
    let (scheme, rest) = v.split_once(' ').unwrap_or((v, ""));
    let is_dpop = dpop && scheme.eq_ignore_ascii_case("dpop");
    if !is_dpop && !scheme.eq_ignore_ascii_case("bearer") {
        return Ok(Presented::Nothing);
    }
    let token = rest.trim_start_matches(' ');
    if token.len() > max {
        return Ok(Presented::Malformed("token too large"));
    }
    // RFC 6750 §2.1 b64token.
    let body = token.trim_end_matches('=');
    let ok = !body.is_empty()
        && body
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~+/".contains(&b));
    if !ok {
        return Ok(Presented::Malformed("malformed bearer token"));
    }
    Ok(Presented::Token(token, is_dpop))
}

/// True when the query string carries an `access_token` parameter.
fn token_in_query(uri: &http::Uri) -> bool {
    uri.query().is_some_and(|q| {
        q.split('&').any(|kv| {
            kv.split('=')
                .next()
                .is_some_and(|k| k.eq_ignore_ascii_case("access_token"))
        })
    })
}

/// The one value of a header that must appear exactly once.
fn single<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h [u8]> {
    let mut all = headers.get_all(name).iter();
    let v = all.next()?;
    if all.next().is_some() {
        return None;
    }
    Some(trim_ows(v.as_bytes()))
}

/// The operation named by `Mcp-Method` / `Mcp-Name`, if readable.
fn header_op(headers: &HeaderMap) -> Option<(String, Option<String>)> {
    let method = std::str::from_utf8(single(headers, MCP_METHOD)?)
        .ok()?
        .to_owned();
    let tool = if method == "tools/call" {
        Some(decode_header_value(single(headers, MCP_NAME)?)?.into_owned())
    } else {
        None
    };
    Some((method, tool))
}

// LADDER-09
/// The operation, when the request is certain to take the modern path
/// (whose ladder rejects headers that disagree with the body).
fn trusted_header_op(headers: &HeaderMap) -> Option<(String, Option<String>)> {
    let version = std::str::from_utf8(single(headers, MCP_PROTOCOL_VERSION)?).ok()?;
    if !ProtocolVersion::parse(version).is_some_and(ProtocolVersion::is_modern) {
        return None;
    }
    if headers.contains_key(MCP_SESSION_ID) {
        return None;
    }
    header_op(headers)
}

fn json_body(error: Option<&str>, description: &str) -> Bytes {
    let mut m = serde_json::Map::new();
    if let Some(e) = error {
        m.insert("error".into(), e.into());
    }
    m.insert("error_description".into(), description.into());
    Bytes::from(serde_json::Value::Object(m).to_string())
}

fn challenge_response(
    shared: &Shared,
    status: StatusCode,
    error: Option<&str>,
    description: &str,
    scope: Vec<String>,
) -> Response<Full<Bytes>> {
    let challenge = BearerChallenge {
        error: error.map(str::to_owned),
        error_description: error.is_some().then(|| description.to_owned()),
        scope,
        resource_metadata: Some(shared.metadata_url.clone()),
        realm: None,
    };
    let mut r = Response::new(Full::new(json_body(error, description)));
    *r.status_mut() = status;
    let h = r.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&challenge.to_string()) {
        h.insert(header::WWW_AUTHENTICATE, v);
    }
    if let Some(d) = &shared.dpop
        && let Ok(v) = HeaderValue::from_str(&format!("DPoP algs=\"{}\"", d.policy.algs()))
    {
        h.append(header::WWW_AUTHENTICATE, v);
    }
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

/// RFC 9449 §7: a bound token only with the DPoP scheme and a valid proof;
/// the DPoP scheme only with a bound token.
// The error is the response `admit` returns as is, like its other refusals.
#[allow(clippy::result_large_err)]
fn check_binding<B>(
    shared: &Shared,
    req: &Request<B>,
    token: &str,
    dpop_scheme: bool,
    jkt: Option<&str>,
) -> Result<(), Response<Full<Bytes>>> {
    let refuse = |error: &str, why: &str| {
        let mut r = challenge_response(
            shared,
            StatusCode::UNAUTHORIZED,
            Some(error),
            why,
            challenge_scopes(shared, req.headers()),
        );
        if (error == INVALID_DPOP_PROOF || error == USE_DPOP_NONCE)
            && let Some(d) = &shared.dpop
        {
            // The error belongs to the DPoP challenge (RFC 9449 §7.1).
            let challenge = format!(
                "DPoP error=\"{error}\", error_description=\"{}\", algs=\"{}\"",
                why.replace(['"', '\\'], "'"),
                d.policy.algs()
            );
            if let Ok(v) = HeaderValue::from_str(&challenge) {
                let h = r.headers_mut();
                let bearer = h.get(header::WWW_AUTHENTICATE).cloned();
                h.remove(header::WWW_AUTHENTICATE);
                if let Some(b) = bearer {
                    h.append(header::WWW_AUTHENTICATE, b);
                }
                h.append(header::WWW_AUTHENTICATE, v);
            }
        }
        r
    };
    match (dpop_scheme, jkt, &shared.dpop) {
        (false, None, _) => Ok(()),
        (false, Some(_), _) => Err(refuse(
            INVALID_TOKEN,
            "the token is DPoP-bound and must be presented with the DPoP scheme and a proof",
        )),
        (true, None, _) => Err(refuse(INVALID_TOKEN, "the token is not DPoP-bound")),
        (true, Some(_), None) => Err(refuse(INVALID_TOKEN, "DPoP is not accepted here")),
        (true, Some(jkt), Some(checker)) => {
            let mut proofs = req.headers().get_all("dpop").iter();
            let proof = match (proofs.next(), proofs.next()) {
                (Some(p), None) => p.to_str().unwrap_or(""),
                (None, _) => return Err(refuse(INVALID_DPOP_PROOF, "missing DPoP proof")),
                (Some(_), Some(_)) => {
                    return Err(refuse(INVALID_DPOP_PROOF, "more than one DPoP proof"));
                }
            };
            let url = format!("{}{}", shared.resource.origin(), req.uri().path());
            let target = ProofTarget {
                method: req.method().as_str(),
                url: &url,
                access_token: token,
                jkt,
            };
            match checker.check(proof.trim(), &target, super::verifier::now_unix()) {
                Ok(()) => Ok(()),
                Err(ProofRejection::Invalid(why)) => Err(refuse(INVALID_DPOP_PROOF, &why)),
                Err(ProofRejection::UseNonce(nonce)) => {
                    let mut r = refuse(USE_DPOP_NONCE, "a server-issued DPoP nonce is required");
                    if let Ok(v) = HeaderValue::from_str(&nonce) {
                        r.headers_mut().insert("dpop-nonce", v);
                    }
                    Err(r)
                }
            }
        }
    }
}

/// RFC 9449 §7.1 error code for a bad proof.
const INVALID_DPOP_PROOF: &str = "invalid_dpop_proof";
/// RFC 9449 §9 error code asking for a retry with the server's nonce.
const USE_DPOP_NONCE: &str = "use_dpop_nonce";

fn plain(status: StatusCode, description: &str) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(json_body(None, description)));
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

fn metadata_response(shared: &Shared, method: &Method) -> Response<Full<Bytes>> {
    let mut r = match *method {
        Method::GET => Response::new(Full::new(shared.metadata_json.clone())),
        Method::HEAD | Method::OPTIONS => Response::new(Full::new(Bytes::new())),
        _ => {
            let mut r = plain(StatusCode::METHOD_NOT_ALLOWED, "use GET");
            r.headers_mut().insert(
                header::ALLOW,
                HeaderValue::from_static("GET, HEAD, OPTIONS"),
            );
            return r;
        }
    };
    let h = r.headers_mut();
    // A public document, readable by browser-based clients.
    h.insert(
        header::ACCESS_CONTROL_ALLOW_ORIGIN,
        HeaderValue::from_static("*"),
    );
    if *method == Method::OPTIONS {
        *r.status_mut() = StatusCode::NO_CONTENT;
        let h = r.headers_mut();
        h.insert(
            header::ACCESS_CONTROL_ALLOW_METHODS,
            HeaderValue::from_static("GET, HEAD, OPTIONS"),
        );
        h.insert(
            header::ACCESS_CONTROL_ALLOW_HEADERS,
            HeaderValue::from_static("mcp-protocol-version"),
        );
        return r;
    }
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    h.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=3600"),
    );
    if let Ok(v) = HeaderValue::from_str(&shared.metadata_json.len().to_string()) {
        h.insert(header::CONTENT_LENGTH, v);
    }
    r
}

// AUTH-16
/// Scopes for a 401 challenge; never `offline_access`.
fn challenge_scopes(shared: &Shared, headers: &HeaderMap) -> Vec<String> {
    let mut out = match &shared.challenge_scopes {
        Some(s) => s.clone(),
        None => {
            let mut out = shared.policy.endpoint.clone();
            // A hint only: a lying header costs the liar a round trip.
            if shared.policy.per_operation()
                && let Some((method, tool)) = header_op(headers)
            {
                shared
                    .policy
                    .for_op(&mut out, Some(&method), tool.as_deref(), false);
            }
            out
        }
    };
    out.retain(|s| s != "offline_access");
    out
}

async fn admit<B>(
    shared: &Shared,
    req: Request<B>,
) -> Result<Request<GuardedBody<B>>, Response<Full<Bytes>>>
where
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    if shared.serve_metadata && shared.metadata_paths.iter().any(|p| p == req.uri().path()) {
        return Err(metadata_response(shared, req.method()));
    }
    // AUTH-20: tokens travel only in the Authorization header.
    if token_in_query(req.uri()) {
        return Err(challenge_response(
            shared,
            StatusCode::BAD_REQUEST,
            Some(INVALID_REQUEST),
            "access tokens are accepted only in the Authorization header",
            Vec::new(),
        ));
    }
    let (token, dpop_scheme) =
        match presented(req.headers(), shared.max_token_bytes, shared.dpop.is_some()) {
            Err(why) => {
                return Err(challenge_response(
                    shared,
                    StatusCode::BAD_REQUEST,
                    Some(INVALID_REQUEST),
                    why,
                    Vec::new(),
                ));
            }
            Ok(Presented::Nothing) => {
                return Err(challenge_response(
                    shared,
                    StatusCode::UNAUTHORIZED,
                    None,
                    "authorization required",
                    challenge_scopes(shared, req.headers()),
                ));
            }
            Ok(Presented::Malformed(why)) => {
                return Err(challenge_response(
                    shared,
                    StatusCode::UNAUTHORIZED,
                    Some(INVALID_TOKEN),
                    why,
                    challenge_scopes(shared, req.headers()),
                ));
            }
            Ok(Presented::Token(t, d)) => (t, d),
        };
    let verified = match shared.verifier.verify(token).await {
        Ok(v) => v,
        Err(VerifyError::Invalid(why)) => {
            return Err(challenge_response(
                shared,
                StatusCode::UNAUTHORIZED,
                Some(INVALID_TOKEN),
                &why,
                challenge_scopes(shared, req.headers()),
            ));
        }
        Err(VerifyError::Unavailable(why)) => {
            tracing::warn!(reason = %why, "token verification unavailable");
            let mut r = plain(
                StatusCode::SERVICE_UNAVAILABLE,
                "token verification is temporarily unavailable",
            );
            r.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
            return Err(r);
        }
    };
    check_binding(
        shared,
        &req,
        token,
        dpop_scheme,
        verified.dpop_jkt.as_deref(),
    )?;
    let (mut parts, body) = req.into_parts();
    let (required, body) = if shared.policy.per_operation() && parts.method == Method::POST {
        match trusted_header_op(&parts.headers).filter(|_| shared.trust_routing_headers) {
            Some((method, tool)) => {
                let mut out = shared.policy.endpoint.clone();
                shared
                    .policy
                    .for_op(&mut out, Some(&method), tool.as_deref(), false);
                (out, Either::Left(body))
            }
            None => {
                let bytes =
                    read_body(body, shared.body_peek_limit, shared.body_read_timeout).await?;
                let required = shared.policy.required(&operations(&bytes));
                (required, Either::Right(Full::new(bytes)))
            }
        }
    } else {
        (shared.policy.endpoint.clone(), Either::Left(body))
    };
    if !shared.policy.satisfied(&verified.scopes, &required) {
        return Err(challenge_response(
            shared,
            StatusCode::FORBIDDEN,
            Some(INSUFFICIENT_SCOPE),
            "the token lacks scopes this request needs",
            required,
        ));
    }
    // AUTH-21: the token goes no further than this layer.
    parts.headers.remove(header::AUTHORIZATION);
    parts.headers.remove("dpop");
    parts.extensions.insert(verified.to_principal());
    Ok(Request::from_parts(parts, body))
}

/// Reads the whole body, at most `limit` bytes, within `timeout`.
///
/// Each frame's bytes are appended to one buffer and the frame dropped at
/// once, so memory follows the body's size whatever its chunking. (Keeping
/// the frames until the end, as `http_body_util::Limited::collect` does,
/// keeps a handle per frame and the read buffers behind them: hundreds of
/// MB for a 4 MiB body sent in one-byte chunks.)
async fn read_body<B>(
    body: B,
    limit: usize,
    timeout: Duration,
) -> Result<Bytes, Response<Full<Bytes>>>
where
    B: http_body::Body<Data = Bytes> + Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let read = async move {
        let mut body = std::pin::pin!(body);
        let mut buf: Vec<u8> = Vec::new();
        while let Some(frame) = body.frame().await {
            let frame = frame
                .map_err(|_| plain(StatusCode::BAD_REQUEST, "request body could not be read"))?;
            let Ok(data) = frame.into_data() else {
                continue; // trailers
            };
            if data.len() > limit.saturating_sub(buf.len()) {
                return Err(plain(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "request body too large",
                ));
            }
            buf.extend_from_slice(&data);
        }
        Ok(Bytes::from(buf))
    };
    match tokio::time::timeout(timeout, read).await {
        Ok(r) => r,
        Err(_) => Err(plain(
            StatusCode::REQUEST_TIMEOUT,
            "request body not received in time",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (n, v) in pairs {
            if let (Ok(n), Ok(v)) = (
                http::header::HeaderName::from_bytes(n.as_bytes()),
                HeaderValue::from_str(v),
            ) {
                h.append(n, v);
            }
        }
        h
    }

    #[test]
    fn bearer_extraction() {
        let t = |pairs: &[(&str, &str)]| match presented(&headers(pairs), 64, false) {
            Err(e) => format!("400 {e}"),
            Ok(Presented::Nothing) => "none".into(),
            Ok(Presented::Malformed(m)) => format!("bad {m}"),
            Ok(Presented::Token(t, _)) => format!("token {t}"),
        };
        // RFC 9449 §7.1: the DPoP scheme counts only where DPoP is enabled.
        let d = |on: bool| match presented(&headers(&[("authorization", "DPoP abc")]), 64, on) {
            Ok(Presented::Token(t, true)) => format!("dpop {t}"),
            Ok(Presented::Nothing) => "none".into(),
            _ => "other".into(),
        };
        assert_eq!(d(false), "none");
        assert_eq!(d(true), "dpop abc");
        assert_eq!(t(&[]), "none");
        assert_eq!(t(&[("authorization", "Basic YTpi")]), "none");
        assert_eq!(
            t(&[("authorization", "Bearer abc.def-_~+/==")]),
            "token abc.def-_~+/=="
        );
        assert_eq!(t(&[("authorization", "bEaReR   xyz")]), "token xyz");
        assert_eq!(
            t(&[("authorization", "Bearer")]),
            "bad malformed bearer token"
        );
        assert_eq!(
            t(&[("authorization", "Bearer a b")]),
            "bad malformed bearer token"
        );
        assert_eq!(
            t(&[("authorization", "Bearer ===")]),
            "bad malformed bearer token"
        );
        assert_eq!(
            t(&[("authorization", &format!("Bearer {}", "a".repeat(65)))]),
            "bad token too large"
        );
        assert_eq!(
            t(&[("authorization", "Bearer a"), ("authorization", "Bearer b")]),
            "400 more than one Authorization header"
        );
    }

    #[test]
    fn query_tokens_are_spotted() {
        let q = |s: &str| token_in_query(&s.parse().unwrap_or_default());
        assert!(q("/mcp?access_token=x"));
        assert!(q("/mcp?a=1&ACCESS_TOKEN=x"));
        assert!(!q("/mcp?not_access_token=x"));
        assert!(!q("/mcp"));
    }

    #[test]
    fn routing_headers_are_trusted_only_on_the_modern_wire() {
        let modern = [
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "=?base64?YWRtaW4=?="),
        ];
        assert_eq!(
            trusted_header_op(&headers(&modern)),
            Some(("tools/call".into(), Some("admin".into())))
        );
        let mut legacy = modern.to_vec();
        legacy[0] = ("mcp-protocol-version", "2025-11-25");
        assert_eq!(trusted_header_op(&headers(&legacy)), None);
        let mut with_session = modern.to_vec();
        with_session.push(("mcp-session-id", "abc"));
        assert_eq!(trusted_header_op(&headers(&with_session)), None);
        let mut dup = modern.to_vec();
        dup.push(("mcp-name", "other"));
        assert_eq!(trusted_header_op(&headers(&dup)), None);
        assert_eq!(
            trusted_header_op(&headers(&modern[..2])),
            None,
            "tools/call needs Mcp-Name"
        );
        assert_eq!(
            trusted_header_op(&headers(&[
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", "tools/list")
            ])),
            Some(("tools/list".into(), None))
        );
    }

    #[test]
    fn scope_policy() {
        let mut p = ScopePolicy {
            endpoint: vec!["mcp".into()],
            ..Default::default()
        };
        p.methods
            .insert("tools/list".into(), vec!["tools.read".into()]);
        p.tools
            .insert("admin".into(), vec!["admin".into(), "mcp".into()]);
        p.tools.insert("deploy".into(), vec!["deploy".into()]);
        p.implies.insert(
            "root".into(),
            ["admin".to_owned(), "deploy".to_owned()].into(),
        );
        let op = |m: &str, t: Option<&str>| super::super::peek::Op {
            method: Some(m.into()),
            tool: t.map(str::to_owned),
            tool_unreadable: false,
        };
        assert_eq!(
            p.required(&Ops::Known(vec![op("tools/call", Some("admin"))])),
            ["mcp", "admin"]
        );
        assert_eq!(
            p.required(&Ops::Known(vec![op("tools/list", None)])),
            ["mcp", "tools.read"]
        );
        assert_eq!(p.required(&Ops::NotJson), ["mcp"]);
        assert_eq!(
            p.required(&Ops::Unreadable),
            ["mcp", "tools.read", "admin", "deploy"]
        );
        let unreadable = super::super::peek::Op {
            method: Some("tools/call".into()),
            tool: None,
            tool_unreadable: true,
        };
        assert_eq!(
            p.required(&Ops::Known(vec![unreadable])),
            ["mcp", "admin", "deploy"]
        );
        let g = |s: &[&str]| s.iter().map(|x| (*x).to_owned()).collect::<Vec<_>>();
        assert!(p.satisfied(&g(&["mcp", "admin"]), &g(&["mcp", "admin"])));
        assert!(!p.satisfied(&g(&["mcp"]), &g(&["mcp", "admin"])));
        assert!(p.satisfied(&g(&["mcp", "root"]), &g(&["mcp", "admin", "deploy"])));
    }
}
