//! The user-table API of the store canisters as plain functions: each Candid method is one
//! function over the canister's [`StoreState`] and the call's [`CallEnv`]. Writes are
//! authorized first ([`StoreState::writer`], [`StoreState::batch_writer`]); a storage
//! failure in an update traps, so the IC discards everything the message changed
//! ([`trap_on_storage_failure`]); every other error is returned as a value.

use super::env::CallEnv;
use super::{CanisterConfig, Stats, StoreState};
use crate::engine::{BatchWrite, EngineConfig, StorageEngine};
use crate::error::StoreError;
use crate::limits;
use crate::service::args::IdAndName;
use crate::user::{User, UsernameBuf};

/// The update methods that write, which only writers may call.
pub const WRITE_METHODS: [&str; 6] = [
    "insert_user",
    "insert_users",
    "update_username",
    "delete_user",
    "update_users",
    "delete_users",
];

/// The methods whose argument is a batch (up to the IC's 2 MiB message).
pub const BATCH_METHODS: [&str; 3] = ["insert_users", "update_users", "delete_users"];

/// Most bytes of any other method's argument. In the `candid` crate's encoding a user with
/// the longest username takes under 200; a client may send a subtype with fields the store
/// does not know (Candid skips them), which this leaves room for.
pub const MAX_ONE_ROW_ARGUMENT_BYTES: usize = 16 * 1024;

/// `canister_inspect_message`: whether to accept an ingress message calling `method` with
/// `argument_bytes` of argument, before the IC charges the canister for running it. Writes
/// from anyone but a writer are refused, and any argument longer than its method can need.
/// Only ingress messages are inspected: the methods check the caller again, for calls from
/// other canisters.
pub fn inspect<E: StorageEngine>(
    state: &StoreState<E>,
    env: &impl CallEnv,
    method: &str,
    argument_bytes: usize,
) -> bool {
    if !BATCH_METHODS.contains(&method) && argument_bytes > MAX_ONE_ROW_ARGUMENT_BYTES {
        return false;
    }
    if WRITE_METHODS.contains(&method) {
        return state.may_write(env);
    }
    true
}

/// A storage failure traps (the IC rolls the message back); every other result is passed on.
pub fn trap_on_storage_failure<R>(
    env: &impl CallEnv,
    result: Result<R, StoreError>,
) -> Result<R, StoreError> {
    match result {
        Err(StoreError::Storage { message }) => {
            env.trap(&format!("storage failure, message rolled back: {message}"))
        }
        result => result,
    }
}

/// `insert_user`: inserts one user.
pub fn insert_user<E: StorageEngine>(
    state: &mut StoreState<E>,
    env: &impl CallEnv,
    user: User,
) -> Result<(), StoreError> {
    let store = state.inserter(env)?;
    trap_on_storage_failure(env, store.insert(user))
}

/// `insert_user` from its arguments as read from the message (no heap allocation on the way).
pub fn insert_user_parts<E: StorageEngine>(
    state: &mut StoreState<E>,
    env: &impl CallEnv,
    user: IdAndName<'_>,
) -> Result<(), StoreError> {
    let store = state.inserter(env)?;
    trap_on_storage_failure(env, store.insert_parts(user.id, user.username))
}

/// `insert_users`: inserts a batch, all or nothing; returns how many were inserted.
pub fn insert_users<E: StorageEngine>(
    state: &mut StoreState<E>,
    env: &impl CallEnv,
    users: &[User],
) -> Result<u64, StoreError> {
    let store = state.batch_writer(env, BatchWrite::Insert, users.len())?;
    trap_on_storage_failure(env, store.insert_batch(users))
}

/// `get_user`: one user.
pub fn get_user<E: StorageEngine>(state: &StoreState<E>, id: u64) -> Result<User, StoreError> {
    state.store().get(id)
}

/// `get_user_by_name`'s lookup: the id of the user with this username (the reply is the
/// name it was given and this id, built on the stack).
pub fn get_user_id_by_name<E: StorageEngine>(
    state: &StoreState<E>,
    username: &str,
) -> Result<u64, StoreError> {
    state.store().get_id_by_name(username)
}

