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
