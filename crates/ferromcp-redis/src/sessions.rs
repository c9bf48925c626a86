//! Handshake-era session records across replicas: a hash and a set per
//! session, changed one field at a time.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use ferromcp_server::shared_sessions::{
    SessionRecord, SessionUpdate, SharedSessions, SharedSessionsError, UpdateOutcome,
};
use futures_util::future::BoxFuture;

use crate::{Error, RedisConfig};

/// Longest session id looked up (ours are 64 characters); anything longer
/// is not a session of ours and is not sent to Redis.
const MAX_SESSION_ID_LEN: usize = 256;

// Session records are stored in two keys per session, in one hash slot
// (the `{ID}` hash tag), so the scripts below may touch both on a cluster:
// the hash `<prefix>sess:{ID}` (field `r`: the JSON of the fixed part,
// field `l`: the log level) and the set `<prefix>sess:{ID}:subs`.

/// `KEYS[1]` hash, `KEYS[2]` set, `ARGV[1]` idle ms, `ARGV[2]` `1` to
/// include the subscriptions: the record (and its subscriptions, or none),
/// both expiries pushed back; nil when there is none.
const FETCH: &str = r#"
local r = redis.call('HGET', KEYS[1], 'r')
if not r then return false end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
redis.call('PEXPIRE', KEYS[2], ARGV[1])
local l = redis.call('HGET', KEYS[1], 'l') or ''
local subs = {}
if ARGV[2] == '1' then subs = redis.call('SMEMBERS', KEYS[2]) end
return {r, l, subs}
"#;

/// `KEYS[1]` hash, `KEYS[2]` set, `ARGV[1]` op (`l` set level, `s`
/// subscribe, `u` unsubscribe), `ARGV[2]` its value, `ARGV[3]` idle ms,
/// `ARGV[4]` most subscriptions. Returns 1 applied, 0 no such session, 2
/// too many subscriptions. One script: the existence and count checks and
/// the change are atomic.
const UPDATE: &str = r#"
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local op = ARGV[1]
if op == 'l' then
  redis.call('HSET', KEYS[1], 'l', ARGV[2])
elseif op == 's' then
  if redis.call('SISMEMBER', KEYS[2], ARGV[2]) == 0 then
    if redis.call('SCARD', KEYS[2]) >= tonumber(ARGV[4]) then return 2 end
    redis.call('SADD', KEYS[2], ARGV[2])
  end
elseif op == 'u' then
  redis.call('SREM', KEYS[2], ARGV[2])
end
redis.call('PEXPIRE', KEYS[1], ARGV[3])
redis.call('PEXPIRE', KEYS[2], ARGV[3])
return 1
"#;

/// A [`SharedSessions`] store in Redis. Session `ID` is a hash
/// `<prefix>sess:{ID}` (the fixed part of the record as JSON, and the log
/// level) and a set `<prefix>sess:{ID}:subs` (the subscribed URIs), both
/// expiring after the idle timeout. [`SharedSessions::put`] writes them in
/// one `MULTI`; [`SharedSessions::fetch`] reads them and pushes both
/// expiries back in one script
/// ([`SharedSessions::fetch_without_subscriptions`]: the same without
/// reading the set); [`SharedSessions::update`] changes one
/// field (`HSET`, `SADD` with the count checked in the same script, `SREM`),
/// so concurrent changes from different replicas never undo each other,
/// and each writes only what changed; [`SharedSessions::remove`] `DEL`s
/// both. Every command is bounded by the command timeout; a failure or
/// timeout is a [`SharedSessionsError`], which the server answers with 503
/// and `Retry-After`.
#[derive(Clone)]
pub struct RedisSessions {
    conn: redis::aio::ConnectionManager,
    prefix: String,
    timeout: Duration,
    /// The SHA1s of `FETCH` and `UPDATE` once `SCRIPT LOAD`ed, so each
    /// call sends only the digest (`EVALSHA`).
    shas: Arc<[Mutex<Option<String>>; 2]>,
}

/// Which script.
#[derive(Clone, Copy)]
enum Script {
    Fetch = 0,
    Update = 1,
}

impl Script {
    fn source(self) -> &'static str {
        match self {
            Script::Fetch => FETCH,
            Script::Update => UPDATE,
        }
    }
}

impl std::fmt::Debug for RedisSessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisSessions")
            .field("prefix", &self.prefix)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1)
}

