//! [`OAuthClient`]: the whole client flow behind `ferromcp-client`'s
//! [`HttpAuth`] hook.

use super::BoxFuture;
use super::authorize::{AuthorizationHandler, CallbackParams};
use super::client_auth::{ClientAuthentication, ClientSecret, TokenEndpointContext};
use super::error::{OAuthError, OAuthErrorKind};
use super::form;
use super::grant::{Grant, GrantContext};
use super::http::HttpClient;
use super::metadata::{
    AuthServerMetadata, LEGACY_PROTOCOL_VERSION, ResourceMetadata, as_metadata_urls,
    authorization_base_url, check_issuer, legacy_as_metadata_url, legacy_default_metadata,
    legacy_discovery_applies, prm_urls, resource_matches,
};
use super::net::NetPolicy;
use super::pkce::{Pkce, random_token};
use super::proof::RequestProof;
use super::registration::{self, PreRegistered, RegistrationRequest};
use super::scope;
use super::store::{
    LockAttempt, MemoryStore, StoreKey, StoreLock, StoredClient, StoredCredentials, TokenStore,
};
use super::token::{StoredToken, token_request};
use crate::challenge::{BearerChallenge, INSUFFICIENT_SCOPE};
use ferromcp_client::{AuthChallenge, AuthDecision, AuthRequest, HttpAuth};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

// AUTH-19
/// Default bound on consecutive `insufficient_scope` step-ups.
pub const DEFAULT_MAX_STEP_UPS: u32 = 3;
/// Default margin before expiry at which a token is refreshed.
pub const DEFAULT_REFRESH_SKEW: Duration = Duration::from_secs(30);
/// Default bound on waiting for another process's refresh of the same
/// stored credentials (see [`OAuthClientBuilder::refresh_lock_wait`]).
pub const DEFAULT_REFRESH_LOCK_WAIT: Duration = Duration::from_secs(30);
/// Default bound on waiting for another process's authorization for the
/// same stored credentials (see
/// [`OAuthClientBuilder::authorization_lock_wait`]).
pub const DEFAULT_AUTHORIZATION_LOCK_WAIT: Duration = Duration::from_secs(300);
/// Default `client_name` for dynamic registration.
pub const DEFAULT_CLIENT_NAME: &str = "mcp-rs client";

/// Builds an [`OAuthClient`].
pub struct OAuthClientBuilder {
    server_url: String,
    http: Option<HttpClient>,
    policy: NetPolicy,
    handler: Option<Arc<dyn AuthorizationHandler>>,
    store: Arc<dyn TokenStore>,
    client_metadata_url: Option<String>,
    pre_registered: HashMap<String, PreRegistered>,
    client_name: String,
    max_step_ups: u32,
    refresh_skew: Duration,
    refresh_lock_wait: Duration,
    authorization_lock_wait: Duration,
    proof: Option<Arc<dyn RequestProof>>,
    grant: Option<Arc<dyn Grant>>,
    protocol_version: Option<String>,
}

impl std::fmt::Debug for OAuthClientBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthClientBuilder")
            .field("server_url", &self.server_url)
            .field("policy", &self.policy)
            .field("client_metadata_url", &self.client_metadata_url)
            .field("pre_registered", &self.pre_registered)
            .field("max_step_ups", &self.max_step_ups)
            .field("protocol_version", &self.protocol_version)
            .finish_non_exhaustive()
    }
}

impl OAuthClientBuilder {
    /// A builder for the MCP endpoint `server_url`.
    pub fn new(server_url: impl Into<String>) -> Self {
        Self {
            server_url: server_url.into(),
            http: None,
            policy: NetPolicy::strict(),
            handler: None,
            store: Arc::new(MemoryStore::new()),
            client_metadata_url: None,
            pre_registered: HashMap::new(),
            client_name: DEFAULT_CLIENT_NAME.into(),
            max_step_ups: DEFAULT_MAX_STEP_UPS,
            refresh_skew: DEFAULT_REFRESH_SKEW,
            refresh_lock_wait: DEFAULT_REFRESH_LOCK_WAIT,
            authorization_lock_wait: DEFAULT_AUTHORIZATION_LOCK_WAIT,
            proof: None,
            grant: None,
            protocol_version: None,
        }
    }

