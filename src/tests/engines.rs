//! Targeted cases every engine must get right, beyond what random sequences reliably reach.

use super::harness::{all_harnesses, Harness};
use crate::engine::StorageEngine;
use crate::limits::{MAX_BATCH_SIZE, MAX_PAGE_SIZE};
use crate::sqlite_shared::{JournalMode, LockingMode, SqliteConfig};
use crate::SqliteStore;
use crate::{Limit, StoreError, User, UserStore};

fn for_every_engine(check: impl Fn(&mut dyn Harness)) {
    for mut harness in all_harnesses() {
        check(harness.as_mut());
    }
}

fn users(ids: impl IntoIterator<Item = u64>) -> Vec<User> {
    ids.into_iter()
        .map(|id| User::new(id, format!("user-{id}")))
        .collect()
}

#[test]
fn empty_table() {
    for_every_engine(|harness| {
        let store = harness.store();
        assert_eq!(store.count(), Ok(0), "{}", harness.name());
        assert_eq!(harness.store().page(None, 10), Ok(vec![]));
        assert_eq!(harness.store().get(0), Err(StoreError::NotFound { id: 0 }));
        assert_eq!(harness.store().insert_batch(&[]), Ok(0));
    });
}

#[test]
fn a_batch_that_clashes_late_leaves_nothing_behind() {
    for_every_engine(|harness| {
        harness.store().insert(User::new(500, "existing")).unwrap();
        let mut batch = users(0..1000);
        batch.push(User::new(500, "clash"));
        assert_eq!(
            harness.store().insert_batch(&batch),
            Err(StoreError::DuplicateId { id: 500 }),
            "{}",
            harness.name()
        );
        assert_eq!(harness.store().count(), Ok(1), "{}", harness.name());
        assert_eq!(harness.store().get(500), Ok(User::new(500, "existing")));
        // The store stays usable: the same batch without the clash goes in whole.
        batch.pop();
        batch.retain(|user| user.id != 500);
        assert_eq!(harness.store().insert_batch(&batch), Ok(999));
        assert_eq!(harness.store().count(), Ok(1000));
    });
}

#[test]
fn the_largest_batch_and_page_are_accepted_and_one_more_is_refused() {
    for_every_engine(|harness| {
        let batch = users(0..MAX_BATCH_SIZE as u64);
        assert_eq!(
            harness.store().insert_batch(&batch),
            Ok(MAX_BATCH_SIZE as u64),
            "{}",
            harness.name()
        );
        let too_many = users(20_000..20_001 + MAX_BATCH_SIZE as u64);
        assert!(matches!(
            harness.store().insert_batch(&too_many),
            Err(StoreError::LimitExceeded {
                limit: Limit::BatchSize,
                ..
            })
        ));
        let page = harness.store().page(None, MAX_PAGE_SIZE).unwrap();
        assert_eq!(page.len(), MAX_PAGE_SIZE as usize);
        assert_eq!(page, batch);
        assert!(harness.store().page(None, MAX_PAGE_SIZE + 1).is_err());
        assert_eq!(harness.store().count(), Ok(MAX_BATCH_SIZE as u64));
    });
}

#[test]
fn data_survives_reopening() {
    for_every_engine(|harness| {
        harness.store().insert_batch(&users(0..300)).unwrap();
        harness.store().delete(7).unwrap();
        harness.store().update_username(8, "renamed").unwrap();
        harness.reopen();
        assert_eq!(harness.store().count(), Ok(299), "{}", harness.name());
        assert_eq!(harness.store().get(8), Ok(User::new(8, "renamed")));
        assert_eq!(harness.store().get(7), Err(StoreError::NotFound { id: 7 }));
        harness.store().insert(User::new(7, "back")).unwrap();
        assert_eq!(harness.store().count(), Ok(300));
    });
}

#[test]
fn paging_walks_the_whole_table_in_id_order() {
    for_every_engine(|harness| {
        let mut ids: Vec<u64> = (0..97).map(|i| (i * 7919) % 1000).collect();
        harness.store().insert_batch(&users(ids.clone())).unwrap();
        ids.sort_unstable();
        let mut seen = Vec::new();
        let mut after = None;
        while let Some(last) = {
            let page = harness.store().page(after, 10).unwrap();
            seen.extend(page.iter().map(|user| user.id));
            page.last().map(|user| user.id)
        } {
            after = Some(last);
        }
        assert_eq!(seen, ids, "{}", harness.name());
    });
}

#[test]
fn an_engine_reports_its_configuration_and_version() {
    let config = SqliteConfig::with_journal_mode(JournalMode::Off);
    let sqlite = SqliteStore::open_in_memory(config.clone()).unwrap();
    assert_eq!(StorageEngine::config(&sqlite), config);
    assert!(
        sqlite.version().starts_with("SQLite 3."),
        "{}",
        sqlite.version()
    );
}

