//! Where the canister layer puts each engine, natively: one thread's stable memory stands
//! for a canister's ([`crate::layout::stable_memory`]), so each test is one canister.

use crate::btree::{BTreeCanisterStore, BTreeConfig, BTreeStore};
use crate::engine::StorageEngine;
use crate::layout::{self, BTREE_USERS_MEMORY_ID, REGION_FIRST_PAGE, SETTINGS_MEMORY_ID};
use crate::settings::{InitArgs, Settings, MAX_SETTINGS_BYTES};
use crate::{SqliteStore, StableSqliteStore, StoreError, User, UserStore};
use candid::Principal;
use ic_stable_structures::Memory;

fn user(id: u64) -> User {
    User::new(id, format!("user-{id}"))
}

fn open_btree() -> BTreeCanisterStore {
    layout::open_engine::<BTreeCanisterStore>(BTreeConfig {}, 1).expect("the B-tree opens")
}

/// Settings as close to [`MAX_SETTINGS_BYTES`] as writers make them.
fn largest_settings() -> Settings<BTreeConfig> {
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

/// A fresh B-tree canister with `rows` users and its settings saved.
fn region_canister(rows: u64) -> BTreeCanisterStore {
    Settings::for_install::<BTreeCanisterStore>(None, Principal::anonymous())
        .expect("default settings")
        .save(layout::canister_memory(SETTINGS_MEMORY_ID));
    let mut store = open_btree();
    assert!(store.is_in_region());
    for id in 0..rows {
        assert_eq!(store.insert(user(id)), Ok(()));
    }
    store
}

#[test]
fn a_fresh_b_tree_canister_keeps_its_map_in_the_region_beside_the_largest_settings() {
    let mut store = open_btree();
    assert!(store.is_in_region());
    for id in 0..2_000 {
        assert_eq!(store.insert(user(id)), Ok(()));
    }
    let settings = largest_settings();
    settings.save(layout::canister_memory(SETTINGS_MEMORY_ID));

    let store = open_btree();
    assert_eq!(store.count(), Ok(2_000));
    for id in [0, 999, 1_999] {
        assert_eq!(store.get(id), Ok(user(id)));
    }
    let loaded = Settings::load(layout::canister_memory(SETTINGS_MEMORY_ID));
    assert_eq!(loaded, Ok(settings));
    // The manager never took a page of the region: its virtual memory 1 stayed empty, so the
    // next open still picks the region.
    assert!(open_btree().is_in_region());
    assert!(
        layout::canister_memory(SETTINGS_MEMORY_ID).size() * 65_536
            >= MAX_SETTINGS_BYTES as u64 / 2
    );
}

#[test]
fn the_other_engines_refuse_to_open_over_the_region_and_leave_it_as_it_was() {
    region_canister(500);
    let before = layout::stable_memory().size();

    // As if the canister were upgraded with a SQLite canister's Wasm: the manager would
    // hand either engine's database the bucket that starts at the region's first page.
    assert!(matches!(
        layout::place::<SqliteStore>(),
        Err(StoreError::Storage { .. })
    ));
    assert!(matches!(
        layout::place::<StableSqliteStore>(),
        Err(StoreError::Storage { .. })
    ));
    assert_eq!(layout::stable_memory().size(), before);
    assert_eq!(layout::manager_end_page(), Some(REGION_FIRST_PAGE));
    let store = open_btree();
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
        Some(REGION_FIRST_PAGE + crate::layout::formats::MANAGER_BUCKET_PAGES)
    );
    assert!(matches!(
        layout::place::<BTreeCanisterStore>(),
        Err(StoreError::Storage { .. })
    ));
}

#[test]
fn a_b_tree_canister_with_the_earlier_layout_keeps_every_row_and_its_layout() {
    let mut earlier = BTreeStore::open(layout::canister_memory(BTREE_USERS_MEMORY_ID)).unwrap();
    for id in 0..2_000 {
        assert_eq!(earlier.insert(user(id)), Ok(()));
    }
    let mut upgraded = open_btree();
    assert!(!upgraded.is_in_region());
    assert_eq!(upgraded.count(), Ok(2_000));
    for id in 0..2_000 {
        assert_eq!(upgraded.get(id), Ok(user(id)));
    }
    assert_eq!(upgraded.insert(user(5_000)), Ok(()));
    assert_eq!(open_btree().get(5_000), Ok(user(5_000)));
}

/// Which engine an unrecorded layout shows, after `write` set it up in a fresh canister.
fn engine_shown(write: impl FnOnce() + Send + 'static) -> Result<Option<&'static str>, StoreError> {
    std::thread::spawn(move || {
        write();
        layout::engine_of_unrecorded_layout()
    })
    .join()
    .expect("the canister's thread")
}

#[test]
fn an_unrecorded_layout_tells_its_engine_or_refuses_to_guess() {
    assert_eq!(engine_shown(|| ()), Ok(None));
    assert_eq!(
        engine_shown(|| {
            region_canister(3);
        }),
        Ok(Some(BTreeCanisterStore::NAME))
    );
    assert_eq!(
        engine_shown(|| {
            BTreeStore::open(layout::canister_memory(BTREE_USERS_MEMORY_ID)).unwrap();
        }),
        Ok(Some(BTreeCanisterStore::NAME))
    );
    assert_eq!(
        engine_shown(|| {
            layout::open_engine::<StableSqliteStore>(StableSqliteStore::default_config(), 1)
                .expect("opens");
        }),
        Ok(Some(StableSqliteStore::NAME))
    );
    assert_eq!(
        engine_shown(|| {
            layout::canister_memory(layout::SQLITE_DATABASE_MEMORY_ID).grow(1);
        }),
        Ok(Some(SqliteStore::NAME))
    );
    assert!(matches!(
        engine_shown(|| {
            layout::canister_memory(layout::SQLITE_DATABASE_MEMORY_ID).grow(1);
            layout::canister_memory(layout::STABLE_SQLITE_DATABASE_MEMORY_ID).grow(1);
        }),
        Err(StoreError::InvalidConfig { .. })
    ));
}

#[test]
fn an_upgrade_over_an_unrecorded_layout_is_refused_for_another_engine() {
    region_canister(10);
    let earlier: Settings<crate::SqliteConfig> = Settings {
        engine: None,
        layout_version: None,
        ..Settings::for_install::<StableSqliteStore>(None, Principal::anonymous()).unwrap()
    };
    assert!(matches!(
        earlier.clone().upgraded::<StableSqliteStore>(None),
        Err(StoreError::InvalidConfig { .. })
    ));
    assert!(matches!(
        earlier.upgraded::<SqliteStore>(None),
        Err(StoreError::InvalidConfig { .. })
    ));
}

#[test]
fn every_batch_the_size_limit_allows_fits_the_ic_limit() {
    use crate::budget::tests::assert_every_batch_fits;
    assert_every_batch_fits::<BTreeCanisterStore>();
    assert_every_batch_fits::<SqliteStore>();
    assert_every_batch_fits::<StableSqliteStore>();
}