    /// The network policy for the built-in HTTP client (default strict:
    /// public `https` only). Ignored when [`Self::http_client`] is given.
    pub fn net_policy(mut self, policy: NetPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// The HTTP client for metadata, registration and token requests
    /// (its own policy, timeout and size cap apply).
    pub fn http_client(mut self, http: HttpClient) -> Self {
        self.http = Some(http);
        self
    }

    /// The user-agent step of the authorization-code flow.
    pub fn authorization_handler(mut self, handler: Arc<dyn AuthorizationHandler>) -> Self {
        self.handler = Some(handler);
        self
    }

    /// Where registrations and tokens persist (default: in memory).
    pub fn store(mut self, store: Arc<dyn TokenStore>) -> Self {
        self.store = store;
        self
    }

    // AUTH-11
    /// The Client ID Metadata Document URL to use as `client_id` with
    /// authorization servers that support CIMD.
    pub fn client_metadata_url(mut self, url: impl Into<String>) -> Self {
        self.client_metadata_url = Some(url.into());
        self
    }

    // AUTH-15, AUTH-14
    /// Credentials registered out of band with the AS `issuer`;
    /// used only with that issuer.
    pub fn pre_registered(mut self, issuer: impl Into<String>, client: PreRegistered) -> Self {
        self.pre_registered.insert(issuer.into(), client);
        self
    }

    /// `client_name` for dynamic registration.
    pub fn client_name(mut self, name: impl Into<String>) -> Self {
        self.client_name = name.into();
        self
    }

    // AUTH-19
    /// Bound on consecutive step-up authorizations without a success in
    /// between (default [`DEFAULT_MAX_STEP_UPS`]).
    pub fn max_step_ups(mut self, n: u32) -> Self {
        self.max_step_ups = n;
        self
    }

    /// How long before expiry a token is refreshed (default
    /// [`DEFAULT_REFRESH_SKEW`]).
    pub fn refresh_skew(mut self, skew: Duration) -> Self {
        self.refresh_skew = skew;
        self
    }

    /// How long a refresh waits for the store's lock on the credentials
    /// (see [`TokenStore::try_lock`]) while another process refreshes them
    /// (default [`DEFAULT_REFRESH_LOCK_WAIT`]). After that it reads the
    /// store and, if nothing newer is there, refreshes without the lock.
    pub fn refresh_lock_wait(mut self, wait: Duration) -> Self {
        self.refresh_lock_wait = wait;
        self
    }

    /// How long an authorization (a user in the browser) waits for the
    /// store's lock while another process authorizes for the same
    /// credentials (default [`DEFAULT_AUTHORIZATION_LOCK_WAIT`]); the
    /// token that process stored is then used instead of a second flow.
    pub fn authorization_lock_wait(mut self, wait: Duration) -> Self {
        self.authorization_lock_wait = wait;
        self
    }

    /// A proof-of-possession provider (DPoP) for MCP and token requests.
    pub fn proof(mut self, proof: Arc<dyn RequestProof>) -> Self {
        self.proof = Some(proof);
        self
    }

    /// Obtain tokens with `grant` instead of the authorization-code flow.
    pub fn grant(mut self, grant: Arc<dyn Grant>) -> Self {
        self.grant = Some(grant);
        self
    }

    // LEGACY-26, AUTH-03, LEGACY-27
    /// The protocol version the server is known to speak (e.g. negotiated
    /// in an earlier session). Unknown by default: the first 401 comes
    /// before any `initialize` answer, and the version the client offers
    /// says nothing about the server's.
    ///
    /// It decides whether a server without Protected Resource Metadata is
    /// taken for a 2025-03-26 server: when the version is
    /// unknown, 2025-03-26 or older, the client then looks for AS metadata
    /// at the server's origin, else uses the default `/authorize`, `/token`
    /// and `/register` there, and sends this version (default
    /// `2025-03-26`) as `MCP-Protocol-Version` on that discovery request.
    /// With 2025-06-18 or newer, which require PRM,
    /// missing PRM is an error.
    pub fn protocol_version(mut self, version: impl Into<String>) -> Self {
        self.protocol_version = Some(version.into());
        self
    }

    /// Checks the configuration and builds the client.
    pub fn build(self) -> Result<OAuthClient, OAuthError> {
        super::metadata::split_url(&self.server_url)?;
        if let Some(u) = &self.client_metadata_url {
            let uri: http::Uri = u
                .parse()
                .map_err(|_| OAuthError::config(format!("invalid client metadata URL {u:?}")))?;
            // AUTH-11: an https URL with a path.
            if uri.scheme_str() != Some("https") || uri.path().len() <= 1 {
                return Err(OAuthError::config(format!(
                    "the client metadata URL {u} must be https with a path (AUTH-11)"
                )));
            }
        }
        let http = self.http.unwrap_or_else(|| HttpClient::new(self.policy));
        Ok(OAuthClient {
            cfg: Config {
                server_url: self.server_url,
                http,
                handler: self.handler,
                store: self.store,
                client_metadata_url: self.client_metadata_url,
                pre_registered: self.pre_registered,
                client_name: self.client_name,
                max_step_ups: self.max_step_ups,
                refresh_skew: self.refresh_skew,
                refresh_lock_wait: self.refresh_lock_wait,
                authorization_lock_wait: self.authorization_lock_wait,
                proof: self.proof,
                grant: self.grant,
                protocol_version: self.protocol_version,
            },
            session: tokio::sync::Mutex::new(Session::default()),
            step_ups: AtomicU32::new(0),
            partition: Mutex::new(None),
        })
    }
}

struct Config {
    server_url: String,
    http: HttpClient,
    handler: Option<Arc<dyn AuthorizationHandler>>,
    store: Arc<dyn TokenStore>,
    client_metadata_url: Option<String>,
    pre_registered: HashMap<String, PreRegistered>,
    client_name: String,
    max_step_ups: u32,
    refresh_skew: Duration,
    refresh_lock_wait: Duration,
    authorization_lock_wait: Duration,
    proof: Option<Arc<dyn RequestProof>>,
    grant: Option<Arc<dyn Grant>>,
    protocol_version: Option<String>,
}

// AUTH-09, AUTH-14
/// What the client knows about the current resource and its AS. Client
/// identity and tokens belong to `issuer`; changing it drops them.
#[derive(Default)]
struct Session {
    // LEGACY-26
    /// The PRM document; `None` for a 2025-03-26 server.
    prm: Option<ResourceMetadata>,
    // LEGACY-26
    /// What credentials are stored under: the PRM `resource`, or the
    /// server URL.
    resource: Option<String>,
    issuer: Option<String>,
    meta: Option<AuthServerMetadata>,
    // LEGACY-26
    /// `meta` holds the assumed default endpoints. What to add
    /// to an error from them, so a server that simply has no
    /// authorization is not reported as a broken `/register`.
    default_endpoints: Option<String>,
    client: Option<Arc<dyn ClientAuthentication>>,
    registered: Option<StoredClient>,
    token: Option<StoredToken>,
    requested: Option<Vec<String>>,
}

impl Session {
    fn key(&self) -> Option<StoreKey> {
        Some(StoreKey {
            issuer: self.issuer.clone()?,
            resource: self.resource.clone()?,
        })
    }

