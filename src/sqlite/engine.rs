//! [`SqliteStore`] in a canister: its configuration, its cost bounds and where it opens.

use super::{SqliteConfig, SqliteStore};
use crate::budget::{BatchWrite, WriteCost};
use crate::engine::StorageEngine;
use crate::error::StoreError;

impl StorageEngine for SqliteStore {
    /// The configuration asked for, else the one in force, else the default; checked.
    fn settle_config(
        requested: Option<SqliteConfig>,
        current: Option<SqliteConfig>,
    ) -> Result<Option<SqliteConfig>, StoreError> {
        let config = requested.or(current).unwrap_or_default();
        config.validate()?;
        Ok(Some(config))
    }

    fn write_cost(write: BatchWrite) -> WriteCost {
        let per_row = match write {
            // Measured worst: 19,727 per row (middle inserts, TRUNCATE, cold).
            BatchWrite::Insert => 40_000,
            // Measured worst: 105,426 per row (TRUNCATE, cold): every touched page is journaled.
            BatchWrite::Update => 220_000,
            // Measured worst: 103,563 per row (TRUNCATE, cold).
            BatchWrite::Delete => 220_000,
        };
        WriteCost {
            // Measured worst one-row transaction: 1,258,293 (TRUNCATE, cold); 20 million also
            // covers a WAL checkpoint.
            per_batch: 20_000_000,
            per_row,
        }
    }

    /// Inside a canister: mounts the polyfill's file system and the database file on the
    /// canister's memory manager, then opens the database. Natively (to export the Candid
    /// service in tests): an in-memory database.
    fn open_in_canister(config: Option<SqliteConfig>) -> Result<Self, StoreError> {
        crate::layout::refuse_data_outside_manager("opening the SQLite database")?;
        let config = config.unwrap_or_default();
        #[cfg(target_os = "wasi")]
        {
            crate::layout::with_memory_manager(super::stable_memory::mount)?;
            super::stable_memory::open(config)
        }
        #[cfg(not(target_os = "wasi"))]
        {
            SqliteStore::open_in_memory(config)
        }
    }

    /// Closes the connection so SQLite flushes what it holds.
    fn close(self) -> Result<(), StoreError> {
        SqliteStore::close(self)
    }
}
