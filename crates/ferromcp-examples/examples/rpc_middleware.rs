//! RPC-level middleware: an audit log and a rate limit around the demo
//! server, the same over stdio and HTTP, in both eras.
//!
//! ```sh
//! cargo run  -p ferromcp-examples --example rpc_middleware   # prints the audit log
//! cargo test -p ferromcp-examples --example rpc_middleware   # the checks below
//! ```
//!
//! `ServerBuilder::layer` adds middleware around the server's dispatcher.
//! It sees each admitted request (`req.method()`, `req.name()`,
//! `req.principal()`, `req.era()`, `req.id()`), may refuse it with a
//! JSON-RPC error (`RpcResponse::refuse`) so the handler never runs, and
//! sees the answer on its way out (`answer.error()`). Layers added first are
//! outermost. This example runs the server in memory (the stdio wire);
//! served over HTTP with `serve_http`, the same layers apply, and
//! `req.principal()` is the caller an authentication layer verified.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use ferromcp_client::{ClientBuilder, EraPreference};
use ferromcp_server::Server;
use ferromcp_server::middleware::{self, RpcResponse};
use ferromcp_server::protocol::{ErrorCode, ErrorObject};

/// One line per request: method, name, era and how it was answered.
type AuditLog = Arc<Mutex<Vec<String>>>;

/// The error code a rate-limited call is refused with.
const RATE_LIMITED: ErrorCode = ErrorCode(-32029);

/// The demo server with an audit log (outermost, so it also records the
/// rate limit's refusals) and a limit of `max_calls` `tools/call`s.
fn server(log: AuditLog, max_calls: usize) -> Result<Server, ferromcp_server::Error> {
    let audit = middleware::from_fn(move |req, next| {
        let log = log.clone();
        async move {
            let line = format!(
                "{:?} {} {} {}",
                req.era(),
                req.id(),
                req.method(),
                req.name().unwrap_or("-")
            );
            let answer = next.run(req).await;
            let outcome = match answer.error() {
                None => "ok".to_owned(),
                Some(e) => format!("error {}: {}", e.code, e.message),
            };
            if let Ok(mut l) = log.lock() {
                l.push(format!("{line} → {outcome}"));
            }
            answer
        }
    });
    let calls = Arc::new(AtomicUsize::new(0));
    let limit = middleware::from_fn(move |req, next| {
        let calls = calls.clone();
        async move {
            if req.method() == "tools/call" && calls.fetch_add(1, Ordering::SeqCst) >= max_calls {
                return RpcResponse::refuse(ErrorObject::new(
                    RATE_LIMITED,
                    "rate limit reached; try again later",
                ));
            }
            next.run(req).await
        }
    });
    ferromcp_examples::demo_builder()
        .layer(audit)
        .layer(limit)
        .build()
}

/// Three calls against a limit of two, in `era`; returns the audit log.
async fn run(era: EraPreference) -> Result<Vec<String>, Box<dyn std::error::Error>> {
    let log = AuditLog::default();
    let (read, write) = server(log.clone(), 2)?.serve_in_memory();
    let client = ClientBuilder::new("middleware-example", "1.0.0")
        .era(era)
        .connect_io(read, write)
        .await?;
    let args = serde_json::json!({"a": 1, "b": 2});
    for _ in 0..3 {
        // The third is refused: a JSON-RPC error, reported by the client.
        let _ = client.call_tool("add", args.as_object().cloned()).await;
    }
    client.close().await;
    let lines = log.lock().map(|l| l.clone()).unwrap_or_default();
    Ok(lines)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    for era in [EraPreference::Modern, EraPreference::Handshake] {
        for line in run(era).await? {
            println!("{line}");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    fn calls(log: &[String]) -> Vec<&String> {
        log.iter().filter(|l| l.contains("tools/call")).collect()
    }

    #[tokio::test]
    async fn the_third_call_is_refused_and_every_call_is_audited_in_both_eras() -> TestResult {
        for (era, name) in [
            (EraPreference::Modern, "Modern"),
            (EraPreference::Handshake, "Handshake"),
        ] {
            let log = run(era).await?;
            let calls = calls(&log);
            assert_eq!(calls.len(), 3, "{log:?}");
            assert!(calls.iter().all(|l| l.starts_with(name)), "{log:?}");
            assert!(
                calls.iter().all(|l| l.contains("tools/call add")),
                "{log:?}"
            );
            assert!(calls[0].ends_with("→ ok") && calls[1].ends_with("→ ok"));
            assert!(
                calls[2].contains("error -32029: rate limit reached"),
                "{log:?}"
            );
        }
        Ok(())
    }
}
