//! What only the stable-memory SQLite engine promises: the configurations it refuses, the
//! layout of its Memory, and that a commit writes only the pages it changed.

use crate::engine::StorageEngine;
use crate::sqlite_shared::page_cache::{self, CacheStats};
use crate::sqlite_shared::{JournalMode, LockingMode, SqliteConfig};
use crate::{SqliteStore, StableSqliteStore, StoreError, User, UserStore};
use ic_stable_structures::{Memory, VectorMemory};

fn users(ids: impl IntoIterator<Item = u64>) -> Vec<User> {
    ids.into_iter()
        .map(|id| User::new(id, format!("user-{id}")))
        .collect()
}

fn config(journal_mode: JournalMode) -> SqliteConfig {
    StableSqliteStore::config_with_journal_mode(journal_mode)
}

/// Every byte of `memory`.
fn bytes(memory: &VectorMemory) -> Vec<u8> {
    let mut all = vec![0; (memory.size() * 65_536) as usize];
    memory.read(0, &mut all);
    all
}

#[test]
fn journal_files_and_normal_locking_are_refused_with_the_reason() {
    for journal_mode in [
        JournalMode::Delete,
        JournalMode::Truncate,
        JournalMode::Persist,
        JournalMode::Wal,
    ] {
        let error =
            StableSqliteStore::open("refused.db", VectorMemory::default(), config(journal_mode))
                .err()
                .expect("refused");
        assert!(
            matches!(&error, StoreError::InvalidConfig { reason } if reason.contains("journal")),
            "{journal_mode:?}: {error:?}"
        );
    }
    let normal = SqliteConfig {
        locking_mode: LockingMode::Normal,
        ..StableSqliteStore::default_config()
    };
    assert!(matches!(
        StableSqliteStore::open("refused.db", VectorMemory::default(), normal),
        Err(StoreError::InvalidConfig { .. })
    ));
}

#[test]
fn describe_names_the_engine() {
    let store = StableSqliteStore::open(
        "describe.db",
        VectorMemory::default(),
        config(JournalMode::Off),
    )
    .unwrap();
    assert_eq!(StorageEngine::config(&store), config(JournalMode::Off));
    assert!(store.version().starts_with("SQLite 3."));
}

#[test]
fn a_memory_holding_something_else_is_refused() {
    let memory = VectorMemory::default();
    memory.grow(1);
    memory.write(0, b"some other structure's header");
    let error = StableSqliteStore::open("other.db", memory.clone(), config(JournalMode::Memory))
        .err()
        .expect("refused");
    assert!(matches!(error, StoreError::Storage { .. }), "{error:?}");
    assert_eq!(&bytes(&memory)[..29], b"some other structure's header");
}

#[test]
fn a_commit_writes_only_the_pages_it_changed() {
    for journal_mode in [JournalMode::Memory, JournalMode::Off] {
        let mut store =
            StableSqliteStore::open("pages.db", VectorMemory::default(), config(journal_mode))
                .unwrap();
        store
            .insert_batch(&users((0..2_000).map(|n| n * 10)))
            .unwrap();
        // The first commits may split the leaves and rewrite page 1; later ones into the same
        // leaves change those only: the table's and the by-name index's.
        store.insert(User::new(5, "five")).unwrap();
        store.insert(User::new(6, "six")).unwrap();
        let before = store.file().stats();
        store.insert(User::new(7, "seven")).unwrap();
        let after = store.file().stats();
        assert_eq!(
            after.page_writes - before.page_writes,
            2,
            "{journal_mode:?}"
        );
        assert_eq!(
            after.page_bytes - before.page_bytes,
            2 * u64::from(config(journal_mode).page_size),
            "{journal_mode:?}"
        );
        // The row count: one header write.
        assert_eq!(
            after.header_writes - before.header_writes,
            1,
            "{journal_mode:?}"
        );
        // Reads write nothing.
        assert_eq!(store.get(7), Ok(User::new(7, "seven")));
        assert_eq!(store.count(), Ok(2_003));
        assert_eq!(store.file().stats(), after, "{journal_mode:?}");
    }
}

