//! Absolute http(s) URLs taken apart for comparison, shared by the
//! resource indicator canonical form (`resource::ResourceUri`),
//! the DPoP `htu` on both halves (RFC 9449 §4.2, §4.3) and the client's
//! resource-indicator match (RFC 9728 §3.3).
// AUTH-22

/// `url` without its query and fragment, split into scheme, authority and
/// path (`""` or starting with `/`), as written: nothing is lower-cased or
/// validated beyond the `://` separator. `None` for a relative URL.
pub(crate) fn split(url: &str) -> Option<(&str, &str, &str)> {
    let cut = url.find(['?', '#']).unwrap_or(url.len());
    let (scheme, rest) = url[..cut].split_once("://")?;
    let (authority, path) = match rest.find('/') {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    Some((scheme, authority, path))
}

/// The default port of a lower-case `scheme`, as the `:port` suffix an
/// authority may carry and comparisons elide (`:443` for https, `:80` for
/// http); `None` for any other scheme.
pub(crate) fn default_port_suffix(scheme: &str) -> Option<&'static str> {
    match scheme {
        "https" => Some(":443"),
        "http" => Some(":80"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_scheme_authority_and_path() {
        assert_eq!(
            split("HTTPS://Host:8443/a/b/?q=1#f"),
            Some(("HTTPS", "Host:8443", "/a/b/"))
        );
        assert_eq!(split("http://h"), Some(("http", "h", "")));
        assert_eq!(split("http://h#/x"), Some(("http", "h", "")));
        assert_eq!(split("http://h?x=/y"), Some(("http", "h", "")));
        assert_eq!(split("http:///p"), Some(("http", "", "/p")));
        assert_eq!(split("/relative"), None);
        assert_eq!(split("mailto:a@b"), None);
    }

    #[test]
    fn default_ports() {
        assert_eq!(default_port_suffix("https"), Some(":443"));
        assert_eq!(default_port_suffix("http"), Some(":80"));
        assert_eq!(default_port_suffix("ftp"), None);
    }
}
