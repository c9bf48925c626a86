//! What the server core asks of MCP Apps: the build-time check of tools'
//! app links, the capability declaration, and the extensions a
//! handshake-era `initialize` result keeps. Protocol types only, so the
//! core reaching here closes no module circle.
// SEP-1865 (MCP Apps, stable 2026-01-26).

use crate::error::Error;
use ferromcp_protocol::types::{
    JsonObject, LEGACY_RESOURCE_URI_META_KEY, Resource, Tool, UI_EXTENSION, UI_META_KEY, is_ui_uri,
};
use serde_json::Value;

/// Checks every tool's app link (`registered` says whether a URI is served
/// by a static resource or a template) and says whether the server uses
/// the extension (some tool has `_meta.ui` or some resource a `ui://` URI).
pub(crate) fn check<'a>(
    tools: impl IntoIterator<Item = &'a Tool>,
    mut resources: impl Iterator<Item = &'a Resource>,
    registered: impl Fn(&str) -> bool,
) -> Result<bool, Error> {
    let mut used = resources.any(Resource::is_ui);
    for tool in tools {
        let has_key = tool.meta.as_ref().is_some_and(|m| {
            m.contains_key(UI_META_KEY) || m.contains_key(LEGACY_RESOURCE_URI_META_KEY)
        });
        if !has_key {
            continue;
        }
        used = true;
        let Some(ui) = tool.ui() else {
            return Err(Error::config(format!(
                "tool {:?}: _meta.ui is malformed (expected resourceUri and visibility [\"model\"|\"app\"])",
                tool.name
            )));
        };
        if ui.visibility.as_ref().is_some_and(Vec::is_empty) {
            return Err(Error::config(format!(
                "tool {:?}: _meta.ui.visibility is empty, so nobody may call it",
                tool.name
            )));
        }
        let Some(uri) = ui.resource_uri.as_deref() else {
            continue;
        };
        if !is_ui_uri(uri) {
            return Err(Error::config(format!(
                "tool {:?}: _meta.ui.resourceUri {uri:?} is not a ui:// URI",
                tool.name
            )));
        }
        // SEP-1865 "Resource Discovery": the resource MUST exist on the server.
        if !registered(uri) {
            return Err(Error::config(format!(
                "tool {:?} names UI resource {uri:?}, which is not registered (register it with .ui_resource(ui_resource({uri:?}, ..)))",
                tool.name
            )));
        }
    }
    Ok(used)
}

/// Declares the extension in `extensions` (keeping settings the author
/// gave with [`ServerBuilder::extension`]).
pub(crate) fn declare(extensions: &mut Option<JsonObject>) {
    extensions
        .get_or_insert_with(JsonObject::new)
        .entry(UI_EXTENSION)
        .or_insert_with(|| Value::Object(JsonObject::new()));
}
