//! Where the B-tree canister keeps its map: a stable-memory region of its own, or (canisters
//! first installed before that layout) a virtual memory of the memory manager.
//!
//! Every read of a map in a virtual memory goes through the memory manager's address
//! translation (a `RefCell` borrow, a bucket lookup, a bounds check) before `stable64_read`.
//! A map in a region of its own reads at a constant offset instead. Measured on 1,000,000
//! rows per call (pocketic-13, `bench-calls`): `get_user` 51,908 → 42,529 instructions,
//! `insert_user` 74,433 → 62,403, `delete_user` 144,981 → 124,001, 1,000-row batches 16 to 18%
//! cheaper; under master-2026 1 to 18% cheaper. The layout is chosen once, at the first open:
//! a canister whose manager already holds a map keeps it there.

use super::BTreeStore;
use crate::budget::{BatchWrite, WriteCost};
use crate::describe::EngineInfo;
use crate::engine::StorageEngine;
use crate::error::StoreError;
use crate::layout::{self, CanisterMemory, BTREE_USERS_MEMORY_ID};
use crate::sqlite::SqliteConfig;
use crate::store::UserStore;
use crate::user::User;
use ic_stable_structures::{DefaultMemoryImpl, Memory, RestrictedMemory};

/// The first Wasm page of the B-tree's own region: the memory manager's header page and its
/// first bucket of 128 pages come before it (ic-stable-structures 0.7's
/// `BUCKETS_OFFSET_IN_PAGES` and `BUCKET_SIZE_IN_PAGES`). In this layout the manager holds
/// only the settings (virtual memory 0), which [`crate::settings::MAX_SETTINGS_BYTES`] keeps
/// inside that first bucket, so the manager never grows into the region.
pub const BTREE_REGION_FIRST_PAGE: u64 = 1 + 128;

/// The first bytes of every ic-stable-structures `StableBTreeMap` in its memory.
const MAP_MAGIC: &[u8; 3] = b"BTR";

/// The B-tree's own region: from [`BTREE_REGION_FIRST_PAGE`] to the end of stable memory.
pub type RegionMemory = RestrictedMemory<DefaultMemoryImpl>;

/// The B-tree store as a canister keeps it. The choice is made once per open, so each call
/// dispatches once and every read inside the map goes straight to its memory.
pub enum BTreeCanisterStore {
    /// The map in its own region: where a fresh install puts it.
    Region(BTreeStore<RegionMemory>),
    /// The map in virtual memory [`BTREE_USERS_MEMORY_ID`] of the memory manager: where
    /// canisters installed before the region existed keep it, across upgrades too.
    Managed(BTreeStore<CanisterMemory>),
}

impl BTreeCanisterStore {
    /// Opens the canister's map: in the manager's virtual memory if that already holds one
    /// (the earlier layout), in the map's own region otherwise. Refuses, changing nothing,
    /// when the region is neither empty nor a map: stable memory written by another engine's
    /// canister (say, a SQLite canister upgraded to this Wasm), which the map would overwrite.
    pub fn open() -> Result<Self, StoreError> {
        let managed = layout::canister_memory(BTREE_USERS_MEMORY_ID);
        if managed.size() > 0 {
            return Ok(Self::Managed(BTreeStore::init(managed)));
        }
        let region = RestrictedMemory::new(
            layout::stable_memory(),
            BTREE_REGION_FIRST_PAGE..ic_stable_structures::MAX_PAGES,
        );
        if region.size() > 0 {
            let mut magic = [0; 3];
            region.read(0, &mut magic);
            if &magic != MAP_MAGIC {
                return Err(StoreError::storage(
                    "opening the B-tree",
                    "stable memory past the settings holds data that is not a B-tree map \
                     (was this canister installed with another engine?)",
                ));
            }
        }
        // The region is only safe while the manager keeps to its first bucket: its next
        // bucket would start at the region's first page.
        if layout::manager_end_page().is_none_or(|end| end > BTREE_REGION_FIRST_PAGE) {
            return Err(StoreError::storage(
                "opening the B-tree",
                "the memory manager holds more than the settings' bucket, over the pages \
                 where the B-tree keeps its map",
            ));
        }
        Ok(Self::Region(BTreeStore::init(region)))
    }

    /// Whether the map is in its own region (the current layout).
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

    fn describe(&self) -> EngineInfo {
        on_store!(self, store => store.describe())
    }
}

/// The B-tree in a canister: no configuration, nothing to flush before an upgrade.
impl StorageEngine for BTreeCanisterStore {
    fn settle_config(
        requested: Option<SqliteConfig>,
        _current: Option<SqliteConfig>,
    ) -> Result<Option<SqliteConfig>, StoreError> {
        match requested {
            Some(_) => Err(StoreError::invalid_config(
                "this canister stores users in a StableBTreeMap; it takes no SQLite configuration",
            )),
            None => Ok(None),
        }
    }

    fn write_cost(write: BatchWrite) -> WriteCost {
        let per_row = match write {
            // Measured worst: 80,309 per row (append, cold, map in a virtual memory).
            BatchWrite::Insert => 160_000,
            // Measured worst: 89,976 per row (warm, map in a virtual memory).
            BatchWrite::Update => 180_000,
            // Measured worst: 285,460 per row (cold, map in a virtual memory): a delete may
            // merge and rebalance nodes.
            BatchWrite::Delete => 600_000,
        };
        WriteCost {
            per_batch: 2_000_000,
            per_row,
        }
    }

