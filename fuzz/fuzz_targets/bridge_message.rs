//! `mcp bridge`'s message path on hostile input: a host line or a remote
//! answer is classified, its id remapped to the bridge's and back, and
//! translated between protocol eras (the relay's pure steps, no I/O).
//!
//! Invariants, beyond "no panic":
//! - a classified message agrees with what a full JSON reading says (its
//!   kind, id, method; a response has exactly one of result and error);
//! - with the bridge's id spliced in, it classifies again as the same kind
//!   with that id, and nothing but the id changed; taking the id out of
//!   the map gives the original back, and splicing it in again gives the
//!   same bytes as splicing the original into the input;
//! - the tool name read strictly (the tool filter's reading) is the one a
//!   full JSON reading sees;
//! - every era translation that produces a message produces one that
//!   classifies as the same kind with the same id, has what it promises
//!   (the envelope added or removed, `resultType` present, `subscriptionId`
//!   gone) and is at most a constant factor larger than its input (only
//!   re-serialized numbers may widen: `1e15` becomes `1000000000000000.0`).
// BASE-*, META-03, RESULT-01, CACHE-01, MRTR-03
#![no_main]

use ferromcp_bridge::{IdMap, Kind, classify, fuzzing};
use ferromcp_protocol::RequestId;
use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Value};

const ENVELOPE: [&str; 4] = [
    "io.modelcontextprotocol/protocolVersion",
    "io.modelcontextprotocol/clientInfo",
    "io.modelcontextprotocol/clientCapabilities",
    "io.modelcontextprotocol/logLevel",
];

/// The methods `modern_result` treats differently (and one it does not).
const METHODS: [&str; 6] = [
    "tools/list",
    "resources/read",
    "resources/templates/list",
    "tools/call",
    "prompts/get",
    "x-ext/unknown",
];

fn id_of(k: &Kind) -> Option<&RequestId> {
    match k {
        Kind::Request { id, .. } => Some(id),
        Kind::Response { id } => id.as_ref(),
        Kind::Notification { .. } => None,
    }
}

/// `k` with its id replaced (the kind a remapped message must have).
fn with_kind_id(k: &Kind, new: &RequestId) -> Kind {
    match k {
        Kind::Request { method, .. } => Kind::Request {
            id: new.clone(),
            method: method.clone(),
        },
        Kind::Response { id: Some(_) } => Kind::Response {
            id: Some(new.clone()),
        },
        other => other.clone(),
    }
}

/// The bridge's own output must classify as `expected`.
fn classifies_as(out: &[u8], expected: &Kind, step: &str) {
    match classify(out) {
        Ok(c) => assert_eq!(
            c.kind(),
            expected,
            "{step}: {}",
            String::from_utf8_lossy(out)
        ),
        Err(e) => panic!(
            "{step}: the bridge's output is not JSON-RPC ({e:?}): {}",
            String::from_utf8_lossy(out)
        ),
    }
}

fn bounded(out: &[u8], input: usize, step: &str) {
    assert!(
        out.len() <= input * 5 + 512,
        "{step}: {} bytes out of {input}",
        out.len()
    );
}

fn object(bytes: &[u8]) -> Option<Map<String, Value>> {
    serde_json::from_slice(bytes).ok()
}

fn meta_of(msg: &Map<String, Value>) -> Option<&Map<String, Value>> {
    msg.get("params")?.get("_meta")?.as_object()
}