#[test]
fn a_failed_batch_leaves_every_byte_of_the_memory_as_it_was() {
    for journal_mode in [JournalMode::Memory, JournalMode::Off] {
        let memory = VectorMemory::default();
        let mut store =
            StableSqliteStore::open("failed.db", memory.clone(), config(journal_mode)).unwrap();
        store.insert_batch(&users(0..5_000)).unwrap();
        let before = bytes(&memory);
        let mut clash = users(10_000..14_000);
        clash.push(User::new(42, "taken"));
        assert_eq!(
            store.insert_batch(&clash),
            Err(StoreError::DuplicateId { id: 42 })
        );
        assert_eq!(
            store.delete_batch(&[1, 2, 99_999]),
            Err(StoreError::NotFound { id: 99_999 })
        );
        if journal_mode == JournalMode::Memory {
            // With a journal the rollback happens in the page cache: nothing was written.
            assert!(bytes(&memory) == before, "{journal_mode:?}");
        }
        assert_eq!(store.count(), Ok(5_000), "{journal_mode:?}");
        assert_eq!(store.page(None, 5).unwrap(), users(0..5));
    }
}

#[test]
fn a_header_without_a_row_count_gets_one_at_open() {
    let memory = VectorMemory::default();
    let mut store =
        StableSqliteStore::open("count.db", memory.clone(), config(JournalMode::Memory)).unwrap();
    store.insert_batch(&users(0..300)).unwrap();
    store.close().unwrap();
    // The application value and its flag (header bytes 24..40), as if never written.
    memory.write(24, &[0; 16]);
    let store =
        StableSqliteStore::open("count.db", memory.clone(), config(JournalMode::Memory)).unwrap();
    assert_eq!(store.count(), Ok(300));
    assert_eq!(store.file().app_value(), Some(300));
}

#[test]
fn every_page_size_works_and_an_existing_database_keeps_its_own() {
    // Pages below 4 KiB too: their buffer slabs hold more pages than at 4 KiB, which the page
    // cache must not let outrun its header slabs.
    for page_size in [512, 1_024, 2_048, 4_096, 8_192, 16_384, 65_536] {
        let memory = VectorMemory::default();
        let sized = SqliteConfig {
            page_size,
            cache_size_pages: (160 << 20) / page_size,
            ..StableSqliteStore::default_config()
        };
        let mut store = StableSqliteStore::open("sized.db", memory.clone(), sized).unwrap();
        store.insert_batch(&users(0..1_000)).unwrap();
        store.close().unwrap();
        let other = SqliteConfig {
            page_size: if page_size == 4_096 { 8_192 } else { 4_096 },
            ..StableSqliteStore::default_config()
        };
        let error = StableSqliteStore::open("sized.db", memory.clone(), other)
            .err()
            .expect("refused");
        assert!(
            matches!(error, StoreError::InvalidConfig { .. }),
            "{error:?}"
        );
        let sized = SqliteConfig {
            page_size,
            cache_size_pages: (160 << 20) / page_size,
            ..StableSqliteStore::default_config()
        };
        let store = StableSqliteStore::open("sized.db", memory, sized).unwrap();
        assert_eq!(store.count(), Ok(1_000), "{page_size}");
    }
}

/// Runs `test` on a thread of its own, so that [`page_cache::stats`] counts only its caches.
fn on_own_thread(test: impl FnOnce() + Send + 'static) {
    std::thread::spawn(test)
        .join()
        .expect("the test thread passed");
}

#[test]
fn the_engine_keeps_its_pages_in_its_own_cache_and_other_connections_in_sqlites() {
    // Every connection of this test binary is opened after `install`, so it took effect.
    assert!(page_cache::install());
    on_own_thread(|| {
        assert_eq!(page_cache::stats(), CacheStats::default());
        let mut store = StableSqliteStore::open(
            "own-cache.db",
            VectorMemory::default(),
            config(JournalMode::Memory),
        )
        .unwrap();
        store.insert_batch(&users(0..3_000)).unwrap();
        let open = page_cache::stats();
        assert_eq!(open.caches, 1);
        let page_size = u64::from(config(JournalMode::Memory).page_size);
        let file_pages = store.file().file_size() / page_size;
        assert_eq!(open.pages as u64, file_pages, "the whole file is cached");

        let mut seed = SqliteStore::open_in_memory(SqliteConfig::default()).unwrap();
        seed.insert_batch(&users(0..3_000)).unwrap();
        assert_eq!(
            page_cache::stats(),
            open,
            "the seed's engine keeps SQLite's own cache"
        );

        assert_eq!(store.get(2_999), Ok(User::new(2_999, "user-2999")));
        store.close().unwrap();
        assert_eq!(page_cache::stats(), CacheStats::default());
    });
}

