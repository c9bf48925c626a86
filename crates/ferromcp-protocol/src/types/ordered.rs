//! [`OrderedMap`]: a JSON object whose members keep the order they were
//! written in, for the places where that order means something to a person
//! (the fields of an elicitation form are asked in the server's order).

use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::BTreeMap;
use std::fmt;
use std::marker::PhantomData;

/// A string-keyed map that keeps insertion (wire) order and serializes as a
/// JSON object in that order.
///
/// Lookups are linear: it is meant for small, human-sized objects such as a
/// form's properties. Decoding is `O(n log n)` whatever the input, and a
/// repeated key keeps its first position with the last value, as
/// `serde_json` does for its own maps.
///
/// Equality is a JSON object's: the same members with equal values, in any
/// order (a map decoded from a `serde_json::Value`, whose own maps are
/// sorted, equals one decoded from the text).
#[derive(Debug, Clone)]
pub struct OrderedMap<V> {
    entries: Vec<(String, V)>,
}

impl<V: PartialEq> PartialEq for OrderedMap<V> {
    fn eq(&self, other: &Self) -> bool {
        if self.entries.len() != other.entries.len() {
            return false;
        }
        fn sorted<V>(m: &OrderedMap<V>) -> Vec<(&String, &V)> {
            let mut v: Vec<(&String, &V)> = m.iter().collect();
            v.sort_by(|a, b| a.0.cmp(b.0));
            v
        }
        sorted(self) == sorted(other)
    }
}

impl<V> Default for OrderedMap<V> {
    fn default() -> Self {
        Self {
            entries: Vec::new(),
        }
    }
}

impl<V> OrderedMap<V> {
    /// An empty map.
    pub fn new() -> Self {
        Self::default()
    }

    /// The number of members.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are no members.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The value under `key`.
    pub fn get(&self, key: &str) -> Option<&V> {
        self.entries.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// Whether `key` is present.
    pub fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// Sets `key` to `value`: in place when present (returning the old
    /// value), else appended.
    pub fn insert(&mut self, key: impl Into<String>, value: V) -> Option<V> {
        let key = key.into();
        match self.entries.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => Some(std::mem::replace(v, value)),
            None => {
                self.entries.push((key, value));
                None
            }
        }
    }

    /// The members in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&String, &V)> {
        self.entries.iter().map(|(k, v)| (k, v))
    }

    /// The keys in order.
    pub fn keys(&self) -> impl ExactSizeIterator<Item = &String> {
        self.entries.iter().map(|(k, _)| k)
    }

    /// The values in order.
    pub fn values(&self) -> impl ExactSizeIterator<Item = &V> {
        self.entries.iter().map(|(_, v)| v)
    }
}

impl<V> std::ops::Index<&str> for OrderedMap<V> {
    type Output = V;
    /// # Panics
    /// When `key` is absent, like `BTreeMap`'s index.
    fn index(&self, key: &str) -> &V {
        match self.get(key) {
            Some(v) => v,
            None => panic!("no member {key:?} in the map"),
        }
    }
}

impl<'a, V> IntoIterator for &'a OrderedMap<V> {
    type Item = (&'a String, &'a V);
    type IntoIter = std::iter::Map<
        std::slice::Iter<'a, (String, V)>,
        fn(&'a (String, V)) -> (&'a String, &'a V),
    >;
    fn into_iter(self) -> Self::IntoIter {
        fn pair<K, V>(e: &(K, V)) -> (&K, &V) {
            (&e.0, &e.1)
        }
        self.entries.iter().map(pair)
    }
}

impl<V> IntoIterator for OrderedMap<V> {
    type Item = (String, V);
    type IntoIter = std::vec::IntoIter<(String, V)>;
    fn into_iter(self) -> Self::IntoIter {
        self.entries.into_iter()
    }
}

impl<K: Into<String>, V> FromIterator<(K, V)> for OrderedMap<V> {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        let mut m = Self::new();
        let mut index: BTreeMap<String, usize> = BTreeMap::new();
        for (k, v) in iter {
            let k = k.into();
            match index.get(&k) {
                Some(&i) => m.entries[i].1 = v,
                None => {
                    index.insert(k.clone(), m.entries.len());
                    m.entries.push((k, v));
                }
            }
        }
        m
    }
}

impl<V> From<BTreeMap<String, V>> for OrderedMap<V> {
    fn from(m: BTreeMap<String, V>) -> Self {
        Self {
            entries: m.into_iter().collect(),
        }
    }
}

impl<V: Serialize> Serialize for OrderedMap<V> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.entries.len()))?;
        for (k, v) in &self.entries {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

impl<'de, V: Deserialize<'de>> Deserialize<'de> for OrderedMap<V> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V_<V>(PhantomData<V>);
        impl<'de, V: Deserialize<'de>> Visitor<'de> for V_<V> {
            type Value = OrderedMap<V>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
                let mut pairs = Vec::new();
                while let Some((k, v)) = a.next_entry::<String, V>()? {
                    pairs.push((k, v));
                }
                Ok(pairs.into_iter().collect())
            }
        }
        d.deserialize_map(V_(PhantomData))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_wire_order_through_a_round_trip() {
        let text = r#"{"name":1,"email":2,"age":3,"zone":4,"bio":5}"#;
        let m: OrderedMap<u8> = serde_json::from_str(text).unwrap_or_default();
        let keys: Vec<&str> = m.keys().map(String::as_str).collect();
        assert_eq!(keys, ["name", "email", "age", "zone", "bio"]);
        assert_eq!(serde_json::to_string(&m).unwrap_or_default(), text);
        assert_eq!(m["age"], 3);
    }

    #[test]
    fn equality_ignores_order() {
        let a: OrderedMap<u8> = serde_json::from_str(r#"{"x":1,"y":2}"#).unwrap_or_default();
        let b: OrderedMap<u8> = serde_json::from_str(r#"{"y":2,"x":1}"#).unwrap_or_default();
        let c: OrderedMap<u8> = serde_json::from_str(r#"{"y":2,"x":3}"#).unwrap_or_default();
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn a_repeated_key_keeps_its_place_and_the_last_value() {
        let m: OrderedMap<u8> = serde_json::from_str(r#"{"b":1,"a":2,"b":3}"#).unwrap_or_default();
        let pairs: Vec<(&String, &u8)> = m.iter().collect();
        assert_eq!(pairs.len(), 2);
        assert_eq!((pairs[0].0.as_str(), *pairs[0].1), ("b", 3));
        assert_eq!((pairs[1].0.as_str(), *pairs[1].1), ("a", 2));
    }

    #[test]
    fn many_keys_decode_without_quadratic_cost() {
        // 200k distinct members: a linear duplicate check per key would take
        // 2·10^10 comparisons; the index keeps it O(n log n).
        let mut text = String::from("{");
        for i in 0..200_000 {
            if i > 0 {
                text.push(',');
            }
            text.push_str(&format!("\"k{i}\":{}", i % 7));
        }
        text.push('}');
        let m: OrderedMap<u8> = serde_json::from_str(&text).unwrap_or_default();
        assert_eq!(m.len(), 200_000);
        assert_eq!(m.keys().next().map(String::as_str), Some("k0"));
    }
}
