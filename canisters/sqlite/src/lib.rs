//! The user-table canister over SQLite on stable memory (see `userstore::SqliteStore`).
//!
//! Built for wasm32-wasip1 and converted with wasi2ic: ic-wasi-polyfill provides the WASI
//! calls SQLite makes and keeps the database file on stable memory
//! (`userstore::sqlite::stable_memory`). The connection is closed in `pre_upgrade` (so SQLite
//! flushes everything it holds) and reopened in `post_upgrade`, with the configuration kept in
//! stable memory or the one the upgrade argument gives.

use userstore::service::StoreState;
use userstore::settings::Settings;
use userstore::{Engine, InitArgs, SqliteStore, StoreError};

userstore::store_canister_state!(SqliteStore);

#[cfg(target_os = "wasi")]
mod storage {
    //! The canister's stable memory: one memory manager for the settings, the polyfill file
    //! system and the database file.
    use ic_stable_structures::memory_manager::{MemoryManager, VirtualMemory};
    use ic_stable_structures::DefaultMemoryImpl;
    use userstore::sqlite::stable_memory;
    use userstore::{layout, SqliteConfig, SqliteStore, StoreError};

    thread_local! {
        static MEMORY_MANAGER: MemoryManager<DefaultMemoryImpl> =
            MemoryManager::init(DefaultMemoryImpl::default());
    }

    /// The virtual memory that holds the canister's settings.
    pub fn settings_memory() -> VirtualMemory<DefaultMemoryImpl> {
        MEMORY_MANAGER.with(|manager| manager.get(layout::SETTINGS_MEMORY_ID))
    }

    /// Mounts the file system and opens the database with `config`.
    pub fn open(config: SqliteConfig) -> Result<SqliteStore, StoreError> {
        MEMORY_MANAGER.with(stable_memory::mount)?;
        stable_memory::open(config)
    }
}

#[cfg(not(target_os = "wasi"))]
mod storage {
    //! Native builds (used only to export the Candid service in tests) keep everything in
    //! memory.
    use ic_stable_structures::VectorMemory;
    use userstore::{SqliteConfig, SqliteStore, StoreError};

    pub fn settings_memory() -> VectorMemory {
        VectorMemory::default()
    }

    pub fn open(config: SqliteConfig) -> Result<SqliteStore, StoreError> {
        SqliteStore::open_in_memory(config)
    }
}

fn open(settings: Settings) -> Result<(), StoreError> {
    let config = settings.sqlite.clone().unwrap_or_default();
    let store = storage::open(config)?;
    let budget = settings.effective_instruction_budget();
    set_state(StoreState::new(store, settings.writers, budget));
    Ok(())
}

#[ic_cdk::init]
fn init(args: Option<InitArgs>) {
    let installer = ic_cdk::api::msg_caller();
    let settings = trap_on_error(Settings::for_install(Engine::Sqlite, args, installer));
    settings.save(storage::settings_memory());
    trap_on_error(open(settings));
}

/// Closes the connection so SQLite flushes what it holds. A failure is logged, not trapped:
/// a trap here would block every upgrade, including one that fixes the cause, and nothing is
/// lost without the close (every committed transaction is already in stable memory, and a
/// WAL left behind is replayed when the database is reopened).
#[ic_cdk::pre_upgrade]
fn pre_upgrade() {
    if let Some(state) = take_state() {
        if let Err(error) = state.into_store().close() {
            ic_cdk::api::debug_print(format!("pre_upgrade: {error}"));
        }
    }
}

#[ic_cdk::post_upgrade]
fn post_upgrade(args: Option<InitArgs>) {
    let settings = trap_on_error(
        Settings::load(storage::settings_memory())
            .and_then(|settings| settings.upgraded(Engine::Sqlite, args)),
    );
    // Opening applies the new configuration or refuses it (a trap here fails the upgrade and
    // the IC keeps the canister as it was).
    trap_on_error(open(settings.clone()));
    settings.save(storage::settings_memory());
}

userstore::export_user_table_api!(with_state);

ic_cdk::export_candid!();

#[cfg(test)]
mod tests {
    /// The committed `sqlite.did` is what this code exports.
    #[test]
    fn committed_candid_matches_the_code() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/sqlite.did");
        let checked =
            userstore::service::committed_candid_matches(&super::__export_service(), path);
        assert_eq!(checked, Ok(()));
    }

    /// Both canisters export the same service, by construction; this pins it.
    #[test]
    fn both_canisters_declare_the_same_service() {
        let btree = include_str!("../../btree/btree.did");
        assert_eq!(btree.trim(), super::__export_service().trim());
    }
}
