//! The Protected Resource Metadata document (RFC 9728 §2): the resource
//! half serves it, the client half reads it.
// AUTH-03…AUTH-06
// Foreign type: serde_json (`Value`, `Map`, `RawValue`, `Number`, `Error`) in this module's public
// signatures: it is the JSON data model users pass in and get back (arbitrary params, results,
// schemas, `_meta`); the SDK is built on serde_json by design.

use serde::de::{DeserializeOwned, Deserializer};
use serde::{Deserialize, Serialize};

/// The Protected Resource Metadata document (RFC 9728 §2).
///
/// A resource server builds it (`ProtectedResourceMetadata::new`, feature
/// `resource`) and serializes it to serve it; a client deserializes what it
/// fetched. `resource` is required. The descriptive members are read
/// leniently: one of the wrong JSON type is taken as absent rather than
/// failing discovery. Members this type does not name are kept in
/// [`extra`](Self::extra) (empty when serving, so nothing extra is sent).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProtectedResourceMetadata {
    // AUTH-06
    /// The canonical resource URI (RFC 9728 §3.3: must match the URL the
    /// document was discovered for).
    pub resource: String,
    // AUTH-03
    /// Issuer identifiers of the authorization servers that mint tokens for
    /// this resource; at least one.
    #[serde(default)]
    pub authorization_servers: Vec<String>,
    // AUTH-17
    /// Scopes the resource understands (a client asks for them when a
    /// challenge names none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scopes_supported: Option<Vec<String>>,
    // AUTH-20
    /// How tokens may be presented: only `["header"]` here.
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub bearer_methods_supported: Vec<String>,
    /// Human-readable name of the resource.
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub resource_name: Option<String>,
    /// URL of developer documentation.
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub resource_documentation: Option<String>,
    /// URL of the resource's policy on data use.
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub resource_policy_uri: Option<String>,
    /// URL of the resource's terms of service.
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub resource_tos_uri: Option<String>,
    /// Every other member (e.g. `dpop_signing_alg_values_supported`).
    #[serde(flatten)]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

/// Any JSON value; `T::default()` unless it is a `T`.
fn lenient<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned + Default,
{
    let v = serde_json::Value::deserialize(d)?;
    Ok(serde_json::from_value(v).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_what_servers_publish() {
        let d: ProtectedResourceMetadata = serde_json::from_value(json!({
            "resource": "https://mcp.example.com/mcp",
            "authorization_servers": ["https://as.example.com"],
            "scopes_supported": ["mcp"],
            "bearer_methods_supported": ["header"],
            "resource_name": "Example",
            "dpop_signing_alg_values_supported": ["ES256"],
        }))
        .unwrap();
        assert_eq!(d.authorization_servers, ["https://as.example.com"]);
        assert_eq!(d.scopes_supported.as_deref(), Some(&["mcp".to_owned()][..]));
        assert_eq!(d.bearer_methods_supported, ["header"]);
        assert_eq!(d.resource_name.as_deref(), Some("Example"));
        assert_eq!(
            d.extra.get("dpop_signing_alg_values_supported"),
            Some(&json!(["ES256"]))
        );
        // Round trip, unknown members included.
        let back: ProtectedResourceMetadata =
            serde_json::from_value(serde_json::to_value(&d).unwrap()).unwrap();
        assert_eq!(back, d);
    }

    #[test]
    fn minimal_and_odd_documents() {
        let d: ProtectedResourceMetadata =
            serde_json::from_value(json!({"resource": "https://r.example"})).unwrap();
        assert!(d.authorization_servers.is_empty());
        assert!(d.scopes_supported.is_none() && d.bearer_methods_supported.is_empty());
        assert!(d.extra.is_empty());
        assert_eq!(
            serde_json::to_value(&d).unwrap(),
            json!({"resource": "https://r.example", "authorization_servers": []})
        );
        // Descriptive members of the wrong type do not fail discovery.
        let d: ProtectedResourceMetadata = serde_json::from_value(json!({
            "resource": "https://r.example",
            "authorization_servers": ["https://as"],
            "bearer_methods_supported": "header",
            "resource_name": 5,
            "resource_tos_uri": null,
        }))
        .unwrap();
        assert!(d.bearer_methods_supported.is_empty());
        assert!(d.resource_name.is_none() && d.resource_tos_uri.is_none());
        // `resource` is required; the members the flow relies on are typed.
        assert!(serde_json::from_value::<ProtectedResourceMetadata>(json!({})).is_err());
        assert!(
            serde_json::from_value::<ProtectedResourceMetadata>(
                json!({"resource": "https://r", "authorization_servers": "https://as"})
            )
            .is_err()
        );
    }
}
