//! The deprecated HTTP+SSE transport of 2024-11-05, used only as a fallback:
//! `GET` the URL for an SSE stream whose first event, `endpoint`,
//! names where to POST messages; every answer then arrives on that stream.
// ERA-10

use super::http::{HttpLimits, Sender, is_media_type, origin, read_body};
use super::router::{CancelFn, CancelGuard, Router};
use super::{AbortOnDrop, Exchange, Outbound, Transport, TransportKind};
use crate::error::{Error, Result};
use crate::message::Inbound;
use crate::sse::SseParser;
use bytes::Bytes;
use ferromcp_protocol::RequestId;
use futures_util::future::BoxFuture;
use http::header::{ACCEPT, CONTENT_TYPE, HeaderName, HeaderValue};
use http::{Method, Request, Uri};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;

/// Resolves the `endpoint` event's URI reference against the stream URL;
/// only same-origin endpoints are accepted (credentials stay on the origin).
pub(crate) fn resolve_endpoint(base: &Uri, reference: &str) -> Result<Uri> {
    let reference = reference.trim();
    let resolved: Uri = if reference.starts_with("http://") || reference.starts_with("https://") {
        reference
            .parse()
            .map_err(|e| Error::invalid("bad endpoint URI").with_source(e))?
    } else if reference.starts_with('/') {
        format!("{}{}", origin(base), reference)
            .parse()
            .map_err(|e| Error::invalid("bad endpoint URI").with_source(e))?
    } else {
        let path = base.path();
        let dir = &path[..path.rfind('/').map_or(0, |i| i + 1)];
        format!(
            "{}{}{}",
            origin(base),
            if dir.is_empty() { "/" } else { dir },
            reference
        )
        .parse()
        .map_err(|e| Error::invalid("bad endpoint URI").with_source(e))?
    };
    if origin(&resolved) != origin(base) {
        return Err(Error::invalid(format!(
            "the endpoint {resolved} is not on the server's origin"
        )));
    }
    Ok(resolved)
}

struct Inner {
    sender: Sender,
    endpoint: Uri,
    extra: Vec<(HeaderName, HeaderValue)>,
}

impl Inner {
    async fn post(&self, body: Vec<u8>) -> Result<()> {
        let body = Bytes::from(body);
        let resp = self
            .sender
            .send(|| {
                let mut b = Request::builder()
                    .method(Method::POST)
                    .uri(self.endpoint.clone())
                    .header(CONTENT_TYPE, "application/json");
                for (n, v) in &self.extra {
                    b = b.header(n, v);
                }
                b.body(Full::new(body.clone()))
                    .map_err(|e| Error::invalid("cannot build the HTTP request").with_source(e))
            })
            .await?;
        if resp.status().is_success() {
            Ok(())
        } else {
            Err(Error::http_status(
                resp.status().as_u16(),
                format!("HTTP+SSE endpoint answered {}", resp.status()),
            ))
        }
    }
}

/// The HTTP+SSE (2024-11-05) transport.
pub(crate) struct HttpSseTransport {
    inner: Arc<Inner>,
    router: Arc<Router>,
    unsolicited: Mutex<Option<mpsc::Receiver<Inbound>>>,
    reader: Mutex<Option<AbortOnDrop>>,
    identity: String,
}

