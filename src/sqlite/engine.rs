//! [`SqliteStore`] in a canister: its name, configuration, cost bounds and where it opens.

use super::SqliteStore;
use crate::engine::{BatchWrite, EngineStorage, MemoryAccess, StorageEngine, WriteCost};
use crate::error::StoreError;
use crate::sqlite_shared::randomness::seed_randomness;
use crate::sqlite_shared::{SqlTable, SqliteConfig};

impl StorageEngine for SqliteStore {
    const NAME: &'static str = "Sqlite";

    /// The database file on one memory, its journals on a file system of its own.
    const MEMORY_ACCESS: MemoryAccess = MemoryAccess::HandedWithFileSystem;

    type Config = SqliteConfig;

    /// The configuration asked for, else the one in force, else the default; checked.
    fn settle_config(
        requested: Option<SqliteConfig>,
        current: Option<SqliteConfig>,
    ) -> Result<SqliteConfig, StoreError> {
        let config = requested.or(current).unwrap_or_default();
        config.validate()?;
        Ok(config)
    }

    fn write_cost(write: BatchWrite) -> WriteCost {
        // About twice the worst measured under the IC's current meter (per_call_results.yml;
        // `budget`'s test holds every bound above every measured call): every touched page is
        // journaled, through a page cache spread over the heap (docs/metering.md §6).
        let per_row = match write {
            BatchWrite::Insert => 2_500_000,
            BatchWrite::Update | BatchWrite::Delete => 2_400_000,
        };
        WriteCost {
            // The dearest one-row transaction measured is a WAL checkpoint, which copies the
            // log's pages into the database: a batch may run one.
            per_batch: 250_000_000,
            per_row,
        }
    }

    /// Inside a canister: mounts the polyfill's file system and the database file on the
    /// memories it is handed, then opens the database. Natively (to export the Candid
    /// service in tests): an in-memory database.
    fn open(storage: EngineStorage<'_>, config: SqliteConfig) -> Result<Self, StoreError> {
        seed_randomness(storage.instance)?;
        #[cfg(target_os = "wasi")]
        {
            super::stable_memory::mount(storage)?;
            super::stable_memory::open(config)
        }
        #[cfg(not(target_os = "wasi"))]
        {
            let _ = storage;
            SqliteStore::open_in_memory(config)
        }
    }

    fn config(&self) -> SqliteConfig {
        SqliteStore::config(self).clone()
    }

    fn version(&self) -> String {
        SqlTable::version()
    }

    /// Closes the connection so SQLite flushes what it holds. An upgrade closes it too (the
    /// default [`StorageEngine::before_upgrade`]): with the connection left open, the next
    /// Wasm instance found the database locked, its lock kept in the polyfill's file system
    /// in stable memory (tried: docs/scale.md, "Where each engine stops").
    fn close(self) -> Result<(), StoreError> {
        SqliteStore::close(self)
    }
}
