//! Per-method and per-tool scopes, enforced on the MCP server's RPC
//! middleware seam: the [`ScopeLayer`] an [`AuthLayer`](super::AuthLayer)
//! hands out sees each admitted request's method, tool name and principal,
//! so nothing has to read the HTTP body a second time.
// AUTH-18

use crate::challenge::{BearerChallenge, INSUFFICIENT_SCOPE};
use ferromcp_protocol::method::TOOLS_CALL;
use ferromcp_protocol::{ErrorCode, ErrorObject, Principal};
use ferromcp_server::middleware::{Next, RpcLayer, RpcRequest, RpcResponse, RpcService};
use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// The scope rules of an [`AuthLayer`](super::AuthLayer).
#[derive(Default)]
pub(super) struct ScopePolicy {
    pub(super) endpoint: Vec<String>,
    pub(super) methods: HashMap<String, Vec<String>>,
    pub(super) tools: HashMap<String, Vec<String>>,
    /// granted scope → scopes it implies (transitively closed).
    pub(super) implies: HashMap<String, HashSet<String>>,
}

/// Methods answered before (or beside) the server's middleware stack: a
/// method rule for one of them could never be enforced.
pub(super) fn unseen_by_middleware(method: &str) -> bool {
    method == ferromcp_protocol::method::INITIALIZE
        || method == ferromcp_protocol::method::SUBSCRIPTIONS_LISTEN
        || method.starts_with("notifications/")
}

impl ScopePolicy {
    /// Whether any method or tool has scopes of its own.
    pub(super) fn per_operation(&self) -> bool {
        !self.methods.is_empty() || !self.tools.is_empty()
    }

    fn add(out: &mut Vec<String>, scopes: &[String]) {
        for s in scopes {
            if !out.contains(s) {
                out.push(s.clone());
            }
        }
    }

    /// Every scope that can be required (the default `scopes_supported`).
    pub(super) fn everything(&self) -> Vec<String> {
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

    /// Adds the scopes of `method` and, for a `tools/call`, of `tool`.
    pub(super) fn for_op(&self, out: &mut Vec<String>, method: &str, tool: Option<&str>) {
        if let Some(s) = self.methods.get(method) {
            Self::add(out, s);
        }
        if method == TOOLS_CALL
            && let Some(s) = tool.and_then(|t| self.tools.get(t))
        {
            Self::add(out, s);
        }
    }

    /// Every scope an operation with a rule of its own needs (endpoint
    /// scopes first, in configuration order); `None` when no method or
    /// tool rule applies (the endpoint scopes were checked at the HTTP
    /// layer).
    pub(super) fn for_request(&self, method: &str, tool: Option<&str>) -> Option<Vec<String>> {
        let mut out = self.endpoint.clone();
        self.for_op(&mut out, method, tool);
        (out.len() > self.endpoint.len()).then_some(out)
    }

    /// Whether `granted` covers every scope of `required`, hierarchy
    /// included.
    pub(super) fn satisfied(&self, granted: &[String], required: &[String]) -> bool {
        required.iter().all(|r| {
            granted
                .iter()
                .any(|g| g == r || self.implies.get(g).is_some_and(|i| i.contains(r)))
        })
    }
}

/// RPC middleware that enforces an [`AuthLayer`](super::AuthLayer)'s
/// per-method and per-tool scopes; made by
/// [`AuthLayer::scope_layer`](super::AuthLayer::scope_layer) and installed
/// with `ferromcp_server::ServerBuilder::layer`.
///
/// A request whose method (or, for `tools/call`, tool) has scopes of its own
/// passes only when its principal's scopes cover them and the endpoint's
/// (scope hierarchy included). Otherwise it is refused: over HTTP with
/// `403` and `WWW-Authenticate: Bearer error="insufficient_scope",
/// scope="…"` naming every scope the operation needs, in both protocol
/// eras; within a handshake-era batch and over stdio with the JSON-RPC
/// error alone. A request without a principal (stdio, or a server not
/// behind the [`AuthLayer`](super::AuthLayer)) has no scopes. Requests
/// without a rule of their own pass untouched.
#[derive(Clone)]
pub struct ScopeLayer {
    policy: Arc<ScopePolicy>,
    metadata_url: Arc<str>,
    installed: Arc<AtomicBool>,
}

impl std::fmt::Debug for ScopeLayer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScopeLayer")
            .field("metadata_url", &self.metadata_url)
            .finish_non_exhaustive()
    }
}

