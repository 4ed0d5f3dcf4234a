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
        let mut renames: Vec<User> = (0..50)
            .map(|id| User::new(id, format!("renamed-{id}")))
            .collect();
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
        assert_eq!(harness.store().get(49), Ok(User::new(49, "renamed-49")));
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

fn taken(username: &str) -> StoreError {
    StoreError::UsernameTaken {
        username: username.into(),
    }
}

#[test]
fn usernames_are_unique_exact_and_found_by_name() {
    for_every_engine(|harness| {
        let name = harness.name();
        let store = harness.store();
        store.insert(User::new(1, "ann")).unwrap();
        assert_eq!(
            store.insert(User::new(2, "ann")),
            Err(taken("ann")),
            "{name}"
        );
        // The id is checked first.
        assert_eq!(
            store.insert(User::new(1, "ann")),
            Err(StoreError::DuplicateId { id: 1 }),
            "{name}"
        );
        // Exact bytes: no case folding, no trimming, no normalization.
        for other in ["Ann", "ann ", "an", "a\u{308}nn"] {
            store
                .insert(User::new(other.len() as u64 + 10, other))
                .unwrap();
        }
        assert_eq!(store.get_by_name("ann"), Ok(User::new(1, "ann")), "{name}");
        assert_eq!(store.get_by_name("Ann"), Ok(User::new(13, "Ann")), "{name}");
        assert_eq!(
            store.get_by_name("nobody"),
            Err(StoreError::UsernameNotFound {
                username: "nobody".into()
            }),
            "{name}"
        );
        assert_eq!(store.ids_named("ann", 5), Ok(vec![1]), "{name}");
        assert_eq!(store.shared_usernames(10), Ok(vec![]), "{name}");
    });
}

#[test]
fn a_rename_frees_the_old_name_in_the_same_call() {
    for_every_engine(|harness| {
        let name = harness.name();
        let store = harness.store();
        store.insert_batch(&users(0..3)).unwrap();
        assert_eq!(
            store.update_username(0, "user-1"),
            Err(taken("user-1")),
            "{name}"
        );
        // To its own name: no change, no clash.
        assert_eq!(
            store.update_username(0, "user-0"),
            Ok(User::new(0, "user-0")),
            "{name}"
        );
        assert_eq!(store.update_username(0, "zero"), Ok(User::new(0, "user-0")));
        assert_eq!(
            store.get_by_name("zero"),
            Ok(User::new(0, "zero")),
            "{name}"
        );
        store.insert(User::new(9, "user-0")).unwrap();
        assert_eq!(store.get_by_name("user-0"), Ok(User::new(9, "user-0")));
        // A delete frees the name too.
        store.delete(9).unwrap();
        store.insert(User::new(10, "user-0")).unwrap();
        assert_eq!(store.get_by_name("user-0"), Ok(User::new(10, "user-0")));
        assert_eq!(store.count(), Ok(4), "{name}");
    });
}

#[test]
fn a_batch_that_takes_a_name_changes_nothing() {
    for_every_engine(|harness| {
        let name = harness.name();
        let store = harness.store();
        store.insert_batch(&users(0..100)).unwrap();
        let before = store.page(None, 1_000).unwrap();
        // With the table, late in the batch.
        let mut batch = users(100..200);
        batch.push(User::new(500, "user-42"));
        assert_eq!(store.insert_batch(&batch), Err(taken("user-42")), "{name}");
        // With itself.
        let mut batch = users(100..200);
        batch.push(User::new(500, "user-150"));
        assert_eq!(store.insert_batch(&batch), Err(taken("user-150")), "{name}");
        // The first clash in batch order names the error, ids and names alike.
        let batch = vec![
            User::new(300, "fresh"),
            User::new(301, "user-7"),
            User::new(5, "other"),
        ];
        assert_eq!(store.insert_batch(&batch), Err(taken("user-7")), "{name}");
        let batch = vec![User::new(5, "other"), User::new(301, "user-7")];
        assert_eq!(
            store.insert_batch(&batch),
            Err(StoreError::DuplicateId { id: 5 }),
            "{name}"
        );
        // Renames, one by one in order: a name freed by an earlier row may be taken by a
        // later one; a name another user still has may not.
        let chain = vec![User::new(1, "one"), User::new(2, "user-1")];
        let swap = vec![User::new(3, "user-4"), User::new(4, "user-3")];
        assert_eq!(store.update_batch(&swap), Err(taken("user-4")), "{name}");
        assert_eq!(store.page(None, 1_000).unwrap(), before, "{name}");
        assert_eq!(store.get_by_name("user-150").ok(), None, "{name}");
        assert_eq!(store.update_batch(&chain), Ok(2), "{name}");
        assert_eq!(store.get_by_name("user-1"), Ok(User::new(2, "user-1")));
        assert_eq!(store.get_by_name("one"), Ok(User::new(1, "one")));
        assert_eq!(store.get_by_name("user-2").ok(), None, "{name}");
    });
}

/// The rows of a table written before names were unique: "x" three times, "z" twice.
fn rows_with_shared_names() -> Vec<User> {
    [(1, "x"), (2, "y"), (3, "x"), (4, "z"), (5, "z"), (6, "x")]
        .into_iter()
        .map(|(id, name)| User::new(id, name))
        .collect()
}