    // LEGACY-28
    /// RFC 8707 `resource` is sent when the PRM was found (a
    /// server of 2025-06-18 or newer always has one; without it the client
    /// is on the 2025-03-26 path, which has no resource indicators).
    fn resource_indicator(&self) -> Option<String> {
        self.prm.as_ref().map(|p| p.resource.clone())
    }
}

/// The OAuth 2.1 client for one MCP server (MCP specification, *Authorization*).
///
/// Install it with `ferromcp_client::ClientBuilder::http_auth`. Requests go out
/// unauthenticated until the server answers 401; the client then discovers
/// the resource's metadata and authorization server, identifies itself,
/// obtains a token (authorization code + PKCE through the
/// [`AuthorizationHandler`], or the configured [`Grant`]) and the request
/// is sent again. [`OAuthClient::login`] does the same ahead of time.
pub struct OAuthClient {
    cfg: Config,
    session: tokio::sync::Mutex<Session>,
    step_ups: AtomicU32,
    partition: Mutex<Option<String>>,
}

impl std::fmt::Debug for OAuthClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthClient")
            .field("server_url", &self.cfg.server_url)
            .finish_non_exhaustive()
    }
}

fn token_scheme(t: &StoredToken) -> &str {
    if t.token_type.eq_ignore_ascii_case("dpop") {
        "DPoP"
    } else {
        "Bearer"
    }
}

fn authorization_value(t: &StoredToken) -> String {
    format!("{} {}", token_scheme(t), t.access_token)
}

/// The `sub` of a JWT access token, read without verification (used only
/// to partition the cache, never for a security decision).
fn jwt_subject(token: &str) -> Option<String> {
    let payload = token.split('.').nth(1)?;
    let bytes = crate::core::b64::url_decode(payload.trim_end_matches('='))?;
    let v: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    v.get("sub")?.as_str().map(str::to_owned)
}

/// Whether two redirect URIs are the same loopback IP redirect apart from
/// the port (RFC 8252 §7.3), or identical.
fn same_redirect(a: &str, b: &str) -> bool {
    if a == b {
        return true;
    }
    let strip = |u: &str| -> Option<(String, String)> {
        let uri: http::Uri = u.parse().ok()?;
        let host = uri.host()?;
        (uri.scheme_str() == Some("http") && (host == "127.0.0.1" || host == "[::1]"))
            .then(|| (host.to_owned(), uri.path().to_owned()))
    };
    matches!((strip(a), strip(b)), (Some(x), Some(y)) if x == y)
}

impl OAuthClient {
    /// A builder for the MCP endpoint `server_url`.
    pub fn builder(server_url: impl Into<String>) -> OAuthClientBuilder {
        OAuthClientBuilder::new(server_url)
    }

    /// The MCP endpoint this client authorizes for.
    pub fn server_url(&self) -> &str {
        &self.cfg.server_url
    }

    /// Authorizes ahead of time (e.g. `mcp login`): discovers from the
    /// well-known URLs and obtains a token unless a usable one is stored.
    pub async fn login(&self) -> Result<(), OAuthError> {
        let mut s = self.session.lock().await;
        self.discover(&mut s, None).await?;
        if s.token
            .as_ref()
            .is_some_and(|t| !t.expires_within(self.cfg.refresh_skew))
        {
            return Ok(());
        }
        if self.refresh(&mut s).await {
            return Ok(());
        }
        let scopes = scope::select(
            &[],
            s.prm.as_ref().and_then(|p| p.scopes_supported.as_deref()),
            s.meta.as_ref().and_then(|m| m.scopes_supported.as_deref()),
        );
        self.obtain(&mut s, scopes).await
    }

    /// Forgets the token and registration for the current issuer and
    /// resource, here and in the store.
    pub async fn logout(&self) -> Result<(), OAuthError> {
        let mut s = self.session.lock().await;
        if s.key().is_none() {
            // Nothing discovered yet in this process: find the key.
            self.discover(&mut s, None).await?;
        }
        if let Some(key) = s.key() {
            self.cfg.store.remove(&key)?;
        }
        *s = Session::default();
        self.set_partition(&s);
        Ok(())
    }

    /// The current token, if any.
    pub async fn token(&self) -> Option<StoredToken> {
        self.session.lock().await.token.clone()
    }

    /// The issuer in use, once discovered.
    pub async fn issuer(&self) -> Option<String> {
        self.session.lock().await.issuer.clone()
    }

    fn set_partition(&self, s: &Session) {
        use sha2::{Digest, Sha256};
        let p = match (&s.issuer, &s.client, &s.token) {
            (Some(iss), Some(c), Some(t)) => {
                let who = jwt_subject(&t.access_token).unwrap_or_else(|| {
                    // Opaque tokens: the refresh lineage (or the token).
                    let basis = t.refresh_token.as_deref().unwrap_or(&t.access_token);
                    Sha256::digest(basis.as_bytes())
                        .iter()
                        .take(8)
                        .map(|b| format!("{b:02x}"))
                        .collect()
                });
                Some(format!("{iss}|{}|{who}", c.client_id()))
            }
            _ => None,
        };
        *self.partition.lock().unwrap_or_else(|p| p.into_inner()) = p;
    }

    fn save(&self, s: &Session) {
        self.set_partition(s);
        let Some(key) = s.key() else { return };
        let value = StoredCredentials {
            key: None,
            client: s.registered.clone(),
            token: s.token.clone(),
        };
        if let Err(e) = self.cfg.store.save(&key, &value) {
            tracing::warn!(error = %e, "could not persist OAuth credentials");
        }
    }

