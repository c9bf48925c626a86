//! The registry: every tool, prompt, resource and template a server
//! serves, swapped as a whole when one changes (readers hold a snapshot).

use crate::error::Error;
use crate::prompt::PromptDef;
use crate::resource::{ResourceDef, TemplateDef};
use crate::state::{StateMap, StateNeed};
use crate::tool::ToolDef;
use ferromcp_protocol::header::x_mcp_header::{ParamHeaderMap, x_mcp_header_map};
use std::collections::HashMap;
use std::sync::Arc;

/// A registered tool with what the server precomputes for it.
pub(crate) struct RegisteredTool {
    pub(crate) def: ToolDef,
    // TOOL-06, TOOL-09
    /// The compiled `inputSchema` (feature `schema-validation`).
    #[cfg(feature = "schema-validation")]
    pub(crate) input: Option<Arc<crate::schema_check::CompiledSchema>>,
    // TOOL-07
    /// The compiled `outputSchema` (feature `schema-validation`).
    #[cfg(feature = "schema-validation")]
    pub(crate) output: Option<Arc<crate::schema_check::CompiledSchema>>,
    pub(crate) headers: Option<Arc<ParamHeaderMap>>,
}

/// An immutable snapshot of everything registered; swapped atomically when
/// the set changes at run time.
#[derive(Default)]
pub(crate) struct Registry {
    pub(crate) tools: Vec<Arc<RegisteredTool>>,
    pub(crate) tool_index: HashMap<String, usize>,
    pub(crate) resources: Vec<ResourceDef>,
    pub(crate) resource_index: HashMap<String, usize>,
    pub(crate) templates: Vec<TemplateDef>,
    pub(crate) prompts: Vec<PromptDef>,
    pub(crate) prompt_index: HashMap<String, usize>,
    /// `tools/list` entries serialized once per sieve level (see
    /// [`crate::sieve::Sieve`]); reset whenever the registry is replaced.
    serialized: [std::sync::OnceLock<Vec<Box<serde_json::value::RawValue>>>; 3],
}

impl Clone for Registry {
    fn clone(&self) -> Self {
        Self {
            tools: self.tools.clone(),
            tool_index: self.tool_index.clone(),
            resources: self.resources.clone(),
            resource_index: self.resource_index.clone(),
            templates: self.templates.clone(),
            prompts: self.prompts.clone(),
            prompt_index: self.prompt_index.clone(),
            serialized: Default::default(),
        }
    }
}

impl Registry {
    /// The tool definitions serialized for `level`, computed once.
    pub(crate) fn serialized_tools(
        &self,
        level: crate::sieve::Sieve,
    ) -> &[Box<serde_json::value::RawValue>] {
        self.serialized[level.index()].get_or_init(|| {
            self.tools
                .iter()
                .filter_map(|t| {
                    let mut tool = t.def.tool.clone();
                    level.apply_tool(&mut tool);
                    serde_json::value::to_raw_value(&tool).ok()
                })
                .collect()
        })
    }

    pub(crate) fn tool(&self, name: &str) -> Option<&Arc<RegisteredTool>> {
        self.tool_index.get(name).and_then(|i| self.tools.get(*i))
    }
    pub(crate) fn prompt(&self, name: &str) -> Option<&PromptDef> {
        self.prompt_index
            .get(name)
            .and_then(|i| self.prompts.get(*i))
    }
    pub(crate) fn resource(&self, uri: &str) -> Option<&ResourceDef> {
        self.resource_index
            .get(uri)
            .and_then(|i| self.resources.get(*i))
    }

    pub(crate) fn add_tool(&mut self, def: ToolDef) -> Result<(), Error> {
        let name = def.tool.name.clone();
        check_meta(&format!("tool {name:?}"), def.tool.meta.as_ref())?;
        if self.tool_index.contains_key(&name) {
            return Err(Error::config(format!("duplicate tool name {name:?}")));
        }
        let registered = compile_tool(def)?;
        self.tool_index.insert(name, self.tools.len());
        self.tools.push(Arc::new(registered));
        Ok(())
    }

    pub(crate) fn remove_tool(&mut self, name: &str) -> bool {
        let before = self.tools.len();
        self.tools.retain(|t| t.def.tool.name != name);
        self.reindex();
        before != self.tools.len()
    }

    pub(crate) fn add_prompt(&mut self, def: PromptDef) -> Result<(), Error> {
        let name = def.prompt.name.clone();
        check_meta(&format!("prompt {name:?}"), def.prompt.meta.as_ref())?;
        if self.prompt_index.contains_key(&name) {
            return Err(Error::config(format!("duplicate prompt name {name:?}")));
        }
        self.prompt_index.insert(name, self.prompts.len());
        self.prompts.push(def);
        Ok(())
    }

