//! The server facade: a built [`Server`] and what handlers and
//! applications do with it at run time.

use crate::context::RequestContext;
use crate::error::Error;
use crate::limits::Limits;
use crate::notify::Change;
use crate::prompt::PromptDef;
use crate::registry::check_needs;
use crate::resource::{ResourceDef, TemplateDef};
use crate::shared::Shared;
use crate::tool::ToolDef;
use ferromcp_protocol::types::Implementation;
use std::sync::Arc;

/// A configured MCP server. Cheap to clone; every clone serves the same
/// registries. Hand it to a transport: [`Server::serve_stdio`] or the HTTP
/// service in [`crate::transport::http`].
#[derive(Clone)]
pub struct Server {
    pub(crate) shared: Arc<Shared>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("info", &self.shared.info())
            .finish_non_exhaustive()
    }
}

impl Server {
    /// The server's self-description.
    pub fn info(&self) -> &Implementation {
        self.shared.info()
    }

    /// The limits in force.
    pub fn limits(&self) -> &Limits {
        self.shared.limits()
    }

    // TOOL-01, SUB-12
    /// Adds a tool at run time and notifies subscribers.
    pub fn add_tool(&self, def: ToolDef) -> Result<(), Error> {
        check_needs(
            &def.state_needs,
            self.shared.app_state(),
            &format!("tool {:?}", def.tool.name),
        )?;
        self.shared
            .update(|r| r.add_tool(def).map(|_| true), Change::ToolsListChanged)
            .map(|_| ())
    }

    /// Adds a tool at run time, replacing a tool of the same name in the
    /// same registry swap (a request arriving meanwhile finds the old
    /// definition or the new one, never neither), and notifies
    /// subscribers. Nothing changes when the new definition is refused.
    pub fn replace_tool(&self, def: ToolDef) -> Result<(), Error> {
        check_needs(
            &def.state_needs,
            self.shared.app_state(),
            &format!("tool {:?}", def.tool.name),
        )?;
        let name = def.tool.name.clone();
        self.shared
            .update(
                |r| {
                    r.remove_tool(&name);
                    r.add_tool(def).map(|_| true)
                },
                Change::ToolsListChanged,
            )
            .map(|_| ())
    }

    /// Removes a tool at run time; returns whether it existed.
    pub fn remove_tool(&self, name: &str) -> bool {
        self.shared
            .update(|r| Ok(r.remove_tool(name)), Change::ToolsListChanged)
            .unwrap_or(false)
    }

