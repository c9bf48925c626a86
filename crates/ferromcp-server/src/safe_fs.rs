//! Opening a file under a root folder without following symbolic links, and
//! reading it with a bound on the bytes actually read: what servers of a
//! folder (the docs assistant, a skills folder) read their files with.
//!
//! Every read of a served file's content (a start-up scan, a watcher's
//! refresh, the explanation of a refused `resources/read`) goes through
//! [`open_regular`]: the path is opened one component at a time from a
//! descriptor of the root, each with `O_NOFOLLOW`, so a component swapped
//! for a symbolic link between a check and the open is refused rather than
//! followed, and the file's type comes from the opened descriptor. The file
//! itself is opened with `O_NONBLOCK`, so a FIFO does not block the open,
//! and anything but a regular file is refused before a byte is read.

use std::fs::File;
use std::io::Read;
use std::path::Path;

/// Why a document could not be opened.
#[derive(Debug)]
pub enum OpenError {
    /// No such file, a component that is not a directory, or it vanished.
    NotFound,
    /// The path is, or goes through, a symbolic link.
    Link,
    /// A directory.
    Directory,
    /// Neither a regular file nor a directory (FIFO, socket, device).
    NotRegular,
    /// Another failure of the file system.
    Io(std::io::Error),
}

impl OpenError {
    /// A short reason, for the scan's list of skipped files.
    pub fn reason(&self) -> String {
        match self {
            Self::NotFound => "vanished".into(),
            Self::Link => "symbolic link".into(),
            Self::Directory => "a directory".into(),
            Self::NotRegular => "not a regular file".into(),
            Self::Io(e) => e.to_string(),
        }
    }
}

/// Opens `rel` (`/`-separated, no empty, `.` or `..` segment) under `root`
/// without following a symbolic link at any component, and only when it is
/// a regular file; the metadata is the opened descriptor's.
pub fn open_regular(root: &Path, rel: &str) -> Result<(File, std::fs::Metadata), OpenError> {
    let file = open_nofollow(root, rel)?;
    let meta = file.metadata().map_err(OpenError::Io)?;
    if meta.is_dir() {
        return Err(OpenError::Directory);
    }
    if !meta.is_file() {
        return Err(OpenError::NotRegular);
    }
    Ok((file, meta))
}

fn segments(rel: &str) -> Result<(Vec<&str>, &str), OpenError> {
    let mut segs: Vec<&str> = rel.split('/').collect();
    // Callers pass checked paths; refuse anything that could climb anyway.
    if segs.iter().any(|s| s.is_empty() || *s == "." || *s == "..") {
        return Err(OpenError::NotFound);
    }
    let last = segs.pop().ok_or(OpenError::NotFound)?;
    Ok((segs, last))
}

/// The directory `dirs` (components under `root`) opened without following
/// a symbolic link at any component.
#[cfg(unix)]
fn open_dir(root: &Path, dirs: &[&str]) -> Result<std::os::fd::OwnedFd, OpenError> {
    use rustix::fs::{CWD, Mode, OFlags, openat};
    // The root was canonicalized when the library was opened.
    let mut dir = openat(
        CWD,
        root,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| OpenError::Io(e.into()))?;
    for seg in dirs {
        let next = openat(
            &dir,
            *seg,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| classify(&dir, seg, e))?;
        dir = next;
    }
    Ok(dir)
}

#[cfg(unix)]
fn open_nofollow(root: &Path, rel: &str) -> Result<File, OpenError> {
    use rustix::fs::{Mode, OFlags, openat};
    let (dirs, last) = segments(rel)?;
    let dir = open_dir(root, &dirs)?;
    // O_NONBLOCK: opening a FIFO with no writer must not wait for one.
    let fd = openat(
        &dir,
        last,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| classify(&dir, last, e))?;
    Ok(File::from(fd))
}

/// What a directory entry is, not following symbolic links.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symbolic link (never followed).
    Link,
    /// Anything else (FIFO, socket, device).
    Other,
}

