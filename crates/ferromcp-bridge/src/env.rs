//! `${VAR}` expansion in `--header` values.

/// Expands every `${NAME}` in `value` with `lookup(NAME)`; a `$` not
/// followed by `{` stays as it is. A variable `lookup` does not know, an
/// unterminated `${` or an empty name is an error naming the variable
/// (never the value).
pub fn expand_env(value: &str, lookup: impl Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(at) = rest.find("${") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 2..];
        let Some(end) = after.find('}') else {
            return Err("unterminated ${ in a header value".to_owned());
        };
        let name = &after[..end];
        if name.is_empty() {
            return Err("empty ${} in a header value".to_owned());
        }
        match lookup(name) {
            Some(v) => out.push_str(&v),
            None => return Err(format!("environment variable {name} is not set")),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "TOKEN" => Some("s3cret".to_owned()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    #[test]
    fn expands_and_reports() {
        assert_eq!(
            expand_env("Bearer ${TOKEN}", env),
            Ok("Bearer s3cret".to_owned())
        );
        assert_eq!(
            expand_env("${TOKEN}-${EMPTY}-$TOKEN", env),
            Ok("s3cret--$TOKEN".to_owned())
        );
        assert_eq!(expand_env("plain", env), Ok("plain".to_owned()));
        let e = expand_env("Bearer ${MISSING}", env)
            .err()
            .unwrap_or_default();
        assert!(e.contains("MISSING"), "{e}");
        assert!(expand_env("x ${TOKEN", env).is_err());
        assert!(expand_env("x ${}", env).is_err());
    }
}