    /// Removes the tools named in `remove`, then adds `add` (a name in
    /// both is replaced), as one registry swap with a single
    /// `tools/list_changed` (an aggregator applying a changed list).
    /// Nothing changes when any addition is refused; returns whether the
    /// set changed.
    pub fn update_tools<'a>(
        &self,
        remove: impl IntoIterator<Item = &'a str>,
        add: Vec<ToolDef>,
    ) -> Result<bool, Error> {
        for def in &add {
            check_needs(
                &def.state_needs,
                self.shared.app_state(),
                &format!("tool {:?}", def.tool.name),
            )?;
        }
        self.shared.update(
            |r| {
                let gone: std::collections::HashSet<&str> = remove.into_iter().collect();
                let before = r.tools.len();
                if !gone.is_empty() {
                    r.tools.retain(|t| !gone.contains(t.def.tool.name.as_str()));
                    r.reindex();
                }
                let mut changed = before != r.tools.len();
                for def in add {
                    r.add_tool(def)?;
                    changed = true;
                }
                Ok(changed)
            },
            Change::ToolsListChanged,
        )
    }

    /// Removes the prompts named in `remove`, then adds `add`, as one
    /// registry swap with a single `prompts/list_changed` (see
    /// [`Server::update_tools`]).
    pub fn update_prompts<'a>(
        &self,
        remove: impl IntoIterator<Item = &'a str>,
        add: Vec<PromptDef>,
    ) -> Result<bool, Error> {
        for def in &add {
            check_needs(
                &def.state_needs,
                self.shared.app_state(),
                &format!("prompt {:?}", def.prompt.name),
            )?;
        }
        self.shared.update(
            |r| {
                let gone: std::collections::HashSet<&str> = remove.into_iter().collect();
                let before = r.prompts.len();
                if !gone.is_empty() {
                    r.prompts.retain(|p| !gone.contains(p.prompt.name.as_str()));
                    r.reindex();
                }
                let mut changed = before != r.prompts.len();
                for def in add {
                    r.add_prompt(def)?;
                    changed = true;
                }
                Ok(changed)
            },
            Change::PromptsListChanged,
        )
    }

    /// Adds a prompt at run time and notifies subscribers.
    pub fn add_prompt(&self, def: PromptDef) -> Result<(), Error> {
        check_needs(
            &def.state_needs,
            self.shared.app_state(),
            &format!("prompt {:?}", def.prompt.name),
        )?;
        self.shared
            .update(
                |r| r.add_prompt(def).map(|_| true),
                Change::PromptsListChanged,
            )
            .map(|_| ())
    }

    /// Adds a prompt at run time, replacing a prompt of the same name in
    /// the same registry swap (see [`Server::replace_tool`]), and notifies
    /// subscribers. Nothing changes when the new definition is refused.
    pub fn replace_prompt(&self, def: PromptDef) -> Result<(), Error> {
        check_needs(
            &def.state_needs,
            self.shared.app_state(),
            &format!("prompt {:?}", def.prompt.name),
        )?;
        let name = def.prompt.name.clone();
        self.shared
            .update(
                |r| {
                    r.remove_prompt(&name);
                    r.add_prompt(def).map(|_| true)
                },
                Change::PromptsListChanged,
            )
            .map(|_| ())
    }

    /// Removes a prompt at run time; returns whether it existed.
    pub fn remove_prompt(&self, name: &str) -> bool {
        self.shared
            .update(|r| Ok(r.remove_prompt(name)), Change::PromptsListChanged)
            .unwrap_or(false)
    }

    /// Adds a static resource at run time and notifies subscribers.
    pub fn add_resource(&self, def: ResourceDef) -> Result<(), Error> {
        check_needs(
            &def.state_needs,
            self.shared.app_state(),
            &format!("resource {:?}", def.resource.uri),
        )?;
        self.shared
            .update(
                |r| r.add_resource(def).map(|_| true),
                Change::ResourcesListChanged,
            )
            .map(|_| ())
    }

    /// Removes a static resource at run time; returns whether it existed.
    pub fn remove_resource(&self, uri: &str) -> bool {
        self.shared
            .update(|r| Ok(r.remove_resource(uri)), Change::ResourcesListChanged)
            .unwrap_or(false)
    }

    /// Adds a resource template at run time and notifies subscribers.
    pub fn add_resource_template(&self, def: TemplateDef) -> Result<(), Error> {
        check_needs(
            &def.state_needs,
            self.shared.app_state(),
            &format!("resource template {:?}", def.template.uri_template),
        )?;
        self.shared
            .update(
                |r| r.add_template(def).map(|_| true),
                Change::ResourcesListChanged,
            )
            .map(|_| ())
    }

    /// Removes every resource template whose `uriTemplate` is
    /// `uri_template`; returns whether one existed.
    pub fn remove_resource_template(&self, uri_template: &str) -> bool {
        self.shared
            .update(
                |r| {
                    let before = r.templates.len();
                    r.templates
                        .retain(|t| t.template.uri_template != uri_template);
                    Ok(before != r.templates.len())
                },
                Change::ResourcesListChanged,
            )
            .unwrap_or(false)
    }

    /// Removes the static resources at `remove`, then adds `add` (a URI in
    /// both is replaced), as one registry swap with a single
    /// `resources/list_changed` (a watcher applying a batch of file
    /// changes). Nothing changes when any addition is refused; returns
    /// whether the set changed.
    pub fn update_resources<'a>(
        &self,
        remove: impl IntoIterator<Item = &'a str>,
        add: Vec<ResourceDef>,
    ) -> Result<bool, Error> {
        self.shared.update(
            |r| {
                let gone: std::collections::HashSet<&str> = remove.into_iter().collect();
                let before = r.resources.len();
                if !gone.is_empty() {
                    r.resources
                        .retain(|d| !gone.contains(d.resource.uri.as_str()));
                    r.reindex();
                }
                let mut changed = before != r.resources.len();
                for def in add {
                    r.add_resource(def)?;
                    changed = true;
                }
                Ok(changed)
            },
            Change::ResourcesListChanged,
        )
    }

    // SUB-12
    /// Tells subscribers that the resource at `uri` changed.
    pub fn notify_resource_updated(&self, uri: impl Into<String>) {
        self.shared
            .bus()
            .publish(Change::ResourceUpdated(uri.into()));
    }

    /// Publishes any change to subscribers.
    pub fn publish(&self, change: Change) {
        self.shared.bus().publish(change);
    }

    /// Replaces the served skills with `skills` (a reload): the files'
    /// resources are swapped in one registry change (one
    /// `notifications/resources/list_changed` when the set changed) and
    /// `notifications/resources/updated` is published for each file whose
    /// content changed. Nothing changes when a skill is refused. Fails when
    /// the server was built without skills.
    pub fn set_skills(&self, skills: Vec<crate::skills::Skill>) -> Result<(), Error> {
        let Some(served) = &self.shared.skills() else {
            return Err(Error::config(
                "this server serves no skills (register some with ServerBuilder::skill or skills_dir)",
            ));
        };
        let swap = served.swap(skills)?;
        self.update_resources(swap.remove.iter().map(String::as_str), swap.add)?;
        for uri in swap.changed {
            self.notify_resource_updated(uri);
        }
        Ok(())
    }
}

