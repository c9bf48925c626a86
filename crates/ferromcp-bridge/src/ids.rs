//! Request id remapping between two peers.
//!
//! Each side chooses its own ids, of any JSON-RPC kind (strings and
//! integers; `"1"` and `1` are different ids). The bridge gives every
//! request it forwards a fresh id of its own, remembers the original, and
//! puts the original back on the answer, so ids from different sides (or,
//! later, different hosts) can never collide. An entry is freed when its
//! answer passes, when it is cancelled, or when its exchange fails; the
//! number of outstanding entries is bounded.

use ferromcp_protocol::RequestId;
use std::collections::HashMap;

/// Why an id could not be mapped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MapError {
    /// The original id is already waiting for an answer.
    InFlight,
    /// As many requests as allowed are already waiting.
    Full(usize),
}

impl std::fmt::Display for MapError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::InFlight => f.write_str("a request with this id is already in flight"),
            Self::Full(n) => write!(f, "too many requests in flight (the limit is {n})"),
        }
    }
}

impl std::error::Error for MapError {}

/// Original ids ↔ the bridge's own ids, with a value kept per entry.
#[derive(Debug)]
pub struct IdMap<T> {
    next: i64,
    by_local: HashMap<i64, (RequestId, T)>,
    by_original: HashMap<RequestId, i64>,
    max: usize,
}

impl<T> IdMap<T> {
    /// A map holding at most `max` outstanding entries.
    pub fn new(max: usize) -> Self {
        Self {
            next: 1,
            by_local: HashMap::new(),
            by_original: HashMap::new(),
            max,
        }
    }

    /// Maps `original` to a fresh id of the bridge's, keeping `value` with it.
    pub fn insert(&mut self, original: RequestId, value: T) -> Result<RequestId, MapError> {
        if self.by_original.contains_key(&original) {
            return Err(MapError::InFlight);
        }
        if self.by_local.len() >= self.max {
            return Err(MapError::Full(self.max));
        }
        let mut local = self.next;
        while self.by_local.contains_key(&local) {
            local = local.checked_add(1).unwrap_or(1);
        }
        self.next = local.checked_add(1).unwrap_or(1);
        self.by_original.insert(original.clone(), local);
        self.by_local.insert(local, (original, value));
        Ok(RequestId::number(local))
    }

    fn local_of(id: &RequestId) -> Option<i64> {
        match id {
            RequestId::Number(ferromcp_protocol::jsonrpc::IntegerId::Signed(n)) => Some(*n),
            _ => None,
        }
    }

    /// Frees the entry for the bridge's id `local` (its answer arrived),
    /// returning the original id and the value.
    pub fn take(&mut self, local: &RequestId) -> Option<(RequestId, T)> {
        let (original, value) = self.by_local.remove(&Self::local_of(local)?)?;
        self.by_original.remove(&original);
        Some((original, value))
    }

    /// The entry for the bridge's id `local`, left in place.
    pub fn get(&self, local: &RequestId) -> Option<&(RequestId, T)> {
        self.by_local.get(&Self::local_of(local)?)
    }

    /// The value for the bridge's id `local`, to update it.
    pub fn get_mut(&mut self, local: &RequestId) -> Option<&mut T> {
        self.by_local
            .get_mut(&Self::local_of(local)?)
            .map(|(_, v)| v)
    }

    /// Frees the entry for the original id (the request was cancelled),
    /// returning the bridge's id and the value.
    pub fn take_original(&mut self, original: &RequestId) -> Option<(RequestId, T)> {
        let local = self.by_original.remove(original)?;
        let (_, value) = self.by_local.remove(&local)?;
        Some((RequestId::number(local), value))
    }

    /// Gives the entry for the bridge's id `local` a new original id
    /// (the same call continues under another host request); the old
    /// original is returned. Refused while `original` is in flight.
    pub fn rebind(
        &mut self,
        local: &RequestId,
        original: RequestId,
    ) -> Result<Option<RequestId>, MapError> {
        if self.by_original.contains_key(&original) {
            return Err(MapError::InFlight);
        }
        let Some(n) = Self::local_of(local) else {
            return Ok(None);
        };
        let Some(entry) = self.by_local.get_mut(&n) else {
            return Ok(None);
        };
        let old = std::mem::replace(&mut entry.0, original.clone());
        self.by_original.remove(&old);
        self.by_original.insert(original, n);
        Ok(Some(old))
    }

    /// How many entries are outstanding.
    pub fn len(&self) -> usize {
        self.by_local.len()
    }

    /// Whether no entry is outstanding.
    pub fn is_empty(&self) -> bool {
        self.by_local.is_empty()
    }

    /// Removes and returns every entry (shutdown).
    pub fn drain(&mut self) -> Vec<(RequestId, T)> {
        self.by_original.clear();
        self.by_local.drain().map(|(_, e)| e).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rebind_moves_an_entry_to_another_original() {
        let mut m = IdMap::new(4);
        let local = m
            .insert(RequestId::number(1), "call")
            .unwrap_or_else(|e| panic!("{e}"));
        let other = m
            .insert(RequestId::number(2), "other")
            .unwrap_or_else(|e| panic!("{e}"));
        // An original in flight cannot be taken over.
        assert!(m.rebind(&local, RequestId::number(2)).is_err());
        let old = m
            .rebind(&local, RequestId::string("retry"))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(old, Some(RequestId::number(1)));
        assert_eq!(
            m.get(&local).map(|(o, _)| o.clone()),
            Some(RequestId::string("retry"))
        );
        // The old original is free again, the new one finds the entry.
        assert!(m.take_original(&RequestId::number(1)).is_none());
        assert!(m.insert(RequestId::number(1), "again").is_ok());
        assert_eq!(
            m.take_original(&RequestId::string("retry")).map(|(_, v)| v),
            Some("call")
        );
        assert_eq!(m.rebind(&local, RequestId::number(9)).ok(), Some(None));
        assert!(m.take(&other).is_some());
    }

    #[test]
    fn string_and_number_ids_do_not_collide() {
        let mut m = IdMap::new(8);
        let a = m
            .insert(RequestId::string("1"), "s")
            .unwrap_or_else(|e| panic!("{e}"));
        let b = m
            .insert(RequestId::number(1), "n")
            .unwrap_or_else(|e| panic!("{e}"));
        assert_ne!(a, b);
        assert_eq!(m.len(), 2);
        assert_eq!(m.take(&b), Some((RequestId::number(1), "n")));
        assert_eq!(m.take(&a), Some((RequestId::string("1"), "s")));
        assert!(m.is_empty());
        assert_eq!(m.take(&a), None);
    }

    #[test]
    fn duplicates_and_the_bound_are_refused() {
        let mut m = IdMap::new(2);
        let a = m
            .insert(RequestId::number(5), ())
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(m.insert(RequestId::number(5), ()), Err(MapError::InFlight));
        m.insert(RequestId::string("x"), ())
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(m.insert(RequestId::string("y"), ()), Err(MapError::Full(2)));
        // Answered entries are freed, so the original id can be used again.
        assert!(m.take(&a).is_some());
        assert!(m.insert(RequestId::number(5), ()).is_ok());
    }

    #[test]
    fn cancellation_finds_the_entry_by_original_id() {
        let mut m = IdMap::new(4);
        let local = m
            .insert(RequestId::string("c"), 1)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            m.take_original(&RequestId::string("c")),
            Some((local.clone(), 1))
        );
        assert_eq!(m.take(&local), None);
        assert!(m.is_empty());
        // Ids the bridge never issued are unknown.
        assert_eq!(m.take(&RequestId::string("1")), None);
    }
}
