//! Handshake-era session records across replicas: `SET`/`GETEX`/`DEL`.

use std::time::Duration;

use ferromcp_server::shared_sessions::{SessionRecord, SharedSessions, SharedSessionsError};
use futures_util::future::BoxFuture;

use crate::{Error, RedisConfig};

/// Longest session id looked up (ours are 64 characters); anything longer
/// is not a session of ours and is not sent to Redis.
const MAX_SESSION_ID_LEN: usize = 256;

/// A [`SharedSessions`] store in Redis: the record of session `ID` is the
/// JSON value of `<prefix>session:ID`, written with `SET … PX <idle>`, read
/// with `GETEX … PX <idle>` (one command reads it and pushes its idle
/// expiry back), removed with `DEL`. Every command is bounded by the
/// command timeout; a failure or timeout is a [`SharedSessionsError`],
/// which the server answers with 503 and `Retry-After`.
#[derive(Clone)]
pub struct RedisSessions {
    conn: redis::aio::ConnectionManager,
    prefix: String,
    timeout: Duration,
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
            prefix: format!("{}session:", config.key_prefix),
            timeout: config.command_timeout,
        })
    }

    /// The Redis key holding session `id`'s record.
    pub fn key_for(&self, id: &str) -> String {
        format!("{}{}", self.prefix, id)
    }

    async fn run<T: redis::FromRedisValue>(
        &self,
        what: &str,
        cmd: redis::Cmd,
    ) -> Result<T, SharedSessionsError> {
        let mut conn = self.conn.clone();
        match tokio::time::timeout(self.timeout, cmd.query_async::<T>(&mut conn)).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(SharedSessionsError::new(Error::redis(what, e).to_string())),
            Err(_) => Err(SharedSessionsError::new(
                Error::timeout(what, self.timeout).to_string(),
            )),
        }
    }
}

impl SharedSessions for RedisSessions {
    fn put<'a>(
        &'a self,
        id: &'a str,
        record: &'a SessionRecord,
        idle: Duration,
    ) -> BoxFuture<'a, Result<(), SharedSessionsError>> {
        Box::pin(async move {
            let value = serde_json::to_string(record)
                .map_err(|e| SharedSessionsError::new(format!("record does not encode: {e}")))?;
            let mut cmd = redis::cmd("SET");
            cmd.arg(self.key_for(id)).arg(value).arg("PX").arg(ms(idle));
            self.run::<()>("session SET", cmd).await
        })
    }

    fn fetch<'a>(
        &'a self,
        id: &'a str,
        idle: Duration,
    ) -> BoxFuture<'a, Result<Option<SessionRecord>, SharedSessionsError>> {
        Box::pin(async move {
            if id.is_empty() || id.len() > MAX_SESSION_ID_LEN {
                return Ok(None);
            }
            let mut cmd = redis::cmd("GETEX");
            cmd.arg(self.key_for(id)).arg("PX").arg(ms(idle));
            let raw: Option<String> = self.run("session GETEX", cmd).await?;
            // A record this build cannot read is no session of ours.
            Ok(raw.and_then(|r| serde_json::from_str(&r).ok()))
        })
    }

    fn remove<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<(), SharedSessionsError>> {
        Box::pin(async move {
            let mut cmd = redis::cmd("DEL");
            cmd.arg(self.key_for(id));
            self.run::<i64>("session DEL", cmd).await.map(|_| ())
        })
    }
}
