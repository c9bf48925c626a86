//! Owned inbound JSON-RPC messages, decoded with the protocol crate's framing.

use crate::error::{Error, Result};
use ferromcp_protocol::jsonrpc::{self, Message};
use ferromcp_protocol::{ErrorObject, RequestId};
use serde_json::value::RawValue;

/// One message from the server.
#[derive(Debug, Clone)]
pub(crate) enum Inbound {
    /// A response to one of our requests.
    Response {
        /// The id answered; `None` for `"id": null`.
        id: Option<RequestId>,
        /// The raw result, or the peer's error.
        outcome: std::result::Result<Box<RawValue>, ErrorObject>,
    },
    /// A notification.
    Notification {
        /// The method.
        method: String,
        /// The raw params.
        params: Option<Box<RawValue>>,
    },
    // LEGACY-18
    /// A server→client request (handshake era only).
    Request {
        /// The id to answer.
        id: RequestId,
        /// The method.
        method: String,
        /// The raw params.
        params: Option<Box<RawValue>>,
    },
}

impl Inbound {
    // BASE-01, BASE-09
    /// Decodes one JSON-RPC message (batches are refused).
    pub(crate) fn decode(bytes: &[u8]) -> Result<Self> {
        let msg = jsonrpc::decode_message(bytes).map_err(|e| {
            Error::invalid(format!("malformed JSON-RPC message: {}", e.error.message))
        })?;
        Ok(match msg {
            Message::Request(r) => Inbound::Request {
                id: r.id,
                method: r.method.into_owned(),
                params: r.params.map(|p| p.to_owned()),
            },
            Message::Notification(n) => Inbound::Notification {
                method: n.method.into_owned(),
                params: n.params.map(|p| p.to_owned()),
            },
            Message::Response(r) => Inbound::Response {
                id: r.id,
                outcome: r.outcome.map(|p| p.to_owned()),
            },
        })
    }

    /// The `progressToken` of a `notifications/progress`, if this is one.
    pub(crate) fn progress_token(&self) -> Option<RequestId> {
        match self {
            Inbound::Notification { method, params } if method == "notifications/progress" => {
                let v: serde_json::Value = serde_json::from_str(params.as_ref()?.get()).ok()?;
                RequestId::from_value(v.get("progressToken")?)
            }
            _ => None,
        }
    }

    // STDIO-06, CANCEL-07
    /// The `_meta` subscription id of a notification, or the
    /// `requestId` of a server `notifications/cancelled` (which only ever
    /// names a listen stream).
    pub(crate) fn stream_id(&self) -> Option<RequestId> {
        let Inbound::Notification { method, params } = self else {
            return None;
        };
        let v: serde_json::Value = serde_json::from_str(params.as_ref()?.get()).ok()?;
        if method == ferromcp_protocol::method::NOTIFICATIONS_CANCELLED {
            return RequestId::from_value(v.get("requestId")?);
        }
        RequestId::from_value(
            v.get("_meta")?
                .get(ferromcp_protocol::meta::SUBSCRIPTION_ID)?,
        )
    }
}

/// The `id` of a message that is meant as a response (an object with an
/// `id` and no `method`) but did not decode, so that the request it answers
/// can fail at once instead of at its timeout; bytes that are not UTF-8 are
/// read lossily for this purpose only.
pub(crate) fn answered_id(bytes: &[u8]) -> Option<RequestId> {
    let text = String::from_utf8_lossy(bytes);
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    let obj = v.as_object()?;
    if obj.contains_key("method") {
        return None;
    }
    RequestId::from_value(obj.get("id")?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_the_three_shapes() {
        let r = Inbound::decode(br#"{"jsonrpc":"2.0","id":1,"result":{"a":1}}"#);
        assert!(matches!(
            r,
            Ok(Inbound::Response {
                id: Some(_),
                outcome: Ok(_)
            })
        ));
        let e = Inbound::decode(
            br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"x"}}"#,
        );
        assert!(matches!(
            e,
            Ok(Inbound::Response {
                id: None,
                outcome: Err(_)
            })
        ));
        let n = Inbound::decode(
            br#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t-1","progress":1}}"#,
        );
        assert_eq!(
            n.ok().and_then(|n| n.progress_token()),
            Some(RequestId::string("t-1"))
        );
        let q = Inbound::decode(br#"{"jsonrpc":"2.0","id":"s1","method":"roots/list"}"#);
        assert!(matches!(q, Ok(Inbound::Request { .. })));
        assert!(Inbound::decode(b"[1]").is_err());
    }

    #[test]
    fn answered_ids_of_malformed_responses() {
        assert_eq!(
            answered_id(br#"{"jsonrpc":"2.0","id":7,"error":{"code":"x"}}"#),
            Some(RequestId::number(7))
        );
        assert_eq!(
            answered_id(b"{\"id\":\"a\",\"result\":\"\xff\"}"),
            Some(RequestId::string("a"))
        );
        assert_eq!(answered_id(br#"{"id":1,"method":"ping","x":}"#), None);
        assert_eq!(answered_id(br#"{"id":1,"method":5}"#), None);
        assert_eq!(answered_id(br#"{"id":[1]}"#), None);
        assert_eq!(answered_id(b"[1]"), None);
    }

    #[test]
    fn stream_ids() {
        let n = Inbound::decode(
            br#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"listen-1"}}}"#,
        );
        assert_eq!(
            n.ok().and_then(|n| n.stream_id()),
            Some(RequestId::string("listen-1"))
        );
        let c = Inbound::decode(
            br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}"#,
        );
        assert_eq!(
            c.ok().and_then(|n| n.stream_id()),
            Some(RequestId::number(3))
        );
    }
}