    pub(crate) fn remove_prompt(&mut self, name: &str) -> bool {
        let before = self.prompts.len();
        self.prompts.retain(|p| p.prompt.name != name);
        self.reindex();
        before != self.prompts.len()
    }

    pub(crate) fn add_resource(&mut self, def: ResourceDef) -> Result<(), Error> {
        let uri = def.resource.uri.clone();
        check_meta(&format!("resource {uri:?}"), def.resource.meta.as_ref())?;
        if self.resource_index.contains_key(&uri) {
            return Err(Error::config(format!("duplicate resource uri {uri:?}")));
        }
        self.resource_index.insert(uri, self.resources.len());
        self.resources.push(def);
        Ok(())
    }

    pub(crate) fn remove_resource(&mut self, uri: &str) -> bool {
        let before = self.resources.len();
        self.resources.retain(|r| r.resource.uri != uri);
        let removed = before != self.resources.len();
        if removed {
            self.reindex();
        }
        removed
    }

    pub(crate) fn add_template(&mut self, def: TemplateDef) -> Result<(), Error> {
        if let Some(e) = &def.error {
            return Err(Error::config(e.clone()));
        }
        check_meta(
            &format!("resource template {:?}", def.template.uri_template),
            def.template.meta.as_ref(),
        )?;
        self.templates.push(def);
        Ok(())
    }

    pub(crate) fn reindex(&mut self) {
        self.tool_index = self
            .tools
            .iter()
            .enumerate()
            .map(|(i, t)| (t.def.tool.name.clone(), i))
            .collect();
        self.prompt_index = self
            .prompts
            .iter()
            .enumerate()
            .map(|(i, p)| (p.prompt.name.clone(), i))
            .collect();
        self.resource_index = self
            .resources
            .iter()
            .enumerate()
            .map(|(i, r)| (r.resource.uri.clone(), i))
            .collect();
    }
}

// META-01, META-02
/// The `_meta` an application gives a tool, prompt, resource or template
/// must follow the key rules of every revision it may be served under
/// (no non-spec key under a reserved prefix such as
/// `io.modelcontextprotocol/`): refused at registration, where the mistake
/// is made, rather than sent to clients.
pub(crate) fn check_meta(
    what: &str,
    meta: Option<&ferromcp_protocol::types::Meta>,
) -> Result<(), Error> {
    let Some(meta) = meta.filter(|m| !m.is_empty()) else {
        return Ok(());
    };
    ferromcp_protocol::meta::validate_outgoing_meta(
        meta.keys(),
        ferromcp_protocol::meta::KEY_RULE_REVISIONS,
    )
    .map_err(|(key, e)| Error::config(format!("{what}: _meta key {key:?}: {e}")))
}

/// A configuration error unless every state type in `needs` is in `map`.
pub(crate) fn check_needs(needs: &[StateNeed], map: &StateMap, what: &str) -> Result<(), Error> {
    needs.iter().try_for_each(|n| n.check(map, what))
}

fn compile_tool(def: ToolDef) -> Result<RegisteredTool, Error> {
    let name = &def.tool.name;
    let schema = serde_json::Value::Object(def.tool.input_schema.clone());
    if def.tool.input_schema.get("type").and_then(|t| t.as_str()) != Some("object") {
        return Err(Error::config(format!(
            "tool {name:?}: inputSchema must have \"type\": \"object\" (TOOL-03)"
        )));
    }
    // SCHEMA-02: schemas are compiled (and so checked) once, at registration.
    #[cfg(feature = "schema-validation")]
    let input = crate::schema_check::CompiledSchema::compile(&def.tool.input_schema)
        .map_err(|e| Error::config(format!("tool {name:?}: invalid inputSchema: {e}")))?;
    #[cfg(feature = "schema-validation")]
    let output = match &def.tool.output_schema {
        None => None,
        Some(o) => Some(Arc::new(
            crate::schema_check::CompiledSchema::compile(o)
                .map_err(|e| Error::config(format!("tool {name:?}: invalid outputSchema: {e}")))?,
        )),
    };
    let headers = x_mcp_header_map(&schema).map_err(|e| {
        Error::config(format!(
            "tool {name:?}: invalid x-mcp-header annotation: {e}"
        ))
    })?;
    let headers = if headers.is_empty() {
        None
    } else {
        Some(Arc::new(headers))
    };
    Ok(RegisteredTool {
        def,
        #[cfg(feature = "schema-validation")]
        input: Some(Arc::new(input)),
        #[cfg(feature = "schema-validation")]
        output,
        headers,
    })
}
