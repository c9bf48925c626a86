//! Minimal ZIP archives for MCPB bundles: stored (uncompressed) entries
//! written by hand, and a reader that checks an archive's structure.
//!
//! No compression and no ZIP64: an entry or archive of 4 GiB or more is
//! refused. Stored entries keep the code small and the bundle
//! reproducible (fixed timestamps); a bundle is about the size of its
//! binary.

/// One file in an archive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The path inside the archive (`/`-separated).
    pub name: String,
    /// Unix permission bits (`0o755` for the server binary).
    pub mode: u32,
    /// The contents (empty for a compressed entry that was not read).
    pub data: Vec<u8>,
    /// The compression method (0 stored, 8 deflate).
    pub method: u16,
}

const LOCAL: u32 = 0x0403_4b50;
const CENTRAL: u32 = 0x0201_4b50;
const END: u32 = 0x0605_4b50;
/// 1980-01-01 00:00 in MS-DOS format: bundles do not depend on the clock.
const DOS_DATE: u16 = (1 << 5) | 1;
/// UTF-8 names.
const FLAG_UTF8: u16 = 0x0800;

/// CRC-32 (IEEE), as ZIP wants it.
pub fn crc32(data: &[u8]) -> u32 {
    const fn table() -> [u32; 256] {
        let mut t = [0u32; 256];
        let mut i = 0;
        while i < 256 {
            let mut c = i as u32;
            let mut k = 0;
            while k < 8 {
                c = if c & 1 != 0 {
                    0xEDB8_8320 ^ (c >> 1)
                } else {
                    c >> 1
                };
                k += 1;
            }
            t[i] = c;
            i += 1;
        }
        t
    }
    const TABLE: [u32; 256] = table();
    let mut c = 0xFFFF_FFFFu32;
    for &b in data {
        c = TABLE[((c ^ u32::from(b)) & 0xFF) as usize] ^ (c >> 8);
    }
    c ^ 0xFFFF_FFFF
}

fn too_big(what: &str) -> String {
    format!("{what} is 4 GiB or more (ZIP64 is not supported)")
}

/// The archive holding `entries`, stored.
pub fn write(entries: &[Entry]) -> Result<Vec<u8>, String> {
    let u32_of = |n: usize, what: &str| u32::try_from(n).map_err(|_| too_big(what));
    let u16_of = |n: usize, what: &str| {
        u16::try_from(n).map_err(|_| format!("{what}: too long for a ZIP archive"))
    };
    let mut out = Vec::new();
    let mut central = Vec::new();
    for e in entries {
        let offset = u32_of(out.len(), "the archive")?;
        let size = u32_of(e.data.len(), &e.name)?;
        let crc = crc32(&e.data);
        let name_len = u16_of(e.name.len(), &e.name)?;
        let common = |v: &mut Vec<u8>| {
            v.extend_from_slice(&20u16.to_le_bytes()); // version needed
            v.extend_from_slice(&FLAG_UTF8.to_le_bytes());
            v.extend_from_slice(&0u16.to_le_bytes()); // stored
            v.extend_from_slice(&0u16.to_le_bytes()); // time
            v.extend_from_slice(&DOS_DATE.to_le_bytes());
            v.extend_from_slice(&crc.to_le_bytes());
            v.extend_from_slice(&size.to_le_bytes());
            v.extend_from_slice(&size.to_le_bytes());
            v.extend_from_slice(&name_len.to_le_bytes());
            v.extend_from_slice(&0u16.to_le_bytes()); // extra
        };
        out.extend_from_slice(&LOCAL.to_le_bytes());
        common(&mut out);
        out.extend_from_slice(e.name.as_bytes());
        out.extend_from_slice(&e.data);

        central.extend_from_slice(&CENTRAL.to_le_bytes());
        central.extend_from_slice(&((3u16 << 8) | 20).to_le_bytes()); // made by Unix
        common(&mut central);
        central.extend_from_slice(&0u16.to_le_bytes()); // comment
        central.extend_from_slice(&0u16.to_le_bytes()); // disk
        central.extend_from_slice(&0u16.to_le_bytes()); // internal attributes
        central.extend_from_slice(&((0o100_000 | e.mode) << 16).to_le_bytes());
        central.extend_from_slice(&offset.to_le_bytes());
        central.extend_from_slice(e.name.as_bytes());
    }
    let cd_offset = u32_of(out.len(), "the archive")?;
    let cd_size = u32_of(central.len(), "the central directory")?;
    let count = u16_of(entries.len(), "the number of entries")?;
    out.extend_from_slice(&central);
    out.extend_from_slice(&END.to_le_bytes());
    out.extend_from_slice(&[0, 0, 0, 0]); // disks
    out.extend_from_slice(&count.to_le_bytes());
    out.extend_from_slice(&count.to_le_bytes());
    out.extend_from_slice(&cd_size.to_le_bytes());
    out.extend_from_slice(&cd_offset.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes()); // comment
    u32_of(out.len(), "the archive")?;
    Ok(out)
}

