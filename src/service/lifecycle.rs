//! The install and upgrade lifecycle every store canister shares: settings chosen by the
//! init argument and kept in stable memory ([`crate::settings`]), the store opened where the
//! engine keeps it, and closed before an upgrade.

use super::env::CallEnv;
use super::StoreState;
use crate::engine::StorageEngine;
use crate::error::StoreError;
use crate::layout::{self, SETTINGS_MEMORY_ID};
use crate::settings::{InitArgs, Settings};

/// `init`: the settings of a fresh install by the caller, saved, and the store opened.
pub fn init<E: StorageEngine>(
    env: &impl CallEnv,
    args: Option<InitArgs>,
) -> Result<StoreState<E>, StoreError> {
    let settings = Settings::for_install::<E>(args, env.caller())?;
    open_and_save(settings)
}

/// `post_upgrade`: the settings kept in stable memory, changed by the upgrade argument, and
/// the store reopened with them. A configuration the engine refuses (say, a different SQLite
/// page size) fails the upgrade, and the IC keeps the canister as it was.
pub fn post_upgrade<E: StorageEngine>(args: Option<InitArgs>) -> Result<StoreState<E>, StoreError> {
    let settings =
        Settings::load(layout::canister_memory(SETTINGS_MEMORY_ID))?.upgraded::<E>(args)?;
    open_and_save(settings)
}

/// `pre_upgrade`: closes the store so it flushes what it holds in the heap.
pub fn pre_upgrade<E: StorageEngine>(state: StoreState<E>) -> Result<(), StoreError> {
    state.into_store().close()
}

/// Opens the store with `settings` and prepares the query replies ([`super::reply`]), then
/// saves the settings (a store that does not open saves nothing).
fn open_and_save<E: StorageEngine>(settings: Settings) -> Result<StoreState<E>, StoreError> {
    let store = E::open_in_canister(settings.sqlite.clone())?;
    super::reply::prepare_query_replies()
        .map_err(|error| StoreError::storage("encoding the reply types", error))?;
    settings.save(layout::canister_memory(SETTINGS_MEMORY_ID));
    let budget = settings.effective_instruction_budget();
    Ok(StoreState::new(store, settings.writers, budget))
}
