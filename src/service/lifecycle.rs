//! The install and upgrade lifecycle every store canister shares: settings chosen by the
//! init argument and kept in stable memory ([`crate::settings`]), the store opened where the
//! engine keeps it and handed to it before an upgrade; and `canister_inspect_message`, the
//! other system entry point.

use super::env::CallEnv;
use super::StoreState;
use crate::engine::StorageEngine;
use crate::error::StoreError;
use crate::layout::{self, SETTINGS_MEMORY_ID};
use crate::settings::{refuse_foreign_config, InitArgsOf, Settings};

/// `init`: the settings of a fresh install by the caller, saved, and the store opened.
/// `raw_args` are the argument's Candid bytes, which tell a configuration for another engine
/// (which decodes as none) from none ([`refuse_foreign_config`]).
pub fn init<E: StorageEngine>(
    env: &impl CallEnv,
    args: Option<InitArgsOf<E>>,
    raw_args: &[u8],
) -> Result<StoreState<E>, StoreError> {
    refuse_foreign_config(&args, raw_args)?;
    let settings = Settings::for_install::<E>(args, env.caller())?;
    save_and_open(settings)
}

/// `post_upgrade`: the settings kept in stable memory, changed by the upgrade argument, and
/// the store reopened with them. An upgrade to another engine's Wasm, or a configuration the
/// engine refuses (say, a different SQLite page size), fails before anything is written, and
/// the IC keeps the canister as it was.
pub fn post_upgrade<E: StorageEngine>(
    args: Option<InitArgsOf<E>>,
    raw_args: &[u8],
) -> Result<StoreState<E>, StoreError> {
    refuse_foreign_config(&args, raw_args)?;
    let settings = Settings::<E::Config>::load(layout::canister_memory(SETTINGS_MEMORY_ID))?
        .upgraded::<E>(args)?;
    save_and_open(settings)
}

/// `pre_upgrade`: hands the store to its engine's [`StorageEngine::before_upgrade`] (a
/// close that flushes what it holds in the heap, unless the engine has nothing to flush).
pub fn pre_upgrade<E: StorageEngine>(state: StoreState<E>) -> Result<(), StoreError> {
    state.into_store().before_upgrade()
}

/// Places the store (refusing memory another layout owns, before anything is written),
/// saves `settings`, then opens the store with them and prepares the query replies
/// ([`super::reply`]). The settings are saved before the store opens: an engine with a
/// memory manager of its own ([`crate::engine::MemoryAccess::OwnManager`]) must be the last
/// to write the manager's header. A store that does not open traps the install or upgrade,
/// and the IC discards the saved settings with everything else the message wrote.
fn save_and_open<E: StorageEngine>(
    settings: Settings<E::Config>,
) -> Result<StoreState<E>, StoreError> {
    let config = settings
        .config
        .clone()
        .ok_or_else(|| StoreError::invalid_config("the settings hold no engine configuration"))?;
    let placed = layout::place::<E>()?;
    settings.save(layout::canister_memory(SETTINGS_MEMORY_ID));
    let store = placed.open::<E>(config, settings.instance())?;
    super::reply::prepare_query_replies()
        .map_err(|error| StoreError::storage("encoding the reply types", error))?;
    let budget = settings.effective_instruction_budget();
    Ok(StoreState::new(store, settings.writers, budget)
        .with_stable_memory_limit(settings.stable_memory_limit_pages))
}

/// `canister_inspect_message`: accepts the ingress message unless
/// [`super::api::inspect`] refuses it.
#[cfg(feature = "canister")]
pub fn inspect_message<E: crate::engine::StorageEngine>(state: &super::StoreState<E>) {
    let mut name = [0_u8; 32];
    let len = ic0::msg_method_name_size();
    // No method of the store has a longer name: a longer one is not accepted.
    let Some(name) = name.get_mut(..len) else {
        return;
    };
    ic0::msg_method_name_copy(name, 0);
    let method = std::str::from_utf8(name).unwrap_or_default();
    if super::api::inspect(state, &super::env::IcEnv, method, ic0::msg_arg_data_size()) {
        ic0::accept_message();
    }
}
