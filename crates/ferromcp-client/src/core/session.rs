//! The session: the handshake, era negotiation (probe, `server/discover`,
//! fallback) and the keep-alive.

use super::{Inner, decode, to_object};
use crate::error::{Error, ErrorKind, Result};
use crate::negotiate::{self, EraPreference, ProbeVerdict};
use crate::options::RequestOptions;
use crate::transport::{AbortOnDrop, TransportKind};
use ferromcp_protocol::method;
use ferromcp_protocol::types::*;
use ferromcp_protocol::{Era, ErrorCode, ProtocolVersion};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

// VER-05
/// HTTP endpoints found to be handshake-era in this process.
fn handshake_memo<R>(f: impl FnOnce(&mut std::collections::BTreeSet<String>) -> R) -> R {
    static MEMO: Mutex<std::collections::BTreeSet<String>> =
        Mutex::new(std::collections::BTreeSet::new());
    f(&mut MEMO.lock().unwrap_or_else(|p| p.into_inner()))
}

impl Inner {
    // LEGACY-06
    /// Starts the keep-alive task when it is configured and the
    /// negotiated era has `ping`. It holds only a weak reference: dropping
    /// the last `Client` stops it.
    pub(crate) fn start_keep_alive(self: &Arc<Self>) {
        let Some(interval) = self.config.limits.keep_alive_interval else {
            return;
        };
        if self.modern() {
            return;
        }
        let timeout = self.config.limits.keep_alive_timeout;
        let weak = Arc::downgrade(self);
        let task = tokio::spawn(async move {
            let mut tick =
                tokio::time::interval_at(tokio::time::Instant::now() + interval, interval);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let Some(inner) = weak.upgrade() else { return };
                if inner.closed.load(Ordering::Acquire) {
                    return;
                }
                let opts = RequestOptions::new()
                    .timeout(timeout)
                    .max_total_timeout(timeout);
                let answered = match tokio::time::timeout(
                    timeout,
                    inner.request_raw(method::PING, &JsonObject::new(), &opts),
                )
                .await
                {
                    Ok(Ok(_)) => true,
                    // Any JSON-RPC answer proves the peer alive.
                    Ok(Err(e)) => e.is_protocol(),
                    Err(_) => false,
                };
                if !answered {
                    let reason = format!(
                        "connection lost: the server did not answer a keep-alive ping within {timeout:?}"
                    );
                    tracing::warn!(%reason);
                    *inner.lost.lock().unwrap_or_else(|p| p.into_inner()) = Some(reason);
                    if !inner.closed.swap(true, Ordering::AcqRel) {
                        inner.transport.close().await;
                    }
                    return;
                }
            }
        });
        *self.keep_alive.lock().unwrap_or_else(|p| p.into_inner()) =
            Some(AbortOnDrop(task.abort_handle()));
    }

    // LEGACY-01…LEGACY-04
    /// The handshake.
    pub(crate) async fn initialize(self: &Arc<Self>) -> Result<()> {
        // A pinned handshake revision is offered instead of the newest.
        let pinned = self.config.pinned.filter(|v| !v.is_modern());
        let offered = pinned.unwrap_or(ProtocolVersion::LATEST_HANDSHAKE);
        self.set_state(|s| {
            s.era = Era::Handshake;
            s.version = offered;
        });
        let params = InitializeRequestParams {
            protocol_version: offered.as_str().to_owned(),
            capabilities: self.capabilities.clone(),
            client_info: self.config.client_info.clone(),
        };
        let params = to_object(&params)?;
        let opts = RequestOptions::default().timeout(self.config.limits.request_timeout);
        let raw = self.request_raw(method::INITIALIZE, &params, &opts).await?;
        let result: InitializeResult = decode(&raw, "initialize")?;
        let version = ProtocolVersion::parse(&result.protocol_version)
            .filter(|v| !v.is_modern())
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::Negotiation,
                    format!(
                        "the server chose protocol version {:?}, which this client does not speak",
                        result.protocol_version
                    ),
                )
            })?;
        if pinned.is_some_and(|p| p != version) {
            return Err(Error::new(
                ErrorKind::Negotiation,
                format!("the server chose protocol version {version}, but {offered} is pinned"),
            ));
        }
        self.set_state(|s| {
            s.version = version;
            s.capabilities = result.capabilities;
            s.capabilities_known = true;
            s.server_info = Some(result.server_info);
            s.instructions = result.instructions;
        });
        self.notify(method::NOTIFICATIONS_INITIALIZED, None).await?;
        let st = self.state();
        // LEGACY-15: a server may push a request (elicitation, sampling)
        // on the GET stream as soon as the next call arrives, and drops it
        // when no stream is open yet; so the stream is opened before
        // `connect` returns (bounded: a server that holds the GET's answer
        // back costs at most `stream_open_wait`).
        let opened =
            self.transport
                .session_started(self.headers(&st, "", &JsonObject::new(), false));
        let _ = tokio::time::timeout(self.config.limits.stream_open_wait, opened).await;
        Ok(())
    }

    /// The `server/discover` probe and its one re-probe.
    pub(crate) async fn probe(self: &Arc<Self>) -> Result<ProbeVerdict> {
        let mut version = self
            .config
            .pinned
            .filter(|v| v.is_modern())
            .unwrap_or(ProtocolVersion::LATEST);
        let mut retried = false;
        loop {
            self.set_state(|s| {
                s.era = Era::Modern;
                s.version = version;
            });
            let mut opts = RequestOptions::default().bypass_cache();
            if matches!(
                self.transport.kind(),
                TransportKind::Stdio | TransportKind::Io
            ) {
                opts = opts.timeout(self.config.limits.probe_timeout); // ERA-06
            }
            let id = self.next_id();
            let outcome = self
                .round(
                    method::SERVER_DISCOVER,
                    &JsonObject::new(),
                    &opts,
                    id,
                    &tracing::Span::none(),
                )
                .await;
            match negotiate::judge_probe(outcome, version, retried) {
                ProbeVerdict::RetryAt(v) => {
                    version = v;
                    retried = true;
                }
                v => return Ok(v),
            }
        }
    }

    // ERA-06…ERA-10
    /// Negotiates the era per the caller's preference.
    pub(crate) async fn negotiate(self: &Arc<Self>) -> Result<()> {
        let era = match self.config.pinned {
            Some(v) if !v.is_modern() => return self.initialize().await,
            Some(_) => EraPreference::Modern,
            None => self.config.era,
        };
        match era {
            EraPreference::Handshake => return self.initialize().await,
            EraPreference::ModernNoProbe => {
                self.set_state(|s| {
                    s.era = Era::Modern;
                    s.version = ProtocolVersion::LATEST;
                });
                return Ok(());
            }
            EraPreference::Auto | EraPreference::Modern => {}
        }
        // VER-05: an HTTP endpoint known to be handshake-era skips the
        // probe; if that assumption fails, forget it and probe (ERA-11:
        // never for stdio, each process is probed anew).
        let memo = self.is_http() && era == EraPreference::Auto;
        if memo && handshake_memo(|m| m.contains(&self.identity)) {
            match self.initialize().await {
                Ok(()) => return Ok(()),
                Err(e) => {
                    tracing::debug!(error = %e, "the remembered handshake verdict failed; probing again");
                    handshake_memo(|m| m.remove(&self.identity));
                    self.transport.reset_session();
                }
            }
        }
        let verdict = self.probe().await?;
        if memo {
            let handshake = matches!(verdict, ProbeVerdict::Handshake);
            handshake_memo(|m| {
                if handshake {
                    m.insert(self.identity.clone())
                } else {
                    m.remove(&self.identity)
                }
            });
        }
        match verdict {
            ProbeVerdict::Modern { version, .. }
                if self.config.pinned.is_some_and(|p| p != version) =>
            {
                Err(Error::new(
                    ErrorKind::Negotiation,
                    format!("the server speaks {version}, but another revision is pinned"),
                ))
            }
            ProbeVerdict::Modern { version, discover } => {
                self.set_state(|s| {
                    s.era = Era::Modern;
                    s.version = version;
                    s.capabilities = discover.capabilities.clone();
                    s.capabilities_known = true;
                    s.instructions = discover.instructions.clone();
                    s.server_info = discover
                        .meta
                        .as_ref()
                        .and_then(|m| m.get(ferromcp_protocol::meta::SERVER_INFO))
                        .and_then(|v| serde_json::from_value(v.clone()).ok());
                });
                Ok(())
            }
            ProbeVerdict::Fatal(e) => Err(e),
            ProbeVerdict::Handshake | ProbeVerdict::RetryAt(_) => {
                if era == EraPreference::Modern {
                    return Err(Error::new(
                        ErrorKind::Negotiation,
                        "the server does not speak the modern protocol (2026-07-28)",
                    ));
                }
                let err = match self.initialize().await {
                    Ok(()) => return Ok(()),
                    Err(e) => e,
                };
                // VER-06: a modern-only server without a usable discover
                // answers initialize with -32022 naming its versions.
                let modern = err
                    .rpc_error()
                    .filter(|o| o.code == ErrorCode::UNSUPPORTED_PROTOCOL_VERSION)
                    .and_then(|o| {
                        let supported = negotiate::supported_versions(o);
                        negotiate::mutual_modern(supported.iter().map(String::as_str))
                    });
                match modern {
                    Some(v) => {
                        self.set_state(|s| {
                            s.era = Era::Modern;
                            s.version = v;
                        });
                        Ok(())
                    }
                    None => Err(err),
                }
            }
        }
    }
}
