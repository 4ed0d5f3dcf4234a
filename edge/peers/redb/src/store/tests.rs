//! The conformance tests, the engine check of the file, and the opening of a file written
//! before names were unique.

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
fn usernames_are_unique() {
    conformance::unique_cases(RedbStore::open);
}

/// Writes `rows` to a new file at `path` as this peer's release before unique names did:
/// the engine's name and the user table, in one commit, with no by-name index.
fn write_earlier_release(path: &Path, rows: &[User]) {
    let db = Database::create(path).unwrap();
    let write = db.begin_write().unwrap();
    write
        .open_table(META)
        .unwrap()
        .insert(ENGINE_KEY, ENGINE_NAME)
        .unwrap();
    let mut users = write.open_table(USERS).unwrap();
    for user in rows {
        users.insert(user.id, user.username.as_str()).unwrap();
    }
    drop(users);
    write.commit().unwrap();
}

/// The index's entries and the recorded shared names of the file at `path`, read with redb
/// itself.
fn index_of(path: &Path) -> (Vec<(String, u64)>, Vec<String>) {
    let db = Database::open(path).unwrap();
    let read = db.begin_read().unwrap();
    let index = read.open_multimap_table(BY_NAME).unwrap();
    let mut entries = Vec::new();
    for entry in index.iter().unwrap() {
        let (name, ids) = entry.unwrap();
        for id in ids {
            entries.push((name.value().to_owned(), id.unwrap().value()));
        }
    }
    let shared = read.open_table(SHARED).unwrap();
    let names = shared
        .iter()
        .unwrap()
        .map(|entry| entry.unwrap().0.value().to_owned())
        .collect();
    (entries, names)
}

#[test]
fn a_file_written_before_names_were_unique_keeps_every_row() {
    conformance::earlier_file_cases(write_earlier_release, RedbStore::open);

    // The index the open builds: one entry per row, in (name, id) order, and the names
    // several users shared recorded.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("users.db");
    write_earlier_release(&path, &conformance::earlier_rows());
    let built = RedbStore::open(&path).unwrap().io();
    let mut rows: Vec<(String, u64)> = conformance::earlier_rows()
        .into_iter()
        .map(|user| (user.username, user.id))
        .collect();
    rows.sort();
    let (entries, shared) = index_of(&path);
    assert_eq!(entries, rows);
    assert_eq!(shared, ["x", "z"]);
    // A reopen finds the index and builds nothing: it writes what redb's own open does (its
    // header), the same at every reopen, and syncs less than the open that built the index.
    let writes = |io: IoCounts| (io.syncs, io.bytes_written);
    let reopened = writes(RedbStore::open(&path).unwrap().io());
    let store = RedbStore::open(&path).unwrap();
    assert_eq!(writes(store.io()), reopened);
    assert!(built.syncs > reopened.0, "{built:?}, then {reopened:?}");
    assert_eq!(store.ids_named("x", 10), Ok(vec![1, 3, 6]));
}

#[test]
fn answers_as_the_model_from_a_file_written_before_names_were_unique() {
    conformance::model_test_from_earlier_file(32, write_earlier_release, RedbStore::open);
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
        store
            .insert(User::new(id, format!("someone-{id}")))
            .unwrap();
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
    assert_eq!(store.get(3), Ok(User::new(3, "someone-3")));
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
