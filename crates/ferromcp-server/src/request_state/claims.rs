//! The claims envelope inside a token's ciphertext (see the module docs
//! of `request_state` for its layout).

pub(super) const ENVELOPE_VERSION: u8 = 1;
pub(super) const FLAG_PRINCIPAL: u8 = 0b01;
pub(super) const FLAG_AUDIENCE: u8 = 0b10;
/// Size of the fixed claims header (see the module docs).
pub(super) const HEADER_LEN: usize = 1 + 8 + 8 + 1 + 5 * 32;

pub(super) struct Claims {
    pub(super) issued_at: u64,
    pub(super) expires_at: u64,
    pub(super) method: [u8; 32],
    pub(super) target: [u8; 32],
    pub(super) arguments: [u8; 32],
    pub(super) principal: Option<[u8; 32]>,
    pub(super) audience: Option<[u8; 32]>,
}

impl Claims {
    pub(super) fn parse(plaintext: &[u8]) -> Option<Self> {
        let header = plaintext.get(..HEADER_LEN)?;
        let (&version, rest) = header.split_first()?;
        if version != ENVELOPE_VERSION {
            return None;
        }
        let (issued_at, rest) = split_array::<8>(rest)?;
        let (expires_at, rest) = split_array::<8>(rest)?;
        let (&flags, rest) = rest.split_first()?;
        if flags & !(FLAG_PRINCIPAL | FLAG_AUDIENCE) != 0 {
            return None;
        }
        let (method, rest) = split_array::<32>(rest)?;
        let (target, rest) = split_array::<32>(rest)?;
        let (arguments, rest) = split_array::<32>(rest)?;
        let (principal, rest) = split_array::<32>(rest)?;
        let (audience, _) = split_array::<32>(rest)?;
        Some(Self {
            issued_at: u64::from_be_bytes(issued_at),
            expires_at: u64::from_be_bytes(expires_at),
            method,
            target,
            arguments,
            principal: (flags & FLAG_PRINCIPAL != 0).then_some(principal),
            audience: (flags & FLAG_AUDIENCE != 0).then_some(audience),
        })
    }
}

fn split_array<const N: usize>(bytes: &[u8]) -> Option<([u8; N], &[u8])> {
    let head = bytes.get(..N)?;
    let tail = bytes.get(N..)?;
    Some((head.try_into().ok()?, tail))
}
