//! MCP Apps (extension `io.modelcontextprotocol/ui`): tools that come with
//! an interactive HTML user interface.
//!
//! An app is a `ui://` resource holding an HTML document
//! (`text/html;profile=mcp-app`), built with [`ui_resource`] and
//! registered with [`ServerBuilder::ui_resource`]; a tool names it with
//! [`ToolDef::with_ui`]. The server then declares the extension in its
//! capabilities (in both protocol eras), and [`ServerBuilder::build`]
//! fails when a tool names a `ui://` resource that is not registered.
//!
//! ```
//! use ferromcp_server::{Server, tool, ui_resource, NoArgs, RequestContext};
//! use ferromcp_server::protocol::types::{UiToolMeta, UiVisibility};
//!
//! let server = Server::builder("weather", "1.0.0")
//!     .ui_resource(
//!         ui_resource("ui://weather/view.html", "weather_view")
//!             .html("<!DOCTYPE html><html><body>Sunny</body></html>")
//!             .connect_domain("https://api.example.com")
//!             .prefers_border(true),
//!     )
//!     .tool(
//!         tool("get_weather")
//!             .handler(|_: NoArgs, _cx: RequestContext| async { "Sunny, 22 °C" })
//!             .with_ui("ui://weather/view.html"),
//!     )
//!     .tool(
//!         tool("refresh")
//!             .handler(|_: NoArgs, _cx: RequestContext| async { "refreshed" })
//!             .with_ui(UiToolMeta::new("ui://weather/view.html").visibility([UiVisibility::App])),
//!     )
//!     .build();
//! assert!(server.is_ok());
//! ```
//!
//! Tools whose visibility lacks `"model"` are still listed by `tools/list`:
//! the specification makes the host, not the server, leave them out of the
//! model's tool list (the host needs them to serve the app's calls). A
//! client filters with
//! [`Tool::visible_to_model`](ferromcp_protocol::types::Tool::visible_to_model).
// SEP-1865 (MCP Apps, stable 2026-01-26).

pub(crate) mod wire;

use crate::builder::ServerBuilder;
use crate::context::RequestContext;
use crate::error::Error;
use crate::resource::{ResourceDef, ResourceRequest};
use crate::tool::ToolDef;
use ferromcp_protocol::types::{
    JsonObject, Resource, ResourceContents, TextResourceContents, UI_MIME_TYPE, UiCsp,
    UiPermission, UiPermissions, UiResourceMeta, UiToolMeta, is_ui_uri,
};
use std::path::Path;
use std::sync::Arc;

/// Starts an app resource: a `ui://` `uri` and a `name` as listed in
/// `resources/list`. Give it its HTML with [`UiResourceBuilder::html`] or
/// [`UiResourceBuilder::html_file`] and register it with
/// [`ServerBuilder::ui_resource`].
pub fn ui_resource(uri: impl Into<String>, name: impl Into<String>) -> UiResourceBuilder {
    UiResourceBuilder {
        resource: Resource::new(uri, name),
        html: None,
        meta: UiResourceMeta::default(),
        error: None,
    }
}

/// Builds an app resource (see [`ui_resource`]).
#[derive(Debug, Clone)]
pub struct UiResourceBuilder {
    resource: Resource,
    html: Option<Arc<str>>,
    meta: UiResourceMeta,
    /// The first problem met while building, reported by [`Self::build`].
    error: Option<String>,
}

