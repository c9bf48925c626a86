//! MCP Apps: interactive HTML user interfaces declared by a server
//! (extension `io.modelcontextprotocol/ui`).
//!
//! A tool names its app with `_meta.ui.resourceUri`, a `ui://` resource
//! whose contents are an HTML document of MIME type
//! `text/html;profile=mcp-app`. The resource's `_meta.ui` carries what the
//! host needs to sandbox it: the origins the app may reach (CSP), the
//! browser permissions it asks for, a dedicated origin and a border
//! preference. A tool's `_meta.ui.visibility` says whether the model, the
//! app, or both may call it.
//!
//! ```
//! use ferromcp_protocol::types::{Tool, UiToolMeta, UiVisibility};
//!
//! let mut tool = Tool::new("refresh", Tool::no_arguments_schema());
//! UiToolMeta::new("ui://dashboard/view.html")
//!     .visibility([UiVisibility::App])
//!     .apply_to(tool.meta.get_or_insert_with(Default::default));
//! let ui = tool.ui().expect("typed");
//! assert_eq!(ui.resource_uri.as_deref(), Some("ui://dashboard/view.html"));
//! assert!(!tool.visible_to_model());
//! ```
// SEP-1865 (MCP Apps, stable 2026-01-26): "UI Resource Format", "Resource Discovery".

use super::{ClientCapabilities, JsonObject, Meta, Resource, ResourceContents, Tool};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The extension identifier, the key in `capabilities.extensions`.
pub const UI_EXTENSION: &str = "io.modelcontextprotocol/ui";

/// The MIME type of an HTML app resource.
pub const UI_MIME_TYPE: &str = "text/html;profile=mcp-app";

/// The URI scheme every app resource uses, with its `://`.
pub const UI_SCHEME: &str = "ui://";

/// The key of `_meta.ui` on tools, resources and resource contents.
pub const UI_META_KEY: &str = "ui";

/// The flat `_meta` key earlier drafts used for the tool's resource URI;
/// deprecated by the specification, read as a fallback.
pub const LEGACY_RESOURCE_URI_META_KEY: &str = "ui/resourceUri";

/// Whether `uri` is a `ui://` URI with something after the scheme and no
/// whitespace or control characters.
pub fn is_ui_uri(uri: &str) -> bool {
    uri.strip_prefix(UI_SCHEME).is_some_and(|rest| {
        !rest.is_empty() && !rest.chars().any(|c| c.is_whitespace() || c.is_control())
    })
}

/// Who may call a tool that has an app.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UiVisibility {
    /// The model (agent) sees and calls the tool.
    Model,
    /// The app of the same server calls the tool.
    App,
}

/// A tool's `_meta.ui`: its app and who may call it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UiToolMeta {
    /// The `ui://` resource that renders the tool's results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_uri: Option<String>,
    /// Who may call the tool; absent means both the model and the app.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub visibility: Option<Vec<UiVisibility>>,
    /// Members this version does not know, kept verbatim.
    #[serde(flatten)]
    pub other: JsonObject,
}

impl UiToolMeta {
    /// Metadata linking a tool to the app at `resource_uri`.
    pub fn new(resource_uri: impl Into<String>) -> Self {
        Self {
            resource_uri: Some(resource_uri.into()),
            ..Self::default()
        }
    }

    /// Sets who may call the tool.
    #[must_use]
    pub fn visibility(mut self, v: impl IntoIterator<Item = UiVisibility>) -> Self {
        self.visibility = Some(v.into_iter().collect());
        self
    }

    /// Whether the model may see and call the tool (the default).
    pub fn visible_to_model(&self) -> bool {
        self.visibility
            .as_ref()
            .is_none_or(|v| v.contains(&UiVisibility::Model))
    }

    /// Whether the app may call the tool (the default).
    pub fn visible_to_app(&self) -> bool {
        self.visibility
            .as_ref()
            .is_none_or(|v| v.contains(&UiVisibility::App))
    }

    /// Writes this as `meta["ui"]`, replacing what was there. Only the
    /// nested form is written: the specification deprecates the flat
    /// `ui/resourceUri` key.
    pub fn apply_to(&self, meta: &mut Meta) {
        if let Ok(v) = serde_json::to_value(self) {
            meta.insert(UI_META_KEY.to_owned(), v);
        }
    }

