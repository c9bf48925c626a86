//! `requestState` unsealing: any attacker-supplied token is
//! refused without panicking; a sealed token opens only unmodified and only
//! under the binding it was sealed with.
//!
//! Input: byte 0 picks a mode. Mode 0: the rest is a token to open. Mode 1:
//! the rest is state bytes; it is sealed, then one byte of the token (at a
//! position and with a value taken from the input) is changed, and the
//! result must not open.
// MRTR-08/09
#![no_main]

use libfuzzer_sys::fuzz_target;
use ferromcp_server::request_state::{KeyRing, StateBinding, StateSealer};
use ferromcp_server::testing::ManualClock;
use std::sync::{Arc, OnceLock};

const NOW: u64 = 1_800_000_000;

fn sealer() -> &'static StateSealer {
    static S: OnceLock<StateSealer> = OnceLock::new();
    S.get_or_init(|| {
        let ring = KeyRing::new("fuzz", [7; 32]).expect("valid kid");
        StateSealer::new(ring).with_clock(Arc::new(ManualClock::new(NOW)))
    })
}

fuzz_target!(|data: &[u8]| {
    let args = serde_json::json!({"x": 1});
    let binding = StateBinding::new("tools/call", "t", Some(&args), None);
    match data.split_first() {
        Some((0, token)) => {
            let token = String::from_utf8_lossy(token);
            assert!(
                sealer().open(&token, &binding).is_err(),
                "forged token accepted"
            );
        }
        Some((_, rest)) if rest.len() >= 2 => {
            let (pos, byte, state) = (usize::from(rest[0]), rest[1], &rest[2..]);
            let token = sealer().seal(&binding, state).expect("seal");
            assert_eq!(sealer().open(&token, &binding).as_deref(), Ok(state));
            let other = StateBinding::new("tools/call", "u", Some(&args), None);
            assert!(sealer().open(&token, &other).is_err());
            let mut bytes = token.into_bytes();
            let i = pos % bytes.len();
            if bytes[i] != byte {
                bytes[i] = byte;
                let tampered = String::from_utf8_lossy(&bytes);
                assert!(
                    sealer().open(&tampered, &binding).is_err(),
                    "tampered token accepted"
                );
            }
        }
        _ => {}
    }
});
