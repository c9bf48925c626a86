//! Single-use `requestState` across replicas: one atomic `SET NX PX`.

use std::time::Duration;

use ferromcp_server::single_use::{SingleUseStore, StoreError, TokenId};
use futures_util::future::BoxFuture;

use crate::{Error, RedisConfig, hex};

// MRTR-09
/// A [`SingleUseStore`] in Redis, shared by every replica.
///
/// Consuming a token is one command, `SET <prefix>su:<hex id> 1 NX PX <ms>`:
/// Redis executes it atomically, so of any number of concurrent consumers on
/// any replicas exactly one sees `OK` (first use) and the others `nil`
/// (replay). The key expires on its own when the token would be refused as
/// expired anyway; the lifetime is relative (`PX`, computed from the
/// sealer's clock) so a Redis clock that differs from the replicas' does not
/// shorten it. Each call is bounded by the command timeout; a failure or
/// timeout is a [`StoreError`], which refuses the retry leg (fail closed,
/// retryable).
#[derive(Clone)]
pub struct RedisSingleUse {
    conn: redis::aio::ConnectionManager,
    prefix: String,
    timeout: Duration,
}

impl std::fmt::Debug for RedisSingleUse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisSingleUse")
            .field("prefix", &self.prefix)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl RedisSingleUse {
    pub(crate) async fn connect(config: &RedisConfig) -> Result<Self, Error> {
        Ok(Self {
            conn: config.connection_manager().await?,
            prefix: format!("{}su:", config.key_prefix),
            timeout: config.command_timeout,
        })
    }

    /// The Redis key recording `token`.
    pub fn key_for(&self, token: &TokenId) -> String {
        format!("{}{}", self.prefix, hex(token))
    }

    /// Records `token` for `ttl`: `Ok(true)` on first use, `Ok(false)` if it
    /// was recorded before.
    pub async fn consume_for(&self, token: &TokenId, ttl: Duration) -> Result<bool, Error> {
        let ttl_ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1);
        let mut cmd = redis::cmd("SET");
        cmd.arg(self.key_for(token))
            .arg(1)
            .arg("NX")
            .arg("PX")
            .arg(ttl_ms);
        let mut conn = self.conn.clone();
        match tokio::time::timeout(self.timeout, cmd.query_async::<Option<String>>(&mut conn)).await
        {
            Ok(Ok(answer)) => Ok(answer.is_some()),
            Ok(Err(e)) => Err(Error::redis("single-use SET failed", e)),
            Err(_) => Err(Error::timeout("single-use SET", self.timeout)),
        }
    }
}

impl SingleUseStore for RedisSingleUse {
    fn consume(
        &self,
        token: &TokenId,
        forget_after: u64,
        now: u64,
    ) -> BoxFuture<'_, Result<bool, StoreError>> {
        let token = *token;
        let ttl = Duration::from_secs(forget_after.saturating_sub(now).max(1));
        Box::pin(async move {
            self.consume_for(&token, ttl).await.map_err(|e| {
                if e.is_timeout() {
                    StoreError::timeout()
                } else {
                    StoreError::unavailable(e)
                }
            })
        })
    }
}
