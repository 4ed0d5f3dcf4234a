//! The conformance tests in every journal mode, and the engine check of the file.

use super::*;
use crate::config::{JournalMode, Synchronous};
use userstore_peer_common::conformance;

/// Every journal mode, each with one sync level.
const CONFIGS: [(JournalMode, Synchronous); 6] = [
    (JournalMode::Delete, Synchronous::Full),
    (JournalMode::Truncate, Synchronous::Normal),
    (JournalMode::Persist, Synchronous::Off),
    (JournalMode::Wal, Synchronous::Normal),
    (JournalMode::Memory, Synchronous::Off),
    (JournalMode::Off, Synchronous::Off),
];

#[test]
fn answers_as_the_model_in_every_journal_mode() {
    for (journal_mode, synchronous) in CONFIGS {
        let config = SqliteFileConfig {
            journal_mode,
            synchronous,
        };
        conformance::model_test(24, |path| SqliteFileStore::open_with(path, config));
    }
}

#[test]
fn error_cases() {
    conformance::error_cases(SqliteFileStore::open);
}

#[test]
fn usernames_are_unique_in_every_journal_mode() {
    for (journal_mode, synchronous) in CONFIGS {
        let config = SqliteFileConfig {
            journal_mode,
            synchronous,
        };
        conformance::unique_cases(|path| SqliteFileStore::open_with(path, config));
    }
}

/// Writes `rows` to a new file at `path` as this peer's release before unique names did:
/// its schema (no by-name index, no `shared_usernames`) and the engine's name.
fn write_earlier_release(path: &Path, rows: &[User]) {
    let connection = Connection::open(path).unwrap();
    connection
        .execute_batch(
            "CREATE TABLE userstore_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
             CREATE TABLE users (id INTEGER PRIMARY KEY, username TEXT NOT NULL);
             INSERT INTO userstore_meta (key, value) VALUES ('engine', 'SqliteFile');",
        )
        .unwrap();
    for user in rows {
        connection
            .execute(
                "INSERT INTO users (id, username) VALUES (?1, ?2)",
                params![i64::try_from(user.id).unwrap(), user.username],
            )
            .unwrap();
    }
}

#[test]
fn a_file_written_before_names_were_unique_keeps_every_row() {
    conformance::earlier_file_cases(write_earlier_release, SqliteFileStore::open);

    // What the open builds: the index, and the names several users shared.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("users.db");
    write_earlier_release(&path, &conformance::earlier_rows());
    let store = SqliteFileStore::open(&path).unwrap();
    assert!(
        store.io().syncs >= 1,
        "the index is built in a committed transaction"
    );
    let query = |sql: &str| -> Vec<String> {
        let mut select = store.connection.prepare(sql).unwrap();
        let rows = select.query_map([], |row| row.get(0)).unwrap();
        rows.collect::<Result<_, _>>().unwrap()
    };
    assert_eq!(
        query("SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'users'"),
        ["users_by_name"]
    );
    assert_eq!(
        query("SELECT username FROM shared_usernames ORDER BY username"),
        ["x", "z"]
    );
    assert_eq!(query("PRAGMA integrity_check"), ["ok"]);
    drop(store);
    // A reopen finds the index and writes nothing.
    let store = SqliteFileStore::open(&path).unwrap();
    let reopened = store.io();
    assert_eq!(
        (reopened.syncs, reopened.bytes_written),
        (0, 0),
        "{reopened:?}"
    );
    assert_eq!(store.ids_named("x", 10), Ok(vec![1, 3, 6]));
}

#[test]
fn answers_as_the_model_from_a_file_written_before_names_were_unique() {
    for (journal_mode, synchronous) in CONFIGS {
        let config = SqliteFileConfig {
            journal_mode,
            synchronous,
        };
        conformance::model_test_from_earlier_file(12, write_earlier_release, |path| {
            SqliteFileStore::open_with(path, config)
        });
    }
}

#[test]
fn every_configuration_is_applied() {
    let dir = tempfile::tempdir().unwrap();
    for (index, (journal_mode, synchronous)) in CONFIGS.into_iter().enumerate() {
        let path = dir.path().join(format!("users-{index}.db"));
        let config = SqliteFileConfig {
            journal_mode,
            synchronous,
        };
        let store = SqliteFileStore::open_with(&path, config).unwrap();
        let mode: String = store
            .connection
            .pragma_query_value(None, "journal_mode", |row| row.get(0))
            .unwrap();
        assert_eq!(mode, journal_mode.pragma());
    }
}

