//! The bearer-token gate: a tower `Layer` that serves the metadata
//! document, authenticates every request and enforces the endpoint's
//! scopes; per-method and per-tool scopes are the [`ScopeLayer`]'s, on the
//! server's RPC middleware seam.
// LADDER-02

use super::ConfigError;
use super::dpop::{DpopChecker, DpopPolicy, ProofRejection, ProofTarget};
use super::metadata::{PRM_WELL_KNOWN, ProtectedResourceMetadata, ResourceUri};
use super::scopes::{ScopeLayer, ScopePolicy, unseen_by_middleware};
use super::verifier::{BoxFuture, TokenVerifier, VerifyError};
use crate::challenge::{
    BearerChallenge, INSUFFICIENT_SCOPE, INVALID_REQUEST, INVALID_TOKEN, is_scope_token,
};
use bytes::Bytes;
use ferromcp_protocol::header::codec::decode_header_value;
use ferromcp_protocol::header::{MCP_METHOD, MCP_NAME, trim_ows};
use http::header::{self, HeaderMap, HeaderValue};
use http::{Method, Request, Response, StatusCode};
use http_body_util::{Either, Full};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

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
/// 4. The endpoint's scopes ([`AuthLayerBuilder::require_scopes`]);
///    missing any → 403 `error="insufficient_scope"`.
/// 5. Otherwise the `Authorization` header is removed (the token never
///    reaches handlers or anything upstream), an
///    `ferromcp_protocol::Principal` (the type `ferromcp_server::Principal` names) is
///    inserted into the request extensions, and the wrapped service is
///    called with the request as it came: the layer never reads the body.
///
/// Per-method and per-tool scopes ([`AuthLayerBuilder::require_method_scopes`],
/// [`AuthLayerBuilder::require_tool_scopes`]) are checked after the server
/// has read and admitted the request, by the [`ScopeLayer`] that
/// [`AuthLayer::scope_layer`] returns: install it on the server with
/// `ServerBuilder::layer`. Until a server has installed it, a layer with
/// such rules answers every request with 500 rather than serve without
/// them.
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
    policy: Arc<ScopePolicy>,
    /// Set once a server installed this layer's [`ScopeLayer`].
    scope_layer_installed: Arc<AtomicBool>,
    challenge_scopes: Option<Vec<String>>,
    max_token_bytes: usize,
    serve_metadata: bool,
    dpop: Option<DpopChecker>,
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
    max_token_bytes: usize,
    serve_metadata: bool,
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
            max_token_bytes: Self::DEFAULT_MAX_TOKEN_BYTES,
            serve_metadata: true,
            dpop: None,
        }
    }

    /// The RPC middleware that enforces the per-method and per-tool
    /// scopes, to install on the server behind this layer:
    /// `Server::builder(..).layer(auth.scope_layer())`. See
    /// [`ScopeLayer`].
    pub fn scope_layer(&self) -> ScopeLayer {
        ScopeLayer::new(
            self.shared.policy.clone(),
            &self.shared.metadata_url,
            self.shared.scope_layer_installed.clone(),
        )
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

    /// Extra scopes a JSON-RPC method needs (e.g. `tools/list`), checked
    /// by the [`ScopeLayer`] ([`AuthLayer::scope_layer`]). Methods the
    /// server answers before its middleware (`initialize`,
    /// `subscriptions/listen`, notifications) cannot have rules: `build`
    /// refuses them.
    pub fn require_method_scopes(
        mut self,
        method: impl Into<String>,
        scopes: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        self.policy.methods.insert(method.into(), collect(scopes));
        self
    }

    /// Extra scopes a `tools/call` of tool `name` needs, checked by the
    /// [`ScopeLayer`] ([`AuthLayer::scope_layer`]).
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
        if let Some(m) = policy.methods.keys().find(|m| unseen_by_middleware(m)) {
            return Err(ConfigError::new(format!(
                "method {m:?} is answered before the server's middleware: it cannot have scopes of its own"
            )));
        }
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
                policy: Arc::new(policy),
                scope_layer_installed: Arc::new(AtomicBool::new(false)),
                challenge_scopes: self.challenge_scopes,
                max_token_bytes: self.max_token_bytes,
                serve_metadata: self.serve_metadata,
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
    S: tower_service::Service<Request<B>, Response = Response<RB>> + Clone + Send + 'static,
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
                shared.policy.for_op(&mut out, &method, tool.as_deref());
            }
            out
        }
    };
    out.retain(|s| s != "offline_access");
    out
}

