//! Where client registrations and tokens are kept between runs.
//!
//! Entries are keyed by authorization-server issuer *and* resource, so a
//! registration or token obtained from one AS is never offered to another
//! and a token is only sent to the resource it was
//! requested for.
// AUTH-09, AUTH-14, AUTH-20

use super::error::OAuthError;
use super::token::StoredToken;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Mutex;

/// The key of one store entry.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct StoreKey {
    /// The AS issuer.
    pub issuer: String,
    /// The resource (PRM `resource`).
    pub resource: String,
}

/// A client registration obtained by DCR (RFC 7591).
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredClient {
    /// The `client_id`.
    pub client_id: String,
    /// The `client_secret`, for confidential registrations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    /// The registered `token_endpoint_auth_method`.
    pub token_endpoint_auth_method: String,
    /// The redirect URIs registered.
    #[serde(default)]
    pub redirect_uris: Vec<String>,
}

impl std::fmt::Debug for StoredClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoredClient")
            .field("client_id", &self.client_id)
            .field(
                "token_endpoint_auth_method",
                &self.token_endpoint_auth_method,
            )
            .field("redirect_uris", &self.redirect_uris)
            .finish_non_exhaustive()
    }
}

/// What is stored under one [`StoreKey`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredCredentials {
    /// The key, repeated so a file can be checked against its name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<StoreKey>,
    /// A dynamically registered client for this issuer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<StoredClient>,
    /// The current token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<StoredToken>,
}

/// A held lock on one store entry, released when dropped.
pub struct StoreLock {
    _held: Option<Box<dyn std::any::Any + Send + Sync>>,
}

impl StoreLock {
    /// A lock that holds nothing: for stores shared by no other process.
    pub fn none() -> Self {
        Self { _held: None }
    }

    /// A lock held as long as `held` lives (an open, locked file).
    pub fn new(held: impl std::any::Any + Send + Sync) -> Self {
        Self {
            _held: Some(Box::new(held)),
        }
    }
}

impl std::fmt::Debug for StoreLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreLock")
            .field("held", &self._held.is_some())
            .finish()
    }
}

/// What [`TokenStore::try_lock`] got.
#[derive(Debug)]
pub enum LockAttempt {
    /// The lock is ours until the [`StoreLock`] is dropped.
    Acquired(StoreLock),
    /// Another holder (another process) has it: try again later.
    Busy,
}

/// Persists credentials. Calls are short and synchronous; implementations
/// backed by slow systems should cache.
pub trait TokenStore: Send + Sync + 'static {
    /// The entry for `key`, if any.
    fn load(&self, key: &StoreKey) -> Result<Option<StoredCredentials>, OAuthError>;
    /// Replaces the entry for `key`.
    fn save(&self, key: &StoreKey, value: &StoredCredentials) -> Result<(), OAuthError>;
    /// Deletes the entry for `key` (no error when absent).
    fn remove(&self, key: &StoreKey) -> Result<(), OAuthError>;

    /// Tries, without waiting, to take the lock on `key` that
    /// [`super::OAuthClient`] holds across read, refresh and write, so that
    /// processes sharing the store refresh a token once (a rotated refresh
    /// token is single-use) and the others read the result. The default,
    /// for stores no other process shares, always succeeds and holds
    /// nothing.
    fn try_lock(&self, key: &StoreKey) -> Result<LockAttempt, OAuthError> {
        let _ = key;
        Ok(LockAttempt::Acquired(StoreLock::none()))
    }
}

/// A process-local store.
#[derive(Debug, Default)]
pub struct MemoryStore {
    entries: Mutex<HashMap<StoreKey, StoredCredentials>>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }
}

impl TokenStore for MemoryStore {
    fn load(&self, key: &StoreKey) -> Result<Option<StoredCredentials>, OAuthError> {
        Ok(self
            .entries
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(key)
            .cloned())
    }

    fn save(&self, key: &StoreKey, value: &StoredCredentials) -> Result<(), OAuthError> {
        self.entries
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key.clone(), value.clone());
        Ok(())
    }

    fn remove(&self, key: &StoreKey) -> Result<(), OAuthError> {
        self.entries
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(key);
        Ok(())
    }
}