#[test]
fn a_file_of_another_engine_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("users.db");
    std::fs::write(&path, b"redb\x1A\x0A\xA9\x0D\x0Aand the rest").unwrap();
    let error = SqliteFileStore::open(&path).err().unwrap();
    assert!(
        matches!(&error, StoreError::InvalidConfig { reason } if reason.contains("redb")),
        "{error:?}"
    );

    // A SQLite database of another program: no engine recorded.
    let other = dir.path().join("other.db");
    Connection::open(&other)
        .unwrap()
        .execute_batch("CREATE TABLE t (x)")
        .unwrap();
    assert!(matches!(
        SqliteFileStore::open(&other),
        Err(StoreError::InvalidConfig { .. })
    ));

    // A SQLite database recorded as another engine's.
    Connection::open(&other)
        .unwrap()
        .execute_batch(
            "CREATE TABLE userstore_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
             INSERT INTO userstore_meta VALUES ('engine', 'Redb');",
        )
        .unwrap();
    let error = SqliteFileStore::open(&other).err().unwrap();
    assert!(
        matches!(&error, StoreError::InvalidConfig { reason } if reason.contains("Redb")),
        "{error:?}"
    );
}

#[test]
fn a_new_file_records_the_engine_and_reopens_in_another_mode() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("users.db");
    let mut store = SqliteFileStore::open(&path).unwrap();
    store.insert(User::new(5, "five")).unwrap();
    drop(store);
    let wal = SqliteFileConfig {
        journal_mode: JournalMode::Wal,
        synchronous: Synchronous::Full,
    };
    let mut store = SqliteFileStore::open_with(&path, wal).unwrap();
    assert_eq!(store.get(5), Ok(User::new(5, "five")));
    store.insert(User::new(6, "six")).unwrap();
    drop(store);
    let store = SqliteFileStore::open(&path).unwrap();
    assert_eq!(store.count(), Ok(2));
}

/// The syncs and bytes of one insert in `config` (the third into a fresh file).
fn one_insert(config: SqliteFileConfig) -> userstore_peer_common::IoCounts {
    let dir = tempfile::tempdir().unwrap();
    let mut store = SqliteFileStore::open_with(&dir.path().join("users.db"), config).unwrap();
    store.insert(User::new(1, "one")).unwrap();
    store.insert(User::new(2, "two")).unwrap();
    let before = store.io();
    store.insert(User::new(3, "three")).unwrap();
    store.io().since(before)
}

#[test]
fn io_counts_the_syncs_each_mode_promises() {
    use JournalMode::*;
    use Synchronous::{Full, Normal, Off as SyncOff};
    for (journal_mode, synchronous, syncs) in [
        // The journal's records, then its header, then the database, then the journal's end
        // (its header zeroed, or its truncation): with locking_mode=EXCLUSIVE a DELETE
        // journal is not deleted but zeroed, as a PERSIST one.
        (Delete, Full, 4..=4),
        (Truncate, Full, 4..=4),
        (Persist, Full, 4..=4),
        // The journal once, then the database, then the journal's end.
        (Delete, Normal, 3..=3),
        // The WAL at each commit; NORMAL syncs it only at a checkpoint.
        (Wal, Full, 1..=1),
        (Wal, Normal, 0..=0),
        // No journal on disk: the database alone.
        (Memory, Full, 1..=1),
        (Off, Full, 1..=1),
        (Delete, SyncOff, 0..=0),
        (Wal, SyncOff, 0..=0),
    ] {
        let config = SqliteFileConfig {
            journal_mode,
            synchronous,
        };
        let io = one_insert(config);
        assert!(
            syncs.contains(&io.syncs),
            "{journal_mode:?}/{synchronous:?}: {io:?}, expected {syncs:?} syncs"
        );
        assert!(io.bytes_written >= 4096, "{journal_mode:?}: {io:?}");
    }
}

#[test]
fn io_counts_reads_without_writes_and_per_store() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("users.db");
    let mut store = SqliteFileStore::open(&path).unwrap();
    let opened = store.io();
    assert!(opened.syncs >= 2, "creating the schema commits: {opened:?}");
    store.insert(User::new(1, "one")).unwrap();
    // A second store on another file counts apart.
    let other = SqliteFileStore::open(&dir.path().join("other.db")).unwrap();
    let other_opened = other.io();
    drop(store);
    let store = SqliteFileStore::open(&path).unwrap();
    let reopened = store.io();
    assert_eq!(
        (reopened.syncs, reopened.bytes_written),
        (0, 0),
        "{reopened:?}"
    );
    assert!(reopened.bytes_read > 0, "{reopened:?}");
    let before = store.io();
    assert_eq!(store.get(1), Ok(User::new(1, "one")));
    let read = store.io().since(before);
    assert_eq!((read.syncs, read.bytes_written), (0, 0), "{read:?}");
    assert_eq!(other.io(), other_opened);
}
