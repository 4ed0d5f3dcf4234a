//! [`StableSqliteStore`] in a canister: its name, configuration, cost bounds and where it
//! opens.

use super::StableSqliteStore;
use crate::engine::{BatchWrite, EngineStorage, StorageEngine, WriteCost};
use crate::error::StoreError;
use crate::sqlite_shared::randomness::seed_randomness;
use crate::sqlite_shared::{SqlTable, SqliteConfig};

/// The name the engine registers its database under with its VFS.
const DATABASE_NAME: &str = "users.db";

impl StorageEngine for StableSqliteStore {
    const NAME: &'static str = "StableSqlite";

    type Config = SqliteConfig;

    /// The configuration asked for, else the one in force, else
    /// [`StableSqliteStore::default_config`]; checked by [`StableSqliteStore::check_config`].
    fn settle_config(
        requested: Option<SqliteConfig>,
        current: Option<SqliteConfig>,
    ) -> Result<SqliteConfig, StoreError> {
        let config = requested
            .or(current)
            .unwrap_or_else(StableSqliteStore::default_config);
        StableSqliteStore::check_config(&config)?;
        Ok(config)
    }

    fn write_cost(write: BatchWrite) -> WriteCost {
        // About twice the worst per row measured (canbench_results.yml, cold scopes): every
        // touched page is read from stable memory once and written once at COMMIT
        // (docs/metering.md §5, §6), so the cost per row does not depend on the journal mode
        // beyond the in-heap copy.
        // At 16 KiB pages (the default) an update or a delete rewrites four times the bytes
        // of SQLite's 4 KiB page, which the old meter's per-byte charges see.
        let per_row = match write {
            BatchWrite::Insert => 40_000,
            BatchWrite::Update => 160_000,
            BatchWrite::Delete => 160_000,
        };
        WriteCost {
            // The dearest one-row transaction measured is a leaf split; 5 million leaves
            // room for a split cascading to the root.
            per_batch: 5_000_000,
            per_row,
        }
    }

    /// Opens the table in the memory the canister hands the engine.
    fn open(storage: EngineStorage<'_>, config: SqliteConfig) -> Result<Self, StoreError> {
        seed_randomness(storage.instance)?;
        StableSqliteStore::open_boxed(DATABASE_NAME, storage.memory.into_boxed(), config)
    }

    fn config(&self) -> SqliteConfig {
        StableSqliteStore::config(self).clone()
    }

    fn version(&self) -> String {
        SqlTable::version()
    }

    /// Closes the connection. Nothing is left to flush: every commit is in stable memory.
    fn close(self) -> Result<(), StoreError> {
        StableSqliteStore::close(self)
    }
}
