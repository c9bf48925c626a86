//! Per-scope tool policy (`mcpServers.NAME.scopes`), enforced on the
//! server's RPC middleware seam: a caller whose token lacks a scope a tool
//! needs neither sees it in `tools/list` nor can call it.
//!
//! ```json
//! {"scopes": {"write_*": ["files:write"], "*": ["files:read"]}}
//! ```
//!
//! Keys are globs over the upstream's own tool names; a tool needs every
//! scope of every glob it matches (ASCII case ignored when matching, so a
//! case variant never needs less). A caller without a verified token (no
//! inbound `auth`, or stdio) has no scopes. A refused call gets the same
//! JSON-RPC error as a tool that does not exist (-32602 `Unknown tool`),
//! so a caller cannot tell a hidden tool from an invented name.
// AUTH-03, AUTH-04

use crate::config_error::ConfigError;
use ferromcp_bridge::Glob;
use ferromcp_protocol::{ErrorObject, Principal};
use ferromcp_server::middleware::{Next, RpcLayer, RpcRequest, RpcResponse, RpcService};
use serde_json::Value;
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, OnceLock, RwLock};

/// Who serves an exposed tool name: the upstream's name and its own name
/// for the tool (the gateway's catalogue answers).
pub(crate) trait ToolOwner: Send + Sync {
    /// The upstream serving `exposed` and its own name for it.
    fn owner(&self, exposed: &str) -> Option<(String, String)>;
}

/// The catalogue, once it exists.
pub(crate) type Route = Arc<OnceLock<Arc<dyn ToolOwner>>>;

/// One `"GLOB": ["scope", …]` rule of an upstream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScopeRule {
    glob: Glob,
    scopes: Vec<String>,
}

impl ScopeRule {
    /// The scopes a tool matching this rule needs (all of them).
    pub fn scopes(&self) -> &[String] {
        &self.scopes
    }

    /// Whether `tool` (the upstream's own name) falls under this rule,
    /// ignoring ASCII case.
    pub fn covers(&self, tool: &str) -> bool {
        self.glob.matches(tool) || self.glob.matches_ignore_ascii_case(tool)
    }
}

/// A scope token as RFC 6749 §3.3 allows it (printable ASCII but space,
/// `"` and `\`).
fn valid_scope(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_graphic() && b != b'"' && b != b'\\')
}

/// Parses `mcpServers.NAME.scopes` at `path`.
pub(crate) fn parse(v: &Value, path: &str) -> Result<Vec<ScopeRule>, ConfigError> {
    let o = v.as_object().ok_or_else(|| {
        ConfigError::new(path, "must be a JSON object of tool globs to scope lists")
    })?;
    let mut rules = Vec::new();
    for (g, list) in o {
        let at = format!("{path}.{g}");
        let glob = Glob::new(g).map_err(|e| ConfigError::new(&at, e))?;
        let a = list
            .as_array()
            .ok_or_else(|| ConfigError::new(&at, "must be an array of scopes"))?;
        if a.is_empty() {
            return Err(ConfigError::new(
                &at,
                "is empty; list the scopes the tools need (leave the glob out for none)",
            ));
        }
        let mut scopes = Vec::new();
        for (i, s) in a.iter().enumerate() {
            match s.as_str() {
                Some(s) if valid_scope(s) => scopes.push(s.to_owned()),
                _ => {
                    return Err(ConfigError::new(
                        format!("{at}[{i}]"),
                        "must be a scope token (printable ASCII, no space, \" or \\)",
                    ));
                }
            }
        }
        rules.push(ScopeRule { glob, scopes });
    }
    Ok(rules)
}

/// What the policy knows: each upstream's exposed-name prefix and rules.
#[derive(Debug, Default)]
struct Rules {
    /// (`PREFIX` + separator, its rules), for upstreams with rules.
    servers: Vec<(String, Vec<ScopeRule>)>,
    /// The same rules by upstream name (for names the catalogue routes,
    /// prefixed or not).
    by_upstream: HashMap<String, Vec<ScopeRule>>,
}

/// The per-scope tool policy, an [`RpcLayer`] installed in the gateway's
/// server. Cheap to clone; a reload replaces its rules for every clone.
#[derive(Clone, Default)]
pub(crate) struct ScopePolicy {
    rules: Arc<RwLock<Rules>>,
    route: Route,
}

impl std::fmt::Debug for ScopePolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScopePolicy")
            .field("rules", &self.rules)
            .finish_non_exhaustive()
    }
}

impl ScopePolicy {
    /// A policy that also asks `route` who serves a name (needed when
    /// names are not always prefixed: `gateway.naming` "onCollision").
    pub(crate) fn routed(route: Route) -> Self {
        Self {
            rules: Arc::default(),
            route,
        }
    }

    /// Replaces the rules with those of `config`.
    pub(crate) fn set(&self, config: &crate::Config) {
        let by_upstream = config
            .upstreams()
            .iter()
            .filter(|u| !u.scopes().is_empty())
            .map(|u| (u.name().to_owned(), u.scopes().to_vec()))
            .collect();
        let servers = config
            .upstreams()
            .iter()
            .filter(|u| !u.scopes().is_empty())
            .map(|u| {
                (
                    format!("{}{}", u.prefix(), config.separator()),
                    u.scopes().to_vec(),
                )
            })
            .collect();
        *self.rules.write().unwrap_or_else(|p| p.into_inner()) = Rules {
            servers,
            by_upstream,
        };
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.rules
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .servers
            .is_empty()
    }