/// `get_user_by_name`: the user with this username.
pub fn get_user_by_name<E: StorageEngine>(
    state: &StoreState<E>,
    username: &str,
) -> Result<User, StoreError> {
    state.store().get_by_name(username)
}

/// `get_user` into `username`, on the stack.
pub fn get_user_into<E: StorageEngine>(
    state: &StoreState<E>,
    id: u64,
    username: &mut UsernameBuf,
) -> Result<(), StoreError> {
    state.store().get_into(id, username)
}

/// `list_users`: up to `limit` users in id order after the id `after`.
pub fn list_users<E: StorageEngine>(
    state: &StoreState<E>,
    after: Option<u64>,
    limit: u32,
) -> Result<Vec<User>, StoreError> {
    state.store().page(after, limit)
}

/// `update_username`: renames a user; returns the user as it was before.
pub fn update_username<E: StorageEngine>(
    state: &mut StoreState<E>,
    env: &impl CallEnv,
    id: u64,
    username: &str,
) -> Result<User, StoreError> {
    let store = state.writer(env)?;
    trap_on_storage_failure(env, store.update_username(id, username))
}

/// `update_username` from its arguments as read from the message, the username as it was
/// into `previous`.
pub fn update_username_into<E: StorageEngine>(
    state: &mut StoreState<E>,
    env: &impl CallEnv,
    rename: IdAndName<'_>,
    previous: &mut UsernameBuf,
) -> Result<(), StoreError> {
    let store = state.writer(env)?;
    trap_on_storage_failure(env, store.update_into(rename.id, rename.username, previous))
}

/// `delete_user` with the deleted username into `deleted`.
pub fn delete_user_into<E: StorageEngine>(
    state: &mut StoreState<E>,
    env: &impl CallEnv,
    id: u64,
    deleted: &mut UsernameBuf,
) -> Result<(), StoreError> {
    let store = state.writer(env)?;
    trap_on_storage_failure(env, store.delete_into(id, deleted))
}

/// `delete_user`: deletes a user; returns it.
pub fn delete_user<E: StorageEngine>(
    state: &mut StoreState<E>,
    env: &impl CallEnv,
    id: u64,
) -> Result<User, StoreError> {
    let store = state.writer(env)?;
    trap_on_storage_failure(env, store.delete(id))
}

/// `update_users`: renames every listed user, all or nothing; returns how many.
pub fn update_users<E: StorageEngine>(
    state: &mut StoreState<E>,
    env: &impl CallEnv,
    users: &[User],
) -> Result<u64, StoreError> {
    let store = state.batch_writer(env, BatchWrite::Update, users.len())?;
    trap_on_storage_failure(env, store.update_batch(users))
}

/// `delete_users`: deletes every listed user, all or nothing; returns how many.
pub fn delete_users<E: StorageEngine>(
    state: &mut StoreState<E>,
    env: &impl CallEnv,
    ids: &[u64],
) -> Result<u64, StoreError> {
    let store = state.batch_writer(env, BatchWrite::Delete, ids.len())?;
    trap_on_storage_failure(env, store.delete_batch(ids))
}

/// `count_users`: the number of users.
pub fn count_users<E: StorageEngine>(state: &StoreState<E>) -> Result<u64, StoreError> {
    state.store().count()
}

/// `config`: the engine and its configuration, the writers and the limits.
pub fn config<E: StorageEngine>(state: &StoreState<E>) -> CanisterConfig<EngineConfig<E>> {
    state.config()
}

/// `stats`: rows, stable memory pages and heap pages.
pub fn stats<E: StorageEngine>(
    state: &StoreState<E>,
    env: &impl CallEnv,
) -> Result<Stats, StoreError> {
    Ok(Stats {
        rows: state.store().count()?,
        stable_memory_pages: env.stable_memory_pages(),
        heap_pages: env.heap_pages(),
        shared_usernames: state
            .store()
            .shared_usernames(limits::SHARED_USERNAMES_REPORTED)?,
    })
}
