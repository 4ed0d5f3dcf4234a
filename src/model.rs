//! [`ModelStore`]: the reference model of the user table, a `std::collections::BTreeMap` with
//! the same validation as the real stores. Engines must match it call for call, errors
//! included: the property tests, the fuzz target and the differential tests hold every engine
//! to it (feature `model`; the library's own tests always have it).
//!
//! It states the rules in the plainest way: a username is taken if any other user has it;
//! a batch is its rows applied one by one to a copy, kept only if every row succeeds. It is
//! a model, not a store: every lookup by name scans the whole table.

use crate::store::UserStore;
use crate::{limits, StoreError, User};
use std::collections::BTreeMap;

/// The user table as the rules state it (see the module's documentation).
#[derive(Default, Clone, Debug)]
pub struct ModelStore {
    users: BTreeMap<u64, String>,
}

impl ModelStore {
    /// A model holding `users` as they are, shared names included (a table written before
    /// names were unique).
    pub fn with_rows(users: impl IntoIterator<Item = User>) -> Self {
        Self {
            users: users.into_iter().map(|u| (u.id, u.username)).collect(),
        }
    }

    fn taken_by_other(&self, username: &str, id: u64) -> bool {
        self.users
            .iter()
            .any(|(holder, name)| *holder != id && name == username)
    }

    /// `f` on a copy, kept if it succeeds.
    fn all_or_nothing(
        &mut self,
        f: impl FnOnce(&mut ModelStore) -> Result<u64, StoreError>,
    ) -> Result<u64, StoreError> {
        let mut copy = self.clone();
        let done = f(&mut copy)?;
        *self = copy;
        Ok(done)
    }
}

impl UserStore for ModelStore {
    fn insert(&mut self, user: User) -> Result<(), StoreError> {
        limits::check_user(&user)?;
        if self.users.contains_key(&user.id) {
            return Err(StoreError::DuplicateId { id: user.id });
        }
        if self.taken_by_other(&user.username, user.id) {
            return Err(StoreError::UsernameTaken {
                username: user.username,
            });
        }
        self.users.insert(user.id, user.username);
        Ok(())
    }

    fn insert_batch(&mut self, users: &[User]) -> Result<u64, StoreError> {
        limits::check_batch(users)?;
        self.all_or_nothing(|copy| {
            for user in users {
                copy.insert(user.clone())?;
            }
            Ok(users.len() as u64)
        })
    }

    fn get(&self, id: u64) -> Result<User, StoreError> {
        self.users
            .get(&id)
            .map(|username| User::new(id, username.clone()))
            .ok_or(StoreError::NotFound { id })
    }

    fn get_by_name(&self, username: &str) -> Result<User, StoreError> {
        self.users
            .iter()
            .find(|(_, name)| *name == username)
            .map(|(id, name)| User::new(*id, name.clone()))
            .ok_or_else(|| StoreError::UsernameNotFound {
                username: username.to_string(),
            })
    }

    fn ids_named(&self, username: &str, limit: usize) -> Result<Vec<u64>, StoreError> {
        Ok(self
            .users
            .iter()
            .filter(|(_, name)| *name == username)
            .map(|(id, _)| *id)
            .take(limit)
            .collect())
    }

    fn shared_usernames(&self, limit: usize) -> Result<Vec<String>, StoreError> {
        let mut holders: BTreeMap<&str, usize> = BTreeMap::new();
        for name in self.users.values() {
            *holders.entry(name).or_default() += 1;
        }
        Ok(holders
            .into_iter()
            .filter(|(_, count)| *count > 1)
            .map(|(name, _)| name.to_string())
            .take(limit)
            .collect())
    }

    fn page(&self, after: Option<u64>, limit: u32) -> Result<Vec<User>, StoreError> {
        limits::check_page_size(limit)?;
        let users = self
            .users
            .iter()
            .filter(|(id, _)| after.is_none_or(|after| **id > after))
            .take(limit as usize)
            .map(|(id, username)| User::new(*id, username.clone()))
            .collect();
        Ok(users)
    }

    fn update_username(&mut self, id: u64, username: &str) -> Result<User, StoreError> {
        limits::check_username(username)?;
        let previous = self.get(id)?;
        if previous.username != username && self.taken_by_other(username, id) {
            return Err(StoreError::UsernameTaken {
                username: username.to_string(),
            });
        }
        self.users.insert(id, username.to_owned());
        Ok(previous)
    }

    fn delete(&mut self, id: u64) -> Result<User, StoreError> {
        self.users
            .remove(&id)
            .map(|username| User::new(id, username))
            .ok_or(StoreError::NotFound { id })
    }

    fn update_batch(&mut self, users: &[User]) -> Result<u64, StoreError> {
        limits::check_batch(users)?;
        self.all_or_nothing(|copy| {
            for user in users {
                copy.update_username(user.id, &user.username)?;
            }
            Ok(users.len() as u64)
        })
    }

    fn delete_batch(&mut self, ids: &[u64]) -> Result<u64, StoreError> {
        limits::check_id_batch(ids)?;
        if let Some(unknown) = ids.iter().find(|id| !self.users.contains_key(id)) {
            return Err(StoreError::NotFound { id: *unknown });
        }
        for id in ids {
            self.users.remove(id);
        }
        Ok(ids.len() as u64)
    }

    fn count(&self) -> Result<u64, StoreError> {
        Ok(self.users.len() as u64)
    }
}