// AUTH-28
/// One JSON file per issuer/resource pair in a directory the caller picks
/// (secure storage). Files are written to a temporary name with
/// mode `0600` and renamed into place, so a reader never sees half a file;
/// the directory is created with mode `0700`.
#[derive(Debug, Clone)]
pub struct FileStore {
    dir: PathBuf,
    lock_dir: Option<PathBuf>,
}

impl FileStore {
    /// A store in `dir` (created on first save).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: dir.into(),
            lock_dir: None,
        }
    }

    /// Keeps the lock files of [`TokenStore::try_lock`] in `dir` (created
    /// with mode `0700` when first needed) instead of beside the entries,
    /// so taking a lock never creates the credentials directory.
    pub fn lock_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.lock_dir = Some(dir.into());
        self
    }

    /// The file for `key`: the SHA-256 of issuer and resource, in hex.
    pub fn path_for(&self, key: &StoreKey) -> PathBuf {
        use sha2::{Digest, Sha256};
        let mut h = Sha256::new();
        h.update(key.issuer.as_bytes());
        h.update([0u8]);
        h.update(key.resource.as_bytes());
        let name: String = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
        self.dir.join(format!("{name}.json"))
    }

    fn create_dir(&self) -> std::io::Result<()> {
        create_private_dir(&self.dir)
    }
}

/// Creates `dir` (and its parents) with mode `0700`.
fn create_private_dir(dir: &std::path::Path) -> std::io::Result<()> {
    let mut b = std::fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        b.mode(0o700);
    }
    b.create(dir)
}

fn io(path: &std::path::Path, e: std::io::Error) -> OAuthError {
    OAuthError::storage(format!("{}: {e}", path.display()))
}

