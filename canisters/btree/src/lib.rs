//! The user-table canister over a `StableBTreeMap` (see `userstore::BTreeStore`).
//!
//! Stable memory is split by one `MemoryManager` (`userstore::layout`): settings, then the
//! map. Upgrades need no hooks: the map lives in stable memory and is reopened in
//! `post_upgrade`.

use ic_stable_structures::memory_manager::{MemoryManager, VirtualMemory};
use ic_stable_structures::DefaultMemoryImpl;
use std::cell::RefCell;
use userstore::service::StoreState;
use userstore::settings::Settings;
use userstore::{layout, BTreeStore, Engine, InitArgs};

type Memory = VirtualMemory<DefaultMemoryImpl>;

thread_local! {
    static MEMORY_MANAGER: MemoryManager<DefaultMemoryImpl> =
        MemoryManager::init(DefaultMemoryImpl::default());
    static STATE: RefCell<Option<StoreState<BTreeStore<Memory>>>> = const { RefCell::new(None) };
}

fn memory(id: ic_stable_structures::memory_manager::MemoryId) -> Memory {
    MEMORY_MANAGER.with(|manager| manager.get(id))
}

fn open(settings: Settings) {
    let store = BTreeStore::init(memory(layout::BTREE_USERS_MEMORY_ID));
    let state = StoreState::new(
        store,
        settings.writers.clone(),
        settings.effective_instruction_budget(),
    );
    STATE.with(|slot| *slot.borrow_mut() = Some(state));
}

/// Lends the canister's state to `f`. The state exists from `init`/`post_upgrade` on.
fn with_state<R>(f: impl FnOnce(&mut StoreState<BTreeStore<Memory>>) -> R) -> R {
    STATE.with(|slot| match slot.borrow_mut().as_mut() {
        Some(state) => f(state),
        None => ic_cdk::trap("the store is not initialized"),
    })
}

fn trap_on_error<T>(result: Result<T, userstore::StoreError>) -> T {
    result.unwrap_or_else(|error| ic_cdk::trap(error.to_string()))
}

#[ic_cdk::init]
fn init(args: Option<InitArgs>) {
    let installer = ic_cdk::api::msg_caller();
    let settings = trap_on_error(Settings::for_install(
        Engine::StableBTreeMap,
        args,
        installer,
    ));
    settings.save(memory(layout::SETTINGS_MEMORY_ID));
    open(settings);
}

#[ic_cdk::post_upgrade]
fn post_upgrade(args: Option<InitArgs>) {
    let settings = trap_on_error(
        Settings::load(memory(layout::SETTINGS_MEMORY_ID))
            .and_then(|settings| settings.upgraded(Engine::StableBTreeMap, args)),
    );
    settings.save(memory(layout::SETTINGS_MEMORY_ID));
    open(settings);
}

userstore::export_user_table_api!(with_state);

ic_cdk::export_candid!();

#[cfg(test)]
mod tests {
    /// The committed `btree.did` is what this code exports.
    #[test]
    fn committed_candid_matches_the_code() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/btree.did");
        let checked =
            userstore::service::committed_candid_matches(&super::__export_service(), path);
        assert_eq!(checked, Ok(()));
    }
}