impl RequestContext {
    /// The server serving this request, to change its registries from a
    /// handler (e.g. a tool that installs another tool).
    pub fn server(&self) -> Server {
        match Arc::downcast::<Shared>(self.inner.core.clone().into_any()) {
            Ok(shared) => Server { shared },
            // `Shared` is the one implementor of the crate-private
            // `ServerCore`: every context is built from the core.
            Err(_) => unreachable!("a request context's core is the server's"),
        }
    }
}

/// A static resource or a resource template, for
/// [`ServerBuilder::resource`](crate::ServerBuilder::resource), which takes either.
#[derive(Debug, Clone)]
pub enum AnyResourceDef {
    /// A fixed URI.
    Resource(ResourceDef),
    /// An RFC 6570 URI template.
    Template(TemplateDef),
}

impl From<ResourceDef> for AnyResourceDef {
    fn from(d: ResourceDef) -> Self {
        Self::Resource(d)
    }
}

impl From<TemplateDef> for AnyResourceDef {
    fn from(d: TemplateDef) -> Self {
        Self::Template(d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::ContextBuilder;
    use crate::{NoArgs, State, tool};

    // The context reaches the core only through the `ServerCore` seam
    // (context.rs); `RequestContext::server` gets the core back by a
    // downcast. The server it gives is the one the context was built from,
    // and the state it reads is that server's.
    #[test]
    fn a_context_gives_back_its_own_server_and_state() {
        let server = match Server::builder("s", "1").with_state(7_u32).build() {
            Ok(s) => s,
            Err(e) => panic!("build failed: {e}"),
        };
        let cx = ContextBuilder::new(&server).build();
        assert_eq!(cx.app_state::<u32>(), Some(7));
        assert_eq!(cx.app_state::<u64>(), None);
        let added = cx.server().add_tool(
            tool("added").handler(|State(n): State<u32>, _: NoArgs| async move { n.to_string() }),
        );
        assert!(added.is_ok(), "{added:?}");
        assert!(server.remove_tool("added"));
        assert!(!server.remove_tool("added"));
    }
}
