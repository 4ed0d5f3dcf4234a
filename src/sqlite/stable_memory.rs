//! Opening a [`SqliteStore`] whose database lives on the canister's stable memory.
//!
//! ic-wasi-polyfill gives the canister a WASI file system kept in ten virtual memories
//! ([`layout::SQLITE_FILE_SYSTEM_MEMORY_IDS`]); each database file is mounted on a virtual
//! memory of its own ([`layout::SQLITE_DATABASE_MEMORY_ID`] for the canisters' table) so that
//! SQLite's page reads and writes go straight to stable memory. Journal, WAL and temporary
//! files live on the polyfill file system. Everything is in stable memory, so it survives
//! upgrades.

use super::{SqliteConfig, SqliteStore};
use crate::error::StoreError;
use crate::layout;
use ic_stable_structures::memory_manager::{MemoryId, MemoryManager};
use ic_stable_structures::DefaultMemoryImpl;
use ic_wasi_polyfill::MountedFileSizePolicy;

/// Path of the canisters' database file on the polyfill file system.
pub const DATABASE_PATH: &str = layout::SQLITE_DATABASE_PATH;

/// The polyfill's random seed. SQLite only uses randomness for temporary names, which a
/// deterministic seed serves as well (and keeps instruction counts reproducible).
const POLYFILL_SEED: [u8; 32] = [0; 32];

/// Sets up the polyfill file system over `memory_manager`. Call once per Wasm instance (in
/// `init` and in `post_upgrade`), before mounting or opening any database.
pub fn init_file_system(
    memory_manager: &MemoryManager<DefaultMemoryImpl>,
) -> Result<(), StoreError> {
    ic_wasi_polyfill::init_with_memory_manager(
        &POLYFILL_SEED,
        &[("SQLITE_TMPDIR", "/tmp")],
        memory_manager,
        layout::SQLITE_FILE_SYSTEM_MEMORY_IDS,
    );
    for directory in ["/tmp", "/userstore"] {
        std::fs::create_dir_all(directory)
            .map_err(|error| StoreError::storage(&format!("creating {directory}"), error))?;
    }
    Ok(())
}

/// Mounts the database file `path` on the virtual memory `memory_id`.
pub fn mount_database(
    memory_manager: &MemoryManager<DefaultMemoryImpl>,
    path: &str,
    memory_id: MemoryId,
) -> Result<(), StoreError> {
    let database_memory = memory_manager.get(memory_id);
    // The file keeps the size recorded by the previous mount; a database restored into the
    // virtual memory without that record gets the memory's size.
    let status = ic_wasi_polyfill::mount_memory_file(
        path,
        Box::new(database_memory),
        MountedFileSizePolicy::PreviousOrMemoryPages,
    );
    if status != 0 {
        return Err(StoreError::storage(
            &format!("mounting the database file {path}"),
            format!("WASI errno {status}"),
        ));
    }
    Ok(())
}

/// Sets up the file system and mounts the canisters' database file ([`DATABASE_PATH`] on
/// [`layout::SQLITE_DATABASE_MEMORY_ID`]). Call once per Wasm instance before [`open`].
pub fn mount(memory_manager: &MemoryManager<DefaultMemoryImpl>) -> Result<(), StoreError> {
    init_file_system(memory_manager)?;
    mount_database(
        memory_manager,
        DATABASE_PATH,
        layout::SQLITE_DATABASE_MEMORY_ID,
    )
}

/// Opens the store on the mounted canisters' database file with `config`.
pub fn open(config: SqliteConfig) -> Result<SqliteStore, StoreError> {
    SqliteStore::open(DATABASE_PATH, config)
}