impl HttpSseTransport {
    /// Opens the SSE stream and waits for the `endpoint` event.
    pub(crate) async fn connect(
        sender: Sender,
        url: Uri,
        extra: Vec<(HeaderName, HeaderValue)>,
        limits: HttpLimits,
    ) -> Result<Self> {
        let resp = sender
            .send(|| {
                let mut b = Request::builder()
                    .method(Method::GET)
                    .uri(url.clone())
                    .header(ACCEPT, "text/event-stream");
                for (n, v) in &extra {
                    b = b.header(n, v);
                }
                b.body(Full::new(Bytes::new()))
                    .map_err(|e| Error::invalid("cannot build the HTTP request").with_source(e))
            })
            .await?;
        if !resp.status().is_success()
            || !is_media_type(resp.headers().get(CONTENT_TYPE), "text/event-stream")
        {
            let status = resp.status().as_u16();
            let _ = read_body(resp.into_body(), 4096).await;
            return Err(Error::http_status(
                status,
                "the server offers no HTTP+SSE stream either",
            ));
        }
        let mut body: Incoming = resp.into_body();
        let mut parser = SseParser::new(limits.max_event, limits.retry_cap);
        let mut early = Vec::new();
        let endpoint = 'outer: loop {
            let Some(frame) = body.frame().await else {
                return Err(Error::transport(
                    "the SSE stream ended before the endpoint event",
                ));
            };
            let frame = frame.map_err(|e| Error::transport("SSE stream failed").with_source(e))?;
            let Ok(data) = frame.into_data() else {
                continue;
            };
            let events = parser.feed(&data).map_err(|e| {
                Error::too_large(limits.max_event, "unacceptable SSE stream").with_source(e)
            })?;
            let mut it = events.into_iter();
            while let Some(ev) = it.next() {
                if ev.event.as_deref() == Some("endpoint") {
                    early.extend(it);
                    break 'outer resolve_endpoint(&url, &ev.data)?;
                }
            }
        };
        let (router, unsolicited) = Router::new(limits.queue);
        for ev in early {
            if let Ok(m) = Inbound::decode(ev.data.as_bytes()) {
                router.dispatch(m).await;
            }
        }
        let r = router.clone();
        let max_event = limits.max_event;
        let task = tokio::spawn(async move {
            let why = loop {
                let Some(frame) = body.frame().await else {
                    break "the SSE stream ended".to_owned();
                };
                let Ok(frame) = frame else {
                    break "the SSE stream failed".to_owned();
                };
                let Ok(data) = frame.into_data() else {
                    continue;
                };
                match parser.feed(&data) {
                    Ok(events) => {
                        for ev in events.into_iter().filter(|e| e.is_message()) {
                            match Inbound::decode(ev.data.as_bytes()) {
                                Ok(m) => r.dispatch(m).await,
                                // A malformed answer fails its request now.
                                Err(e) => match crate::message::answered_id(ev.data.as_bytes()) {
                                    Some(id) if r.fail(&id, e.clone()) => {}
                                    _ => {
                                        tracing::warn!(error = %e, "ignoring a malformed SSE message")
                                    }
                                },
                            }
                        }
                    }
                    Err(e) => {
                        // The shared stream is unusable: the pending
                        // requests fail with the size-limit error.
                        r.fail_pending(
                            Error::too_large(max_event, "unacceptable SSE stream")
                                .with_source(e.clone()),
                        );
                        break e.to_string();
                    }
                }
            };
            r.close(Error::transport(why));
        });
        Ok(Self {
            inner: Arc::new(Inner {
                sender,
                endpoint,
                extra,
            }),
            router,
            unsolicited: Mutex::new(Some(unsolicited)),
            reader: Mutex::new(Some(AbortOnDrop(task.abort_handle()))),
            identity: origin(&url) + url.path(),
        })
    }
}

impl Transport for HttpSseTransport {
    fn request(&self, out: Outbound) -> BoxFuture<'_, Result<Exchange>> {
        Box::pin(async move {
            let id = out
                .id
                .clone()
                .ok_or_else(|| Error::invalid("a request needs an id"))?;
            let rx = self.router.register(id.clone())?;
            let cancel: Option<CancelFn> = if out.cancellable {
                let inner = self.inner.clone();
                Some(Box::new(move |id: &RequestId| {
                    let inner = inner.clone();
                    let body = crate::core::cancelled_notification(id);
                    tokio::spawn(async move {
                        let _ = inner.post(body).await;
                    });
                }))
            } else {
                None
            };
            let guard = CancelGuard {
                router: self.router.clone(),
                id,
                cancel,
            };
            self.inner.post(out.body).await?;
            Ok(Exchange {
                rx,
                _guard: Box::new(guard),
            })
        })
    }

    fn send(&self, out: Outbound) -> BoxFuture<'_, Result<()>> {
        Box::pin(async move { self.inner.post(out.body).await })
    }

    fn take_unsolicited(&self) -> Option<mpsc::Receiver<Inbound>> {
        self.unsolicited
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
    }

    fn kind(&self) -> TransportKind {
        TransportKind::HttpSse
    }

    fn identity(&self) -> String {
        self.identity.clone()
    }

    fn auth_partition(&self) -> Option<String> {
        self.inner.sender.auth.as_ref()?.cache_partition()
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            self.reader.lock().unwrap_or_else(|p| p.into_inner()).take();
            self.router.close(Error::closed());
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoint_resolution_stays_on_origin() {
        let base: Uri = "http://localhost:3000/sse".parse().unwrap_or_default();
        let ok = |r: &str| resolve_endpoint(&base, r).map(|u| u.to_string()).ok();
        assert_eq!(
            ok("/messages?sessionId=1").as_deref(),
            Some("http://localhost:3000/messages?sessionId=1")
        );
        assert_eq!(
            ok("messages").as_deref(),
            Some("http://localhost:3000/messages")
        );
        assert_eq!(
            ok("http://localhost:3000/m").as_deref(),
            Some("http://localhost:3000/m")
        );
        assert!(resolve_endpoint(&base, "http://evil.example/m").is_err());
    }
}