/// The entries of the directory `prefix` (`/`-separated, empty for the
/// root) with their kinds, the directory reached without following a
/// symbolic link at any component: a folder swapped for a link while the
/// scan walks is not entered. Names that are not UTF-8 are left out.
#[cfg(unix)]
pub fn list_dir(root: &Path, prefix: &str) -> Result<Vec<(String, Kind)>, OpenError> {
    use rustix::fs::{AtFlags, Dir, FileType, statat};
    let dirs: Vec<&str> = if prefix.is_empty() {
        Vec::new()
    } else {
        let (mut d, last) = segments(prefix)?;
        d.push(last);
        d
    };
    let fd = open_dir(root, &dirs)?;
    let mut dir = Dir::read_from(&fd).map_err(|e| OpenError::Io(e.into()))?;
    let mut out = Vec::new();
    while let Some(entry) = dir.read() {
        let entry = entry.map_err(|e| OpenError::Io(e.into()))?;
        let Ok(name) = entry.file_name().to_str() else {
            continue;
        };
        if name == "." || name == ".." {
            continue;
        }
        let mut ft = entry.file_type();
        if ft == FileType::Unknown {
            ft = match statat(&fd, name, AtFlags::SYMLINK_NOFOLLOW) {
                Ok(st) => FileType::from_raw_mode(st.st_mode),
                Err(_) => continue,
            };
        }
        let kind = match ft {
            FileType::RegularFile => Kind::File,
            FileType::Directory => Kind::Dir,
            FileType::Symlink => Kind::Link,
            _ => Kind::Other,
        };
        out.push((name.to_owned(), kind));
    }
    Ok(out)
}

#[cfg(not(unix))]
pub fn list_dir(root: &Path, prefix: &str) -> Result<Vec<(String, Kind)>, OpenError> {
    let mut path = root.to_path_buf();
    if !prefix.is_empty() {
        let (dirs, last) = segments(prefix)?;
        for seg in dirs.iter().chain(std::iter::once(&last)) {
            path.push(seg);
            if std::fs::symlink_metadata(&path)
                .map_err(OpenError::Io)?
                .file_type()
                .is_symlink()
            {
                return Err(OpenError::Link);
            }
        }
    }
    let mut out = Vec::new();
    for e in std::fs::read_dir(&path).map_err(OpenError::Io)? {
        let Ok(e) = e else { continue };
        let Ok(name) = e.file_name().into_string() else {
            continue;
        };
        let Ok(ft) = e.file_type() else { continue };
        let kind = if ft.is_symlink() {
            Kind::Link
        } else if ft.is_dir() {
            Kind::Dir
        } else if ft.is_file() {
            Kind::File
        } else {
            Kind::Other
        };
        out.push((name, kind));
    }
    Ok(out)
}

/// What a failed no-follow open of `name` in `dir` means.
#[cfg(unix)]
fn classify(dir: &std::os::fd::OwnedFd, name: &str, e: rustix::io::Errno) -> OpenError {
    use rustix::fs::{AtFlags, FileType, statat};
    use rustix::io::Errno;
    if e == Errno::NOENT {
        return OpenError::NotFound;
    }
    match statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) if FileType::from_raw_mode(st.st_mode) == FileType::Symlink => OpenError::Link,
        Err(Errno::NOENT) => OpenError::NotFound,
        _ if e == Errno::LOOP => OpenError::Link,
        // A component that is a file, not a directory.
        _ if e == Errno::NOTDIR => OpenError::NotFound,
        _ => OpenError::Io(e.into()),
    }
}

/// Without `openat`: each component checked, then opened (a swap between
/// the check and the open is not detected on these platforms).
#[cfg(not(unix))]
fn open_nofollow(root: &Path, rel: &str) -> Result<File, OpenError> {
    let (dirs, last) = segments(rel)?;
    let mut path = root.to_path_buf();
    for seg in dirs.iter().chain(std::iter::once(&last)) {
        path.push(seg);
        match std::fs::symlink_metadata(&path) {
            Ok(m) if m.file_type().is_symlink() => return Err(OpenError::Link),
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(OpenError::NotFound),
            Err(e) => return Err(OpenError::Io(e)),
        }
    }
    File::open(&path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => OpenError::NotFound,
        _ => OpenError::Io(e),
    })
}

