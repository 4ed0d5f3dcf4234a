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
        // A row of a batch touches at most its leaf (80,000 to access, 80,000 to write,
        // docs/metering.md §6) and, when it splits or merges, a second leaf, the index page
        // and the header: about 700,000 at worst, 200,000 on average. Twice the worst.
        let per_row = match write {
            BatchWrite::Insert | BatchWrite::Update | BatchWrite::Delete => 1_400_000,
        };
        WriteCost {
            per_batch: 2_000_000,
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