async fn admit<B>(shared: &Shared, req: Request<B>) -> Result<Request<B>, Response<Full<Bytes>>> {
    if shared.serve_metadata && shared.metadata_paths.iter().any(|p| p == req.uri().path()) {
        return Err(metadata_response(shared, req.method()));
    }
    // AUTH-18: per-operation rules live on the server's middleware seam;
    // serving without them installed would drop them silently.
    if shared.policy.per_operation() && !shared.scope_layer_installed.load(Ordering::Acquire) {
        tracing::error!(
            "AuthLayer has per-method or per-tool scopes but no server installed its \
             scope_layer(); refusing every request"
        );
        return Err(plain(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the server's scope policy is not installed",
        ));
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
    // The endpoint's scopes; the method's and tool's are the ScopeLayer's,
    // once the server has read the body.
    if !shared
        .policy
        .satisfied(&verified.scopes, &shared.policy.endpoint)
    {
        return Err(challenge_response(
            shared,
            StatusCode::FORBIDDEN,
            Some(INSUFFICIENT_SCOPE),
            "the token lacks scopes this request needs",
            endpoint_challenge_scopes(shared, &parts.headers),
        ));
    }
    // AUTH-21: the token goes no further than this layer.
    parts.headers.remove(header::AUTHORIZATION);
    parts.headers.remove("dpop");
    parts.extensions.insert(verified.to_principal());
    Ok(Request::from_parts(parts, body))
}

// AUTH-16
/// Scopes for a 403 at the endpoint: its own plus, as a hint from
/// `Mcp-Method` / `Mcp-Name`, the operation's (so a step-up asks for
/// everything at once); never `offline_access`.
fn endpoint_challenge_scopes(shared: &Shared, headers: &HeaderMap) -> Vec<String> {
    let mut out = shared.policy.endpoint.clone();
    if shared.policy.per_operation()
        && let Some((method, tool)) = header_op(headers)
    {
        shared.policy.for_op(&mut out, &method, tool.as_deref());
    }
    out.retain(|s| s != "offline_access");
    out
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

    /// Accepts any token, with scope `mcp`.
    struct AnyToken;

    impl TokenVerifier for AnyToken {
        fn verify<'a>(
            &'a self,
            _token: &'a str,
        ) -> BoxFuture<'a, Result<super::super::VerifiedToken, VerifyError>> {
            Box::pin(async { Ok(super::super::VerifiedToken::new("user", vec!["mcp".into()])) })
        }
    }

    fn builder() -> AuthLayerBuilder {
        let resource = ResourceUri::parse("https://mcp.example.com/mcp").unwrap_or_else(|e| {
            panic!("{e}");
        });
        AuthLayer::builder(resource, AnyToken)
            .authorization_server("https://issuer.example.com")
            .require_scopes(["mcp"])
    }

    async fn status(layer: &AuthLayer) -> StatusCode {
        use tower::{Layer, ServiceExt};
        let inner = tower::service_fn(|_req: Request<Full<Bytes>>| async {
            Ok::<_, std::convert::Infallible>(Response::new(Full::new(Bytes::new())))
        });
        let req = Request::builder()
            .method("POST")
            .uri("/mcp")
            .header("authorization", "Bearer token")
            .body(Full::new(Bytes::from_static(b"{}")))
            .unwrap_or_default();
        match layer.layer(inner).oneshot(req).await {
            Ok(r) => r.status(),
            Err(e) => match e {},
        }
    }

    // AUTH-18
    #[tokio::test]
    async fn per_operation_scopes_fail_closed_until_the_scope_layer_is_installed() {
        let layer = builder()
            .require_tool_scopes("admin", ["admin"])
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        // Forgotten `.layer(auth.scope_layer())`: nothing is served.
        assert_eq!(status(&layer).await, StatusCode::INTERNAL_SERVER_ERROR);
        let made_only = layer.scope_layer();
        assert_eq!(status(&layer).await, StatusCode::INTERNAL_SERVER_ERROR);
        let server = ferromcp_server::Server::builder("t", "1")
            .layer(made_only)
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        drop(server);
        assert_eq!(status(&layer).await, StatusCode::OK);
        // Without per-operation rules there is nothing to install.
        let plain = builder().build().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(status(&plain).await, StatusCode::OK);
    }

    // AUTH-18
    #[test]
    fn methods_the_middleware_never_sees_cannot_have_scopes() {
        for m in [
            "initialize",
            "subscriptions/listen",
            "notifications/initialized",
        ] {
            let e = builder().require_method_scopes(m, ["x"]).build();
            assert!(e.is_err(), "{m}");
        }
        assert!(
            builder()
                .require_method_scopes("tools/list", ["x"])
                .build()
                .is_ok()
        );
    }

    // AUTH-18: over stdio there is no token, so no scopes: a call with a
    // rule of its own is refused, the others are served.
    #[tokio::test]
    async fn over_stdio_a_caller_has_no_scopes() {
        use ferromcp_server::{NoArgs, RequestContext, Server, tool};
        use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
        let layer = builder()
            .require_tool_scopes("admin", ["admin"])
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        let server = Server::builder("t", "1")
            .tool(tool("admin").handler(|_: NoArgs, _: RequestContext| async { "done" }))
            .tool(tool("echo").handler(|_: NoArgs, _: RequestContext| async { "echoed" }))
            .layer(layer.scope_layer())
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        let (client, server_io) = tokio::io::duplex(64 * 1024);
        let (sr, sw) = tokio::io::split(server_io);
        tokio::spawn(server.serve_io(sr, sw));
        let (cr, mut cw) = tokio::io::split(client);
        let lines = [
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"admin"}}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo"}}"#,
        ];
        for l in lines {
            let sent = cw.write_all(format!("{l}\n").as_bytes()).await;
            assert!(sent.is_ok());
        }
        let mut answers = std::collections::HashMap::new();
        let mut reader = BufReader::new(cr).lines();
        while answers.len() < 3 {
            let wait = std::time::Duration::from_secs(10);
            let line = tokio::time::timeout(wait, reader.next_line()).await;
            let Ok(Ok(Some(line))) = line else {
                panic!("no answer: {answers:?}");
            };
            let v: serde_json::Value = serde_json::from_str(&line).unwrap_or_default();
            answers.insert(v["id"].to_string(), v);
        }
        let admin = &answers["2"];
        assert_eq!(
            admin["error"]["data"]["error"], "insufficient_scope",
            "{admin}"
        );
        assert_eq!(admin["error"]["data"]["scope"], "mcp admin", "{admin}");
        assert_eq!(answers["3"]["result"]["content"][0]["text"], "echoed");
    }
}
