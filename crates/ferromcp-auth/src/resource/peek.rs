//! What a request body asks for: the JSON-RPC `method` and, for
//! `tools/call`, `params.name`, read without decoding anything else.

use serde::Deserialize;
use serde_json::value::RawValue;
use std::borrow::Cow;

/// One operation of a request body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Op {
    /// The JSON-RPC method (`None` for a response object).
    pub(crate) method: Option<String>,
    /// The tool named by a `tools/call`, when readable.
    pub(crate) tool: Option<String>,
    /// A `tools/call` whose tool name could not be read: treated as
    /// needing every tool scope (fail closed).
    pub(crate) tool_unreadable: bool,
}

/// The operations of a body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Ops {
    /// A message or a batch, every element read.
    Known(Vec<Op>),
    /// JSON, but not a shape we can read with certainty (duplicate
    /// members, odd types): needs every configured scope (fail closed).
    Unreadable,
    /// Not JSON at all: the server rejects it (-32700) before running
    /// anything, so only the endpoint scopes apply.
    NotJson,
}

#[derive(Deserialize)]
struct Msg<'a> {
    #[serde(borrow, default)]
    method: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    params: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct Named<'a> {
    #[serde(borrow)]
    name: Cow<'a, str>,
}

fn op(m: Msg<'_>) -> Op {
    let method = m.method.map(Cow::into_owned);
    let mut tool = None;
    let mut tool_unreadable = false;
    if method.as_deref() == Some("tools/call") {
        match m
            .params
            .and_then(|p| serde_json::from_str::<Named<'_>>(p.get()).ok())
        {
            Some(n) => tool = Some(n.name.into_owned()),
            None => tool_unreadable = true,
        }
    }
    Op {
        method,
        tool,
        tool_unreadable,
    }
}

/// Reads the operations of `body` (a single message or a 2025-03-26 batch).
pub(crate) fn operations(body: &[u8]) -> Ops {
    let first = body
        .iter()
        .copied()
        .find(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'));
    let parsed = match first {
        Some(b'[') => {
            serde_json::from_slice::<Vec<Msg<'_>>>(body).map(|v| v.into_iter().map(op).collect())
        }
        _ => serde_json::from_slice::<Msg<'_>>(body).map(|m| vec![op(m)]),
    };
    match parsed {
        Ok(ops) => Ops::Known(ops),
        Err(_) if serde_json::from_slice::<serde::de::IgnoredAny>(body).is_err() => Ops::NotJson,
        Err(_) => Ops::Unreadable,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(method: &str, tool: Option<&str>) -> Op {
        Op {
            method: Some(method.into()),
            tool: tool.map(str::to_owned),
            tool_unreadable: false,
        }
    }

    #[test]
    fn reads_method_and_tool() {
        assert_eq!(
            operations(br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{"name":"x"},"name":"admin"}}"#),
            Ops::Known(vec![op("tools/call", Some("admin"))])
        );
        assert_eq!(
            operations(br#" {"jsonrpc":"2.0","id":1,"method":"tools/list"}"#),
            Ops::Known(vec![op("tools/list", None)])
        );
        // A response object (handshake-era client answer) has no method.
        assert_eq!(
            operations(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#),
            Ops::Known(vec![Op {
                method: None,
                tool: None,
                tool_unreadable: false
            }])
        );
        // Escapes are decoded, as the server will decode them.
        assert_eq!(
            operations(br#"{"method":"tools\/call","params":{"name":"adm\u0069n"}}"#),
            Ops::Known(vec![op("tools/call", Some("admin"))])
        );
    }

    #[test]
    fn batches_list_every_element() {
        assert_eq!(
            operations(br#"[{"method":"ping","id":1},{"method":"tools/call","id":2,"params":{"name":"a"}}]"#),
            Ops::Known(vec![op("ping", None), op("tools/call", Some("a"))])
        );
    }

    #[test]
    fn fails_closed_on_ambiguity() {
        // Duplicate members: servers may disagree on which copy wins.
        assert_eq!(
            operations(br#"{"method":"ping","method":"tools/call"}"#),
            Ops::Unreadable
        );
        assert_eq!(operations(br#"{"method":5}"#), Ops::Unreadable);
        assert_eq!(operations(br#"[1]"#), Ops::Unreadable);
        let dup = operations(br#"{"method":"tools/call","params":{"name":"a","name":"b"}}"#);
        assert_eq!(
            dup,
            Ops::Known(vec![Op {
                method: Some("tools/call".into()),
                tool: None,
                tool_unreadable: true
            }])
        );
        assert_eq!(operations(b"{not json"), Ops::NotJson);
        assert_eq!(operations(b""), Ops::NotJson);
    }
}
