//! (temporary stub; replaced by the header branch)
use super::HeaderList;
use super::x_mcp_header::ParamHeaderMap;
use crate::error::ErrorObject;
impl ParamHeaderMap {
    /// stub
    pub fn validate(
        &self,
        _a: Option<&serde_json::Map<String, serde_json::Value>>,
        _h: &dyn HeaderList,
    ) -> Result<(), ErrorObject> {
        Ok(())
    }
}
