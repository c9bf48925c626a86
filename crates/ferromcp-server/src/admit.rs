//! One admission step for every transport: after the transport has framed
//! a request and (modern wire) the ladder has checked its envelope, the
//! request is admitted here or refused with the JSON-RPC error to send.
//!
//! The era rule for methods ([`client_method_exists_in`]) is
//! applied before the params are typed, so a method that does not exist on
//! this wire is -32601 whatever its params; then the params are decoded
//! (with the ladder's probed members when there are any), unknown methods
//! are -32601, and `subscriptions/listen` is split from calls.
//! Adding a method rule touches `ferromcp_protocol::method` only.
// BASE-12, ERR-08

use ferromcp_protocol::Era;
use ferromcp_protocol::ErrorObject;
use ferromcp_protocol::ladder::ProbedMembers;
use ferromcp_protocol::method::{ClientRequest, client_method_exists_in};
use ferromcp_protocol::types::SubscriptionFilter;
use serde_json::value::RawValue;

/// An admitted request.
#[derive(Debug)]
pub(crate) enum Admitted {
    /// A request for the dispatcher.
    Call(ClientRequest<'static>),
    /// `subscriptions/listen` (modern wire only), served by the transport's
    /// stream.
    Listen(SubscriptionFilter),
}

/// Admits request `method` with `params` on `era`'s wire.
pub(crate) fn admit(
    method: &str,
    params: Option<&RawValue>,
    members: Option<&ProbedMembers<'_>>,
    era: Era,
) -> Result<Admitted, ErrorObject> {
    if !client_method_exists_in(method, era) {
        return Err(ErrorObject::method_not_found(method));
    }
    let typed = match members {
        Some(m) => ClientRequest::decode_probed(method, params, m)?,
        None => ClientRequest::decode(method, params)?,
    };
    Ok(match typed.into_owned()? {
        ClientRequest::Listen(p) => Admitted::Listen(p.notifications),
        other => Admitted::Call(other),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(s: &str) -> Option<&RawValue> {
        serde_json::from_str::<&RawValue>(s).ok()
    }

    #[test]
    fn each_wire_refuses_the_other_eras_methods_before_reading_params() {
        // Bad params would be -32602: the era rule comes first (-32601).
        let junk = raw(r#"{"level": 7}"#);
        for m in [
            "initialize",
            "ping",
            "logging/setLevel",
            "resources/subscribe",
        ] {
            let e = admit(m, junk, None, Era::Modern).unwrap_err();
            assert_eq!(
                e.code,
                ferromcp_protocol::ErrorCode::METHOD_NOT_FOUND,
                "{m}"
            );
        }
        for m in ["server/discover", "subscriptions/listen", "tasks/get"] {
            let e = admit(m, junk, None, Era::Handshake).unwrap_err();
            assert_eq!(
                e.code,
                ferromcp_protocol::ErrorCode::METHOD_NOT_FOUND,
                "{m}"
            );
        }
    }

    #[test]
    fn unknown_methods_are_not_found_and_listen_is_split() {
        let e = admit("vendor/thing", None, None, Era::Modern).unwrap_err();
        assert_eq!(e.code, ferromcp_protocol::ErrorCode::METHOD_NOT_FOUND);
        let l = admit(
            "subscriptions/listen",
            raw(r#"{"notifications":{"toolsListChanged":true}}"#),
            None,
            Era::Modern,
        );
        assert!(matches!(l, Ok(Admitted::Listen(_))), "{l:?}");
        let c = admit("tools/list", None, None, Era::Handshake);
        assert!(matches!(c, Ok(Admitted::Call(ClientRequest::ListTools(_)))));
        let e = admit("tools/call", raw(r#"{"name": 5}"#), None, Era::Modern).unwrap_err();
        assert_eq!(e.code, ferromcp_protocol::ErrorCode::INVALID_PARAMS);
    }
}