impl RedisSessions {
    pub(crate) async fn connect(config: &RedisConfig) -> Result<Self, Error> {
        Ok(Self {
            conn: config.connection_manager().await?,
            prefix: format!("{}sess:", config.key_prefix),
            timeout: config.command_timeout,
            shas: Arc::new([Mutex::new(None), Mutex::new(None)]),
        })
    }

    /// The Redis key of the hash holding session `id`'s record (its
    /// subscriptions are the set named by this key and `:subs`).
    pub fn key_for(&self, id: &str) -> String {
        format!("{}{{{}}}", self.prefix, id)
    }

    fn subs_key(&self, id: &str) -> String {
        format!("{}{{{}}}:subs", self.prefix, id)
    }

    /// Runs `script` with `keys` and `args` by its digest, loading it first
    /// when this store has not yet (or Redis lost it: `NOSCRIPT`, after a
    /// restart).
    async fn eval<T: redis::FromRedisValue>(
        &self,
        what: &str,
        script: Script,
        keys: [&str; 2],
        args: &[&str],
    ) -> Result<T, SharedSessionsError> {
        let slot = &self.shas[script as usize];
        let cached = slot.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let mut reloaded = false;
        let mut sha = match cached {
            Some(sha) => sha,
            None => {
                reloaded = true;
                self.load(what, script).await?
            }
        };
        loop {
            let mut cmd = redis::cmd("EVALSHA");
            cmd.arg(&sha).arg(2).arg(keys[0]).arg(keys[1]);
            for a in args {
                cmd.arg(*a);
            }
            let mut conn = self.conn.clone();
            match tokio::time::timeout(self.timeout, cmd.query_async::<T>(&mut conn)).await {
                Ok(Ok(v)) => return Ok(v),
                Ok(Err(e)) if e.code() == Some("NOSCRIPT") && !reloaded => {
                    reloaded = true;
                    sha = self.load(what, script).await?;
                }
                Ok(Err(e)) => {
                    return Err(SharedSessionsError::new(Error::redis(what, e).to_string()));
                }
                Err(_) => {
                    return Err(SharedSessionsError::new(
                        Error::timeout(what, self.timeout).to_string(),
                    ));
                }
            }
        }
    }

    /// The record of session `id` (with its subscriptions when
    /// `subscriptions`), both expiries pushed back.
    async fn read(
        &self,
        id: &str,
        idle: Duration,
        subscriptions: bool,
    ) -> Result<Option<SessionRecord>, SharedSessionsError> {
        if id.is_empty() || id.len() > MAX_SESSION_ID_LEN {
            return Ok(None);
        }
        let (key, subs) = (self.key_for(id), self.subs_key(id));
        let idle = ms(idle).to_string();
        let with = if subscriptions { "1" } else { "0" };
        let raw: Option<(String, String, Vec<String>)> = self
            .eval(
                "session fetch",
                Script::Fetch,
                [&key, &subs],
                &[&idle, with],
            )
            .await?;
        let Some((fixed, level, subscriptions)) = raw else {
            return Ok(None);
        };
        // A record this build cannot read is no session of ours.
        let Ok(mut record) = serde_json::from_str::<SessionRecord>(&fixed) else {
            return Ok(None);
        };
        record.log_level = serde_json::from_value(serde_json::Value::String(level)).ok();
        record.subscriptions = subscriptions;
        record.subscriptions.sort();
        Ok(Some(record))
    }

    /// `SCRIPT LOAD`s `script` and remembers its digest.
    async fn load(&self, what: &str, script: Script) -> Result<String, SharedSessionsError> {
        let mut cmd = redis::cmd("SCRIPT");
        cmd.arg("LOAD").arg(script.source());
        let sha: String = self.run(what, &cmd).await?;
        *self.shas[script as usize]
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = Some(sha.clone());
        Ok(sha)
    }

    async fn run<T: redis::FromRedisValue + Send>(
        &self,
        what: &str,
        cmd: &(impl Query + ?Sized),
    ) -> Result<T, SharedSessionsError> {
        let mut conn = self.conn.clone();
        match tokio::time::timeout(self.timeout, cmd.query(&mut conn)).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(SharedSessionsError::new(Error::redis(what, e).to_string())),
            Err(_) => Err(SharedSessionsError::new(
                Error::timeout(what, self.timeout).to_string(),
            )),
        }
    }
}

/// A command or a pipeline.
trait Query: Sync {
    fn query<'a, T: redis::FromRedisValue + Send + 'a>(
        &'a self,
        conn: &'a mut redis::aio::ConnectionManager,
    ) -> BoxFuture<'a, redis::RedisResult<T>>;
}

