//! The by-name index of an engine whose table is one ordered map of `u64` keys to bytes (the
//! B-tree and the page tree), kept in that same map, above the ids.
//!
//! ```text
//! keys 0 ..= MAX_USER_ID             the rows: id → username
//! keys 2^63 | bucket << 24 | slot    the names: → id (u64, little-endian) and username
//! bucket 2^39 - 1 (the last)         the index's own entries: slot 0 its state, slots 1..
//!                                    the names users shared when the index was built
//! ```
//!
//! A username's bucket is 39 bits of its SipHash-1-3 under a fixed key ([`bucket_of`]). The
//! users of one bucket (one name, or names whose hashes meet) take its slots in the order
//! they came; a lookup reads the bucket's entries, almost always one, and compares the
//! names. The entry holds the id and the name, so a lookup by name reads no row: it touches
//! the pages of one entry as a lookup by id does.
//!
//! Why a hash and not the name as the key: both engines key their map by `u64`, and the
//! table's upper index levels hold one key per leaf; a name's first bytes would say little
//! ("user_…"). Why a fixed key: the bucket is stored, so it must never change; a caller who
//! chose names to meet in one bucket needs about 2^39 hashes per name to add one entry to
//! it, and a full bucket only makes its own lookups read more entries of the same leaf.
//!
//! Why in the same map: an engine here is handed one memory (`docs/scale.md`), and one map
//! shares its allocator and its upper levels between rows and names, in the same write as
//! the row (one message, one transaction on the edge).

use crate::error::StoreError;
use crate::limits::MAX_USER_ID;
use siphasher::sip::SipHasher13;

/// The first key of the names: every id is below it.
pub const FIRST_NAME_KEY: u64 = 1 << 63;

/// Bits of a key that number the entries of one bucket.
const SLOT_BITS: u32 = 24;

/// Buckets names hash to; the bucket numbered this holds the index's own entries.
const NAME_BUCKETS: u64 = (1 << 39) - 1;

/// The key of the index's state: the first slot of the last bucket.
const STATE_KEY: u64 = FIRST_NAME_KEY | (NAME_BUCKETS << SLOT_BITS);

/// The hash key. Fixed forever: every stored bucket depends on it.
const HASH_KEY: (u64, u64) = (0x7573_6572_7374_6f72, 0x6e61_6d65_2d69_6478);

/// Version of the state entry's format.
const STATE_VERSION: u8 = 1;

/// Bytes of an entry's value before its username: the id.
const ID_BYTES: usize = 8;

/// Bytes of the longest value the map holds: a name entry (an id and a username).
pub const MAX_VALUE_BYTES: usize = ID_BYTES + crate::limits::MAX_USERNAME_BYTES;

/// An ordered map of `u64` keys to byte values: what an engine gives the index.
pub trait KeyValues {
    /// Calls `visit` with each entry whose key is in `from..below`, in key order, until it
    /// returns `false`.
    fn scan_entries(
        &self,
        from: u64,
        below: u64,
        visit: &mut dyn FnMut(u64, &[u8]) -> bool,
    ) -> Result<(), StoreError>;

    /// Adds the entry `key` (not in the map) with `value` (at most [`MAX_VALUE_BYTES`]).
    fn put_entry(&mut self, key: u64, value: &[u8]) -> Result<(), StoreError>;

    /// Removes the entry `key` (in the map).
    fn delete_entry(&mut self, key: u64) -> Result<(), StoreError>;
}

/// Whether `key` is a row's (an id), not one of the index's.
pub fn is_row_key(key: u64) -> bool {
    key <= MAX_USER_ID
}

/// The bucket of `username`.
pub fn bucket_of(username: &str) -> u64 {
    let hash = SipHasher13::new_with_keys(HASH_KEY.0, HASH_KEY.1).hash(username.as_bytes());
    // 39 bits; the last bucket is the index's own.
    (hash >> (64 - 39)).min(NAME_BUCKETS - 1)
}