    /// (Re-)discovers the resource and its AS. A different AS than before
    /// (migration) starts over with that AS's own registration and tokens.
    async fn discover(
        &self,
        s: &mut Session,
        from_challenge: Option<&str>,
    ) -> Result<(), OAuthError> {
        let version = self.cfg.protocol_version.as_deref();
        let found = discover_resource(
            &self.cfg.http,
            &self.cfg.server_url,
            from_challenge,
            version,
        )
        .await?;
        let unchanged = s.issuer.as_deref() == Some(found.issuer.as_str())
            && s.resource.as_deref() == Some(found.resource.as_str())
            && s.prm.is_some() == found.prm.is_some()
            && s.meta.is_some();
        if unchanged {
            s.prm = found.prm;
            return Ok(());
        }
        if s.issuer.is_some() {
            tracing::info!(from = ?s.issuer, to = %found.issuer, "the resource moved to another authorization server");
        }
        let meta = discover_as(&self.cfg.http, &found, version).await?;
        *s = Session {
            prm: found.prm,
            resource: Some(found.resource),
            issuer: Some(found.issuer),
            meta: Some(meta.meta),
            default_endpoints: meta.defaults,
            ..Session::default()
        };
        if let Some(key) = s.key() {
            match self.cfg.store.load(&key) {
                Ok(Some(c)) => {
                    s.registered = c.client;
                    s.token = c.token;
                }
                Ok(None) => {}
                Err(e) => tracing::warn!(error = %e, "ignoring unreadable stored credentials"),
            }
        }
        self.set_partition(s);
        Ok(())
    }

    // AUTH-10
    /// The order: pre-registered for this issuer, CIMD, a stored
    /// registration, DCR; else an error asking for configuration.
    async fn ensure_client(
        &self,
        s: &mut Session,
        redirect: Option<&str>,
    ) -> Result<Arc<dyn ClientAuthentication>, OAuthError> {
        if let Some(c) = &s.client {
            return Ok(c.clone());
        }
        let issuer = s
            .issuer
            .clone()
            .ok_or_else(|| OAuthError::discovery("no issuer"))?;
        let meta = s
            .meta
            .clone()
            .ok_or_else(|| OAuthError::discovery("no AS metadata"))?;
        let auth: Arc<dyn ClientAuthentication> =
            if let Some(p) = self.cfg.pre_registered.get(&issuer) {
                p.authentication(&meta)
            } else if let (true, Some(url)) = (
                meta.client_id_metadata_document_supported,
                &self.cfg.client_metadata_url,
            ) {
                Arc::new(ClientSecret::public(url.clone()))
            } else if let Some(reg) = s.registered.as_ref().filter(|r| {
                redirect.is_none_or(|u| r.redirect_uris.iter().any(|x| same_redirect(x, u)))
            }) {
                registration::registered_authentication(reg)
            } else if let Some(endpoint) = meta.registration_endpoint.clone() {
                let handler = self.cfg.handler.as_ref();
                let redirect_uris = match redirect {
                    Some(u) => vec![u.to_owned()],
                    None => handler.map(|h| h.redirect_uris()).unwrap_or_default(),
                };
                let req = RegistrationRequest {
                    client_name: self.cfg.client_name.clone(),
                    redirect_uris,
                    application_type: handler
                        .map(|h| h.application_type().to_owned())
                        .unwrap_or_else(|| "native".into()),
                    token_endpoint_auth_method: super::client_auth::choose_registration_method(
                        meta.token_endpoint_auth_methods_supported.as_deref(),
                    )
                    .into(),
                    scope: None,
                };
                let reg = registration::register(&self.cfg.http, &endpoint, &req).await?;
                let auth = registration::registered_authentication(&reg);
                s.registered = Some(reg);
                auth
            } else {
                return Err(OAuthError::registration(format!(
                    "no way to identify this client to {issuer}: no pre-registered credentials \
                 for it, no Client ID Metadata Document support, no registration endpoint \
                 (AUTH-10); configure a client id for this issuer"
                )));
            };
        s.client = Some(auth.clone());
        Ok(auth)
    }

    fn endpoint_ctx(&self, s: &Session) -> Result<TokenEndpointContext, OAuthError> {
        let meta = s
            .meta
            .as_ref()
            .ok_or_else(|| OAuthError::discovery("no AS metadata"))?;
        let token_endpoint = meta.token_endpoint.clone().ok_or_else(|| {
            OAuthError::discovery(format!("{} publishes no token_endpoint", meta.issuer))
        })?;
        Ok(TokenEndpointContext {
            issuer: meta.issuer.clone(),
            token_endpoint,
        })
    }

