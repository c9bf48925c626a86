//! `mcp check`: a quick health and compliance report of a server.

use crate::Common;
use crate::connect::{Target, builder, connect_with};
use crate::exit::{Failure, code};
use crate::output::print_json;
use ferromcp_client::protocol::header::x_mcp_header::find_invalid_x_mcp_header;
use ferromcp_client::{Era, EraPreference, RequestOptions};
use serde_json::{Value, json};
use std::time::Instant;

/// One line of the report.
struct Check {
    name: &'static str,
    ok: bool,
    detail: String,
    ms: Option<u128>,
}

fn hints(v: &Value) -> String {
    match (v.get("ttlMs"), v.get("cacheScope")) {
        (None, None) => "no caching hints".to_owned(),
        (t, s) => format!(
            "ttlMs={} cacheScope={}",
            t.map_or("-".into(), Value::to_string),
            s.map_or("-".into(), Value::to_string)
        ),
    }
}

/// Runs the checks against `target`.
pub async fn run(target: &Target, common: &Common) -> Result<u8, Failure> {
    let mut checks = Vec::new();
    let t0 = Instant::now();
    let client = connect_with(target, builder(common)).await?;
    checks.push(Check {
        name: "connect",
        ok: true,
        detail: format!(
            "{} era, version {}, {} transport",
            if client.era() == Era::Modern {
                "modern"
            } else {
                "handshake"
            },
            client.protocol_version(),
            format!("{:?}", client.transport_kind()).to_lowercase()
        ),
        ms: Some(t0.elapsed().as_millis()),
    });
    if client.era() == Era::Modern {
        let t = Instant::now();
        match client
            .request(
                "server/discover",
                None,
                RequestOptions::new().bypass_cache(),
            )
            .await
        {
            Ok(v) => checks.push(Check {
                name: "server/discover",
                ok: v.get("supportedVersions").is_some_and(Value::is_array),
                detail: format!(
                    "versions {}; {}",
                    v.get("supportedVersions")
                        .map_or("?".into(), Value::to_string),
                    hints(&v)
                ),
                ms: Some(t.elapsed().as_millis()),
            }),
            Err(e) => checks.push(Check {
                name: "server/discover",
                ok: false,
                detail: Failure::from(e).message,
                ms: Some(t.elapsed().as_millis()),
            }),
        }
    }
    let t = Instant::now();
    match client
        .request("tools/list", None, RequestOptions::new().bypass_cache())
        .await
    {
        Ok(v) => {
            let ms = Some(t.elapsed().as_millis());
            let tools = v
                .get("tools")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            let mut bad = Vec::new();
            for tool in &tools {
                let schema = tool.get("inputSchema").cloned().unwrap_or(Value::Null);
                if let Some(why) = find_invalid_x_mcp_header(&schema) {
                    let name = tool.get("name").and_then(Value::as_str).unwrap_or("?");
                    bad.push(format!("{name}: {why}"));
                }
            }
            checks.push(Check {
                name: "tools/list",
                ok: true,
                detail: format!("{} tools (first page); {}", tools.len(), hints(&v)),
                ms,
            });
            checks.push(Check {
                name: "x-mcp-header",
                ok: bad.is_empty(),
                detail: if bad.is_empty() {
                    "every annotation valid".to_owned()
                } else {
                    format!("invalid (clients drop these tools): {}", bad.join("; "))
                },
                ms: None,
            });
        }
        Err(e) => checks.push(Check {
            name: "tools/list",
            ok: false,
            detail: Failure::from(e).message,
            ms: Some(t.elapsed().as_millis()),
        }),
    }
    client.close().await;

    // The other era, to report what the server speaks.
    let other = if client.era() == Era::Modern {
        EraPreference::Handshake
    } else {
        EraPreference::Modern
    };
    let t = Instant::now();
    let label = if other == EraPreference::Handshake {
        "handshake era"
    } else {
        "modern era"
    };
    match connect_with(target, builder(common).era(other)).await {
        Ok(c) => {
            checks.push(Check {
                name: "other era",
                ok: true,
                detail: format!("{label} also served (version {})", c.protocol_version()),
                ms: Some(t.elapsed().as_millis()),
            });
            c.close().await;
        }
        Err(f) => checks.push(Check {
            name: "other era",
            ok: true,
            detail: format!("{label} not served ({})", f.message),
            ms: Some(t.elapsed().as_millis()),
        }),
    }

    if let Target::Url(_) = target {
        let t = Instant::now();
        let b = builder(common).header("Origin", "http://evil.example");
        let r = connect_with(target, b).await;
        let (ok, detail) = match r {
            Ok(c) => {
                c.close().await;
                (
                    false,
                    "a request with Origin: http://evil.example was accepted (DNS rebinding risk)"
                        .to_owned(),
                )
            }
            Err(f) => (true, format!("foreign Origin rejected ({})", f.message)),
        };
        checks.push(Check {
            name: "Origin protection",
            ok,
            detail,
            ms: Some(t.elapsed().as_millis()),
        });
    }

    let all_ok = checks.iter().all(|c| c.ok);
    if common.json {
        let v: Vec<Value> = checks
            .iter()
            .map(|c| json!({"check": c.name, "ok": c.ok, "detail": c.detail, "ms": c.ms}))
            .collect();
        print_json(&json!({"ok": all_ok, "checks": v}))?;
    } else {
        for c in &checks {
            let ms = c.ms.map(|m| format!(" ({m} ms)")).unwrap_or_default();
            out!(
                "{} {:<18} {}{ms}",
                if c.ok { "ok  " } else { "FAIL" },
                c.name,
                c.detail
            );
        }
    }
    Ok(if all_ok { code::OK } else { code::PROTOCOL })
}