impl ScopeLayer {
    pub(super) fn new(
        policy: Arc<ScopePolicy>,
        metadata_url: &str,
        installed: Arc<AtomicBool>,
    ) -> Self {
        Self {
            policy,
            metadata_url: Arc::from(metadata_url),
            installed,
        }
    }
}

impl RpcLayer for ScopeLayer {
    fn layer(&self, inner: Next) -> Arc<dyn RpcService> {
        // The AuthLayer refuses to serve per-operation rules until a server
        // has installed this layer (fail closed on a forgotten `.layer(..)`).
        self.installed.store(true, Ordering::Release);
        Arc::new(ScopeService {
            layer: self.clone(),
            next: inner,
        })
    }
}

struct ScopeService {
    layer: ScopeLayer,
    next: Next,
}

impl ScopeService {
    fn refusal(&self, required: Vec<String>) -> RpcResponse {
        let description = "the token lacks scopes this request needs";
        // Over HTTP the message is the 403's `error_description`; the data
        // names the error and scopes for stdio and batch callers.
        let error = ErrorObject::new(ErrorCode::INVALID_REQUEST, description).with_data(
            serde_json::json!({
                "error": INSUFFICIENT_SCOPE,
                "scope": required.join(" "),
            }),
        );
        let challenge = BearerChallenge {
            error: Some(INSUFFICIENT_SCOPE.to_owned()),
            error_description: Some(description.to_owned()),
            scope: required,
            resource_metadata: Some(self.layer.metadata_url.to_string()),
            realm: None,
        };
        RpcResponse::insufficient_scope(error, &challenge.to_string())
    }
}

impl RpcService for ScopeService {
    fn call(&self, req: RpcRequest) -> Pin<Box<dyn Future<Output = RpcResponse> + Send>> {
        let policy = &self.layer.policy;
        let Some(required) = policy.for_request(req.method(), req.name()) else {
            return self.next.run(req);
        };
        let granted = req.principal().map_or(&[][..], |p: &Principal| &p.scopes);
        if policy.satisfied(granted, &required) {
            return self.next.run(req);
        }
        let refused = self.refusal(required);
        Box::pin(std::future::ready(refused))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(
            p.for_request("tools/call", Some("admin")),
            Some(vec!["mcp".to_owned(), "admin".to_owned()])
        );
        assert_eq!(
            p.for_request("tools/list", None),
            Some(vec!["mcp".to_owned(), "tools.read".to_owned()])
        );
        // No rule of its own: only the endpoint's, checked at HTTP.
        assert_eq!(p.for_request("tools/call", Some("echo")), None);
        // A tool rule applies to tools/call only (a prompt named `admin`).
        assert_eq!(p.for_request("prompts/get", Some("admin")), None);
        assert_eq!(p.everything(), ["mcp", "tools.read", "admin", "deploy"]);
        let g = |s: &[&str]| s.iter().map(|x| (*x).to_owned()).collect::<Vec<_>>();
        assert!(p.satisfied(&g(&["mcp", "admin"]), &g(&["mcp", "admin"])));
        assert!(!p.satisfied(&g(&["mcp"]), &g(&["mcp", "admin"])));
        assert!(p.satisfied(&g(&["mcp", "root"]), &g(&["mcp", "admin", "deploy"])));
        assert!(unseen_by_middleware("initialize"));
        assert!(unseen_by_middleware("notifications/initialized"));
        assert!(!unseen_by_middleware("tools/call"));
    }
}
