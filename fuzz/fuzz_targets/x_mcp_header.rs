//! `x-mcp-header` schema validation and `Mcp-Param-*` emit/validate.
//!
//! Input: a tool `inputSchema` (JSON), a newline, then `arguments` (JSON).
//! The schema walker never panics on any JSON (deep, cyclic-looking,
//! wrongly typed); for a valid schema, the headers a client emits for the
//! arguments pass the server's validation (both ends agree by construction)
//! unless an annotated argument has the wrong JSON type (then the server
//! refuses, fail closed), and a duplicated header line never passes.
// HDR-11…HDR-20
#![no_main]

use libfuzzer_sys::fuzz_target;
use ferromcp_protocol::header::x_mcp_header::{find_invalid_x_mcp_header, x_mcp_header_map};
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let (schema, args) = match data.iter().position(|b| *b == b'\n') {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &b"{}"[..]),
    };
    let Ok(schema) = serde_json::from_slice::<Value>(schema) else {
        return;
    };
    let map = x_mcp_header_map(&schema);
    assert_eq!(map.is_err(), find_invalid_x_mcp_header(&schema).is_some());
    let Ok(map) = map else {
        return;
    };
    let args = serde_json::from_slice::<Value>(args).ok();
    let args = args.as_ref().and_then(Value::as_object);
    let headers = map.emit(args);
    let verdict = map.validate(args, &headers);
    // An annotated argument of the wrong JSON type has no header form: the
    // client omits it and the server refuses the call (fail closed, see
    // ferromcp_protocol::header::params). Otherwise both ends must agree.
    let renderable =
        map.iter().all(
            |p| match args.and_then(|a| p.argument(a)).filter(|v| !v.is_null()) {
                None => true,
                Some(v) => p.kind.render(v).is_some(),
            },
        );
    if renderable {
        if let Err(e) = verdict {
            panic!("emitted headers {headers:?} rejected: {e:?}");
        }
    } else {
        assert!(verdict.is_err(), "unrenderable argument accepted");
    }
    if let Some(first) = headers.first().cloned() {
        let mut doubled = headers.clone();
        doubled.push(first);
        assert!(map.validate(args, &doubled).is_err(), "duplicate accepted");
    }
});