/// What a store opened on [`rows_with_shared_names`] must do: keep and serve every row,
/// report the shared names, refuse only new clashes.
fn check_shared_names_are_kept(store: &mut dyn UserStore, engine: &str) {
    assert_eq!(store.count(), Ok(6), "{engine}");
    assert_eq!(
        store.page(None, 10),
        Ok(rows_with_shared_names()),
        "{engine}"
    );
    assert_eq!(
        store.shared_usernames(10),
        Ok(vec!["x".into(), "z".into()]),
        "{engine}"
    );
    assert_eq!(store.shared_usernames(1), Ok(vec!["x".into()]), "{engine}");
    assert_eq!(store.get_by_name("x"), Ok(User::new(1, "x")), "{engine}");
    assert_eq!(store.ids_named("x", 10), Ok(vec![1, 3, 6]), "{engine}");
    assert_eq!(store.insert(User::new(7, "x")), Err(taken("x")), "{engine}");
    assert_eq!(store.update_username(2, "z"), Err(taken("z")), "{engine}");
    // Its own name is no new clash.
    assert_eq!(
        store.update_username(3, "x"),
        Ok(User::new(3, "x")),
        "{engine}"
    );
    assert_eq!(store.update_batch(&[User::new(6, "x")]), Ok(1), "{engine}");
    store.delete(4).unwrap();
    assert_eq!(store.shared_usernames(10), Ok(vec!["x".into()]), "{engine}");
    assert_eq!(store.insert(User::new(8, "z")), Err(taken("z")), "{engine}");
    store.update_username(1, "w").unwrap();
    assert_eq!(store.get_by_name("x"), Ok(User::new(3, "x")), "{engine}");
    store.delete_batch(&[5, 3]).unwrap();
    assert_eq!(store.shared_usernames(10), Ok(vec![]), "{engine}");
    store.insert(User::new(8, "z")).unwrap();
    assert_eq!(store.get_by_name("z"), Ok(User::new(8, "z")), "{engine}");
    assert_eq!(store.count(), Ok(4), "{engine}");
}

#[test]
fn a_b_tree_written_before_names_were_unique_keeps_every_row() {
    use ic_stable_structures::storable::Bound;
    use ic_stable_structures::{StableBTreeMap, Storable, VectorMemory};
    use std::borrow::Cow;

    /// The value of the release before: a username of at most 128 bytes.
    struct EarlierUsername(String);
    impl Storable for EarlierUsername {
        const BOUND: Bound = Bound::Bounded {
            max_size: 128,
            is_fixed_size: false,
        };
        fn to_bytes(&self) -> Cow<'_, [u8]> {
            Cow::Borrowed(self.0.as_bytes())
        }
        fn into_bytes(self) -> Vec<u8> {
            self.0.into_bytes()
        }
        fn from_bytes(bytes: Cow<'_, [u8]>) -> Self {
            Self(String::from_utf8_lossy(&bytes).into_owned())
        }
    }

    let memory = VectorMemory::default();
    let mut earlier: StableBTreeMap<u64, EarlierUsername, _> = StableBTreeMap::init(memory.clone());
    for user in rows_with_shared_names() {
        earlier.insert(user.id, EarlierUsername(user.username));
    }
    let mut store = crate::BTreeStore::open(memory.clone()).unwrap();
    check_shared_names_are_kept(&mut store, "btree");
    // Reopened, the index is not built again.
    let store = crate::BTreeStore::open(memory).unwrap();
    assert_eq!(store.count(), Ok(4));
    assert_eq!(store.get_by_name("z"), Ok(User::new(8, "z")));
}

#[test]
fn a_page_tree_written_before_names_were_unique_keeps_every_row() {
    let memory = ic_stable_structures::VectorMemory::default();
    crate::page_tree::write_without_name_index(&memory, &rows_with_shared_names());
    let mut store = crate::PageTreeStore::open(memory.clone()).unwrap();
    check_shared_names_are_kept(&mut store, "page tree");
    store.close().unwrap();
    let store = crate::PageTreeStore::open(memory).unwrap();
    assert_eq!(store.count(), Ok(4));
    assert_eq!(store.get_by_name("z"), Ok(User::new(8, "z")));
}

#[test]
fn a_sqlite_database_written_before_names_were_unique_keeps_every_row() {
    let directory = tempfile::tempdir().unwrap();
    let path = directory.path().join("earlier.db");
    {
        let earlier = rusqlite::Connection::open(&path).unwrap();
        earlier
            .execute_batch("CREATE TABLE users (id INTEGER PRIMARY KEY, username TEXT NOT NULL)")
            .unwrap();
        for user in rows_with_shared_names() {
            earlier
                .execute(
                    "INSERT INTO users VALUES (?1, ?2)",
                    rusqlite::params![user.id as i64, user.username],
                )
                .unwrap();
        }
    }
    let mut store = SqliteStore::open(&path, SqliteConfig::default()).unwrap();
    check_shared_names_are_kept(&mut store, "sqlite");
    drop(store);
    let store = SqliteStore::open(&path, SqliteConfig::default()).unwrap();
    assert_eq!(store.count(), Ok(4));
    assert_eq!(store.get_by_name("z"), Ok(User::new(8, "z")));
}

#[test]
fn the_model_keeps_shared_names_as_the_engines_do() {
    let mut model = crate::model::ModelStore::with_rows(rows_with_shared_names());
    check_shared_names_are_kept(&mut model, "model");
}
