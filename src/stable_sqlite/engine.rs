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
        // Measured worst per row at 1,000,000 rows (canbench_results.yml, cold scopes),
        // doubled or more: every touched page is read from stable memory once and written
        // once at COMMIT (docs/metering.md §5, §6), so the cost per row does not depend on
        // the journal mode beyond the in-heap copy.
        let per_row = match write {
            // 16,881 (stable_sqlite_memory_insert_middle_10000, cold).
            BatchWrite::Insert => 40_000,
            // 34,531 (stable_sqlite_off_update_1000, cold).
            BatchWrite::Update => 80_000,
            // 32,694 (stable_sqlite_off_delete_1000, cold).
            BatchWrite::Delete => 80_000,
        };
        WriteCost {
            // The worst one-row transaction: 217,045 (stable_sqlite_memory_insert_middle_1,
            // cold: a leaf split); 5 million leaves room for a split cascading to the root.
            per_batch: 5_000_000,
            per_row,
        }
    }

    /// Opens the table in the canister's virtual memory
    /// [`layout::STABLE_SQLITE_DATABASE_MEMORY_ID`] (natively, where there is no canister,
    /// in that memory of the thread's memory manager over a `VectorMemory`).
    fn open_in_canister(config: Option<SqliteConfig>) -> Result<Self, StoreError> {
        layout::refuse_data_outside_manager("opening the stable-memory SQLite database")?;
        let config = config.unwrap_or_else(StableSqliteStore::default_config);
        let memory = layout::canister_memory(layout::STABLE_SQLITE_DATABASE_MEMORY_ID);
        StableSqliteStore::open(layout::STABLE_SQLITE_DATABASE_NAME, memory, config)
    }

    /// Closes the connection. Nothing is left to flush: every commit is in stable memory.
    fn close(self) -> Result<(), StoreError> {
        StableSqliteStore::close(self)
    }
}