impl UiResourceBuilder {
    /// Display title.
    pub fn title(mut self, t: impl Into<String>) -> Self {
        self.resource.title = Some(t.into());
        self
    }
    /// What the app shows.
    pub fn description(mut self, d: impl Into<String>) -> Self {
        self.resource.description = Some(d.into());
        self
    }
    /// The HTML document, from a string (or `include_str!("app.html")`
    /// to embed a file in the binary).
    pub fn html(mut self, html: impl Into<String>) -> Self {
        self.html = Some(Arc::from(html.into()));
        self
    }
    /// The HTML document, read from `path` now (once, not at each
    /// `resources/read`). A file that cannot be read or is not UTF-8 makes
    /// [`Self::build`] (and so [`ServerBuilder::build`]) fail, naming it.
    pub fn html_file(mut self, path: impl AsRef<Path>) -> Self {
        let path = path.as_ref();
        match std::fs::read_to_string(path) {
            Ok(s) => self.html = Some(Arc::from(s)),
            Err(e) => self.fail(format!(
                "UI resource {:?}: cannot read {}: {e}",
                self.resource.uri,
                path.display()
            )),
        }
        self
    }
    /// Allows the app to reach `origin` with fetch, XHR or WebSocket.
    pub fn connect_domain(self, origin: impl Into<String>) -> Self {
        self.domain_list(origin.into(), |c| &mut c.connect_domains)
    }
    /// Allows the app to load scripts, styles, images, fonts and media
    /// from `origin` (`https://*.example.com` wildcards allowed).
    pub fn resource_domain(self, origin: impl Into<String>) -> Self {
        self.domain_list(origin.into(), |c| &mut c.resource_domains)
    }
    /// Allows nested iframes from `origin`.
    pub fn frame_domain(self, origin: impl Into<String>) -> Self {
        self.domain_list(origin.into(), |c| &mut c.frame_domains)
    }
    /// Allows `origin` as the document's base URI.
    pub fn base_uri_domain(self, origin: impl Into<String>) -> Self {
        self.domain_list(origin.into(), |c| &mut c.base_uri_domains)
    }
    /// Asks the host for a browser permission.
    pub fn permission(mut self, p: UiPermission) -> Self {
        self.meta
            .permissions
            .get_or_insert_with(UiPermissions::default)
            .request(p);
        self
    }
    /// Asks for a dedicated sandbox origin (format set by each host).
    pub fn domain(mut self, domain: impl Into<String>) -> Self {
        let d = domain.into();
        if let Some(bad) = origin_problem(&d) {
            self.fail(format!(
                "UI resource {:?}: domain {d:?} {bad}",
                self.resource.uri
            ));
        }
        self.meta.domain = Some(d);
        self
    }
    /// Whether the host should draw a border and background around the app
    /// (hosts' defaults differ, so saying so is recommended).
    pub fn prefers_border(mut self, on: bool) -> Self {
        self.meta.prefers_border = Some(on);
        self
    }
    /// Replaces the whole `_meta.ui` (for members this version has no
    /// setter for).
    pub fn meta(mut self, meta: UiResourceMeta) -> Self {
        self.meta = meta;
        self
    }

    fn fail(&mut self, msg: String) {
        self.error.get_or_insert(msg);
    }

    fn domain_list(
        mut self,
        origin: String,
        list: impl FnOnce(&mut UiCsp) -> &mut Option<Vec<String>>,
    ) -> Self {
        if let Some(bad) = origin_problem(&origin) {
            self.fail(format!(
                "UI resource {:?}: CSP origin {origin:?} {bad}",
                self.resource.uri
            ));
        }
        let csp = self.meta.csp.get_or_insert_with(UiCsp::default);
        list(csp).get_or_insert_with(Vec::new).push(origin);
        self
    }

    /// The resource definition: listed with MIME type
    /// `text/html;profile=mcp-app` and its `_meta.ui`; read as the HTML
    /// text with the same `_meta.ui` on the contents. Fails when the URI
    /// is not `ui://`, no HTML was given, the file could not be read, or
    /// an origin could inject into the host's Content Security Policy.
    pub fn build(self) -> Result<ResourceDef, Error> {
        let uri = self.resource.uri.clone();
        // SEP-1865 "Content Requirements": URI MUST start with ui://.
        if !is_ui_uri(&uri) {
            return Err(Error::config(format!(
                "UI resource URI {uri:?} must start with \"ui://\" and name something"
            )));
        }
        if let Some(e) = self.error {
            return Err(Error::config(e));
        }
        let Some(html) = self.html else {
            return Err(Error::config(format!(
                "UI resource {uri:?} has no HTML: call .html(..) or .html_file(..)"
            )));
        };
        let mut resource = self.resource;
        // SEP-1865: mimeType MUST be text/html;profile=mcp-app.
        resource.mime_type = Some(UI_MIME_TYPE.to_owned());
        resource.size = u64::try_from(html.len()).ok();
        let meta = (!self.meta.is_empty()).then(|| {
            let mut m = JsonObject::new();
            self.meta.apply_to(&mut m);
            m
        });
        if let Some(m) = &meta {
            resource
                .meta
                .get_or_insert_with(JsonObject::new)
                .extend(m.clone());
        }
        Ok(ResourceDef::new(
            resource,
            move |r: ResourceRequest, _cx: RequestContext| {
                let contents = ResourceContents::Text(TextResourceContents {
                    uri: r.uri,
                    mime_type: Some(UI_MIME_TYPE.to_owned()),
                    text: html.to_string(),
                    meta: meta.clone(),
                });
                async move { contents }
            },
        ))
    }
}