/// Reads `r` to its end, but never more than `limit + 1` bytes: `None` when
/// there is more than `limit` (whatever the file's size claimed).
pub fn read_bounded(r: impl Read, limit: u64) -> std::io::Result<Option<Vec<u8>>> {
    let mut buf = Vec::new();
    r.take(limit.saturating_add(1)).read_to_end(&mut buf)?;
    if u64::try_from(buf.len()).unwrap_or(u64::MAX) > limit {
        return Ok(None);
    }
    Ok(Some(buf))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bounded_reader_stops_at_the_limit_of_an_endless_reader() {
        // An endless source (as a character device reads): one byte over the
        // limit is read, then the read stops.
        let mut endless = std::io::repeat(b'a');
        assert!(matches!(read_bounded(&mut endless, 1000), Ok(None)));
        let got = read_bounded(std::io::repeat(b'a').take(1000), 1000);
        assert_eq!(got.ok().flatten().map(|v| v.len()), Some(1000));
        let mut counted = Counting(0);
        assert!(matches!(read_bounded(&mut counted, 4096), Ok(None)));
        assert_eq!(counted.0, 4097, "read {} bytes", counted.0);
    }

    /// An endless reader that counts the bytes handed out.
    struct Counting(usize);
    impl Read for Counting {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            buf.fill(b'x');
            self.0 += buf.len();
            Ok(buf.len())
        }
    }

    #[test]
    fn climbing_segments_are_refused() {
        for rel in ["../x.md", "a/../x.md", "./x.md", "a//x.md", ""] {
            assert!(matches!(segments(rel), Err(OpenError::NotFound)), "{rel}");
        }
    }
}

#[cfg(all(test, unix))]
mod unix_tests {
    use super::*;

    #[test]
    fn opens_refuse_links_at_any_component_fifos_and_folders() {
        let base = std::env::temp_dir().join(format!("mcp-safe-fs-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let root = base.join("root");
        std::fs::create_dir_all(root.join("sub")).unwrap_or_default();
        std::fs::create_dir_all(base.join("outside")).unwrap_or_default();
        let ok = std::fs::write(root.join("sub/a.md"), "a").is_ok()
            && std::fs::write(base.join("outside/a.md"), "secret").is_ok()
            && std::os::unix::fs::symlink("../outside", root.join("linkdir")).is_ok()
            && std::os::unix::fs::symlink("sub/a.md", root.join("link.md")).is_ok()
            && std::process::Command::new("mkfifo")
                .arg(root.join("p.md"))
                .status()
                .is_ok_and(|s| s.success());
        assert!(ok, "fixture");
        let root = root.canonicalize().unwrap_or_default();
        assert!(open_regular(&root, "sub/a.md").is_ok());
        assert!(matches!(
            open_regular(&root, "linkdir/a.md"),
            Err(OpenError::Link)
        ));
        assert!(matches!(
            open_regular(&root, "linkdir/none.md"),
            Err(OpenError::Link)
        ));
        assert!(matches!(
            open_regular(&root, "link.md"),
            Err(OpenError::Link)
        ));
        assert!(matches!(
            open_regular(&root, "p.md"),
            Err(OpenError::NotRegular)
        ));
        assert!(matches!(
            open_regular(&root, "sub"),
            Err(OpenError::Directory)
        ));
        assert!(matches!(
            open_regular(&root, "none.md"),
            Err(OpenError::NotFound)
        ));
        assert!(matches!(
            open_regular(&root, "sub/a.md/x"),
            Err(OpenError::NotFound)
        ));
        // The walk never lists a linked folder (std's read_dir would).
        assert!(matches!(list_dir(&root, "linkdir"), Err(OpenError::Link)));
        let mut top = list_dir(&root, "").unwrap_or_default();
        top.sort_by(|a, b| a.0.cmp(&b.0));
        let kinds: Vec<(&str, Kind)> = top.iter().map(|(n, k)| (n.as_str(), *k)).collect();
        assert_eq!(
            kinds,
            [
                ("link.md", Kind::Link),
                ("linkdir", Kind::Link),
                ("p.md", Kind::Other),
                ("sub", Kind::Dir)
            ]
        );
        let _ = std::fs::remove_dir_all(&base);
    }
}
