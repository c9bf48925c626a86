//! The skills extension (`io.modelcontextprotocol/skills`): listing a
//! server's skills, getting one by URI, reading a directory, and fetching
//! a skill's files checked against its entry's digests.
// SEP-2640 "SDKs: Convenience Wrappers", "Integrity and verification".

use crate::client::Client;
use crate::core::to_object;
use crate::error::{Error, Result};
use crate::options::RequestOptions;
use ferromcp_protocol::method;
use ferromcp_protocol::types::{
    GetSkillRequestParams, GetSkillResult, ListSkillsResult, ReadDirectoryRequestParams,
    ReadDirectoryResult, Resource, ResourceContents, SkillEntry, SkillResources, format_digest,
};
use sha2::{Digest, Sha256};

impl Client {
    /// One page of `skills/list`.
    pub async fn list_skills_page(&self, cursor: Option<String>) -> Result<ListSkillsResult> {
        self.page(method::SKILLS_LIST, cursor, &RequestOptions::default())
            .await
    }

    /// Every skill `skills/list` enumerates (which may be empty or partial:
    /// it proves nothing about skills the server does not list).
    pub async fn list_skills(&self) -> Result<Vec<SkillEntry>> {
        self.all_pages(|c| async move {
            let p = self.list_skills_page(c).await?;
            Ok((p.skills, p.next_cursor))
        })
        .await
    }

    /// `skills/get`: the entry of the skill whose `SKILL.md` is at `uri`,
    /// listed or not.
    pub async fn get_skill(&self, uri: &str) -> Result<SkillEntry> {
        let params = to_object(&GetSkillRequestParams::new(uri))?;
        let raw = self
            .request(method::SKILLS_GET, Some(params), RequestOptions::default())
            .await?;
        let r: GetSkillResult = serde_json::from_value(raw)
            .map_err(|e| Error::invalid("malformed skills/get result").with_source(e))?;
        Ok(r.skill)
    }

    /// One page of `resources/directory/read` of the directory `uri`.
    pub async fn read_directory_page(
        &self,
        uri: &str,
        cursor: Option<String>,
    ) -> Result<ReadDirectoryResult> {
        let mut p = ReadDirectoryRequestParams::new(uri);
        p.cursor = cursor;
        let raw = self
            .request(
                method::RESOURCES_DIRECTORY_READ,
                Some(to_object(&p)?),
                RequestOptions::default(),
            )
            .await?;
        serde_json::from_value(raw)
            .map_err(|e| Error::invalid("malformed resources/directory/read result").with_source(e))
    }

    /// The direct children of the directory `uri` (every page).
    pub async fn read_directory(&self, uri: &str) -> Result<Vec<Resource>> {
        self.all_pages(|c| async move {
            let p = self.read_directory_page(uri, c).await?;
            Ok((p.resources, p.next_cursor))
        })
        .await
    }

    /// The raw bytes of the file at `uri` (text or base64 `blob`), checked
    /// against the size and digest `entry` lists for it: a file the entry
    /// does not list, or whose bytes differ, is an error and its content
    /// is not returned. An entry whose resources are `"dynamic"` offers no
    /// check, so the bytes come unverified.
    pub async fn read_skill_file(&self, entry: &SkillEntry, uri: &str) -> Result<Vec<u8>> {
        let listed = match &entry.resources {
            SkillResources::Files(f) => Some(f.iter().find(|f| f.uri == uri).ok_or_else(|| {
                Error::invalid(format!("{uri} is not listed in the skill {}", entry.uri))
            })?),
            SkillResources::Dynamic => None,
        };
        let r = self.read_resource(uri).await?;
        let bytes = match r.contents.first() {
            Some(ResourceContents::Text(t)) => t.text.clone().into_bytes(),
            Some(ResourceContents::Blob(b)) => ferromcp_protocol::base64::decode(b.blob.as_bytes())
                .ok_or_else(|| Error::invalid(format!("{uri}: blob is not base64")))?,
            None => {
                return Err(Error::invalid(format!(
                    "{uri}: the read returned no contents"
                )));
            }
        };
        if let Some(f) = listed {
            let digest = format_digest(&Sha256::digest(&bytes).into());
            if bytes.len() as u64 != f.size || digest != f.digest {
                return Err(Error::invalid(format!(
                    "{uri}: the content ({} bytes, {digest}) is not what the skill lists ({} bytes, {})",
                    bytes.len(),
                    f.size,
                    f.digest
                )));
            }
        }
        Ok(bytes)
    }
}