/// The keys of `bucket`'s slots.
fn bucket_keys(bucket: u64) -> (u64, u64) {
    let first = FIRST_NAME_KEY | (bucket << SLOT_BITS);
    (first, first + (1 << SLOT_BITS))
}

/// The id in a name entry's `value` if the entry is `username`'s.
fn holder(value: &[u8], username: &str) -> Option<u64> {
    let (id, name) = value.split_at_checked(ID_BYTES)?;
    (name == username.as_bytes()).then(|| u64::from_le_bytes(id.try_into().unwrap_or_default()))
}

/// A name entry's value.
fn entry_value(id: u64, username: &str, value: &mut [u8; MAX_VALUE_BYTES]) -> usize {
    let len = ID_BYTES + username.len();
    value[..ID_BYTES].copy_from_slice(&id.to_le_bytes());
    value[ID_BYTES..len].copy_from_slice(username.as_bytes());
    len
}

/// The lowest id of the users named `username`.
pub fn lowest_holder(map: &impl KeyValues, username: &str) -> Result<Option<u64>, StoreError> {
    let (first, end) = bucket_keys(bucket_of(username));
    let mut lowest: Option<u64> = None;
    map.scan_entries(first, end, &mut |_, value| {
        if let Some(id) = holder(value, username) {
            lowest = Some(lowest.map_or(id, |low| low.min(id)));
        }
        true
    })?;
    Ok(lowest)
}

/// The ids of at most `limit` users named `username`, lowest first.
pub fn ids_named(
    map: &impl KeyValues,
    username: &str,
    limit: usize,
) -> Result<Vec<u64>, StoreError> {
    let (first, end) = bucket_keys(bucket_of(username));
    let mut ids = Vec::new();
    map.scan_entries(first, end, &mut |_, value| {
        ids.extend(holder(value, username));
        true
    })?;
    ids.sort_unstable();
    ids.truncate(limit);
    Ok(ids)
}

/// Whether a user other than `id` is named `username`.
pub fn taken_by_other(map: &impl KeyValues, username: &str, id: u64) -> Result<bool, StoreError> {
    let (first, end) = bucket_keys(bucket_of(username));
    let mut taken = false;
    map.scan_entries(first, end, &mut |_, value| {
        taken = holder(value, username).is_some_and(|holder| holder != id);
        !taken
    })?;
    Ok(taken)
}

/// Adds the entry of user `id` named `username` in its bucket's first free slot, and
/// returns its key; `None`, adding nothing, if a user already has the name.
pub fn add(map: &mut impl KeyValues, username: &str, id: u64) -> Result<Option<u64>, StoreError> {
    let (first, end) = bucket_keys(bucket_of(username));
    let (mut free, mut gap_found, mut taken) = (first, false, false);
    map.scan_entries(first, end, &mut |key, value| {
        taken = holder(value, username).is_some();
        if !gap_found && key == free {
            free += 1;
        } else {
            gap_found = true;
        }
        !taken
    })?;
    if taken {
        return Ok(None);
    }
    if free == end {
        return Err(StoreError::storage(
            "indexing a username",
            "every slot of its hash bucket is taken",
        ));
    }
    let mut value = [0u8; MAX_VALUE_BYTES];
    let len = entry_value(id, username, &mut value);
    map.put_entry(free, &value[..len])?;
    Ok(Some(free))
}

/// Removes the entry of user `id` named `username`.
pub fn remove(map: &mut impl KeyValues, username: &str, id: u64) -> Result<(), StoreError> {
    let (first, end) = bucket_keys(bucket_of(username));
    let mut found = None;
    map.scan_entries(first, end, &mut |key, value| {
        if holder(value, username) == Some(id) {
            found = Some(key);
        }
        found.is_none()
    })?;
    match found {
        Some(key) => map.delete_entry(key),
        None => Err(StoreError::storage(
            "unindexing a username",
            format!("user {id} has no entry in the name index"),
        )),
    }
}

/// The index's state, as its entry holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexState {
    /// Names that more than one user had when the index was built (their entries follow
    /// the state's).
    pub shared_names: u32,
}