    /// Reads `meta["ui"]`, falling back to the deprecated flat
    /// `ui/resourceUri` key for the URI. `None` when neither is there or
    /// `ui` is malformed.
    pub fn from_meta(meta: &Meta) -> Option<Self> {
        let legacy = meta
            .get(LEGACY_RESOURCE_URI_META_KEY)
            .and_then(Value::as_str);
        let mut ui = match meta.get(UI_META_KEY) {
            Some(v) => Self::deserialize(v).ok()?,
            None => Self {
                resource_uri: Some(legacy?.to_owned()),
                ..Self::default()
            },
        };
        if ui.resource_uri.is_none() {
            ui.resource_uri = legacy.map(str::to_owned);
        }
        Some(ui)
    }
}

/// Just the `ui://` URI: visible to the model and the app.
impl From<&str> for UiToolMeta {
    fn from(uri: &str) -> Self {
        Self::new(uri)
    }
}

/// Just the `ui://` URI: visible to the model and the app.
impl From<String> for UiToolMeta {
    fn from(uri: String) -> Self {
        Self::new(uri)
    }
}

/// The origins an app may reach, from which the host builds the iframe's
/// Content Security Policy. Absent lists mean none.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UiCsp {
    /// Origins for fetch, XHR and WebSocket (`connect-src`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connect_domains: Option<Vec<String>>,
    /// Origins for scripts, styles, images, fonts and media.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_domains: Option<Vec<String>>,
    /// Origins for nested iframes (`frame-src`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frame_domains: Option<Vec<String>>,
    /// Allowed base URIs of the document (`base-uri`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_uri_domains: Option<Vec<String>>,
    /// Members this version does not know, kept verbatim.
    #[serde(flatten)]
    pub other: JsonObject,
}

/// Browser permissions an app asks for; the host may grant them. Each is
/// an empty object on the wire when requested.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UiPermissions {
    /// Camera access.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub camera: Option<JsonObject>,
    /// Microphone access.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub microphone: Option<JsonObject>,
    /// Geolocation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub geolocation: Option<JsonObject>,
    /// Writing to the clipboard.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clipboard_write: Option<JsonObject>,
    /// Members this version does not know, kept verbatim.
    #[serde(flatten)]
    pub other: JsonObject,
}

/// A browser permission an app may ask for (see [`UiPermissions`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UiPermission {
    /// `camera`.
    Camera,
    /// `microphone`.
    Microphone,
    /// `geolocation`.
    Geolocation,
    /// `clipboardWrite`.
    ClipboardWrite,
}

impl UiPermissions {
    /// Requests `p`.
    pub fn request(&mut self, p: UiPermission) {
        let slot = match p {
            UiPermission::Camera => &mut self.camera,
            UiPermission::Microphone => &mut self.microphone,
            UiPermission::Geolocation => &mut self.geolocation,
            UiPermission::ClipboardWrite => &mut self.clipboard_write,
        };
        *slot = Some(JsonObject::new());
    }
}

/// A UI resource's `_meta.ui`: sandbox and rendering settings.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UiResourceMeta {
    /// Origins the app may reach; absent means the host's restrictive
    /// default (no external origin).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub csp: Option<UiCsp>,
    /// Browser permissions requested.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permissions: Option<UiPermissions>,
    /// A dedicated sandbox origin; its format is host-specific.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    /// Whether the host should draw a border and background.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefers_border: Option<bool>,
    /// Members this version does not know, kept verbatim.
    #[serde(flatten)]
    pub other: JsonObject,
}

impl UiResourceMeta {
    /// Whether nothing is set (then no `_meta.ui` need be written).
    pub fn is_empty(&self) -> bool {
        self == &Self::default()
    }

    /// Writes this as `meta["ui"]`.
    pub fn apply_to(&self, meta: &mut Meta) {
        if let Ok(v) = serde_json::to_value(self) {
            meta.insert(UI_META_KEY.to_owned(), v);
        }
    }

    /// Reads `meta["ui"]`; `None` when absent or malformed.
    pub fn from_meta(meta: &Meta) -> Option<Self> {
        Self::deserialize(meta.get(UI_META_KEY)?).ok()
    }
}

/// What a client (host) declares under
/// `capabilities.extensions["io.modelcontextprotocol/ui"]`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UiClientCapability {
    /// The app content types the host renders.
    #[serde(default)]
    pub mime_types: Vec<String>,
    /// Members this version does not know, kept verbatim.
    #[serde(flatten)]
    pub other: JsonObject,
}

impl UiClientCapability {
    /// A host rendering HTML apps (`text/html;profile=mcp-app`).
    pub fn html() -> Self {
        Self {
            mime_types: vec![UI_MIME_TYPE.to_owned()],
            other: JsonObject::new(),
        }
    }

