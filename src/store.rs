//! The one seam: the user-table API every engine implements.

use crate::error::StoreError;
use crate::user::{User, UsernameBuf};

/// A table of [`User`]s keyed by id.
///
/// Every method validates its input before it writes: a call that returns an error other
/// than [`StoreError::Storage`] has changed nothing. Batch inserts are all or nothing.
pub trait UserStore {
    /// Inserts one user; [`StoreError::DuplicateId`] if the id exists.
    fn insert(&mut self, user: User) -> Result<(), StoreError>;

    /// Inserts a batch in one transaction: every user or, on any error, none.
    /// Returns the number of users inserted.
    fn insert_batch(&mut self, users: &[User]) -> Result<u64, StoreError>;

    /// Returns the user with this id, or [`StoreError::NotFound`].
    fn get(&self, id: u64) -> Result<User, StoreError>;

    /// Returns up to `limit` users in ascending id order, starting after the id `after`
    /// (from the smallest id when `None`). Fewer than `limit` users means the end was reached.
    fn page(&self, after: Option<u64>, limit: u32) -> Result<Vec<User>, StoreError>;

    /// Replaces a user's username and returns the user as it was before.
    fn update_username(&mut self, id: u64, username: &str) -> Result<User, StoreError>;

    /// Deletes a user and returns it.
    fn delete(&mut self, id: u64) -> Result<User, StoreError>;

    /// Gives every listed user its new username, in one transaction: all of them or, on any
    /// error (an unknown id is [`StoreError::NotFound`]), none. Returns the number updated.
    fn update_batch(&mut self, users: &[User]) -> Result<u64, StoreError>;

    /// Deletes every listed id in one transaction: all of them or, on any error, none.
    /// Returns the number deleted.
    fn delete_batch(&mut self, ids: &[u64]) -> Result<u64, StoreError>;

    /// The number of users.
    fn count(&self) -> Result<u64, StoreError>;

    /// [`UserStore::insert`] of a user given by its parts. The default builds a [`User`]; an
    /// engine that stores bytes overrides it to allocate nothing.
    fn insert_parts(&mut self, id: u64, username: &str) -> Result<(), StoreError> {
        self.insert(User::new(id, username))
    }

    /// [`UserStore::get`] into `username`, on the stack. The default goes through
    /// [`UserStore::get`]; an engine that reads bytes overrides it to allocate nothing.
    fn get_into(&self, id: u64, username: &mut UsernameBuf) -> Result<(), StoreError> {
        let user = self.get(id)?;
        username.set(&user.username);
        Ok(())
    }

    /// [`UserStore::update_username`], with the username as it was into `previous`.
    fn update_into(
        &mut self,
        id: u64,
        username: &str,
        previous: &mut UsernameBuf,
    ) -> Result<(), StoreError> {
        let user = self.update_username(id, username)?;
        previous.set(&user.username);
        Ok(())
    }

    /// [`UserStore::delete`], with the deleted username into `deleted`.
    fn delete_into(&mut self, id: u64, deleted: &mut UsernameBuf) -> Result<(), StoreError> {
        let user = self.delete(id)?;
        deleted.set(&user.username);
        Ok(())
    }
}