#[test]
fn a_journal_mode_the_storage_cannot_hold_is_refused_when_opening() {
    // SQLite keeps in-memory databases' journals in memory whatever is asked.
    let error = SqliteStore::open_in_memory(SqliteConfig::with_journal_mode(JournalMode::Delete))
        .err()
        .expect("refused");
    assert!(
        matches!(&error, StoreError::InvalidConfig { reason } if reason.contains("journal_mode")),
        "{error:?}"
    );
}

#[test]
fn wal_without_exclusive_locking_is_refused() {
    let directory = tempfile::tempdir().unwrap();
    let config = SqliteConfig {
        journal_mode: JournalMode::Wal,
        locking_mode: LockingMode::Normal,
        ..SqliteConfig::default()
    };
    assert!(matches!(
        SqliteStore::open(directory.path().join("db"), config),
        Err(StoreError::InvalidConfig { .. })
    ));
}

#[test]
fn a_different_page_size_for_an_existing_database_is_refused() {
    let directory = tempfile::tempdir().unwrap();
    let path = directory.path().join("users.db");
    let store = SqliteStore::open(&path, SqliteConfig::default()).unwrap();
    store.close().unwrap();
    let bigger_pages = SqliteConfig {
        page_size: 8192,
        ..SqliteConfig::default()
    };
    let error = SqliteStore::open(&path, bigger_pages)
        .err()
        .expect("refused");
    assert!(
        matches!(&error, StoreError::InvalidConfig { reason } if reason.contains("page_size")),
        "{error:?}"
    );
    // Other settings may change between opens (as at an upgrade).
    let persist = SqliteConfig::with_journal_mode(JournalMode::Persist);
    let store = SqliteStore::open(&path, persist.clone()).unwrap();
    assert_eq!(store.config(), &persist);
}

#[test]
fn the_page_size_asked_for_is_the_page_size_created() {
    let directory = tempfile::tempdir().unwrap();
    let config = SqliteConfig {
        page_size: 16_384,
        ..SqliteConfig::default()
    };
    let store = SqliteStore::open(directory.path().join("db"), config).unwrap();
    assert_eq!(store.config().page_size, 16_384);
}

#[test]
fn update_and_delete_batches_are_all_or_nothing() {
    for_every_engine(|harness| {
        harness.store().insert_batch(&users(0..100)).unwrap();
        let mut renames: Vec<User> = (0..50).map(|id| User::new(id, "renamed")).collect();
        renames.push(User::new(1_000, "unknown"));
        assert_eq!(
            harness.store().update_batch(&renames),
            Err(StoreError::NotFound { id: 1_000 }),
            "{}",
            harness.name()
        );
        assert_eq!(
            harness.store().get(0),
            Ok(User::new(0, "user-0")),
            "{}",
            harness.name()
        );
        let mut deletes: Vec<u64> = (0..50).collect();
        deletes.push(2_000);
        assert_eq!(
            harness.store().delete_batch(&deletes),
            Err(StoreError::NotFound { id: 2_000 })
        );
        assert_eq!(harness.store().count(), Ok(100), "{}", harness.name());
        assert_eq!(harness.store().page(None, 100).unwrap(), users(0..100));
        renames.pop();
        deletes.pop();
        assert_eq!(harness.store().update_batch(&renames), Ok(50));
        assert_eq!(harness.store().get(49), Ok(User::new(49, "renamed")));
        assert_eq!(harness.store().delete_batch(&deletes), Ok(50));
        assert_eq!(harness.store().count(), Ok(50), "{}", harness.name());
        assert_eq!(
            harness.store().delete_batch(&[60, 60]),
            Err(StoreError::DuplicateId { id: 60 })
        );
    });
}

#[test]
fn a_database_written_before_the_row_count_was_kept_gets_it_at_open() {
    let directory = tempfile::tempdir().unwrap();
    let path = directory.path().join("users.db");
    {
        // What earlier versions wrote: the users table and nothing else. (Through the
        // crate's page cache, as every connection of this test binary.)
        crate::sqlite_shared::page_cache::install();
        let connection = rusqlite::Connection::open(&path).unwrap();
        connection
            .execute_batch(
                "CREATE TABLE users (id INTEGER PRIMARY KEY, username TEXT NOT NULL);
                 INSERT INTO users VALUES (1, 'ada'), (2, 'grace'), (3, 'edsger');",
            )
            .unwrap();
    }
    let mut store = SqliteStore::open(&path, SqliteConfig::default()).unwrap();
    assert_eq!(store.count(), Ok(3));
    store.insert_batch(&users([4, 5])).unwrap();
    store.delete(1).unwrap();
    assert_eq!(store.count(), Ok(4));
    store.close().unwrap();
    // The count is kept, not recomputed: a reopened store reads the same.
    let store = SqliteStore::open(&path, SqliteConfig::default()).unwrap();
    assert_eq!(store.count(), Ok(4));
}