fn u16_at(b: &[u8], at: usize) -> Result<u16, String> {
    b.get(at..at + 2)
        .map(|s| u16::from_le_bytes([s[0], s[1]]))
        .ok_or_else(|| "truncated archive".to_owned())
}

fn u32_at(b: &[u8], at: usize) -> Result<u32, String> {
    b.get(at..at + 4)
        .map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
        .ok_or_else(|| "truncated archive".to_owned())
}

/// Whether an entry name stays inside the directory it is extracted to.
pub fn safe_name(name: &str) -> bool {
    let drive = name.as_bytes().get(1) == Some(&b':');
    let bad = name.is_empty()
        || name.starts_with('/')
        || name.contains(['\\', '\0'])
        || drive
        || name.split('/').any(|p| p == "..");
    !bad
}

/// Reads an archive: every entry, stored contents checked against their
/// CRC; compressed entries are listed without contents. At most
/// `max_entries` entries.
pub fn read(b: &[u8], max_entries: usize) -> Result<Vec<Entry>, String> {
    // The end record: its signature in the last 64 KiB + 22 bytes.
    let floor = b.len().saturating_sub(0xFFFF + 22);
    let end = (floor..b.len().saturating_sub(21))
        .rev()
        .find(|&i| u32_at(b, i).is_ok_and(|s| s == END))
        .ok_or("not a ZIP archive (no end of central directory)")?;
    let count = usize::from(u16_at(b, end + 10)?);
    if count > max_entries {
        return Err(format!(
            "{count} entries; at most {max_entries} are accepted"
        ));
    }
    let mut at = u32_at(b, end + 16)? as usize;
    let mut entries = Vec::with_capacity(count);
    for _ in 0..count {
        if u32_at(b, at)? != CENTRAL {
            return Err("corrupt central directory".to_owned());
        }
        let made_by = u16_at(b, at + 4)?;
        let method = u16_at(b, at + 10)?;
        let crc = u32_at(b, at + 16)?;
        let csize = u32_at(b, at + 20)? as usize;
        let usize_ = u32_at(b, at + 24)? as usize;
        let name_len = usize::from(u16_at(b, at + 28)?);
        let extra_len = usize::from(u16_at(b, at + 30)?);
        let comment_len = usize::from(u16_at(b, at + 32)?);
        let attrs = u32_at(b, at + 38)?;
        let local = u32_at(b, at + 42)? as usize;
        let name_bytes = b
            .get(at + 46..at + 46 + name_len)
            .ok_or("truncated central directory")?;
        let name = String::from_utf8(name_bytes.to_vec())
            .map_err(|_| "an entry name is not UTF-8".to_owned())?;
        if !safe_name(&name) {
            return Err(format!(
                "entry {name:?} would be extracted outside the bundle's directory"
            ));
        }
        at += 46 + name_len + extra_len + comment_len;
        if u32_at(b, local)? != LOCAL {
            return Err(format!("{name}: corrupt local header"));
        }
        let start =
            local + 30 + usize::from(u16_at(b, local + 26)?) + usize::from(u16_at(b, local + 28)?);
        let data = b
            .get(start..start.saturating_add(csize))
            .ok_or_else(|| format!("{name}: data runs past the end of the archive"))?;
        let data = match method {
            0 => {
                if csize != usize_ {
                    return Err(format!("{name}: stored sizes differ"));
                }
                if crc32(data) != crc {
                    return Err(format!("{name}: CRC mismatch (corrupt bundle)"));
                }
                data.to_vec()
            }
            _ => Vec::new(),
        };
        let mode = if made_by >> 8 == 3 {
            (attrs >> 16) & 0o7777
        } else {
            0o644
        };
        entries.push(Entry {
            name,
            mode,
            data,
            method,
        });
    }
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str, data: &[u8], mode: u32) -> Entry {
        Entry {
            name: name.into(),
            mode,
            data: data.to_vec(),
            method: 0,
        }
    }

    #[test]
    fn crc_of_a_known_string() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
    }

    #[test]
    fn round_trip() {
        let es = vec![
            entry("manifest.json", b"{}", 0o644),
            entry("server/x", b"\x7fELF", 0o755),
        ];
        let z = write(&es).unwrap_or_default();
        assert_eq!(read(&z, 10), Ok(es));
        assert!(read(&z, 1).is_err());
    }

    #[test]
    fn unsafe_names_and_corruption_are_refused() {
        for bad in ["../evil", "/abs", "a/../../b", "C:/x", "a\\b"] {
            let z = write(&[entry(bad, b"x", 0o644)]).unwrap_or_default();
            assert!(read(&z, 10).is_err_and(|e| e.contains("outside")), "{bad}");
        }
        let mut z = write(&[entry("m", b"hello", 0o644)]).unwrap_or_default();
        if let Some(p) = z.iter().position(|&c| c == b'h') {
            z[p] = b'j';
        }
        assert!(read(&z, 10).is_err_and(|e| e.contains("CRC")));
        assert!(read(b"not a zip", 10).is_err());
        assert!(read(&z[..z.len() - 5], 10).is_err());
    }
}
