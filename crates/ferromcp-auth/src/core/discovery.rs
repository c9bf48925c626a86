//! Well-known discovery URLs, for both halves: where a resource server
//! serves its Protected Resource Metadata and a client looks for it
//! (RFC 9728 §3.1), and where authorization-server
//! metadata lives (RFC 8414 §3.1, OpenID Connect Discovery §4).
// AUTH-04/AUTH-05, AUTH-07

/// The well-known path prefix of Protected Resource Metadata (RFC 9728 §3).
pub const PRM_WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";
/// The well-known path prefix of authorization-server metadata (RFC 8414 §3).
pub(crate) const AS_WELL_KNOWN: &str = "/.well-known/oauth-authorization-server";
/// The well-known path of an OpenID Provider's configuration.
pub(crate) const OIDC_WELL_KNOWN: &str = "/.well-known/openid-configuration";

/// Splits an absolute http(s)-style URL into (`scheme://authority`, path)
/// with the query and fragment dropped; the path is as written (`/` for
/// none, a trailing slash kept). The error says what is wrong.
pub(crate) fn split_url(url: &str) -> Result<(String, String), String> {
    let uri: http::Uri = url.parse().map_err(|_| format!("invalid URL {url:?}"))?;
    let scheme = uri
        .scheme_str()
        .ok_or_else(|| format!("{url}: no scheme"))?;
    let authority = uri.authority().ok_or_else(|| format!("{url}: no host"))?;
    Ok((format!("{scheme}://{authority}"), uri.path().to_owned()))
}

/// The path-inserted PRM URL of a resource at `origin` + `path` (RFC 9728
/// §3.1): `{origin}/.well-known/oauth-protected-resource{path}`, where
/// `path` is `""` or starts with `/` and has no trailing slash (the root
/// URL when it is empty).
pub(crate) fn prm_url(origin: &str, path: &str) -> String {
    format!("{origin}{PRM_WELL_KNOWN}{path}")
}

// AUTH-07
/// The authorization-server metadata URLs for `issuer`, in the order of
/// With a path (`https://as/t1`): RFC 8414 path-inserted, OIDC
/// path-inserted, OIDC path-appended. Without: RFC 8414, then OIDC. A
/// trailing slash on the path is ignored, and so are a query and a
/// fragment (which an issuer must not have, RFC 8414 §2).
pub(crate) fn as_metadata_urls(issuer: &str) -> Result<Vec<String>, String> {
    let (origin, path) = split_url(issuer)?;
    let path = path.trim_end_matches('/');
    Ok(if path.is_empty() {
        vec![
            format!("{origin}{AS_WELL_KNOWN}"),
            format!("{origin}{OIDC_WELL_KNOWN}"),
        ]
    } else {
        vec![
            format!("{origin}{AS_WELL_KNOWN}{path}"),
            format!("{origin}{OIDC_WELL_KNOWN}{path}"),
            format!("{origin}{path}{OIDC_WELL_KNOWN}"),
        ]
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn split_keeps_port_and_drops_query_and_fragment() {
        let s = |u: &str| split_url(u).unwrap();
        assert_eq!(
            s("https://as.example:8443/t1/x?q=1#f"),
            ("https://as.example:8443".into(), "/t1/x".into())
        );
        assert_eq!(
            s("http://[::1]:3000"),
            ("http://[::1]:3000".into(), "/".into())
        );
        assert_eq!(
            s("https://h.example/a/"),
            ("https://h.example".into(), "/a/".into())
        );
        assert_eq!(
            s("https://h.example?x=1"),
            ("https://h.example".into(), "/".into())
        );
        assert_eq!(
            split_url("not a url").unwrap_err(),
            "invalid URL \"not a url\""
        );
        assert_eq!(split_url("/relative").unwrap_err(), "/relative: no scheme");
        assert!(split_url("as.example.com").is_err());
        assert!(split_url("").is_err());
    }

    #[test]
    fn prm_url_inserts_the_path() {
        assert_eq!(
            prm_url("https://mcp.example.com:8443", "/api/mcp"),
            "https://mcp.example.com:8443/.well-known/oauth-protected-resource/api/mcp"
        );
        assert_eq!(
            prm_url("http://127.0.0.1:3000", ""),
            "http://127.0.0.1:3000/.well-known/oauth-protected-resource"
        );
    }

    #[test]
    fn as_urls_follow_auth_07() {
        assert_eq!(
            as_metadata_urls("https://as.example.com/t1").unwrap(),
            [
                "https://as.example.com/.well-known/oauth-authorization-server/t1",
                "https://as.example.com/.well-known/openid-configuration/t1",
                "https://as.example.com/t1/.well-known/openid-configuration",
            ]
        );
        let root = [
            "https://as.example.com/.well-known/oauth-authorization-server",
            "https://as.example.com/.well-known/openid-configuration",
        ];
        assert_eq!(as_metadata_urls("https://as.example.com").unwrap(), root);
        assert_eq!(as_metadata_urls("https://as.example.com/").unwrap(), root);
        assert_eq!(
            as_metadata_urls("https://as.example.com?x=1").unwrap(),
            root
        );
    }

    #[test]
    fn as_urls_keep_port_and_nested_path_and_drop_query() {
        assert_eq!(
            as_metadata_urls("http://127.0.0.1:9000/realms/a/b/?x=1#f").unwrap(),
            [
                "http://127.0.0.1:9000/.well-known/oauth-authorization-server/realms/a/b",
                "http://127.0.0.1:9000/.well-known/openid-configuration/realms/a/b",
                "http://127.0.0.1:9000/realms/a/b/.well-known/openid-configuration",
            ]
        );
        assert!(as_metadata_urls("as.example.com").is_err());
        assert!(as_metadata_urls("as.example.com/t1").is_err());
    }
}
