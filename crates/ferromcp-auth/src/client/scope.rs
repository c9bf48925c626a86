//! Scope selection, step-up unions and
//! `offline_access`.
// AUTH-17, AUTH-19, AUTH-27

/// The `offline_access` scope (OpenID Connect Core §11).
pub const OFFLINE_ACCESS: &str = "offline_access";

// AUTH-17, AUTH-27
/// The challenge's `scope` when present (authoritative for the
/// operation), else all of the PRM's `scopes_supported`, else `None`
/// (leave `scope` out). `offline_access` is added when the AS
/// lists it and some scope is being requested, and removed when the AS
/// does not list it.
pub fn select(
    challenge: &[String],
    prm_supported: Option<&[String]>,
    as_supported: Option<&[String]>,
) -> Option<Vec<String>> {
    let base: Vec<String> = if !challenge.is_empty() {
        challenge.to_vec()
    } else {
        match prm_supported {
            Some(s) if !s.is_empty() => s.to_vec(),
            _ => return None,
        }
    };
    Some(with_offline_access(base, as_supported))
}

/// Adds `offline_access` when the AS lists it; drops it otherwise.
pub fn with_offline_access(scopes: Vec<String>, as_supported: Option<&[String]>) -> Vec<String> {
    let advertised = as_supported.is_some_and(|s| s.iter().any(|x| x == OFFLINE_ACCESS));
    let mut out: Vec<String> = Vec::with_capacity(scopes.len() + 1);
    for s in scopes {
        if (s != OFFLINE_ACCESS || advertised) && !out.contains(&s) {
            out.push(s);
        }
    }
    if advertised && !out.iter().any(|x| x == OFFLINE_ACCESS) {
        out.push(OFFLINE_ACCESS.to_owned());
    }
    out
}

// AUTH-19
/// Previously requested scopes followed by the challenged ones
/// not already present (order kept, no duplicates).
pub fn union(previous: &[String], challenged: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for s in previous.iter().chain(challenged) {
        if !out.contains(s) {
            out.push(s.clone());
        }
    }
    out
}

/// Space-joined, for the `scope` parameter.
pub fn join(scopes: &[String]) -> String {
    scopes.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn v(s: &[&str]) -> Vec<String> {
        s.iter().map(|x| (*x).to_owned()).collect()
    }

    #[test]
    fn challenge_then_prm_then_nothing() {
        // AUTH-17
        let prm = v(&["a", "b"]);
        assert_eq!(select(&v(&["x"]), Some(&prm), None), Some(v(&["x"])));
        assert_eq!(select(&[], Some(&prm), None), Some(v(&["a", "b"])));
        assert_eq!(select(&[], Some(&[]), None), None);
        assert_eq!(select(&[], None, None), None);
    }

    #[test]
    fn offline_access_only_when_advertised() {
        // AUTH-27
        let as_yes = v(&["a", OFFLINE_ACCESS]);
        let as_no = v(&["a"]);
        assert_eq!(
            select(&v(&["a"]), None, Some(&as_yes)),
            Some(v(&["a", OFFLINE_ACCESS]))
        );
        assert_eq!(
            select(&v(&["a", OFFLINE_ACCESS]), None, Some(&as_no)),
            Some(v(&["a"]))
        );
        assert_eq!(select(&[], None, Some(&as_yes)), None);
    }

    #[test]
    fn step_up_is_a_union() {
        // AUTH-19
        assert_eq!(union(&v(&["a", "b"]), &v(&["b", "c"])), v(&["a", "b", "c"]));
        assert_eq!(join(&v(&["a", "b"])), "a b");
    }

    proptest! {
        #[test]
        fn union_contains_both_without_duplicates(
            a in proptest::collection::vec("[a-z]{1,3}", 0..6),
            b in proptest::collection::vec("[a-z]{1,3}", 0..6),
        ) {
            let u = union(&a, &b);
            for s in a.iter().chain(&b) {
                prop_assert!(u.contains(s));
            }
            let mut d = u.clone();
            d.sort();
            d.dedup();
            prop_assert_eq!(d.len(), u.len());
        }
    }
}