/// Why `origin` cannot go into a CSP source list, if it cannot: a space,
/// `;` or `,` would let it add sources or whole directives to the policy
/// the host builds.
fn origin_problem(origin: &str) -> Option<&'static str> {
    if origin.is_empty() {
        Some("is empty")
    } else if origin
        .chars()
        .any(|c| c.is_whitespace() || c.is_control() || matches!(c, ';' | ',' | '\'' | '"'))
    {
        Some("contains whitespace, a control character, ';', ',' or a quote")
    } else {
        None
    }
}

impl ToolDef {
    /// Links the tool to its app: sets `_meta.ui` (keeping other `_meta`
    /// members). Takes the `ui://` URI or a [`UiToolMeta`] with a
    /// visibility. [`ServerBuilder::build`] checks the resource exists.
    pub fn with_ui(mut self, ui: impl Into<UiToolMeta>) -> Self {
        ui.into()
            .apply_to(self.tool.meta.get_or_insert_with(JsonObject::new));
        self
    }
}

impl ServerBuilder {
    /// Registers an app resource (see [`ui_resource`]); its problems are
    /// reported by [`Self::build`].
    pub fn ui_resource(self, def: UiResourceBuilder) -> Self {
        match def.build() {
            Ok(d) => self.resource(d),
            Err(e) => self.push_error(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::wire::declare;
    use super::*;
    use crate::dispatch::handshake_extensions;
    use crate::{NoArgs, Server, tool};
    use ferromcp_protocol::types::UI_EXTENSION;
    use serde_json::Value;

    fn ok_tool(name: &str) -> ToolDef {
        tool(name).handler(|_: NoArgs, _cx: RequestContext| async { "ok" })
    }

    // SEP-1865 "Resource Discovery": Resource MUST exist on the server.
    #[test]
    fn a_tool_naming_a_missing_ui_resource_fails_the_build() {
        let r = Server::builder("s", "1")
            .tool(ok_tool("t").with_ui("ui://missing/view"))
            .build();
        let e = r.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(
            e.contains("ui://missing/view") && e.contains("not registered"),
            "{e}"
        );
    }

    #[test]
    fn a_registered_ui_resource_satisfies_the_tool() {
        let r = Server::builder("s", "1")
            .ui_resource(ui_resource("ui://a/v", "v").html("<p>hi</p>"))
            .tool(ok_tool("t").with_ui("ui://a/v"))
            .build();
        assert!(r.is_ok(), "{:?}", r.err());
    }

    // SEP-1865 "Content Requirements": URI MUST start with ui://.
    #[test]
    fn ui_resource_needs_a_ui_uri_and_html() {
        let e = ui_resource("https://x/v", "v").html("x").build().err();
        assert!(e.is_some_and(|e| e.to_string().contains("ui://")));
        let e = ui_resource("ui://x/v", "v").build().err();
        assert!(e.is_some_and(|e| e.to_string().contains("no HTML")));
    }

    #[test]
    fn tool_ui_uri_must_be_ui_scheme() {
        let r = Server::builder("s", "1")
            .tool(ok_tool("t").with_ui("https://example.com/app"))
            .build();
        let e = r.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(e.contains("not a ui:// URI"), "{e}");
    }

    #[test]
    fn empty_visibility_is_refused() {
        let r = Server::builder("s", "1")
            .ui_resource(ui_resource("ui://a/v", "v").html("x"))
            .tool(ok_tool("t").with_ui(UiToolMeta::new("ui://a/v").visibility([])))
            .build();
        assert!(r.is_err());
    }

    #[test]
    fn csp_origin_injection_is_refused() {
        let e = ui_resource("ui://a/v", "v")
            .html("x")
            .connect_domain("https://a.example; script-src *")
            .build()
            .err();
        assert!(e.is_some_and(|e| e.to_string().contains("CSP origin")));
    }

    #[test]
    fn unreadable_html_file_is_named() {
        let e = ui_resource("ui://a/v", "v")
            .html_file("/nonexistent/ferromcp-app.html")
            .build()
            .err();
        assert!(e.is_some_and(|e| e.to_string().contains("/nonexistent/ferromcp-app.html")));
    }

    #[test]
    fn handshake_keeps_only_the_ui_extension() {
        let mut all = JsonObject::new();
        all.insert(
            "io.modelcontextprotocol/tasks".into(),
            Value::Object(JsonObject::new()),
        );
        assert_eq!(handshake_extensions(Some(all.clone())), None);
        declare(&mut Some(all.clone()));
        let mut with = Some(all);
        declare(&mut with);
        let kept = handshake_extensions(with).unwrap_or_default();
        assert_eq!(kept.keys().collect::<Vec<_>>(), vec![UI_EXTENSION]);
    }
}
