//! `mcp bridge`'s id map (`IdMap`) driven by a hostile sequence of
//! operations, checked against a model after each one: an id mapped then
//! taken back returns the original; the bridge's ids are unique among the
//! outstanding entries; an original already in flight and a full map are
//! refused; cancellation, rebinding (an input round continued under a new
//! host request) and shutdown return exactly what is outstanding; the
//! bound is never exceeded. Originals are drawn from a small set of string
//! and integer ids, so `"1"` and `1` meet often.
//!
//! Input: two bytes per operation, the first picks it, the second its
//! argument.
// BASE-08 (id uniqueness), CANCEL-01
#![no_main]

use ferromcp_bridge::{IdMap, MapError};
use ferromcp_protocol::RequestId;
use libfuzzer_sys::fuzz_target;

const MAX: usize = 4;

fn original(arg: u8) -> RequestId {
    let n = arg >> 2;
    match arg & 3 {
        0 => RequestId::number(i64::from(n % 8)),
        1 => RequestId::string((n % 8).to_string()),
        2 => RequestId::number(i64::MIN + i64::from(n)),
        _ => RequestId::string(format!("ferromcp-bridge/{}", n % 4)),
    }
}

fuzz_target!(|data: &[u8]| {
    let mut map: IdMap<u32> = IdMap::new(MAX);
    // (original, the bridge's id, value), oldest first.
    let mut model: Vec<(RequestId, RequestId, u32)> = Vec::new();
    let mut counter = 0u32;
    for op in data.chunks_exact(2) {
        let (which, arg) = (op[0] % 6, op[1]);
        // An outstanding bridge id, or one the map never issued.
        let local = match model.get(usize::from(arg) % (model.len() + 1)) {
            Some((_, l, _)) => l.clone(),
            None => original(arg),
        };
        match which {
            0 => {
                let o = original(arg);
                counter += 1;
                let got = map.insert(o.clone(), counter);
                if model.iter().any(|(m, _, _)| *m == o) {
                    assert_eq!(got, Err(MapError::InFlight));
                } else if model.len() >= MAX {
                    assert_eq!(got, Err(MapError::Full(MAX)));
                } else {
                    let l = got.expect("room and a fresh original");
                    assert!(model.iter().all(|(_, m, _)| *m != l), "bridge id reused");
                    model.push((o, l, counter));
                }
            }
            1 => {
                let expected = model
                    .iter()
                    .position(|(_, l, _)| *l == local)
                    .map(|i| model.remove(i));
                assert_eq!(map.take(&local), expected.map(|(o, _, v)| (o, v)));
            }
            2 => {
                let o = original(arg);
                let expected = model
                    .iter()
                    .position(|(m, _, _)| *m == o)
                    .map(|i| model.remove(i));
                assert_eq!(map.take_original(&o), expected.map(|(_, l, v)| (l, v)));
            }
            3 => {
                let o = original(arg.rotate_left(3));
                let got = map.rebind(&local, o.clone());
                if model.iter().any(|(m, _, _)| *m == o) {
                    assert_eq!(got, Err(MapError::InFlight));
                } else if let Some(e) = model.iter_mut().find(|(_, l, _)| *l == local) {
                    let old = std::mem::replace(&mut e.0, o);
                    assert_eq!(got, Ok(Some(old)));
                } else {
                    assert_eq!(got, Ok(None));
                }
            }
            4 => {
                let expected = model.iter().find(|(_, l, _)| *l == local);
                assert_eq!(
                    map.get(&local),
                    expected.map(|(o, _, v)| (o.clone(), *v)).as_ref()
                );
            }
            _ => {
                if arg % 8 == 0 {
                    let mut got = map.drain();
                    let mut expected: Vec<_> = model.drain(..).map(|(o, _, v)| (o, v)).collect();
                    got.sort_by_key(|e| e.1);
                    expected.sort_by_key(|e| e.1);
                    assert_eq!(got, expected);
                }
            }
        }
        assert_eq!(map.len(), model.len());
        assert_eq!(map.is_empty(), model.is_empty());
        assert!(map.len() <= MAX);
    }
});
