//! (temporary stub; replaced by the header branch)
/// stub
#[derive(Debug, Clone, Default)]
pub struct ParamHeaderMap;
