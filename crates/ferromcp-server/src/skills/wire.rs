//! What the server core asks of skills: the builder methods, the skills
//! the server serves ([`ServedSkills`]), the three methods' answers and run-time reloads.
// SEP-2640 "Enumeration via skills/list", "Retrieval via skills/get",
// "Directory Listing", "Capability Declaration".

use super::{Catalog, Skill, SkillsLimits};
use crate::builder::ServerBuilder;
use crate::error::Error;
use crate::outcome::Reply;
use crate::registry::Registry;
use crate::server::Server;
use crate::shared::Shared;
use arc_swap::ArcSwap;
use ferromcp_protocol::jsonrpc::RequestId;
use ferromcp_protocol::types::{
    GetSkillRequestParams, GetSkillResult, JsonObject, ListSkillsRequestParams, ListSkillsResult,
    ReadDirectoryRequestParams, ReadDirectoryResult, SKILLS_EXTENSION, SkillsCapability,
};
use ferromcp_protocol::{ErrorObject, ProtocolVersion};
use serde_json::Value;
use std::sync::Arc;

/// The skills configuration a builder collects.
#[derive(Debug, Default)]
pub(crate) struct SkillsConfig {
    pub(crate) skills: Vec<Skill>,
    pub(crate) limits: SkillsLimits,
    /// Whether skills were asked for (even none: a folder may be empty).
    pub(crate) enabled: bool,
}

/// The skills a running server serves.
#[derive(Debug)]
pub(crate) struct ServedSkills {
    pub(crate) catalog: ArcSwap<Catalog>,
    pub(crate) limits: SkillsLimits,
}

impl ServerBuilder {
    /// Serves `skill` (see [`crate::skills`]). The server declares the
    /// skills extension and answers `skills/list`, `skills/get` and
    /// `resources/directory/read`; [`ServerBuilder::build`] fails when a
    /// skill breaks a naming or front-matter rule or a [`SkillsLimits`]
    /// bound.
    pub fn skill(mut self, skill: Skill) -> Self {
        let c = self.skills_config();
        c.enabled = true;
        c.skills.push(skill);
        self
    }

    /// Serves every skill of `skills`.
    pub fn skills(mut self, skills: impl IntoIterator<Item = Skill>) -> Self {
        let c = self.skills_config();
        c.enabled = true;
        c.skills.extend(skills);
        self
    }

    /// The bounds applied to the skills (default [`SkillsLimits::default`]).
    pub fn skills_limits(mut self, limits: SkillsLimits) -> Self {
        self.skills_config().limits = limits;
        self
    }

    /// Serves the skills found in the folder `dir` (each a directory
    /// holding a `SKILL.md`; see [`crate::skills::load_dir`]), read with
    /// the limits given so far. Keep it current with
    /// [`crate::skills::watch`].
    #[cfg(feature = "fs")]
    pub fn skills_dir(mut self, dir: impl AsRef<std::path::Path>) -> Self {
        let limits = self.skills_config().limits.clone();
        match super::load_dir(dir.as_ref(), &limits) {
            Ok(skills) => self.skills(skills),
            Err(e) => self.push_error(e),
        }
    }

    /// Builds the served skills and registers the files as resources;
    /// `None` when no skill was asked for.
    pub(crate) fn build_skills(
        config: SkillsConfig,
        registry: &mut Registry,
        extensions: &mut Option<JsonObject>,
    ) -> Result<Option<Arc<ServedSkills>>, Error> {
        if !config.enabled {
            return Ok(None);
        }
        let catalog = Catalog::build(config.skills, &config.limits).map_err(Error::config)?;
        for def in catalog.resource_defs() {
            registry.add_resource(def)?;
        }
        // SEP-2640 "Capability Declaration": the extension, with
        // directoryRead since every skill directory can be read.
        let settings = SkillsCapability {
            directory_read: Some(true),
            ..SkillsCapability::default()
        };
        extensions
            .get_or_insert_with(JsonObject::new)
            .entry(SKILLS_EXTENSION)
            .or_insert_with(|| Value::Object(settings.to_object()));
        Ok(Some(Arc::new(ServedSkills {
            catalog: ArcSwap::from_pointee(catalog),
            limits: config.limits,
        })))
    }
}

