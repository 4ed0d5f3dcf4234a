//! Opening a [`SqliteStore`] whose database lives on the canister's stable memory.
//!
//! ic-wasi-polyfill gives the canister a WASI file system kept in the virtual memories the
//! canister hands the engine ([`EngineStorage::file_system`]); the database file is mounted
//! on a memory of its own ([`EngineStorage::memory`]) so that SQLite's page reads and writes
//! go straight to stable memory. Journal, WAL and temporary files live on the polyfill file
//! system. Everything is in stable memory, so it survives upgrades.

use super::SqliteStore;
use crate::engine::EngineStorage;
use crate::error::StoreError;
use crate::sqlite_shared::SqliteConfig;
use ic_stable_structures::memory_manager::{MemoryId, MemoryManager};
use ic_stable_structures::{DefaultMemoryImpl, Memory};
use ic_wasi_polyfill::MountedFileSizePolicy;

/// Path of the canisters' database file on the polyfill file system.
pub const DATABASE_PATH: &str = "/userstore/users.db";

/// The polyfill's random seed. SQLite only uses randomness for temporary names, which a
/// deterministic seed serves as well (and keeps instruction counts reproducible).
const POLYFILL_SEED: [u8; 32] = [0; 32];

/// Sets up the polyfill file system over the virtual memories `ids` of `memory_manager`.
/// Call once per Wasm instance (in `init` and in `post_upgrade`), before mounting or opening
/// any database.
pub fn init_file_system(
    memory_manager: &MemoryManager<DefaultMemoryImpl>,
    ids: std::ops::Range<u8>,
) -> Result<(), StoreError> {
    ic_wasi_polyfill::init_with_memory_manager(
        &POLYFILL_SEED,
        &[("SQLITE_TMPDIR", "/tmp")],
        memory_manager,
        ids,
    );
    for directory in ["/tmp", "/userstore"] {
        std::fs::create_dir_all(directory)
            .map_err(|error| StoreError::storage(&format!("creating {directory}"), error))?;
    }
    Ok(())
}

/// Mounts the database file `path` on the virtual memory `memory_id` of `memory_manager`.
pub fn mount_database(
    memory_manager: &MemoryManager<DefaultMemoryImpl>,
    path: &str,
    memory_id: MemoryId,
) -> Result<(), StoreError> {
    mount_file(path, Box::new(memory_manager.get(memory_id)))
}

/// Mounts the database file `path` on `memory`.
fn mount_file(path: &str, memory: Box<dyn Memory>) -> Result<(), StoreError> {
    // The file keeps the size recorded by the previous mount; a database restored into the
    // memory without that record gets the memory's size.
    let status = ic_wasi_polyfill::mount_memory_file(
        path,
        memory,
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

/// Sets up the file system on the memories `storage` gives for one and mounts the
/// canisters' database file ([`DATABASE_PATH`]) on its memory. Call once per Wasm instance
/// before [`open`].
pub fn mount(storage: EngineStorage<'_>) -> Result<(), StoreError> {
    let file_system = storage.file_system.ok_or_else(|| {
        StoreError::storage(
            "mounting the database file",
            "the canister gave this engine no memories for its file system",
        )
    })?;
    init_file_system(file_system.manager, file_system.ids)?;
    mount_file(DATABASE_PATH, storage.memory.into_boxed())
}

/// Opens the store on the mounted canisters' database file with `config`.
pub fn open(config: SqliteConfig) -> Result<SqliteStore, StoreError> {
    SqliteStore::open(DATABASE_PATH, config)
}