    /// Takes the store's lock on `key`, waiting (polling) at most
    /// `refresh_lock_wait` while another holder has it. `None` when it
    /// could not be had: the caller goes on without it.
    async fn lock_entry(&self, key: &StoreKey, wait: Duration) -> Option<StoreLock> {
        let deadline = tokio::time::Instant::now() + wait;
        let mut pause = Duration::from_millis(5);
        loop {
            match self.cfg.store.try_lock(key) {
                Ok(LockAttempt::Acquired(l)) => return Some(l),
                Ok(LockAttempt::Busy) if tokio::time::Instant::now() < deadline => {
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_millis(100));
                }
                Ok(LockAttempt::Busy) => {
                    tracing::warn!(
                        "another process held the credentials' lock for {wait:?}; going on without it"
                    );
                    return None;
                }
                Err(e) => {
                    tracing::warn!(error = %e, "cannot lock the stored credentials; going on without the lock");
                    return None;
                }
            }
        }
    }

    /// Refreshes the token; `false` (and the token dropped) when there is
    /// no refresh token or the AS refuses.
    ///
    /// Across processes sharing the store: the store's lock on the entry is
    /// held from reading it to saving the new token, and the entry is read
    /// again under the lock, so a token another process obtained meanwhile
    /// is used instead of refreshing again (a rotated refresh token works
    /// only once).
    async fn refresh(&self, s: &mut Session) -> bool {
        let Some(mut t) = s.token.clone() else {
            return false;
        };
        if t.refresh_token.is_none() {
            return false;
        }
        let key = s.key();
        let _lock = match &key {
            Some(k) => self.lock_entry(k, self.cfg.refresh_lock_wait).await,
            None => None,
        };
        if let Some(k) = &key {
            match self.cfg.store.load(k) {
                Ok(Some(c)) => {
                    if let Some(stored) = c.token.filter(|st| st.access_token != t.access_token) {
                        if !stored.expires_within(self.cfg.refresh_skew) {
                            tracing::debug!("using the token another process stored");
                            if c.client.is_some() {
                                s.registered = c.client;
                            }
                            s.token = Some(stored);
                            self.set_partition(s);
                            return true;
                        }
                        // Newer but expiring too: its refresh token is the
                        // live one.
                        if stored.refresh_token.is_some() {
                            t = stored;
                        }
                    }
                }
                Ok(None) => {}
                Err(e) => tracing::warn!(error = %e, "ignoring unreadable stored credentials"),
            }
        }
        let Some(rt) = t.refresh_token.clone() else {
            return false;
        };
        let result = async {
            let ctx = self.endpoint_ctx(s)?;
            let client = match self.cfg.grant.as_ref().and_then(|g| g.client()) {
                Some(c) => c,
                None => self.ensure_client(s, None).await?,
            };
            let mut params = vec![
                ("grant_type".to_owned(), "refresh_token".to_owned()),
                ("refresh_token".to_owned(), rt.clone()),
            ];
            if let Some(resource) = s.resource_indicator() {
                params.push(("resource".to_owned(), resource));
            }
            token_request(
                &self.cfg.http,
                &ctx,
                params,
                client.as_ref(),
                self.cfg.proof.as_deref(),
            )
            .await
        }
        .await;
        match result {
            Ok(resp) => {
                s.token = Some(StoredToken::from_response(resp, Some(rt), &t.scopes));
                self.save(s);
                true
            }
            Err(e) => {
                tracing::debug!(error = %e, "refresh failed; authorizing again");
                s.token = None;
                self.save(s);
                false
            }
        }
    }

    /// Obtains a new token for `scopes` (authorization code + PKCE, or the
    /// configured grant) and stores it.
    ///
    /// Across processes sharing the store: the store's lock on the entry
    /// is held for the whole flow, and the entry is read again under it, so
    /// a token (or client registration) another process obtained meanwhile
    /// is used instead of a second authorization.
    async fn obtain(&self, s: &mut Session, scopes: Option<Vec<String>>) -> Result<(), OAuthError> {
        let flows =
            self.cfg.grant.is_some() || self.cfg.handler.as_ref().is_some_and(|h| h.interactive());
        let key = s.key().filter(|_| flows);
        let _lock = match &key {
            Some(k) => self.lock_entry(k, self.cfg.authorization_lock_wait).await,
            None => None,
        };
        if let Some(Ok(Some(c))) = key.as_ref().map(|k| self.cfg.store.load(k)) {
            let ours = s.token.as_ref().map(|t| t.access_token.clone());
            if let Some(t) = c.token.filter(|t| {
                Some(&t.access_token) != ours.as_ref() && !t.expires_within(self.cfg.refresh_skew)
            }) {
                tracing::debug!("using the token another process obtained");
                if c.client.is_some() {
                    s.registered = c.client;
                }
                s.token = Some(t);
                self.set_partition(s);
                return Ok(());
            }
            if s.registered.is_none() && s.client.is_none() {
                s.registered = c.client;
            }
        }
        let r = self.obtain_inner(s, scopes).await;
        match (r, &s.default_endpoints) {
            (Err(e), Some(note)) => Err(OAuthError::new(
                e.kind().clone(),
                format!("{}; {note}", e.message()),
            )),
            (r, _) => r,
        }
    }

    async fn obtain_inner(
        &self,
        s: &mut Session,
        scopes: Option<Vec<String>>,
    ) -> Result<(), OAuthError> {
        let meta = s
            .meta
            .clone()
            .ok_or_else(|| OAuthError::discovery("no AS metadata"))?;
        let issuer = meta.issuer.clone();
        let resource = s
            .resource
            .clone()
            .ok_or_else(|| OAuthError::discovery("no protected resource"))?;
        // LEGACY-28: only with PRM.
        let indicator = s.resource_indicator();
        let ctx = self.endpoint_ctx(s)?;
        let requested = scopes.clone().unwrap_or_default();
        if let Some(grant) = &self.cfg.grant {
            let client = match grant.client() {
                Some(c) => c,
                None => self.ensure_client(s, None).await?,
            };
            let resp = grant
                .obtain(GrantContext {
                    http: &self.cfg.http,
                    metadata: &meta,
                    token_endpoint: ctx,
                    resource: &resource,
                    resource_indicator: indicator.as_deref(),
                    scopes: scopes.as_deref(),
                    client: client.as_ref(),
                    proof: self.cfg.proof.as_deref(),
                })
                .await?;
            s.token = Some(StoredToken::from_response(resp, None, &requested));
            s.requested = scopes;
            self.save(s);
            return Ok(());
        }
        if s.default_endpoints.is_none() {
            // AUTH-23. Without metadata (LEGACY-26) there is nothing to
            // check; S256 is used all the same.
            meta.require_s256()?;
        }
        let authorization_endpoint = meta.authorization_endpoint.clone().ok_or_else(|| {
            OAuthError::discovery(format!("{issuer} publishes no authorization_endpoint"))
        })?;
        self.cfg.http.policy().check_url(&authorization_endpoint)?;
        let handler = self.cfg.handler.clone().ok_or_else(|| {
            OAuthError::config("the server needs authorization, but no AuthorizationHandler is set")
        })?;
        let session = handler.start().await?;
        let redirect_uri = session.redirect_uri().to_owned();
        let client = self.ensure_client(s, Some(&redirect_uri)).await?;
        self.save(s);
        // AUTH-24: the validated issuer, the verifier and the state are
        // bound to this attempt before the user agent is sent anywhere.
        let pkce = Pkce::generate()?;
        let state = random_token(24)?;
        let mut q = vec![
            ("response_type".to_owned(), "code".to_owned()),
            ("client_id".to_owned(), client.client_id().to_owned()),
            ("redirect_uri".to_owned(), redirect_uri.clone()),
            ("state".to_owned(), state.clone()),
            ("code_challenge".to_owned(), pkce.challenge.clone()),
            ("code_challenge_method".to_owned(), Pkce::METHOD.to_owned()),
        ];
        if let Some(r) = &indicator {
            // AUTH-22: exactly as the PRM publishes it.
            q.push(("resource".to_owned(), r.clone()));
        }
        if let Some(sc) = &scopes {
            q.push(("scope".to_owned(), scope::join(sc)));
        }
        let url = form::append_query(&authorization_endpoint, &q);
        let callback = session.authorize(url).await?;
        let code = CallbackParams::from_url(&callback).validate(
            &state,
            &issuer,
            meta.authorization_response_iss_parameter_supported,
        )?;
        let mut params = vec![
            ("grant_type".to_owned(), "authorization_code".to_owned()),
            ("code".to_owned(), code),
            ("code_verifier".to_owned(), pkce.verifier.clone()),
            ("redirect_uri".to_owned(), redirect_uri),
        ];
        if let Some(r) = indicator {
            params.push(("resource".to_owned(), r));
        }
        let resp = token_request(
            &self.cfg.http,
            &ctx,
            params,
            client.as_ref(),
            self.cfg.proof.as_deref(),
        )
        .await?;
        s.token = Some(StoredToken::from_response(resp, None, &requested));
        s.requested = scopes;
        self.save(s);
        Ok(())
    }

    async fn headers_inner(&self, req: AuthRequest) -> Result<Vec<(String, String)>, OAuthError> {
        let mut s = self.session.lock().await;
        if s.token
            .as_ref()
            .is_some_and(|t| t.expires_within(self.cfg.refresh_skew))
            && !self.refresh(&mut s).await
        {
            // Expired and not refreshable: go unauthenticated; the 401
            // starts a new authorization.
            s.token = None;
        }
        let Some(t) = &s.token else {
            return Ok(Vec::new());
        };
        // AUTH-20: in the Authorization header, never the query string.
        let mut out = vec![("authorization".to_owned(), authorization_value(t))];
        if let Some(p) = &self.cfg.proof {
            out.extend(p.proof_headers(&req.method, &req.url, Some(&t.access_token))?);
        }
        Ok(out)
    }

    async fn challenge_inner(&self, ch: AuthChallenge) -> Result<AuthDecision, OAuthError> {
        let bearer = ch
            .www_authenticate
            .iter()
            .find_map(|v| BearerChallenge::parse(v));
        if let Some(p) = &self.cfg.proof {
            let mut map = http::HeaderMap::new();
            for (n, v) in &ch.headers {
                if let (Ok(n), Ok(v)) = (
                    http::HeaderName::from_bytes(n.as_bytes()),
                    http::HeaderValue::from_str(v),
                ) {
                    map.append(n, v);
                }
            }
            p.observe(&ch.request.url, ch.status, &map);
            // RFC 9449 §9: the nonce demand comes in the DPoP challenge.
            let error = if super::dpop::is_use_dpop_nonce_challenge(&ch.www_authenticate) {
                Some("use_dpop_nonce")
            } else {
                bearer.as_ref().and_then(|b| b.error.as_deref())
            };
            if p.wants_retry(ch.status, error) {
                return Ok(AuthDecision::Retry);
            }
        }
        let sent = ch
            .sent
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("authorization"))
            .map(|(_, v)| v.clone());
        let rm = bearer.as_ref().and_then(|b| b.resource_metadata.clone());
        let mut s = self.session.lock().await;
        if ch.status == 403 {
            let Some(b) = bearer.filter(|b| b.error.as_deref() == Some(INSUFFICIENT_SCOPE)) else {
                return Ok(AuthDecision::Proceed);
            };
            // A concurrent request already stepped up.
            let current = s.token.as_ref().map(authorization_value);
            if current.is_some() && current != sent {
                return Ok(AuthDecision::Retry);
            }
            // AUTH-19: bounded, counted until a request succeeds.
            let n = self.step_ups.fetch_add(1, Ordering::AcqRel);
            if n >= self.cfg.max_step_ups {
                return Err(OAuthError::new(
                    OAuthErrorKind::StepUpLimit,
                    format!(
                        "the server still demands more scope after {n} step-up authorizations (AUTH-19)"
                    ),
                ));
            }
            if s.issuer.is_none() || rm.is_some() {
                self.discover(&mut s, rm.as_deref()).await?;
            }
            let previous = s
                .requested
                .clone()
                .or_else(|| s.token.as_ref().map(|t| t.scopes.clone()))
                .unwrap_or_default();
            let wanted = scope::with_offline_access(
                scope::union(&previous, &b.scope),
                s.meta.as_ref().and_then(|m| m.scopes_supported.as_deref()),
            );
            self.obtain(&mut s, Some(wanted)).await?;
            return Ok(AuthDecision::Retry);
        }
        // 401: re-discover every time, so a moved resource or AS is noticed.
        self.discover(&mut s, rm.as_deref()).await?;
        if let Some(t) = &s.token
            && Some(authorization_value(t)) != sent
            && !t.expires_within(self.cfg.refresh_skew)
        {
            // Newer (or stored) credentials than those refused.
            return Ok(AuthDecision::Retry);
        }
        if self.refresh(&mut s).await {
            return Ok(AuthDecision::Retry);
        }
        let challenged = bearer.map(|b| b.scope).unwrap_or_default();
        let scopes = scope::select(
            &challenged,
            s.prm.as_ref().and_then(|p| p.scopes_supported.as_deref()),
            s.meta.as_ref().and_then(|m| m.scopes_supported.as_deref()),
        );
        self.obtain(&mut s, scopes).await?;
        Ok(AuthDecision::Retry)
    }
}