/// The index's state, or `None` if the map has no index (empty, or written before names
/// were indexed).
pub fn state(map: &impl KeyValues) -> Result<Option<IndexState>, StoreError> {
    let mut found = None;
    map.scan_entries(STATE_KEY, STATE_KEY + 1, &mut |_, value| {
        found = Some(value.to_vec());
        false
    })?;
    let Some(value) = found else {
        return Ok(None);
    };
    match value.as_slice() {
        [STATE_VERSION, a, b, c, d] => Ok(Some(IndexState {
            shared_names: u32::from_le_bytes([*a, *b, *c, *d]),
        })),
        _ => Err(StoreError::storage(
            "reading the name index",
            "its state entry is of an unknown version",
        )),
    }
}

/// Writes the state of a new index: `shared` names more than one user has.
fn write_state(map: &mut impl KeyValues, shared: &[&str]) -> Result<(), StoreError> {
    let count = u32::try_from(shared.len())
        .ok()
        .filter(|count| u64::from(*count) < (1 << SLOT_BITS))
        .ok_or_else(|| StoreError::storage("building the name index", "too many shared names"))?;
    let mut state = [STATE_VERSION, 0, 0, 0, 0];
    state[1..].copy_from_slice(&count.to_le_bytes());
    map.put_entry(STATE_KEY, &state)?;
    for (slot, name) in shared.iter().enumerate() {
        map.put_entry(STATE_KEY + 1 + slot as u64, name.as_bytes())?;
    }
    Ok(())
}

/// Starts the index of an empty table.
pub fn create(map: &mut impl KeyValues) -> Result<(), StoreError> {
    write_state(map, &[])
}

/// Builds the index of a table written before names were indexed, from its `rows` (every
/// row, in id order), and records the names more than one user has. Returns how many.
pub fn build(map: &mut impl KeyValues, rows: Vec<(u64, String)>) -> Result<u32, StoreError> {
    // In bucket order, each bucket's users by name then id: the entries go in in key order
    // (an engine's appends are its cheapest writes) and a shared name's users are adjacent.
    let mut entries: Vec<(u64, String, u64)> = rows
        .into_iter()
        .map(|(id, username)| (bucket_of(&username), username, id))
        .collect();
    entries.sort_unstable();
    let mut shared: Vec<&str> = Vec::new();
    let mut value = [0u8; MAX_VALUE_BYTES];
    let mut previous: Option<(u64, &str, u64)> = None;
    for (bucket, username, id) in &entries {
        let slot = match previous {
            Some((last_bucket, last_name, last_slot)) if last_bucket == *bucket => {
                if last_name == username && shared.last() != Some(&username.as_str()) {
                    shared.push(username);
                }
                last_slot + 1
            }
            _ => 0,
        };
        if slot >= 1 << SLOT_BITS {
            return Err(StoreError::storage(
                "building the name index",
                format!("more than 2^24 users share the hash bucket of {username:?}"),
            ));
        }
        let len = entry_value(*id, username, &mut value);
        map.put_entry(bucket_keys(*bucket).0 + slot, &value[..len])?;
        previous = Some((*bucket, username, slot));
    }
    shared.sort_unstable();
    write_state(map, &shared)?;
    Ok(shared.len() as u32)
}

/// At most `limit` of the names recorded as shared when the index was built that more than
/// one user still has, in byte order.
pub fn shared_usernames(
    map: &impl KeyValues,
    state: IndexState,
    limit: usize,
) -> Result<Vec<String>, StoreError> {
    let mut recorded = Vec::new();
    let first = STATE_KEY + 1;
    map.scan_entries(
        first,
        first + u64::from(state.shared_names),
        &mut |_, value| {
            recorded.push(String::from_utf8_lossy(value).into_owned());
            true
        },
    )?;
    let mut still = Vec::new();
    for name in recorded {
        if still.len() == limit {
            break;
        }
        if ids_named(map, &name, 2)?.len() > 1 {
            still.push(name);
        }
    }
    Ok(still)
}