impl TokenStore for FileStore {
    fn load(&self, key: &StoreKey) -> Result<Option<StoredCredentials>, OAuthError> {
        let path = self.path_for(key);
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io(&path, e)),
        };
        let v: StoredCredentials = serde_json::from_slice(&bytes)
            .map_err(|e| OAuthError::storage(format!("{}: {e}", path.display())))?;
        // A file whose recorded key differs (hash collision, tampering) is
        // not ours.
        if v.key.as_ref().is_some_and(|k| k != key) {
            return Ok(None);
        }
        Ok(Some(v))
    }

    fn save(&self, key: &StoreKey, value: &StoredCredentials) -> Result<(), OAuthError> {
        use std::io::Write;
        self.create_dir().map_err(|e| io(&self.dir, e))?;
        let path = self.path_for(key);
        let mut v = value.clone();
        v.key = Some(key.clone());
        let json = serde_json::to_vec_pretty(&v)
            .map_err(|e| OAuthError::storage(format!("cannot serialize: {e}")))?;
        // Unique per writer, so concurrent saves never share a temporary file.
        let tmp = path.with_extension(format!(
            "json.tmp{}-{}",
            std::process::id(),
            super::pkce::random_token(6)?
        ));
        let mut opts = std::fs::OpenOptions::new();
        opts.write(true).create(true).truncate(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            opts.mode(0o600);
        }
        let write = || -> std::io::Result<()> {
            let mut f = opts.open(&tmp)?;
            f.write_all(&json)?;
            f.sync_all()?;
            std::fs::rename(&tmp, &path)
        };
        write().map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            io(&path, e)
        })
    }

    fn remove(&self, key: &StoreKey) -> Result<(), OAuthError> {
        let path = self.path_for(key);
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(io(&path, e)),
        }
    }

    /// An advisory `flock` on `<entry>.lock` beside the entry's file, or in
    /// [`FileStore::lock_dir`] (mode `0600`, left in place). The kernel releases it when the holder
    /// exits, however it exits, so a crashed process never leaves a stale
    /// lock behind. Elsewhere than Unix there is no lock.
    fn try_lock(&self, key: &StoreKey) -> Result<LockAttempt, OAuthError> {
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            let entry = self.path_for(key).with_extension("lock");
            let path = match (&self.lock_dir, entry.file_name()) {
                (Some(d), Some(name)) => d.join(name),
                _ => entry,
            };
            let dir = path.parent().unwrap_or(&self.dir);
            create_private_dir(dir).map_err(|e| io(dir, e))?;
            let file = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .mode(0o600)
                .open(&path)
                .map_err(|e| io(&path, e))?;
            match rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
                Ok(()) => Ok(LockAttempt::Acquired(StoreLock::new(file))),
                Err(rustix::io::Errno::WOULDBLOCK) => Ok(LockAttempt::Busy),
                Err(e) => Err(io(&path, e.into())),
            }
        }
        #[cfg(not(unix))]
        {
            let _ = key;
            Ok(LockAttempt::Acquired(StoreLock::none()))
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn key(i: &str) -> StoreKey {
        StoreKey {
            issuer: i.into(),
            resource: "https://mcp.example/mcp".into(),
        }
    }

    fn creds() -> StoredCredentials {
        StoredCredentials {
            key: None,
            client: Some(StoredClient {
                client_id: "c".into(),
                client_secret: Some("s".into()),
                token_endpoint_auth_method: "client_secret_basic".into(),
                redirect_uris: vec!["http://127.0.0.1/cb".into()],
            }),
            token: Some(StoredToken {
                access_token: "a".into(),
                token_type: "Bearer".into(),
                refresh_token: Some("r".into()),
                expires_at: Some(1),
                scopes: vec!["x".into()],
            }),
        }
    }

    fn exercise(store: &dyn TokenStore) {
        assert_eq!(store.load(&key("https://as1")).unwrap(), None);
        store.save(&key("https://as1"), &creds()).unwrap();
        let got = store.load(&key("https://as1")).unwrap().unwrap();
        assert_eq!(got.client, creds().client);
        assert_eq!(got.token, creds().token);
        // AUTH-14: another issuer sees nothing.
        assert_eq!(store.load(&key("https://as2")).unwrap(), None);
        store.remove(&key("https://as1")).unwrap();
        store.remove(&key("https://as1")).unwrap();
        assert_eq!(store.load(&key("https://as1")).unwrap(), None);
    }

    #[cfg(unix)]
    #[test]
    fn the_file_lock_excludes_other_holders_until_dropped() {
        let dir = std::env::temp_dir().join(format!(
            "mcp-auth-lock-{}-{}",
            std::process::id(),
            super::super::pkce::random_token(6).unwrap()
        ));
        // Two stores on one directory stand for two processes: flock
        // locks belong to open files, not to processes.
        let a = FileStore::new(&dir);
        let b = FileStore::new(&dir);
        let held = a.try_lock(&key("https://as1")).unwrap();
        assert!(matches!(held, LockAttempt::Acquired(_)));
        assert!(matches!(
            b.try_lock(&key("https://as1")).unwrap(),
            LockAttempt::Busy
        ));
        // Another entry has its own lock.
        assert!(matches!(
            b.try_lock(&key("https://as2")).unwrap(),
            LockAttempt::Acquired(_)
        ));
        drop(held);
        assert!(matches!(
            b.try_lock(&key("https://as1")).unwrap(),
            LockAttempt::Acquired(_)
        ));
        // With a lock directory the credentials directory is not created.
        let c = FileStore::new(dir.join("creds")).lock_dir(dir.join("locks"));
        assert!(matches!(
            c.try_lock(&key("https://as3")).unwrap(),
            LockAttempt::Acquired(_)
        ));
        assert!(!dir.join("creds").exists());
        assert!(dir.join("locks").is_dir());
        // The memory store needs no lock.
        assert!(matches!(
            MemoryStore::new().try_lock(&key("https://as1")).unwrap(),
            LockAttempt::Acquired(_)
        ));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn memory_store_round_trips() {
        exercise(&MemoryStore::new());
    }

    #[test]
    fn file_store_round_trips_with_private_permissions() {
        let dir = std::env::temp_dir().join(format!(
            "mcp-auth-store-{}-{}",
            std::process::id(),
            super::super::pkce::random_token(6).unwrap()
        ));
        let store = FileStore::new(dir.join("tokens"));
        exercise(&store);
        store.save(&key("https://as1"), &creds()).unwrap();
        let path = store.path_for(&key("https://as1"));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
            let dmode = std::fs::metadata(dir.join("tokens"))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(dmode & 0o777, 0o700);
        }
        // No temporary files left behind.
        let names: Vec<_> = std::fs::read_dir(dir.join("tokens"))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names.len(), 1);
        assert!(names[0].ends_with(".json"));
        // A corrupt file is an error, not a panic.
        std::fs::write(&path, b"{not json").unwrap();
        assert!(store.load(&key("https://as1")).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
