//! [`PageTreeStore`] in a canister: its name, configuration, cost bounds and where it opens.

use super::PageTreeStore;
use crate::engine::{BatchWrite, EngineMemory, EngineStorage, StorageEngine, WriteCost};
use crate::error::StoreError;
use candid::CandidType;
use serde::{Deserialize, Serialize};

/// The page tree's configuration: none (its page is the IC's 64 KiB page).
#[derive(CandidType, Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct PageTreeConfig {}

impl StorageEngine for PageTreeStore<EngineMemory> {
    const NAME: &'static str = "PageTree";

    type Config = PageTreeConfig;

    fn settle_config(
        _requested: Option<PageTreeConfig>,
        _current: Option<PageTreeConfig>,
    ) -> Result<PageTreeConfig, StoreError> {
        Ok(PageTreeConfig {})
    }

    fn write_cost(write: BatchWrite) -> WriteCost {
        // About twice the worst measured under the IC's current meter (per_call_results.yml;
        // `budget`'s test holds every bound above every measured call). A row touches its
        // leaf and its name's leaf (80,000 each to access, 80,000 to write, docs/metering.md
        // §6); an update or a delete also the old name's leaf; a split or a merge a second
        // leaf, the index page and the header.
        let per_row = match write {
            BatchWrite::Insert => 600_000,
            BatchWrite::Update | BatchWrite::Delete => 800_000,
        };
        WriteCost {
            // The dearest one-row call measured: a split of a full leaf on the ascending table.
            per_batch: 4_000_000,
            per_row,
        }
    }

    fn open(storage: EngineStorage<'_>, _config: PageTreeConfig) -> Result<Self, StoreError> {
        PageTreeStore::open(storage.memory)
    }

    fn config(&self) -> PageTreeConfig {
        PageTreeConfig {}
    }

    fn version(&self) -> String {
        "userstore page tree, layout 2".into()
    }

    /// Writes the row count to the header, so that the next open need not count the rows.
    fn close(self) -> Result<(), StoreError> {
        PageTreeStore::close(self)
    }
}
