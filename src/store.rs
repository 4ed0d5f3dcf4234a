//! The one seam: the user-table API every engine implements.

use crate::error::StoreError;
use crate::user::{User, UsernameBuf};

/// A table of [`User`]s keyed by id, with unique usernames.
///
/// Every method validates its input before it writes: a call that returns an error other
/// than [`StoreError::Storage`] has changed nothing. Batches are all or nothing: a batch
/// does what its rows would do one by one, in order, or, if one of them fails, nothing.
///
/// # Unique usernames
/// No two users share a username; names are compared as exact UTF-8 bytes, with no case
/// folding or normalization. A write that would give a user a name another user has fails
/// with [`StoreError::UsernameTaken`]; a rename frees the old name at once. Every engine keeps
/// its by-name index in the same storage, and the same transaction, as the rows.
///
/// A table written by a release before names were unique may hold users that share a name.
/// They are kept and served; [`UserStore::shared_usernames`] lists those names, and no write
/// adds a user to them (renaming a user to the name it already has is not a change).
pub trait UserStore {
    /// Inserts one user; [`StoreError::DuplicateId`] if the id exists,
    /// [`StoreError::UsernameTaken`] if the username does.
    fn insert(&mut self, user: User) -> Result<(), StoreError>;

    /// Inserts a batch in one transaction: every user or, on any error, none.
    /// Returns the number of users inserted.
    fn insert_batch(&mut self, users: &[User]) -> Result<u64, StoreError>;

    /// Returns the user with this id, or [`StoreError::NotFound`].
    fn get(&self, id: u64) -> Result<User, StoreError>;

    /// Returns the user whose username is exactly `username`, or
    /// [`StoreError::UsernameNotFound`]. Where several users share the name (see the trait's
    /// documentation), the one with the lowest id.
    fn get_by_name(&self, username: &str) -> Result<User, StoreError>;

    /// [`UserStore::get_by_name`]'s id alone (the name is the one asked for). The default goes
    /// through [`UserStore::get_by_name`]; an engine that can find the id without building a
    /// [`User`] overrides it to allocate nothing.
    fn get_id_by_name(&self, username: &str) -> Result<u64, StoreError> {
        self.get_by_name(username).map(|user| user.id)
    }

    /// The ids of at most `limit` users named exactly `username`, lowest first: at most one,
    /// but for a name in [`UserStore::shared_usernames`].
    fn ids_named(&self, username: &str, limit: usize) -> Result<Vec<u64>, StoreError>;

    /// At most `limit` usernames that more than one user has, in byte order: only a table
    /// written before names were unique has any, and they only ever become fewer.
    fn shared_usernames(&self, limit: usize) -> Result<Vec<String>, StoreError>;

    /// Whether a user has this id.
    fn contains(&self, id: u64) -> Result<bool, StoreError> {
        match self.get(id) {
            Ok(_) => Ok(true),
            Err(StoreError::NotFound { .. }) => Ok(false),
            Err(other) => Err(other),
        }
    }

    /// Returns up to `limit` users in ascending id order, starting after the id `after`
    /// (from the smallest id when `None`). Fewer than `limit` users means the end was reached.
    fn page(&self, after: Option<u64>, limit: u32) -> Result<Vec<User>, StoreError>;

    /// Replaces a user's username and returns the user as it was before;
    /// [`StoreError::NotFound`] if there is no such user, [`StoreError::UsernameTaken`] if
    /// another user has the name.
    fn update_username(&mut self, id: u64, username: &str) -> Result<User, StoreError>;

    /// Deletes a user and returns it.
    fn delete(&mut self, id: u64) -> Result<User, StoreError>;

    /// Gives every listed user its new username, in one transaction: all of them or, on any
    /// error (an unknown id is [`StoreError::NotFound`], a name another user has at that
    /// row's turn is [`StoreError::UsernameTaken`]), none. Returns the number updated.
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
