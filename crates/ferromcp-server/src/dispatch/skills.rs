//! The skills extension's answers: `skills/list`, `skills/get` and
//! `resources/directory/read`.
// SEP-2640 "Enumeration via skills/list", "Retrieval via skills/get",
// "Directory Listing".

use crate::outcome::Reply;
use crate::shared::Shared;
use crate::skills::wire::ServedSkills;
use ferromcp_protocol::jsonrpc::RequestId;
use ferromcp_protocol::types::{
    GetSkillRequestParams, GetSkillResult, ListSkillsRequestParams, ListSkillsResult,
    ReadDirectoryRequestParams, ReadDirectoryResult,
};
use ferromcp_protocol::{ErrorObject, ProtocolVersion};

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
        Ok(self.finish_cacheable(id, r, self.cache_hints().resources_list, version))
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
        Ok(self.finish_cacheable(id, r, self.cache_hints().resources_read, version))
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
        Ok(self.finish_cacheable(id, r, self.cache_hints().resources_list, version))
    }
}
