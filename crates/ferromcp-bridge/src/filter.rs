//! Tool allow/deny lists: a tiny glob matcher and the filter built from it.
//!
//! A filtered tool is removed from `tools/list` answers and refused on
//! `tools/call` before anything is sent to the remote: the filter is
//! enforced, not a display preference. Names compare case-sensitively,
//! as the protocol does.

use std::fmt;

/// A glob over tool names: `*` matches any run of characters (also
/// none), `?` exactly one character, anything else itself. Matching is
/// case-sensitive and covers the whole name.
#[derive(Clone, PartialEq, Eq)]
pub struct Glob {
    pattern: Vec<char>,
    text: String,
}

impl Glob {
    /// Compiles `pattern`; an empty pattern is refused (it would match
    /// only the empty name, which is never a tool).
    pub fn new(pattern: &str) -> Result<Self, String> {
        if pattern.is_empty() {
            return Err("an empty tool pattern matches nothing".to_owned());
        }
        Ok(Self {
            pattern: pattern.chars().collect(),
            text: pattern.to_owned(),
        })
    }

    /// Whether `name` matches the whole pattern.
    pub fn matches(&self, name: &str) -> bool {
        self.matches_with(name, |a, b| a == b)
    }

    /// Whether `name` matches the whole pattern with ASCII letters
    /// compared case-insensitively.
    pub fn matches_ignore_ascii_case(&self, name: &str) -> bool {
        self.matches_with(name, |a, b| a.eq_ignore_ascii_case(&b))
    }

    fn matches_with(&self, name: &str, eq: impl Fn(char, char) -> bool) -> bool {
        let name: Vec<char> = name.chars().collect();
        // Iterative matching with one backtrack point (the last `*`):
        // linear in practice, never exponential.
        let (mut p, mut n) = (0usize, 0usize);
        let mut star: Option<(usize, usize)> = None;
        while n < name.len() {
            match self.pattern.get(p) {
                Some('*') => {
                    star = Some((p, n));
                    p += 1;
                }
                Some('?') => {
                    p += 1;
                    n += 1;
                }
                Some(c) if eq(*c, name[n]) => {
                    p += 1;
                    n += 1;
                }
                _ => match star {
                    Some((sp, sn)) => {
                        p = sp + 1;
                        n = sn + 1;
                        star = Some((sp, sn + 1));
                    }
                    None => return false,
                },
            }
        }
        self.pattern[p..].iter().all(|c| *c == '*')
    }
}

impl fmt::Debug for Glob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Glob({:?})", self.text)
    }
}

impl fmt::Display for Glob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// Which tools the bridge lets through.
///
/// With no allow pattern every tool is allowed unless denied; with allow
/// patterns only matching tools are (case-sensitively, as tool names
/// compare), and a deny pattern always wins. A deny pattern also refuses
/// the ASCII case variants of what it matches (`Echo` for a denied
/// `echo`): a remote that looked tools up case-insensitively would
/// otherwise run the denied tool under another spelling.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolFilter {
    allow: Vec<Glob>,
    deny: Vec<Glob>,
}

impl ToolFilter {
    /// A filter letting every tool through.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds an allow pattern.
    pub fn allow(mut self, glob: Glob) -> Self {
        self.allow.push(glob);
        self
    }

    /// Adds a deny pattern (deny wins over allow).
    pub fn deny(mut self, glob: Glob) -> Self {
        self.deny.push(glob);
        self
    }

    /// Whether the filter lets every tool through (no pattern at all).
    pub fn is_open(&self) -> bool {
        self.allow.is_empty() && self.deny.is_empty()
    }

    /// Whether the tool called `name` may be listed and called.
    pub fn permits(&self, name: &str) -> bool {
        if self.deny.iter().any(|g| g.matches_ignore_ascii_case(name)) {
            return false;
        }
        self.allow.is_empty() || self.allow.iter().any(|g| g.matches(name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(p: &str) -> Glob {
        Glob::new(p).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn glob_matches_whole_names() {
        assert!(g("echo").matches("echo"));
        assert!(!g("echo").matches("echo2"));
        assert!(!g("echo").matches("xecho"));
        assert!(g("test_*").matches("test_"));
        assert!(g("test_*").matches("test_sampling"));
        assert!(!g("test_*").matches("debug_sleep"));
        assert!(g("*_sleep").matches("debug_sleep"));
        assert!(g("e?ho").matches("echo"));
        assert!(!g("e?ho").matches("eho"));
        assert!(g("*").matches("anything"));
        assert!(g("a*b*c").matches("aXXbYYc"));
        assert!(!g("a*b*c").matches("aXXbYY"));
        assert!(g("**x").matches("x"));
        assert!(g("é?").matches("éé"));
        assert!(Glob::new("").is_err());
    }

    #[test]
    fn glob_is_case_sensitive() {
        assert!(!g("echo").matches("ECHO"));
        assert!(!g("echo").matches("Echo"));
        assert!(!g("ech?").matches("ECHO"));
        assert!(g("echo").matches_ignore_ascii_case("ECHO"));
        assert!(g("e*O").matches_ignore_ascii_case("echo"));
        assert!(!g("echo").matches_ignore_ascii_case("echo2"));
    }

    #[test]
    fn glob_has_no_exponential_blowup() {
        let p = g("*a*a*a*a*a*a*a*a*a*a*b");
        let name = "a".repeat(5000);
        assert!(!p.matches(&name));
    }

    #[test]
    fn deny_wins_and_allow_restricts() {
        let open = ToolFilter::new();
        assert!(open.is_open());
        assert!(open.permits("anything"));

        let f = ToolFilter::new().deny(g("echo"));
        assert!(!f.permits("echo"));
        // Case variants of a denied name are refused too, in case the
        // remote matches names case-insensitively.
        assert!(!f.permits("Echo"));
        assert!(!f.permits("ECHO"));
        assert!(f.permits("echo2"));
        assert!(f.permits("test_sampling"));
        let f = ToolFilter::new().deny(g("debug_*"));
        assert!(!f.permits("DEBUG_sleep"));

        let f = ToolFilter::new()
            .allow(g("test_*"))
            .deny(g("test_sampling"));
        assert!(f.permits("test_elicitation"));
        assert!(!f.permits("test_sampling"));
        assert!(!f.permits("echo"));
        assert!(!f.permits("TEST_elicitation"));
    }
}
