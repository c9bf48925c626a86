//! Client-side checks of `tools/call` results against the tool's
//! `outputSchema` (as the Python and TypeScript clients
//! apply them): a tool that declares one must return `structuredContent`
//! that conforms, unless the result is an error (`isError: true`).
//!
//! Schemas come from the last `tools/list` and are compiled on first use
//! (a listing of many tools costs nothing until one is called). A tool the
//! client never listed is not checked, as in the TypeScript client: the
//! client cannot know its schema without a `tools/list` it did not ask for.
//! A schema the validator cannot compile is not enforced (and logged once).
//! Compiling never fetches anything: `jsonschema` is built without remote
//! reference resolution.
// TOOL-06/TOOL-07

use crate::error::{Error, ErrorKind, Result};
use ferromcp_protocol::types::{CallToolResult, JsonObject};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// A listed tool's output schema, compiled lazily.
enum Entry {
    Declared(Arc<JsonObject>),
    #[cfg(feature = "output-validation")]
    Compiled(Arc<jsonschema::Validator>),
    #[cfg(feature = "output-validation")]
    Uncompilable,
}

/// The `outputSchema` of every tool in the last listing that declared one.
#[derive(Default)]
pub(crate) struct OutputSchemas {
    by_tool: Mutex<HashMap<String, Entry>>,
}

impl OutputSchemas {
    /// Records (or forgets) `tool`'s output schema from a `tools/list` page.
    pub(crate) fn remember(&self, tool: &str, schema: Option<&JsonObject>) {
        let mut map = self.by_tool.lock().unwrap_or_else(|p| p.into_inner());
        match schema {
            Some(s) => {
                let unchanged = matches!(map.get(tool), Some(Entry::Declared(d)) if **d == *s);
                if !unchanged {
                    map.insert(tool.to_owned(), Entry::Declared(Arc::new(s.clone())));
                }
            }
            None => {
                map.remove(tool);
            }
        }
    }

    /// Checks a result of `tool` against its listed schema.
    pub(crate) fn check(&self, tool: &str, r: &CallToolResult) -> Result<()> {
        if r.is_error == Some(true) {
            return Ok(()); // error results carry no structured content
        }
        let mut map = self.by_tool.lock().unwrap_or_else(|p| p.into_inner());
        let Some(entry) = map.get_mut(tool) else {
            return Ok(());
        };
        let mismatch = |problem: String| {
            Err(Error::new(
                ErrorKind::OutputSchemaMismatch {
                    tool: tool.to_owned(),
                },
                format!("tool {tool:?} broke its outputSchema: {problem}"),
            ))
        };
        let Some(structured) = &r.structured_content else {
            return mismatch("the result has no structuredContent".into());
        };
        #[cfg(feature = "output-validation")]
        {
            if let Entry::Declared(schema) = entry {
                let value = serde_json::Value::Object((**schema).clone());
                *entry = match jsonschema::validator_for(&value) {
                    Ok(v) => Entry::Compiled(Arc::new(v)),
                    Err(e) => {
                        tracing::warn!(%tool, error = %e, "not enforcing an outputSchema that does not compile");
                        Entry::Uncompilable
                    }
                };
            }
            if let Entry::Compiled(v) = entry {
                let v = v.clone();
                drop(map);
                if let Some(e) = v.iter_errors(structured).next() {
                    let at = e.instance_path().to_string();
                    let at = if at.is_empty() { "/".to_owned() } else { at };
                    return mismatch(format!("at {at}: {e}"));
                }
            }
        }
        #[cfg(not(feature = "output-validation"))]
        let _ = (entry, structured);
        Ok(())
    }
}
