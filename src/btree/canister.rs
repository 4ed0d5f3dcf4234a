//! The B-tree as a canister's engine: a map in the memory the canister layer hands it, the
//! region past the memory manager's first bucket or, in canisters first installed before
//! that layout, a virtual memory of the manager.
//!
//! Every read of a map in a virtual memory goes through the memory manager's address
//! translation (a `RefCell` borrow, a bucket lookup, a bounds check) before `stable64_read`;
//! a map in the region reads at a constant offset instead (the figures are in
//! `per_call_results.yml`). The store dispatches once per call on where the map is, so every
//! read inside the map goes straight to its memory.

use super::BTreeStore;
use crate::engine::{BatchWrite, EngineMemory, EngineStorage, StorageEngine, WriteCost};
use crate::error::StoreError;
use crate::store::UserStore;
use crate::user::User;
use candid::CandidType;
use ic_stable_structures::memory_manager::VirtualMemory;
use ic_stable_structures::{DefaultMemoryImpl, RestrictedMemory};
use serde::{Deserialize, Serialize};

/// The B-tree engine's configuration: none (ic-stable-structures 0.7's map has no settings).
#[derive(CandidType, Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct BTreeConfig {}

/// The B-tree store as a canister keeps it.
pub enum BTreeCanisterStore {
    /// The map in a region of stable memory of its own: where a fresh install puts it.
    Region(BTreeStore<RestrictedMemory<DefaultMemoryImpl>>),
    /// The map in a virtual memory of the memory manager: where canisters installed before
    /// the region existed keep it, across upgrades too.
    Managed(BTreeStore<VirtualMemory<DefaultMemoryImpl>>),
}

impl BTreeCanisterStore {
    /// Opens the map in `memory`: loads the existing map, or creates an empty one if the
    /// memory is empty ([`BTreeStore::open`]).
    pub fn open(memory: EngineMemory) -> Result<Self, StoreError> {
        Ok(match memory {
            EngineMemory::Region(region) => Self::Region(BTreeStore::open(region)?),
            EngineMemory::Virtual(managed) => Self::Managed(BTreeStore::open(managed)?),
        })
    }

    /// Whether the map is in a region of its own (the current layout).
    pub fn is_in_region(&self) -> bool {
        matches!(self, Self::Region(_))
    }
}

/// Calls `$call` on whichever store `$self` holds.
macro_rules! on_store {
    ($self:expr, $store:ident => $call:expr) => {
        match $self {
            BTreeCanisterStore::Region($store) => $call,
            BTreeCanisterStore::Managed($store) => $call,
        }
    };
}

impl UserStore for BTreeCanisterStore {
    fn insert(&mut self, user: User) -> Result<(), StoreError> {
        on_store!(self, store => store.insert(user))
    }

    fn insert_batch(&mut self, users: &[User]) -> Result<u64, StoreError> {
        on_store!(self, store => store.insert_batch(users))
    }

    fn get(&self, id: u64) -> Result<User, StoreError> {
        on_store!(self, store => store.get(id))
    }

    fn get_by_name(&self, username: &str) -> Result<User, StoreError> {
        on_store!(self, store => store.get_by_name(username))
    }

    fn get_id_by_name(&self, username: &str) -> Result<u64, StoreError> {
        on_store!(self, store => store.get_id_by_name(username))
    }

    fn ids_named(&self, username: &str, limit: usize) -> Result<Vec<u64>, StoreError> {
        on_store!(self, store => store.ids_named(username, limit))
    }

    fn shared_usernames(&self, limit: usize) -> Result<Vec<String>, StoreError> {
        on_store!(self, store => store.shared_usernames(limit))
    }

    fn contains(&self, id: u64) -> Result<bool, StoreError> {
        on_store!(self, store => store.contains(id))
    }

    fn page(&self, after: Option<u64>, limit: u32) -> Result<Vec<User>, StoreError> {
        on_store!(self, store => store.page(after, limit))
    }

    fn update_username(&mut self, id: u64, username: &str) -> Result<User, StoreError> {
        on_store!(self, store => store.update_username(id, username))
    }

    fn delete(&mut self, id: u64) -> Result<User, StoreError> {
        on_store!(self, store => store.delete(id))
    }

    fn update_batch(&mut self, users: &[User]) -> Result<u64, StoreError> {
        on_store!(self, store => store.update_batch(users))
    }

    fn delete_batch(&mut self, ids: &[u64]) -> Result<u64, StoreError> {
        on_store!(self, store => store.delete_batch(ids))
    }

    fn count(&self) -> Result<u64, StoreError> {
        on_store!(self, store => store.count())
    }
}

/// The B-tree in a canister: no configuration, nothing to flush before an upgrade.
impl StorageEngine for BTreeCanisterStore {
    const NAME: &'static str = "StableBTreeMap";

    type Config = BTreeConfig;

    fn settle_config(
        _requested: Option<BTreeConfig>,
        _current: Option<BTreeConfig>,
    ) -> Result<BTreeConfig, StoreError> {
        Ok(BTreeConfig {})
    }

    fn write_cost(write: BatchWrite) -> WriteCost {
        // About twice the worst measured under the IC's current meter (per_call_results.yml;
        // `budget`'s test holds every bound above every measured call): a row reads one node
        // per level of the map for its row and again for its name entry, each node on its
        // own page (docs/metering.md §6); an update or a delete moves the name entry, and a
        // delete may merge and rebalance nodes on its way down.
        let per_row = match write {
            BatchWrite::Insert => 1_300_000,
            BatchWrite::Update | BatchWrite::Delete => 2_900_000,
        };
        WriteCost {
            // The dearest one-row call measured, a rename splitting nodes on both paths.
            per_batch: 8_000_000,
            per_row,
        }
    }

    fn open(storage: EngineStorage<'_>, _config: BTreeConfig) -> Result<Self, StoreError> {
        Self::open(storage.memory)
    }

    fn config(&self) -> BTreeConfig {
        BTreeConfig {}
    }

    fn version(&self) -> String {
        format!("ic-stable-structures {}", super::STABLE_STRUCTURES_VERSION)
    }
}