    fn open_in_canister(_config: Option<SqliteConfig>) -> Result<Self, StoreError> {
        Self::open()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::SETTINGS_MEMORY_ID;
    use crate::settings::{InitArgs, Settings, MAX_SETTINGS_BYTES};
    use candid::Principal;

    fn user(id: u64) -> User {
        User {
            id,
            username: format!("user-{id}"),
        }
    }

    fn open() -> BTreeCanisterStore {
        BTreeCanisterStore::open_in_canister(None).expect("the B-tree opens")
    }

    /// Settings as close to [`MAX_SETTINGS_BYTES`] as writers make them.
    fn largest_settings() -> Settings {
        let writers = |count: u32| InitArgs {
            writers: Some(
                (0..count)
                    .map(|n| Principal::from_slice(&[&n.to_be_bytes()[..], &[7; 25]].concat()))
                    .collect(),
            ),
            ..InitArgs::default()
        };
        let installer = Principal::from_slice(&[1; 29]);
        let (mut fits, mut refused) = (1u32, 100_000u32);
        while refused - fits > 1 {
            let middle = (fits + refused) / 2;
            match Settings::for_install::<BTreeCanisterStore>(Some(writers(middle)), installer) {
                Ok(_) => fits = middle,
                Err(_) => refused = middle,
            }
        }
        Settings::for_install::<BTreeCanisterStore>(Some(writers(fits)), installer)
            .expect("the largest settings that fit")
    }

    #[test]
    fn a_fresh_canister_keeps_its_map_in_its_own_region_beside_the_largest_settings() {
        let mut store = open();
        assert!(store.is_in_region());
        for id in 0..2_000 {
            assert_eq!(store.insert(user(id)), Ok(()));
        }
        let settings = largest_settings();
        settings.save(layout::canister_memory(SETTINGS_MEMORY_ID));

        let store = open();
        assert_eq!(store.count(), Ok(2_000));
        for id in [0, 999, 1_999] {
            assert_eq!(store.get(id), Ok(user(id)));
        }
        let loaded = Settings::load(layout::canister_memory(SETTINGS_MEMORY_ID));
        assert_eq!(loaded, Ok(settings));
        // The manager never took a page of the region: its virtual memory 1 stayed empty, so
        // the next open still picks the region.
        assert!(open().is_in_region());
        assert!(
            layout::canister_memory(SETTINGS_MEMORY_ID).size() * 65_536
                >= MAX_SETTINGS_BYTES as u64 / 2
        );
    }

    #[test]
    fn a_region_holding_other_data_is_refused_and_left_as_it_was() {
        // Another engine's canister: its manager's memory 2 reaches past the first bucket.
        let other = layout::canister_memory(layout::SQLITE_DATABASE_MEMORY_ID);
        other.grow(200);
        other.write(0, b"SQLite format 3");
        let before = layout::stable_memory().size();

        assert!(matches!(
            BTreeCanisterStore::open_in_canister(None),
            Err(StoreError::Storage { .. })
        ));
        assert_eq!(layout::stable_memory().size(), before);
        let mut kept = [0; 15];
        other.read(0, &mut kept);
        assert_eq!(&kept, b"SQLite format 3");
    }

    /// A fresh B-tree canister with `rows` users and its settings saved.
    fn region_canister(rows: u64) -> BTreeCanisterStore {
        let mut store = open();
        assert!(store.is_in_region());
        for id in 0..rows {
            assert_eq!(store.insert(user(id)), Ok(()));
        }
        Settings::for_install::<BTreeCanisterStore>(None, Principal::anonymous())
            .expect("default settings")
            .save(layout::canister_memory(SETTINGS_MEMORY_ID));
        store
    }

    #[test]
    fn the_other_engines_refuse_to_open_over_the_region_and_leave_it_as_it_was() {
        region_canister(500);
        let before = layout::stable_memory().size();

        // As if the canister were upgraded with a SQLite canister's Wasm: the manager would
        // hand either engine's database the bucket that starts at the region's first page.
        assert!(matches!(
            crate::SqliteStore::open_in_canister(None),
            Err(StoreError::Storage { .. })
        ));
        assert!(matches!(
            crate::StableSqliteStore::open_in_canister(None),
            Err(StoreError::Storage { .. })
        ));
        assert_eq!(layout::stable_memory().size(), before);
        assert_eq!(layout::manager_end_page(), Some(BTREE_REGION_FIRST_PAGE));
        let store = open();
        assert_eq!(store.count(), Ok(500));
        assert_eq!(store.get(499), Ok(user(499)));
    }

    #[test]
    fn a_region_the_manager_has_grown_over_is_refused() {
        region_canister(500);
        // Another virtual memory takes the manager's second bucket: the region's first pages.
        layout::canister_memory(layout::SQLITE_DATABASE_MEMORY_ID).grow(1);
        assert_eq!(
            layout::manager_end_page(),
            Some(BTREE_REGION_FIRST_PAGE + 128)
        );
        assert!(matches!(
            BTreeCanisterStore::open_in_canister(None),
            Err(StoreError::Storage { .. })
        ));
    }

    #[test]
    fn a_canister_with_the_earlier_layout_keeps_every_row_and_its_layout() {
        let mut earlier = BTreeStore::init(layout::canister_memory(BTREE_USERS_MEMORY_ID));
        for id in 0..2_000 {
            assert_eq!(earlier.insert(user(id)), Ok(()));
        }
        Settings::for_install::<BTreeCanisterStore>(None, Principal::anonymous())
            .expect("default settings")
            .save(layout::canister_memory(SETTINGS_MEMORY_ID));

        let mut upgraded = open();
        assert!(!upgraded.is_in_region());
        assert_eq!(upgraded.count(), Ok(2_000));
        for id in 0..2_000 {
            assert_eq!(upgraded.get(id), Ok(user(id)));
        }
        assert_eq!(upgraded.insert(user(5_000)), Ok(()));
        assert_eq!(open().get(5_000), Ok(user(5_000)));
    }
}
