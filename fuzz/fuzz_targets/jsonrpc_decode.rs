//! JSON-RPC decoding: any byte string is decoded into
//! a message or a -32700/-32600 error, never a panic; ids round-trip
//! exactly; request params decode into their typed method or a JSON-RPC
//! error; batches split without panicking.
// BASE-*, LADDER-04/05
#![no_main]

use libfuzzer_sys::fuzz_target;
use ferromcp_protocol::jsonrpc::{Message, OutgoingError, decode_message, split_batch, to_vec};
use ferromcp_protocol::ladder::ParamsProbe;
use ferromcp_protocol::method::ClientRequest;

fuzz_target!(|data: &[u8]| {
    match decode_message(data) {
        Ok(Message::Request(r)) => {
            // The id is echoed exactly: it serializes and re-reads as itself.
            let echoed = serde_json::to_value(&r.id).expect("ids serialize");
            assert_eq!(
                ferromcp_protocol::RequestId::from_value(&echoed).as_ref(),
                Some(&r.id)
            );
            let _ = ParamsProbe::parse(r.params);
            // Malformed arguments of every method end as an ErrorObject.
            if let Err(e) = ClientRequest::decode(&r.method, r.params) {
                let bytes = to_vec(&OutgoingError::new(Some(&r.id), &e));
                assert!(serde_json::from_slice::<serde_json::Value>(&bytes).is_ok());
            }
        }
        Ok(Message::Notification(n)) => {
            let _ = ParamsProbe::parse(n.params);
        }
        Ok(Message::Response(_)) => {}
        Err(e) => {
            let code = e.error.code.0;
            assert!(code == -32700 || code == -32600, "unexpected code {code}");
            // The error response we would send is valid JSON.
            let bytes = to_vec(&OutgoingError::new(e.id.as_ref(), &e.error));
            assert!(serde_json::from_slice::<serde_json::Value>(&bytes).is_ok());
        }
    }
    if let Some(Ok(items)) = split_batch(data) {
        for item in items {
            let _ = decode_message(item.get().as_bytes());
        }
    }
});