impl HttpAuth for OAuthClient {
    fn headers(
        &self,
        request: AuthRequest,
    ) -> BoxFuture<'_, Result<Vec<(String, String)>, ferromcp_client::AuthError>> {
        Box::pin(async move { self.headers_inner(request).await.map_err(Into::into) })
    }

    fn on_challenge(&self, challenge: AuthChallenge) -> BoxFuture<'_, AuthDecision> {
        Box::pin(async move {
            match self.challenge_inner(challenge).await {
                Ok(d) => d,
                Err(e) => {
                    tracing::debug!(error = %e, "authorization failed");
                    AuthDecision::Fail(e.into())
                }
            }
        })
    }

    fn on_success(&self, request: &AuthRequest, headers: &[(String, String)]) {
        self.step_ups.store(0, Ordering::Release);
        if let Some(p) = &self.cfg.proof {
            let mut map = http::HeaderMap::new();
            for (n, v) in headers {
                if let (Ok(n), Ok(v)) = (
                    http::HeaderName::from_bytes(n.as_bytes()),
                    http::HeaderValue::from_str(v),
                ) {
                    map.append(n, v);
                }
            }
            p.observe(&request.url, 200, &map);
        }
    }

    fn cache_partition(&self) -> Option<String> {
        self.partition
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

// LEGACY-26
/// The `MCP-Protocol-Version` header (sent during 2025-03-26 discovery).
const MCP_PROTOCOL_VERSION: &str = "mcp-protocol-version";

/// What a metadata lookup found: the document, or nothing because every
/// URL tried answered a 4xx status (the error says which answered what).
enum Lookup<T> {
    Found(T),
    Absent(OAuthError),
}

/// A protected resource and its authorization server, as discovered.
pub(crate) struct Discovered {
    // LEGACY-26
    /// The PRM document; `None` on the 2025-03-26 path.
    pub(crate) prm: Option<ResourceMetadata>,
    /// What credentials are stored under: the PRM `resource`, or on the
    /// 2025-03-26 path the MCP server URL.
    pub(crate) resource: String,
    // AUTH-09
    /// The AS issuer: the PRM's first `authorization_servers` entry,
    /// or on the 2025-03-26 path the authorization base URL.
    pub(crate) issuer: String,
    /// On the 2025-03-26 path: why the PRM was taken as absent.
    legacy: Option<String>,
}

/// AS metadata as the flow uses it.
pub(crate) struct DiscoveredAs {
    // LEGACY-26
    /// The validated metadata, or the 2025-03-26 defaults.
    pub(crate) meta: AuthServerMetadata,
    /// When `meta` holds the 2025-03-26 default endpoints: a note saying
    /// why (no PRM, no AS metadata), for errors from them.
    pub(crate) defaults: Option<String>,
}

// AUTH-05, AUTH-06, AUTH-09, LEGACY-26, AUTH-03, LEGACY-27
/// Finds the resource's authorization server: the PRM
/// and its first authorization server.
///
/// When the server publishes no PRM (no `resource_metadata` in
/// the challenge, every well-known URL answering 4xx) and `version` (what
/// the server is known to speak) is unknown or 2025-03-26 or older, the
/// server is taken for a 2025-03-26 server: its authorization server is at
/// its authorization base URL (the URL without its path). Any other
/// failure (a PRM named in the challenge but unusable, a resource mismatch,
/// a network or policy error, a 5xx) is an error, as is missing PRM for a
/// 2025-06-18+ server.
pub(crate) async fn discover_resource(
    http: &HttpClient,
    server_url: &str,
    from_challenge: Option<&str>,
    version: Option<&str>,
) -> Result<Discovered, OAuthError> {
    let prm = match fetch_prm(http, server_url, from_challenge).await? {
        Lookup::Found(prm) => prm,
        Lookup::Absent(e) if from_challenge.is_none() && legacy_discovery_applies(version) => {
            let issuer = authorization_base_url(server_url)?;
            tracing::info!(%server_url, %issuer, why = %e, "no protected resource metadata: 2025-03-26 authorization discovery (LEGACY-26)");
            return Ok(Discovered {
                prm: None,
                resource: server_url.to_owned(),
                issuer,
                legacy: Some(e.message().to_owned()),
            });
        }
        Lookup::Absent(e) => return Err(e),
    };
    // AUTH-09: RFC 9728 §7.6 leaves the choice to the client; the first.
    let issuer = prm.authorization_servers.first().cloned().ok_or_else(|| {
        OAuthError::discovery("the protected resource metadata lists no authorization server")
    })?;
    Ok(Discovered {
        resource: prm.resource.clone(),
        prm: Some(prm),
        issuer,
        legacy: None,
    })
}

// AUTH-07/AUTH-08, LEGACY-26
/// Fetches and validates the metadata of `found`'s authorization server,
/// for an issuer named by PRM as RFC 8414 and OpenID Connect Discovery say.
///
/// Without PRM (a 2025-03-26 server): `{base}/.well-known/oauth-authorization-server`
/// only, with `MCP-Protocol-Version: <version>` (default `2025-03-26`);
/// its `issuer` must be the authorization base URL exactly (RFC 8414 §3.3).
/// When it answers 4xx, the default endpoints
/// ([`legacy_default_metadata`]); any other failure is an error that also
/// names the missing PRM.
pub(crate) async fn discover_as(
    http: &HttpClient,
    found: &Discovered,
    version: Option<&str>,
) -> Result<DiscoveredAs, OAuthError> {
    let Some(why) = &found.legacy else {
        let urls = as_metadata_urls(&found.issuer)?;
        return match fetch_as(http, &found.issuer, &urls, &[]).await? {
            Lookup::Found(meta) => Ok(DiscoveredAs {
                meta,
                defaults: None,
            }),
            Lookup::Absent(e) => Err(e),
        };
    };
    let base = &found.issuer;
    let url = legacy_as_metadata_url(base);
    let header = [(
        MCP_PROTOCOL_VERSION,
        version.unwrap_or(LEGACY_PROTOCOL_VERSION),
    )];
    let found = fetch_as(http, base, std::slice::from_ref(&url), &header)
        .await
        .map_err(|e| {
            // Keep the kind (an issuer mismatch stays one); say both steps.
            OAuthError::new(
                e.kind().clone(),
                format!("{why}; the 2025-03-26 fallback (LEGACY-26) failed too: {e}"),
            )
        })?;
    match found {
        Lookup::Found(meta) => Ok(DiscoveredAs {
            meta,
            defaults: None,
        }),
        Lookup::Absent(e) => {
            tracing::info!(%base, why = %e, "no authorization-server metadata: the 2025-03-26 default endpoints (LEGACY-26)");
            Ok(DiscoveredAs {
                meta: legacy_default_metadata(base),
                defaults: Some(format!(
                    "the server publishes no protected resource metadata ({why}) and no \
                     authorization-server metadata ({e}), so the 2025-03-26 default \
                     endpoints at {base} were tried (LEGACY-26)"
                )),
            })
        }
    }
}

// AUTH-05, AUTH-06
/// Fetches the PRM document and checks its `resource`.
async fn fetch_prm(
    http: &HttpClient,
    server_url: &str,
    from_challenge: Option<&str>,
) -> Result<Lookup<ResourceMetadata>, OAuthError> {
    let mut last = None;
    let mut absent = true;
    for url in prm_urls(server_url, from_challenge)? {
        match http.get(&url).await {
            Ok(r) if r.status.is_success() => match r.json::<ResourceMetadata>() {
                Ok(prm) => {
                    if !resource_matches(&prm.resource, server_url) {
                        return Err(OAuthError::new(
                            OAuthErrorKind::ResourceMismatch,
                            format!(
                                "protected resource metadata at {url} names resource {:?}, \
                                 which is not {} (AUTH-06)",
                                prm.resource, server_url
                            ),
                        ));
                    }
                    return Ok(Lookup::Found(prm));
                }
                Err(e) => {
                    absent = false;
                    last = Some(e);
                }
            },
            Ok(r) => {
                absent &= r.status.is_client_error();
                last = Some(OAuthError::discovery(format!(
                    "{url} answered {}",
                    r.status
                )))
            }
            Err(e) if e.kind() == &OAuthErrorKind::Policy => return Err(e),
            Err(e) => {
                absent = false;
                last = Some(e);
            }
        }
    }
    let e = last.unwrap_or_else(|| OAuthError::discovery("no protected resource metadata"));
    if absent {
        Ok(Lookup::Absent(e))
    } else {
        Err(e)
    }
}

// AUTH-07, AUTH-08
/// Fetches AS metadata from `urls` in order, sending `headers`, and keeps
/// the first document whose `issuer` is `issuer`.
async fn fetch_as(
    http: &HttpClient,
    issuer: &str,
    urls: &[String],
    headers: &[(&str, &str)],
) -> Result<Lookup<AuthServerMetadata>, OAuthError> {
    let mut last = None;
    let mut absent = true;
    for url in urls {
        match http.get_with_headers(url, headers).await {
            Ok(r) if r.status.is_success() => {
                absent = false;
                match r.json::<AuthServerMetadata>() {
                    Ok(meta) => match check_issuer(&meta, issuer) {
                        Ok(()) => return Ok(Lookup::Found(meta)),
                        Err(e) => last = Some(e), // discarded; try the next URL
                    },
                    Err(e) => last = Some(e),
                }
            }
            Ok(r) => {
                absent &= r.status.is_client_error();
                if !matches!(last, Some(ref e) if e.kind() == &OAuthErrorKind::IssuerMismatch) {
                    last = Some(OAuthError::discovery(format!(
                        "{url} answered {}",
                        r.status
                    )));
                }
            }
            Err(e) if e.kind() == &OAuthErrorKind::Policy => return Err(e),
            Err(e) => {
                absent = false;
                last = Some(e);
            }
        }
    }
    let e = last.unwrap_or_else(|| {
        OAuthError::discovery(format!("no authorization-server metadata for {issuer}"))
    });
    if absent {
        Ok(Lookup::Absent(e))
    } else {
        Err(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redirect_matching_ignores_loopback_ports_only() {
        assert!(same_redirect(
            "http://127.0.0.1:5000/callback",
            "http://127.0.0.1:6000/callback"
        ));
        assert!(same_redirect(
            "http://127.0.0.1/callback",
            "http://127.0.0.1:6000/callback"
        ));
        assert!(!same_redirect(
            "http://127.0.0.1:5000/cb",
            "http://127.0.0.1:5000/callback"
        ));
        assert!(!same_redirect(
            "https://app.example:1/cb",
            "https://app.example:2/cb"
        ));
        assert!(same_redirect(
            "https://app.example/cb",
            "https://app.example/cb"
        ));
    }

    #[test]
    fn jwt_subject_is_read_without_panicking() {
        use crate::core::b64::url_encode;
        let tok = format!(
            "{}.{}.sig",
            url_encode("{}"),
            url_encode(r#"{"sub":"alice"}"#)
        );
        assert_eq!(jwt_subject(&tok).as_deref(), Some("alice"));
        assert_eq!(jwt_subject("opaque"), None);
        assert_eq!(jwt_subject("a.!!!.c"), None);
        assert_eq!(jwt_subject(&format!("a.{}.c", url_encode("[1]"))), None);
    }
}
