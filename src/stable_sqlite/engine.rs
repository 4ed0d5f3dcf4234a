//! [`StableSqliteStore`] in a canister: its configuration, its cost bounds and where it opens.

use super::StableSqliteStore;
use crate::budget::{BatchWrite, WriteCost};
use crate::engine::StorageEngine;
use crate::error::StoreError;
use crate::layout;
use crate::sqlite::SqliteConfig;

impl StorageEngine for StableSqliteStore {
    /// The configuration asked for, else the one in force, else
    /// [`StableSqliteStore::default_config`]; checked by [`StableSqliteStore::check_config`].
    fn settle_config(
        requested: Option<SqliteConfig>,
        current: Option<SqliteConfig>,
    ) -> Result<Option<SqliteConfig>, StoreError> {
        let config = requested
            .or(current)
            .unwrap_or_else(StableSqliteStore::default_config);
        StableSqliteStore::check_config(&config)?;
        Ok(Some(config))
    }

    fn write_cost(write: BatchWrite) -> WriteCost {
        let per_row = match write {
            BatchWrite::Insert => 40_000,
            BatchWrite::Update => 220_000,
            BatchWrite::Delete => 220_000,
        };
        WriteCost {
            per_batch: 20_000_000,
            per_row,
        }
    }

    /// Opens the table in the canister's virtual memory
    /// [`layout::STABLE_SQLITE_DATABASE_MEMORY_ID`] (natively, where there is no canister,
    /// in that memory of the thread's memory manager over a `VectorMemory`).
    fn open_in_canister(config: Option<SqliteConfig>) -> Result<Self, StoreError> {
        let config = config.unwrap_or_else(StableSqliteStore::default_config);
        let memory = layout::canister_memory(layout::STABLE_SQLITE_DATABASE_MEMORY_ID);
        StableSqliteStore::open(layout::STABLE_SQLITE_DATABASE_NAME, memory, config)
    }

    /// Closes the connection. Nothing is left to flush: every commit is in stable memory.
    fn close(self) -> Result<(), StoreError> {
        StableSqliteStore::close(self)
    }
}