impl Server {
    /// Replaces the served skills with `skills` (a reload): the files'
    /// resources are swapped in one registry change (one
    /// `notifications/resources/list_changed` when the set changed) and
    /// `notifications/resources/updated` is published for each file whose
    /// content changed. Nothing changes when a skill is refused. Fails when
    /// the server was built without skills.
    pub fn set_skills(&self, skills: Vec<Skill>) -> Result<(), Error> {
        let Some(served) = &self.shared.skills else {
            return Err(Error::config(
                "this server serves no skills (register some with ServerBuilder::skill or skills_dir)",
            ));
        };
        let next = Catalog::build(skills, &served.limits).map_err(Error::config)?;
        let old = served.catalog.load_full();
        let mut remove: Vec<&str> = Vec::new();
        let mut changed: Vec<String> = Vec::new();
        for (uri, f) in &old.files {
            match next.files.get(uri) {
                None => remove.push(uri),
                Some(n) if n.digest != f.digest || n.resource != f.resource => {
                    remove.push(uri);
                    changed.push(uri.clone());
                }
                Some(_) => {}
            }
        }
        let add = next
            .files
            .iter()
            .filter(|(uri, _)| !old.files.contains_key(*uri) || changed.iter().any(|c| c == *uri))
            .map(|(_, f)| super::catalog::resource_def(f))
            .collect();
        served.catalog.store(Arc::new(next));
        self.update_resources(remove, add)?;
        for uri in changed {
            self.notify_resource_updated(uri);
        }
        Ok(())
    }
}

impl Shared {
    /// Answers `skills/list`, one page at a time.
    pub(crate) fn list_skills(
        &self,
        skills: &ServedSkills,
        id: &RequestId,
        p: ListSkillsRequestParams,
        version: ProtocolVersion,
    ) -> Reply {
        let catalog = skills.catalog.load();
        let (skills, next_cursor) =
            self.page(&catalog.entries, p.cursor.as_deref(), Clone::clone)?;
        let r = ListSkillsResult {
            skills,
            next_cursor,
            ..Default::default()
        };
        // SEP-2640: list-caching attributes on 2026-07-28, as resources/list.
        Ok(self.finish_cacheable(id, r, self.cache_hints.resources_list, version))
    }

    /// Answers `skills/get`: -32602 for a URI that is not a served skill.
    pub(crate) fn get_skill(
        &self,
        skills: &ServedSkills,
        id: &RequestId,
        p: GetSkillRequestParams,
        version: ProtocolVersion,
    ) -> Reply {
        let catalog = skills.catalog.load();
        let Some(skill) = catalog.get(&p.uri).cloned() else {
            return Err(ErrorObject::invalid_params(format_args!(
                "{:?} is not the SKILL.md of a skill this server serves",
                p.uri
            ))
            .into());
        };
        let r = GetSkillResult {
            result_type: None,
            skill,
            ttl_ms: None,
            cache_scope: None,
            meta: None,
        };
        // SEP-2640 leaves the caching attributes of skills/get open; the
        // 2026-07-28 wire carries them as on resources/read.
        Ok(self.finish_cacheable(id, r, self.cache_hints.resources_read, version))
    }

    /// Answers `resources/directory/read`: -32602 for a URI that is not a
    /// directory this server serves.
    pub(crate) fn read_directory(
        &self,
        skills: &ServedSkills,
        id: &RequestId,
        p: ReadDirectoryRequestParams,
        version: ProtocolVersion,
    ) -> Reply {
        let catalog = skills.catalog.load();
        let Some(children) = catalog.dirs.get(&p.uri) else {
            return Err(ErrorObject::invalid_params(format_args!(
                "{:?} is not a directory this server serves",
                p.uri
            ))
            .into());
        };
        let (resources, next_cursor) = self.page(children, p.cursor.as_deref(), Clone::clone)?;
        let r = ReadDirectoryResult {
            resources,
            next_cursor,
            ..Default::default()
        };
        Ok(self.finish_cacheable(id, r, self.cache_hints.resources_list, version))
    }
}
