//! The conformance tests, and the engine check of the file.

use super::*;
use userstore_peer_common::conformance;

#[test]
fn answers_as_the_model() {
    conformance::model_test(64, RedbStore::open);
}

#[test]
fn error_cases() {
    conformance::error_cases(RedbStore::open);
}

#[test]
fn a_file_of_another_engine_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("users.db");
    std::fs::write(&path, b"SQLite format 3\0and the rest").unwrap();
    let error = RedbStore::open(&path).err().unwrap();
    assert!(
        matches!(&error, StoreError::InvalidConfig { reason } if reason.contains("SQLite")),
        "{error:?}"
    );

    // A redb database of another program: no engine recorded.
    let other = dir.path().join("other.redb");
    let db = Database::create(&other).unwrap();
    let write = db.begin_write().unwrap();
    write.open_table(USERS).unwrap();
    write.commit().unwrap();
    drop(db);
    assert!(matches!(
        RedbStore::open(&other),
        Err(StoreError::InvalidConfig { .. })
    ));

    // A redb database recorded as another engine's.
    let db = Database::create(&other).unwrap();
    let write = db.begin_write().unwrap();
    write
        .open_table(META)
        .unwrap()
        .insert(ENGINE_KEY, "SqliteFile")
        .unwrap();
    write.commit().unwrap();
    drop(db);
    let error = RedbStore::open(&other).err().unwrap();
    assert!(
        matches!(&error, StoreError::InvalidConfig { reason } if reason.contains("SqliteFile")),
        "{error:?}"
    );
}

#[test]
fn a_new_file_records_the_engine_and_reopens() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("users.db");
    let mut store = RedbStore::open(&path).unwrap();
    assert_eq!(store.count(), Ok(0));
    store.insert(User::new(5, "five")).unwrap();
    drop(store);
    let store = RedbStore::open(&path).unwrap();
    assert_eq!(store.get(5), Ok(User::new(5, "five")));
    assert_eq!(
        userstore_peer_common::FileKind::of(&path),
        Ok(FileKind::Redb)
    );
}

#[test]
fn io_counts_syncs_and_bytes_per_call() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("users.db");
    let mut store = RedbStore::open(&path).unwrap();
    let opened = store.io();
    assert!(
        opened.syncs >= 1,
        "recording the engine commits: {opened:?}"
    );
    assert!(opened.bytes_written > 0, "{opened:?}");
    for id in 0..5 {
        let before = store.io();
        store.insert(User::new(id, "someone")).unwrap();
        let write = store.io().since(before);
        assert!(write.syncs >= 1, "a durable commit syncs: {write:?}");
        assert!(write.bytes_written > 0, "{write:?}");
    }
    let before = store.io();
    store
        .update_batch(&[User::new(1, "one"), User::new(2, "two")])
        .unwrap();
    assert!(store.io().since(before).syncs >= 1);
    // A refused write commits nothing: its transaction is aborted.
    let before = store.io();
    assert!(store.insert(User::new(1, "again")).is_err());
    assert_eq!(store.io().since(before).syncs, 0);
    // A read neither writes nor syncs.
    let before = store.io();
    assert_eq!(store.get(3), Ok(User::new(3, "someone")));
    assert_eq!(store.count(), Ok(5));
    let read = store.io().since(before);
    assert_eq!((read.syncs, read.bytes_written), (0, 0), "{read:?}");
    drop(store);
    // A new store counts from its open: the reopened file is read.
    let store = RedbStore::open(&path).unwrap();
    let reopened = store.io();
    assert!(reopened.bytes_read > 0, "{reopened:?}");
    assert_eq!(store.get(2), Ok(User::new(2, "two")));
}
