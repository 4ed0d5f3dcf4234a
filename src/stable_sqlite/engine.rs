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
        // About twice the worst measured under the IC's current meter (per_call_results.yml;
        // `budget`'s test holds every bound above every measured call): a row of a batch
        // touches its table leaf and its index leaf, each a page read from stable memory and
        // written at COMMIT (docs/metering.md §5, §6); scattered rows touch new pages each.
        // An update or a delete moves an index entry, as dear as an insert's two pages.
        let per_row = match write {
            BatchWrite::Insert => 2_000_000,
            BatchWrite::Update | BatchWrite::Delete => 1_700_000,
        };
        WriteCost {
            // The dearest one-row transaction measured is a leaf split, with its page charges.
            per_batch: 16_000_000,
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

    /// Leaves the connection to the heap's discard, unclosed. The close has nothing to
    /// write: when a message ends, its commit is whole in stable memory (`cache_spill` off,
    /// the journal in the heap or none, the row count in the VFS header; see the module
    /// [`crate::stable_sqlite`]), and the VFS keeps which files are open and locked only in
    /// the heap, which the next Wasm instance starts without. What the close would do is
    /// free the page cache, at a cost that grows with the cache (docs/scale.md, "Where each
    /// engine stops"). An upgrade that fails restores the old heap, connection included.
    fn before_upgrade(self) -> Result<(), StoreError> {
        std::mem::forget(self);
        Ok(())
    }
}
