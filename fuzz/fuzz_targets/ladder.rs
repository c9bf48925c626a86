//! The validation ladder with hostile headers.
//!
//! Input: header lines (`name: value`, raw bytes) up to the first empty
//! line, then the JSON-RPC body. The ladder runs once with the headers
//! (HTTP) and once without (stdio); it returns a route or a rejection whose
//! code is one the ladder may produce, never panics, and a rejection's
//! error serializes.
// LADDER-05…LADDER-14
#![no_main]

use libfuzzer_sys::fuzz_target;
use ferromcp_protocol::header::x_mcp_header::{ParamHeaderMap, x_mcp_header_map};
use ferromcp_protocol::jsonrpc::{OutgoingError, decode_message, to_vec};
use ferromcp_protocol::ladder::{Verdict, classify_inbound_request};
use ferromcp_protocol::version::ProtocolVersion;
use std::sync::{Arc, OnceLock};

fn region_tool() -> Option<Arc<ParamHeaderMap>> {
    static MAP: OnceLock<Option<Arc<ParamHeaderMap>>> = OnceLock::new();
    MAP.get_or_init(|| {
        let schema = serde_json::json!({
            "type": "object",
            "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "n": {"type": "integer", "x-mcp-header": "N"},
                "flag": {"type": "boolean", "x-mcp-header": "Flag"},
                "nested": {"type": "object", "properties": {"k": {"type": "string", "x-mcp-header": "K"}}}
            }
        });
        x_mcp_header_map(&schema).ok().map(Arc::new)
    })
    .clone()
}

fuzz_target!(|data: &[u8]| {
    let (head, body) = match data.windows(2).position(|w| w == b"\n\n") {
        Some(i) => (&data[..i], &data[i + 2..]),
        None => (&[][..], data),
    };
    let headers: Vec<(String, Vec<u8>)> = head
        .split(|b| *b == b'\n')
        .filter_map(|line| {
            let colon = line.iter().position(|b| *b == b':')?;
            let name = std::str::from_utf8(&line[..colon]).ok()?.to_owned();
            Some((name, line[colon + 1..].to_vec()))
        })
        .collect();
    let Ok(msg) = decode_message(body) else {
        return;
    };
    let lookup = |name: &str| (name == "region_tool").then(region_tool).flatten();
    let supported = &ProtocolVersion::MODERN;
    for h in [Some(&headers), None] {
        let verdict = classify_inbound_request(
            &msg,
            h.map(|h| h as &dyn ferromcp_protocol::header::HeaderList),
            supported,
            Some(&lookup),
        );
        match verdict {
            Ok(Verdict::Request(route)) => {
                assert!(supported.contains(&route.version));
            }
            Ok(Verdict::Notification) => {}
            Err(rej) => {
                let code = rej.error.code.0;
                assert!(
                    matches!(code, -32600 | -32602 | -32020 | -32021 | -32022),
                    "unexpected code {code}"
                );
                if h.is_none() {
                    assert_ne!(code, -32020, "header rungs run only with headers");
                }
                let bytes = to_vec(&OutgoingError::new(None, &rej.error));
                assert!(serde_json::from_slice::<serde_json::Value>(&bytes).is_ok());
            }
        }
    }
});
