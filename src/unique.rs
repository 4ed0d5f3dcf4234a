//! The unique-username rule of a batch, checked before an engine writes it.
//!
//! A batch does what its rows would do one by one, in order ([`UserStore`]): an engine that
//! writes inside a transaction it can roll back finds a clash as it writes; an engine that
//! checks first (a write that fails halfway has nothing to undo it) asks these functions,
//! which read the table and write nothing. [`crate::limits::check_batch`] has already refused
//! a batch that names an id or a username twice.

use crate::error::StoreError;
use crate::store::UserStore;
use crate::user::{User, UsernameBuf};
use std::collections::HashSet;

/// The first row of `users`, in order, whose id is in `store` ([`StoreError::DuplicateId`])
/// or whose username a user of `store` has ([`StoreError::UsernameTaken`]).
pub fn check_insert_batch<S: UserStore + ?Sized>(
    store: &S,
    users: &[User],
) -> Result<(), StoreError> {
    for user in users {
        if store.contains(user.id)? {
            return Err(StoreError::DuplicateId { id: user.id });
        }
        if !store.ids_named(&user.username, 1)?.is_empty() {
            return Err(taken(&user.username));
        }
    }
    Ok(())
}

/// The first row of `users`, in order, whose id is not in `store` ([`StoreError::NotFound`])
/// or whose new username another user has at that row's turn ([`StoreError::UsernameTaken`]):
/// a user renamed by an earlier row of the batch no longer has its old name.
pub fn check_update_batch<S: UserStore + ?Sized>(
    store: &S,
    users: &[User],
) -> Result<(), StoreError> {
    let mut renamed: HashSet<u64> = HashSet::with_capacity(users.len());
    let mut current = UsernameBuf::default();
    for user in users {
        store.get_into(user.id, &mut current)?;
        if current.as_str() != user.username {
            // Enough holders to find one that is neither this user nor renamed before it.
            let holders = store.ids_named(&user.username, renamed.len() + 2)?;
            if holders
                .iter()
                .any(|holder| *holder != user.id && !renamed.contains(holder))
            {
                return Err(taken(&user.username));
            }
        }
        renamed.insert(user.id);
    }
    Ok(())
}

/// [`StoreError::UsernameTaken`] for `username`.
pub fn taken(username: &str) -> StoreError {
    StoreError::UsernameTaken {
        username: username.to_string(),
    }
}
