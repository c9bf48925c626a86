//! The error of a configuration file that does not validate.

use serde_json::Value;
use std::fmt;

/// A configuration error, naming the key it is about (never a secret
/// value).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    path: String,
    message: String,
}

impl ConfigError {
    pub(crate) fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            path: path.into(),
            message: message.into(),
        }
    }

    /// The key path, e.g. `mcpServers.github.url` (empty for the whole file).
    pub fn path(&self) -> &str {
        &self.path
    }

    /// What is wrong with it.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

impl std::error::Error for ConfigError {}

/// The whole number `v` when it lies in `lo..=hi`; otherwise the one
/// message every numeric key of the file gets.
pub(crate) fn whole_number(v: &Value, path: &str, lo: u64, hi: u64) -> Result<u64, ConfigError> {
    match v.as_u64() {
        Some(n) if (lo..=hi).contains(&n) => Ok(n),
        _ => Err(ConfigError::new(
            path,
            format!("must be a whole number from {lo} to {hi}"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_whole_number_outside_its_range_names_the_key_and_the_range() {
        assert_eq!(whole_number(&json!(3), "a.b", 1, 5), Ok(3));
        for bad in [
            json!(0),
            json!(6),
            json!(-1),
            json!(2.5),
            json!("3"),
            json!(null),
        ] {
            let e = whole_number(&bad, "a.b", 1, 5).err();
            assert_eq!(
                e.map(|e| e.to_string()).as_deref(),
                Some("a.b: must be a whole number from 1 to 5"),
                "{bad}"
            );
        }
    }
}