/// The entries of the index in the map: one per row, plus its own.
pub fn entries(state: IndexState, rows: u64) -> u64 {
    rows + 1 + u64::from(state.shared_names)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// A `std` map as the engine's.
    #[derive(Default)]
    struct Model(BTreeMap<u64, Vec<u8>>);

    impl KeyValues for Model {
        fn scan_entries(
            &self,
            from: u64,
            below: u64,
            visit: &mut dyn FnMut(u64, &[u8]) -> bool,
        ) -> Result<(), StoreError> {
            for (key, value) in self.0.range(from..below) {
                if !visit(*key, value) {
                    break;
                }
            }
            Ok(())
        }

        fn put_entry(&mut self, key: u64, value: &[u8]) -> Result<(), StoreError> {
            assert!(self.0.insert(key, value.to_vec()).is_none(), "{key} taken");
            Ok(())
        }

        fn delete_entry(&mut self, key: u64) -> Result<(), StoreError> {
            assert!(self.0.remove(&key).is_some(), "{key} absent");
            Ok(())
        }
    }

    #[test]
    fn the_hash_never_changes() {
        // The stored buckets depend on these values: a change of hash or key loses names.
        assert_eq!(bucket_of("alice"), 189_186_925_200, "alice");
        assert!(bucket_of("alice") < NAME_BUCKETS);
    }

    #[test]
    fn names_are_found_added_and_removed_exactly() {
        let mut map = Model::default();
        create(&mut map).unwrap();
        assert!(add(&mut map, "alice", 7).unwrap().is_some());
        assert!(add(&mut map, "bob", 9).unwrap().is_some());
        assert_eq!(add(&mut map, "alice", 8), Ok(None), "taken");
        assert_eq!(lowest_holder(&map, "alice"), Ok(Some(7)));
        assert_eq!(lowest_holder(&map, "Alice"), Ok(None), "no case folding");
        assert_eq!(lowest_holder(&map, "alice "), Ok(None));
        assert_eq!(taken_by_other(&map, "alice", 7), Ok(false));
        assert_eq!(taken_by_other(&map, "alice", 8), Ok(true));
        remove(&mut map, "alice", 7).unwrap();
        assert_eq!(lowest_holder(&map, "alice"), Ok(None));
        assert!(remove(&mut map, "alice", 7).is_err());
        assert_eq!(ids_named(&map, "bob", 5), Ok(vec![9]));
    }

    #[test]
    fn a_bucket_holds_several_users_and_a_build_records_the_shared_names() {
        let mut map = Model::default();
        let rows = vec![
            (1, "x".to_string()),
            (2, "y".to_string()),
            (3, "x".to_string()),
            (4, "x".to_string()),
            (5, "z".to_string()),
            (6, "z".to_string()),
        ];
        assert_eq!(build(&mut map, rows), Ok(2));
        let state = state(&map).unwrap().unwrap();
        assert_eq!(state.shared_names, 2);
        assert_eq!(ids_named(&map, "x", 10), Ok(vec![1, 3, 4]));
        assert_eq!(ids_named(&map, "x", 2), Ok(vec![1, 3]));
        assert_eq!(lowest_holder(&map, "x"), Ok(Some(1)));
        assert_eq!(
            shared_usernames(&map, state, 10),
            Ok(vec!["x".into(), "z".into()])
        );
        remove(&mut map, "z", 6).unwrap();
        assert_eq!(shared_usernames(&map, state, 10), Ok(vec!["x".into()]));
        remove(&mut map, "x", 1).unwrap();
        assert_eq!(add(&mut map, "x", 10), Ok(None), "still taken by 3 and 4");
        assert_eq!(ids_named(&map, "x", 10), Ok(vec![3, 4]));
        // A freed slot is used again.
        remove(&mut map, "y", 2).unwrap();
        let y = add(&mut map, "y", 2).unwrap().unwrap();
        assert_eq!(y & ((1 << SLOT_BITS) - 1), 0);
        assert_eq!(map.0.len() as u64, entries(state, 4));
    }
}
