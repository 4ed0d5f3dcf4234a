//! The reference model: the user table as a `std::collections::BTreeMap`, with the same
//! validation as the real stores. Engines must match it call for call, errors included.

use crate::store::UserStore;
use crate::{limits, StoreError, User};
use std::collections::BTreeMap;

#[derive(Default)]
pub struct ModelStore {
    users: BTreeMap<u64, String>,
}

impl UserStore for ModelStore {
    fn insert(&mut self, user: User) -> Result<(), StoreError> {
        limits::check_user(&user)?;
        if self.users.contains_key(&user.id) {
            return Err(StoreError::DuplicateId { id: user.id });
        }
        self.users.insert(user.id, user.username);
        Ok(())
    }

    fn insert_batch(&mut self, users: &[User]) -> Result<u64, StoreError> {
        limits::check_batch(users)?;
        if let Some(clash) = users.iter().find(|user| self.users.contains_key(&user.id)) {
            return Err(StoreError::DuplicateId { id: clash.id });
        }
        for user in users {
            self.users.insert(user.id, user.username.clone());
        }
        Ok(users.len() as u64)
    }

    fn get(&self, id: u64) -> Result<User, StoreError> {
        self.users
            .get(&id)
            .map(|username| User::new(id, username.clone()))
            .ok_or(StoreError::NotFound { id })
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
        let slot = self.users.get_mut(&id).ok_or(StoreError::NotFound { id })?;
        let previous = std::mem::replace(slot, username.to_owned());
        Ok(User::new(id, previous))
    }

    fn delete(&mut self, id: u64) -> Result<User, StoreError> {
        self.users
            .remove(&id)
            .map(|username| User::new(id, username))
            .ok_or(StoreError::NotFound { id })
    }

    fn update_batch(&mut self, users: &[User]) -> Result<u64, StoreError> {
        limits::check_batch(users)?;
        if let Some(unknown) = users.iter().find(|user| !self.users.contains_key(&user.id)) {
            return Err(StoreError::NotFound { id: unknown.id });
        }
        for user in users {
            self.users.insert(user.id, user.username.clone());
        }
        Ok(users.len() as u64)
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