    /// Every scope the exposed tool `name` needs. Prefixes are compared
    /// ignoring ASCII case, so a case variant of a name never needs less.
    fn required(&self, name: &str) -> BTreeSet<String> {
        let rules = self.rules.read().unwrap_or_else(|p| p.into_inner());
        let mut need = BTreeSet::new();
        // The upstream that serves it, under whatever name it is exposed.
        if let Some((up, own)) = self.route.get().and_then(|a| a.owner(name))
            && let Some(rules) = rules.by_upstream.get(&up)
        {
            for r in rules.iter().filter(|r| r.covers(&own)) {
                need.extend(r.scopes.iter().cloned());
            }
        }
        // And every prefix it falls under (case variants included).
        for (prefix, rules) in &rules.servers {
            let Some(head) = name.get(..prefix.len()) else {
                continue;
            };
            if !head.eq_ignore_ascii_case(prefix) {
                continue;
            }
            let tool = &name[prefix.len()..];
            for r in rules.iter().filter(|r| r.covers(tool)) {
                need.extend(r.scopes.iter().cloned());
            }
        }
        need
    }

    /// Whether `principal` may see and call the exposed tool `name`.
    pub(crate) fn permits(&self, name: &str, principal: Option<&Principal>) -> bool {
        let need = self.required(name);
        need.is_empty()
            || principal.is_some_and(|p| need.iter().all(|s| p.scopes.iter().any(|h| h == s)))
    }
}

impl RpcLayer for ScopePolicy {
    fn layer(&self, inner: Next) -> Arc<dyn RpcService> {
        Arc::new(Enforce {
            policy: self.clone(),
            next: inner,
        })
    }
}

struct Enforce {
    policy: ScopePolicy,
    next: Next,
}

impl RpcService for Enforce {
    fn call(&self, req: RpcRequest) -> ferromcp_server::BoxFuture<RpcResponse> {
        let policy = self.policy.clone();
        let next = self.next.clone();
        Box::pin(async move {
            if policy.is_empty() {
                return next.run(req).await;
            }
            match req.method() {
                "tools/call" => {
                    let name = req.name().unwrap_or_default().to_owned();
                    if !policy.permits(&name, req.principal()) {
                        // The answer of a tool that does not exist.
                        return RpcResponse::refuse(ErrorObject::invalid_params(format_args!(
                            "Unknown tool: {name}"
                        )));
                    }
                    next.run(req).await
                }
                "tools/list" => {
                    let principal = req.principal().cloned();
                    let answer = next.run(req).await;
                    answer.map_result(|r| {
                        if let Some(tools) = r.get_mut("tools").and_then(Value::as_array_mut) {
                            tools.retain(|t| {
                                t.get("name")
                                    .and_then(Value::as_str)
                                    .is_some_and(|n| policy.permits(n, principal.as_ref()))
                            });
                        }
                    })
                }
                _ => next.run(req).await,
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn policy(rules: Value) -> ScopePolicy {
        let p = ScopePolicy::default();
        *p.rules.write().unwrap() = Rules {
            servers: vec![("fs__".into(), parse(&rules, "s").unwrap())],
            by_upstream: HashMap::new(),
        };
        p
    }

    fn who(scopes: &[&str]) -> Principal {
        Principal {
            subject: "u".into(),
            scopes: scopes.iter().map(|s| (*s).to_owned()).collect(),
            client_id: None,
        }
    }

    #[test]
    fn a_tool_needs_every_scope_of_every_rule_it_matches() {
        let p = policy(json!({"write_*": ["w"], "*": ["r"]}));
        let reader = who(&["r"]);
        let writer = who(&["r", "w"]);
        assert!(p.permits("fs__read", Some(&reader)));
        assert!(!p.permits("fs__write_file", Some(&reader)));
        assert!(p.permits("fs__write_file", Some(&writer)));
        assert!(!p.permits("fs__read", Some(&who(&[]))));
        assert!(!p.permits("fs__read", None), "no token, no scopes");
        // Case variants of the name need at least as much.
        for n in ["FS__write_file", "fs__WRITE_FILE", "Fs__Write_File"] {
            assert!(!p.permits(n, Some(&reader)), "{n}");
        }
        // Other upstreams' tools are not governed.
        assert!(p.permits("other__x", None));
    }

    #[test]
    fn rules_are_validated_naming_the_key() {
        let e = |v: Value| parse(&v, "mcpServers.fs.scopes").unwrap_err().to_string();
        assert!(e(json!(["x"])).starts_with("mcpServers.fs.scopes: must be a JSON object"));
        assert!(e(json!({"a": "s"})).starts_with("mcpServers.fs.scopes.a: must be an array"));
        assert!(e(json!({"a": []})).starts_with("mcpServers.fs.scopes.a: is empty"));
        assert!(e(json!({"a": ["a b"]})).starts_with("mcpServers.fs.scopes.a[0]: must be a scope"));
        assert!(e(json!({"a": [1]})).starts_with("mcpServers.fs.scopes.a[0]:"));
        assert!(e(json!({"": ["s"]})).starts_with("mcpServers.fs.scopes.:"));
    }
}