impl Query for redis::Cmd {
    fn query<'a, T: redis::FromRedisValue + Send + 'a>(
        &'a self,
        conn: &'a mut redis::aio::ConnectionManager,
    ) -> BoxFuture<'a, redis::RedisResult<T>> {
        Box::pin(self.query_async(conn))
    }
}

impl Query for redis::Pipeline {
    fn query<'a, T: redis::FromRedisValue + Send + 'a>(
        &'a self,
        conn: &'a mut redis::aio::ConnectionManager,
    ) -> BoxFuture<'a, redis::RedisResult<T>> {
        Box::pin(self.query_async(conn))
    }
}

/// A log level's wire name (`"debug"`, …), from its JSON form.
fn level_name(level: Result<serde_json::Value, serde_json::Error>) -> String {
    level
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

impl SharedSessions for RedisSessions {
    fn put<'a>(
        &'a self,
        id: &'a str,
        record: &'a SessionRecord,
        idle: Duration,
    ) -> BoxFuture<'a, Result<(), SharedSessionsError>> {
        Box::pin(async move {
            // The fixed part goes in `r`; the mutable parts have fields of
            // their own.
            let mut fixed = record.clone();
            fixed.log_level = None;
            fixed.subscriptions = Vec::new();
            let value = serde_json::to_string(&fixed)
                .map_err(|e| SharedSessionsError::new(format!("record does not encode: {e}")))?;
            let (key, subs) = (self.key_for(id), self.subs_key(id));
            let mut pipe = redis::pipe();
            pipe.atomic();
            pipe.cmd("DEL").arg(&key).arg(&subs).ignore();
            pipe.cmd("HSET").arg(&key).arg("r").arg(value).ignore();
            if let Some(level) = record.log_level {
                pipe.cmd("HSET")
                    .arg(&key)
                    .arg("l")
                    .arg(level_name(serde_json::to_value(level)))
                    .ignore();
            }
            if !record.subscriptions.is_empty() {
                pipe.cmd("SADD")
                    .arg(&subs)
                    .arg(&record.subscriptions)
                    .ignore();
                pipe.cmd("PEXPIRE").arg(&subs).arg(ms(idle)).ignore();
            }
            pipe.cmd("PEXPIRE").arg(&key).arg(ms(idle)).ignore();
            self.run::<()>("session MULTI", &pipe).await
        })
    }

    fn fetch<'a>(
        &'a self,
        id: &'a str,
        idle: Duration,
    ) -> BoxFuture<'a, Result<Option<SessionRecord>, SharedSessionsError>> {
        Box::pin(self.read(id, idle, true))
    }

    fn fetch_without_subscriptions<'a>(
        &'a self,
        id: &'a str,
        idle: Duration,
    ) -> BoxFuture<'a, Result<Option<SessionRecord>, SharedSessionsError>> {
        Box::pin(self.read(id, idle, false))
    }

    fn update<'a>(
        &'a self,
        id: &'a str,
        update: SessionUpdate<'a>,
        idle: Duration,
    ) -> BoxFuture<'a, Result<UpdateOutcome, SharedSessionsError>> {
        Box::pin(async move {
            if id.is_empty() || id.len() > MAX_SESSION_ID_LEN {
                return Ok(UpdateOutcome::Gone);
            }
            let (op, value, max) = match update {
                SessionUpdate::SetLogLevel(level) => {
                    ("l", level_name(serde_json::to_value(level)), 0)
                }
                SessionUpdate::Subscribe { uri, max } => ("s", uri.to_owned(), max),
                SessionUpdate::Unsubscribe(uri) => ("u", uri.to_owned(), 0),
                // A change this build does not know: nothing to store.
                _ => return Ok(UpdateOutcome::Applied),
            };
            let (key, subs) = (self.key_for(id), self.subs_key(id));
            let idle = ms(idle).to_string();
            let max = max.to_string();
            let n: i64 = self
                .eval(
                    "session update",
                    Script::Update,
                    [&key, &subs],
                    &[op, &value, &idle, &max],
                )
                .await?;
            Ok(match n {
                1 => UpdateOutcome::Applied,
                2 => UpdateOutcome::TooManySubscriptions,
                _ => UpdateOutcome::Gone,
            })
        })
    }

    fn remove<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<(), SharedSessionsError>> {
        Box::pin(async move {
            let mut cmd = redis::cmd("DEL");
            cmd.arg(self.key_for(id)).arg(self.subs_key(id));
            self.run::<i64>("session DEL", &cmd).await.map(|_| ())
        })
    }
}