#[test]
fn a_cache_smaller_than_the_table_evicts_and_keeps_every_row() {
    on_own_thread(|| {
        let small = SqliteConfig {
            page_size: 4_096,
            cache_size_pages: 16,
            ..config(JournalMode::Memory)
        };
        let memory = VectorMemory::default();
        let mut store =
            StableSqliteStore::open("small-cache.db", memory.clone(), small.clone()).unwrap();
        let named = |id: u64| User::new(id, format!("{id:0>100}"));
        for batch in 0..100 {
            let rows: Vec<User> = (0..30).map(|n| named(n * 100 + batch)).collect();
            store.insert_batch(&rows).unwrap();
        }
        store
            .delete_batch(&(0..300).step_by(7).collect::<Vec<_>>())
            .unwrap();
        let file_pages = store.file().file_size() / 4_096;
        assert!(
            file_pages > 60,
            "the table ({file_pages} pages) is larger than the cache"
        );
        for id in (0..3_000).rev() {
            let expected = if id < 300 && id % 7 == 0 {
                Err(StoreError::NotFound { id })
            } else {
                Ok(named(id))
            };
            assert_eq!(store.get(id), expected);
        }
        // Reads replace pages instead of adding them: at most the limit, plus the pages the
        // last write transaction held pinned while it was dirty.
        assert!(
            page_cache::stats().pages <= 16 + 8,
            "{:?}",
            page_cache::stats()
        );
        store.close().unwrap();
        let store = StableSqliteStore::open("small-cache.db", memory, small).unwrap();
        assert_eq!(store.count(), Ok(3_000 - 43));
    });
}

/// Every write a table sees between upgrades, with a batch that fails and rolls back last.
fn write_everything(store: &mut StableSqliteStore) {
    store
        .insert_batch(&users((0..4_000).map(|n| n * 3)))
        .unwrap();
    store.insert(User::new(1, "one")).unwrap();
    store.update_username(3, "three").unwrap();
    store.delete(6).unwrap();
    let renamed: Vec<User> = (100..400)
        .map(|n| User::new(n * 3, format!("renamed-{n}")))
        .collect();
    store.update_batch(&renamed).unwrap();
    store
        .delete_batch(&(500..900).map(|n| n * 3).collect::<Vec<_>>())
        .unwrap();
    let mut clash = users(20_000..20_500);
    clash.push(User::new(9, "taken"));
    assert_eq!(
        store.insert_batch(&clash),
        Err(StoreError::DuplicateId { id: 9 })
    );
}

/// `pre_upgrade` leaves this engine's connection unclosed
/// ([`StorageEngine::before_upgrade`]): the close must have had nothing to write. So the
/// Memory an upgrade leaves is the one a close leaves, byte for byte, and a fresh heap (here:
/// the same Memory registered with the VFS under another name, as the next Wasm instance
/// finds it) opens every row from it.
#[test]
fn an_upgrade_that_leaves_the_connection_unclosed_loses_nothing() {
    for journal_mode in [JournalMode::Memory, JournalMode::Off] {
        // The connection left unclosed keeps its name registered: one name per mode.
        let name = |what: &str| format!("{what}-{journal_mode:?}.db");
        let closed = VectorMemory::default();
        let mut store =
            StableSqliteStore::open(&name("closed"), closed.clone(), config(journal_mode)).unwrap();
        write_everything(&mut store);
        StorageEngine::close(store).unwrap();

        let upgraded = VectorMemory::default();
        let mut store =
            StableSqliteStore::open(&name("upgraded"), upgraded.clone(), config(journal_mode))
                .unwrap();
        write_everything(&mut store);
        let expected = store.page(None, 5_000).unwrap();
        store.before_upgrade().unwrap();
        assert!(bytes(&upgraded) == bytes(&closed), "{journal_mode:?}");

        let store = StableSqliteStore::open(
            &name("upgraded-next-instance"),
            upgraded.clone(),
            config(journal_mode),
        )
        .unwrap();
        store.check_integrity().unwrap();
        assert_eq!(store.count(), Ok(expected.len() as u64), "{journal_mode:?}");
        assert_eq!(
            store.page(None, 5_000).unwrap(),
            expected,
            "{journal_mode:?}"
        );
        assert_eq!(store.get(3), Ok(User::new(3, "three")));
        assert_eq!(store.get(9), Ok(User::new(9, "user-9")));
        assert_eq!(store.get(20_000), Err(StoreError::NotFound { id: 20_000 }));
    }
}
