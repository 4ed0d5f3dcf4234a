//! [`BTreeStore`]: the user table as an ic-stable-structures `StableBTreeMap<u64, Username>`.

use crate::budget::{BatchWrite, WriteCost};
use crate::describe::{Engine, EngineInfo};
use crate::engine::StorageEngine;
use crate::error::StoreError;
use crate::layout::{self, CanisterMemory};
use crate::limits::{self, MAX_USERNAME_BYTES};
use crate::sqlite::SqliteConfig;
use crate::store::UserStore;
use crate::user::User;
use ic_stable_structures::storable::Bound;
use ic_stable_structures::{Memory, StableBTreeMap, Storable};
use std::borrow::Cow;

/// The version of ic-stable-structures this crate is built against, reported by
/// [`UserStore::describe`].
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
/// Inserts and deletes are one B-tree operation per row on the happy path (a failure undoes
/// what the call wrote); updates look every id up before writing, so an unknown id never
/// allocates. The map keeps its own length, so [`UserStore::count`] is O(1).
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
        for user in users {
            let replaced = self.users.insert(user.id, Username(user.username.clone()));
            if let Some(previous) = replaced {
                self.users.insert(user.id, previous);
                self.undo_batch(&inserted);
                return Err(StoreError::DuplicateId { id: user.id });
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
        if !self.users.contains_key(&id) {
            return Err(StoreError::NotFound { id });
        }
        let previous = self
            .users
            .insert(id, Username(username.to_owned()))
            .ok_or(StoreError::NotFound { id })?;
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
        // Every id is checked before the first write, so an unknown id changes nothing.
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

    fn describe(&self) -> EngineInfo {
        EngineInfo {
            engine: Engine::StableBTreeMap,
            engine_version: format!("ic-stable-structures {STABLE_STRUCTURES_VERSION}"),
            sqlite: None,
        }
    }
}

/// The B-tree in a canister: its map in [`layout::BTREE_USERS_MEMORY_ID`], no configuration,
/// nothing to flush before an upgrade.
impl StorageEngine for BTreeStore<CanisterMemory> {
    fn settle_config(
        requested: Option<SqliteConfig>,
        _current: Option<SqliteConfig>,
    ) -> Result<Option<SqliteConfig>, StoreError> {
        match requested {
            Some(_) => Err(StoreError::invalid_config(
                "this canister stores users in a StableBTreeMap; it takes no SQLite configuration",
            )),
            None => Ok(None),
        }
    }

    fn write_cost(write: BatchWrite) -> WriteCost {
        let per_row = match write {
            // Measured worst: 80,309 per row (append, cold).
            BatchWrite::Insert => 160_000,
            // Measured worst: 89,976 per row (warm).
            BatchWrite::Update => 180_000,
            // Measured worst: 285,460 per row (cold): a delete may merge and rebalance nodes.
            BatchWrite::Delete => 600_000,
        };
        WriteCost {
            per_batch: 2_000_000,
            per_row,
        }
    }

    fn open_in_canister(_config: Option<SqliteConfig>) -> Result<Self, StoreError> {
        Ok(BTreeStore::init(layout::canister_memory(
            layout::BTREE_USERS_MEMORY_ID,
        )))
    }
}