fuzz_target!(|data: &[u8]| {
    let Ok(c) = classify(data) else { return };
    let kind = c.kind().clone();
    // Numbers out of f64 range pass the raw reading (they cross
    // untouched) but not serde_json's Value: those checks are skipped.
    let full = object(data);
    if let Some(v) = &full {
        match &kind {
            Kind::Request { id, method } => {
                assert_eq!(
                    v.get("method").and_then(Value::as_str),
                    Some(method.as_str())
                );
                assert_eq!(
                    v.get("id").and_then(RequestId::from_value).as_ref(),
                    Some(id)
                );
            }
            Kind::Notification { method } => {
                assert_eq!(
                    v.get("method").and_then(Value::as_str),
                    Some(method.as_str())
                );
                assert!(!v.contains_key("id"));
            }
            Kind::Response { id } => {
                assert!(v.contains_key("result") != v.contains_key("error"));
                assert_eq!(
                    v.get("id").and_then(RequestId::from_value).as_ref(),
                    id.as_ref()
                );
            }
        }
        if let Ok(name) = c.param_str_strict("name") {
            assert_eq!(
                v.get("params")
                    .and_then(|p| p.get("name"))
                    .and_then(Value::as_str),
                Some(name.as_ref())
            );
        }
    }

    // Id remapping: out with the bridge's id and back.
    if let Some(original) = id_of(&kind) {
        let mut map = IdMap::new(4);
        let local = map
            .insert(original.clone(), ())
            .expect("an empty map takes an id");
        let out = c.with_id(&local);
        classifies_as(&out, &with_kind_id(&kind, &local), "with the bridge's id");
        assert!(
            out.len() <= data.len() + 20,
            "an i64 id is at most 20 bytes"
        );
        if let (Some(mut a), Some(mut b)) = (full.clone(), object(&out)) {
            a.remove("id");
            b.remove("id");
            assert_eq!(a, b, "only the id changes");
        }
        let (back, ()) = map.take(&local).expect("the bridge's id is known");
        assert_eq!(&back, original);
        assert!(map.is_empty());
        let outbound = match classify(&out) {
            Ok(o) => o.with_id(&back),
            Err(e) => panic!("{e:?}"),
        };
        assert_eq!(outbound, c.with_id(original), "the answer gets its id back");
    }

    // Era translation, host → remote and remote → host.
    let n = data.len();
    if let Some(out) = fuzzing::strip_envelope(data) {
        classifies_as(&out, &kind, "strip_envelope");
        bounded(&out, n, "strip_envelope");
        if let Some(meta) = object(&out).as_ref().and_then(meta_of) {
            for k in ENVELOPE {
                assert!(!meta.contains_key(k), "strip_envelope left {k}");
            }
        }
    }
    let info = serde_json::json!({"name": "fuzz-host", "version": "1"});
    let caps = serde_json::json!({"sampling": {}, "tasks": {}});
    let level = (n % 2 == 0).then(|| Value::from("debug"));
    if let Some(out) = fuzzing::add_envelope(data, info, Some(&caps), level) {
        classifies_as(&out, &kind, "add_envelope");
        bounded(&out, n, "add_envelope");
        if let Some(o) = object(&out) {
            let meta = meta_of(&o).expect("the envelope is added");
            assert_eq!(
                meta.get(ENVELOPE[0]).and_then(Value::as_str),
                Some("2026-07-28")
            );
            assert!(meta.contains_key(ENVELOPE[1]) && meta.contains_key(ENVELOPE[2]));
        }
        // Adding the envelope, then stripping it, is stripping it (a
        // message without params gets `params: {}`).
        if let (Some(a), Some(b)) = (fuzzing::strip_envelope(&out), fuzzing::strip_envelope(data)) {
            if let (Some(a), Some(b)) = (object(&a), object(&b)) {
                let empty = Value::Object(Map::new());
                let params =
                    |o: &Map<String, Value>| o.get("params").cloned().unwrap_or(empty.clone());
                assert_eq!(params(&a), params(&b), "strip(add(x)) != strip(x)");
            }
        }
    }
    let method = METHODS[n % METHODS.len()];
    let out = fuzzing::modern_result(data.to_vec(), method);
    classifies_as(&out, &kind, "modern_result");
    bounded(&out, n, "modern_result");
    // A remote's own resultType (of any type) is kept, not judged.
    if out != data {
        let result = object(&out).and_then(|o| o.get("result").cloned());
        if let Some(r) = result {
            assert!(r.get("resultType").is_some(), "{r}");
        }
    }
    if let Some(out) = fuzzing::without_subscription_id(data) {
        classifies_as(&out, &kind, "without_subscription_id");
        bounded(&out, n, "without_subscription_id");
        if let Some(meta) = object(&out).as_ref().and_then(meta_of) {
            assert!(!meta.contains_key("subscriptionId"));
        }
    }
    if let Some(r) = fuzzing::input_required(data) {
        assert_eq!(
            r.get("resultType").and_then(Value::as_str),
            Some("input_required")
        );
        // The next round of the request, answered with what was asked.
        let asked = r
            .get("inputRequests")
            .and_then(Value::as_object)
            .map(|m| {
                m.keys()
                    .map(|k| (k.clone(), Value::from("answer")))
                    .collect()
            })
            .unwrap_or_default();
        let sent = br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"t"}}"#;
        let state = r.get("requestState").cloned();
        let next = fuzzing::with_input_responses(sent, asked, state.clone())
            .expect("a request with params takes input responses");
        classifies_as(
            &next,
            &Kind::Request {
                id: RequestId::number(3),
                method: "tools/call".into(),
            },
            "with_input_responses",
        );
        let o = object(&next).expect("re-serialized params are JSON");
        assert_eq!(o["params"].get("requestState"), state.as_ref());
    }
});