    /// The settings object to put in `capabilities.extensions`.
    pub fn to_settings(&self) -> JsonObject {
        match serde_json::to_value(self) {
            Ok(Value::Object(o)) => o,
            _ => JsonObject::new(),
        }
    }

    /// The host's settings, if its capabilities declare the extension.
    pub fn from_capabilities(caps: &ClientCapabilities) -> Option<Self> {
        let v = caps.extensions.as_ref()?.get(UI_EXTENSION)?;
        Self::deserialize(v).ok()
    }

    /// Whether the host renders HTML apps.
    pub fn supports_html(&self) -> bool {
        self.mime_types.iter().any(|m| m == UI_MIME_TYPE)
    }
}

impl Tool {
    /// The tool's `_meta.ui` (with the deprecated flat key as fallback).
    pub fn ui(&self) -> Option<UiToolMeta> {
        UiToolMeta::from_meta(self.meta.as_ref()?)
    }

    /// Whether the tool belongs in the model's tool list: a host must
    /// leave out tools whose `_meta.ui.visibility` lacks `"model"`.
    pub fn visible_to_model(&self) -> bool {
        self.ui().is_none_or(|u| u.visible_to_model())
    }
}

impl Resource {
    /// The resource's `_meta.ui` as listed.
    pub fn ui(&self) -> Option<UiResourceMeta> {
        UiResourceMeta::from_meta(self.meta.as_ref()?)
    }

    /// Whether this is an app resource: a `ui://` URI.
    pub fn is_ui(&self) -> bool {
        is_ui_uri(&self.uri)
    }
}

impl ResourceContents {
    /// The contents' `_meta.ui` (which takes precedence over the listing's).
    pub fn ui(&self) -> Option<UiResourceMeta> {
        let meta = match self {
            Self::Text(t) => t.meta.as_ref(),
            Self::Blob(b) => b.meta.as_ref(),
        };
        UiResourceMeta::from_meta(meta?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    // SEP-1865 "Resource Discovery": field names and the visibility default.
    #[test]
    fn tool_meta_wire_names_and_default_visibility() {
        let ui = UiToolMeta::new("ui://w/d").visibility([UiVisibility::App]);
        assert_eq!(
            serde_json::to_value(&ui).ok(),
            Some(json!({"resourceUri": "ui://w/d", "visibility": ["app"]}))
        );
        assert!(!ui.visible_to_model());
        assert!(ui.visible_to_app());
        let both = UiToolMeta::new("ui://w/d");
        assert!(both.visible_to_model() && both.visible_to_app());
    }

    #[test]
    fn legacy_flat_key_is_read() {
        let mut meta = Meta::new();
        meta.insert(LEGACY_RESOURCE_URI_META_KEY.into(), json!("ui://old"));
        let ui = UiToolMeta::from_meta(&meta);
        assert_eq!(ui.and_then(|u| u.resource_uri).as_deref(), Some("ui://old"));
    }

    // SEP-1865 "UI Resource Format": csp, permissions, domain, prefersBorder.
    #[test]
    fn resource_meta_wire_names() {
        let mut perms = UiPermissions::default();
        perms.request(UiPermission::ClipboardWrite);
        let m = UiResourceMeta {
            csp: Some(UiCsp {
                connect_domains: Some(vec!["https://api.example.com".into()]),
                base_uri_domains: Some(vec!["https://cdn.example.com".into()]),
                ..UiCsp::default()
            }),
            permissions: Some(perms),
            domain: Some("x.example.com".into()),
            prefers_border: Some(true),
            other: JsonObject::new(),
        };
        assert_eq!(
            serde_json::to_value(&m).ok(),
            Some(json!({
                "csp": {"connectDomains": ["https://api.example.com"],
                        "baseUriDomains": ["https://cdn.example.com"]},
                "permissions": {"clipboardWrite": {}},
                "domain": "x.example.com",
                "prefersBorder": true
            }))
        );
    }

    #[test]
    fn ui_uris() {
        assert!(is_ui_uri("ui://weather/dashboard"));
        assert!(!is_ui_uri("ui://"));
        assert!(!is_ui_uri("https://x"));
        assert!(!is_ui_uri("ui://a b"));
    }

    #[test]
    fn client_capability_round_trip() {
        let mut caps = ClientCapabilities::default();
        caps.extensions.get_or_insert_with(Default::default).insert(
            UI_EXTENSION.into(),
            Value::Object(UiClientCapability::html().to_settings()),
        );
        let got = UiClientCapability::from_capabilities(&caps);
        assert!(got.is_some_and(|c| c.supports_html()));
    }
}
