//! The user-table canister over a `StableBTreeMap` (see `userstore::BTreeStore`).
//!
//! Stable memory is split by one `MemoryManager` (`userstore::layout`): settings, then the
//! map. Upgrades need no hooks: the map lives in stable memory and is reopened in
//! `post_upgrade`.

use ic_stable_structures::memory_manager::{MemoryManager, VirtualMemory};
use ic_stable_structures::DefaultMemoryImpl;
use userstore::service::StoreState;
use userstore::settings::Settings;
use userstore::{layout, BTreeStore, Engine, InitArgs};

type Memory = VirtualMemory<DefaultMemoryImpl>;

thread_local! {
    static MEMORY_MANAGER: MemoryManager<DefaultMemoryImpl> =
        MemoryManager::init(DefaultMemoryImpl::default());
}

fn memory(id: ic_stable_structures::memory_manager::MemoryId) -> Memory {
    MEMORY_MANAGER.with(|manager| manager.get(id))
}

fn open(settings: Settings) {
    let store = BTreeStore::init(memory(layout::BTREE_USERS_MEMORY_ID));
    let budget = settings.effective_instruction_budget();
    set_state(StoreState::new(store, settings.writers, budget));
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

userstore::store_canister_state!(BTreeStore<Memory>);
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
