//! What the server core asks of skills: the configuration a builder
//! collects, the skills the server serves ([`ServedSkills`]) and their
//! run-time reloads. The builder methods are in `builder.rs`, the three
//! methods' answers in `dispatch/skills.rs`.
// SEP-2640 "Enumeration via skills/list", "Retrieval via skills/get",
// "Directory Listing", "Capability Declaration".

use super::{Catalog, Skill, SkillsLimits};
use crate::error::Error;
use crate::registry::Registry;
use arc_swap::ArcSwap;
use ferromcp_protocol::types::{JsonObject, SKILLS_EXTENSION, SkillsCapability};
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

impl ServedSkills {
    /// Swaps in `skills` (a reload) and says what changed for the
    /// registry: the file URIs to remove, the resources to add and the URIs
    /// whose content changed. Nothing changes when a skill is refused.
    pub(crate) fn swap(&self, skills: Vec<Skill>) -> Result<SkillsSwap, Error> {
        let next = Catalog::build(skills, &self.limits).map_err(Error::config)?;
        let old = self.catalog.load_full();
        let mut remove: Vec<String> = Vec::new();
        let mut changed: Vec<String> = Vec::new();
        for (uri, f) in &old.files {
            match next.files.get(uri) {
                None => remove.push(uri.clone()),
                Some(n) if n.digest != f.digest || n.resource != f.resource => {
                    remove.push(uri.clone());
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
        self.catalog.store(Arc::new(next));
        Ok(SkillsSwap {
            remove,
            add,
            changed,
        })
    }
}

/// What a skills reload changes in the registry ([`ServedSkills::swap`]).
pub(crate) struct SkillsSwap {
    /// The file URIs whose resources go.
    pub(crate) remove: Vec<String>,
    /// The resources that come (new or changed files).
    pub(crate) add: Vec<crate::resource::ResourceDef>,
    /// The URIs whose content changed (`notifications/resources/updated`).
    pub(crate) changed: Vec<String>,
}
