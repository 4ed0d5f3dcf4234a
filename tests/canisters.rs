//! End-to-end tests of both store canisters: the real release Wasm, installed on icrun,
//! called over Candid. They check what the library's native tests cannot: the canisters'
//! Candid methods, authorization, and that data survives upgrades for the B-tree and for
//! SQLite in every journal mode.

mod support;

use support::{controller, owner, stranger, StoreCanister};
use userstore::service::{CanisterConfig, Stats};
use userstore::{Engine, InitArgs, JournalMode, SqliteConfig, StoreError, User};

fn users(ids: impl IntoIterator<Item = u64>) -> Vec<User> {
    ids.into_iter()
        .map(|id| User::new(id, format!("user-{id:05}")))
        .collect()
}

fn sqlite_args(config: SqliteConfig) -> Option<InitArgs> {
    Some(InitArgs {
        writers: None,
        sqlite: Some(config),
    })
}

/// Every configuration of every canister that must keep its data across upgrades.
fn every_store() -> Vec<(String, StoreCanister)> {
    let mut stores = vec![(
        "btree".to_string(),
        StoreCanister::install("btree", None).expect("install btree"),
    )];
    for journal_mode in JournalMode::ALL {
        let args = sqlite_args(SqliteConfig::with_journal_mode(journal_mode));
        let store = StoreCanister::install("sqlite", args)
            .unwrap_or_else(|error| panic!("install sqlite {journal_mode:?}: {error}"));
        stores.push((format!("sqlite {journal_mode:?}"), store));
    }
    stores
}

fn count(store: &mut StoreCanister) -> u64 {
    let (count,): (Result<u64, StoreError>,) = store.query("count_users", ()).expect("count");
    count.expect("count ok")
}

fn insert_batch(store: &mut StoreCanister, batch: Vec<User>) -> Result<u64, StoreError> {
    let (inserted,): (Result<u64, StoreError>,) = store
        .update(owner(), "insert_users", (batch,))
        .expect("insert_users replies");
    inserted
}

fn get(store: &mut StoreCanister, id: u64) -> Result<User, StoreError> {
    store.query_one("get_user", id)
}

#[test]
fn data_survives_upgrades_and_writes_continue() {
    for (name, mut store) in every_store() {
        assert_eq!(insert_batch(&mut store, users(0..500)), Ok(500), "{name}");
        for round in 0..3u64 {
            store
                .upgrade(None)
                .unwrap_or_else(|error| panic!("{name}: upgrade {round}: {error}"));
            assert_eq!(
                count(&mut store),
                500 + round * 10,
                "{name} after upgrade {round}"
            );
            assert_eq!(
                get(&mut store, 499),
                Ok(User::new(499, "user-00499")),
                "{name}"
            );
            let more = users(1000 + round * 10..1010 + round * 10);
            assert_eq!(insert_batch(&mut store, more), Ok(10), "{name}");
        }
        let (page,): (Result<Vec<User>, StoreError>,) = store
            .query("list_users", (Some(995u64), 5u32))
            .expect("page");
        assert_eq!(page, Ok(users(1000..1005)), "{name}");
    }
}

#[test]
fn every_method_over_candid() {
    for (name, mut store) in every_store() {
        let (inserted,): (Result<(), StoreError>,) = store
            .update(owner(), "insert_user", (User::new(7, "seven"),))
            .expect("insert_user");
        assert_eq!(inserted, Ok(()), "{name}");
        let (duplicate,): (Result<(), StoreError>,) = store
            .update(owner(), "insert_user", (User::new(7, "again"),))
            .expect("insert_user");
        assert_eq!(duplicate, Err(StoreError::DuplicateId { id: 7 }), "{name}");
        let (previous,): (Result<User, StoreError>,) = store
            .update(owner(), "update_username", (7u64, "SEVEN".to_string()))
            .expect("update_username");
        assert_eq!(previous, Ok(User::new(7, "seven")), "{name}");
        assert_eq!(get(&mut store, 7), Ok(User::new(7, "SEVEN")), "{name}");
        let (removed,): (Result<User, StoreError>,) = store
            .update(owner(), "delete_user", (7u64,))
            .expect("delete_user");
        assert_eq!(removed, Ok(User::new(7, "SEVEN")), "{name}");
        assert_eq!(
            get(&mut store, 7),
            Err(StoreError::NotFound { id: 7 }),
            "{name}"
        );
        let (empty,): (Result<Vec<User>, StoreError>,) = store
            .query("list_users", (None::<u64>, 10u32))
            .expect("page");
        assert_eq!(empty, Ok(vec![]), "{name}");
        insert_batch(&mut store, users(0..20)).expect("seed");
        let renames = vec![User::new(3, "three"), User::new(4, "four")];
        let (updated,): (Result<u64, StoreError>,) = store
            .update(owner(), "update_users", (renames,))
            .expect("update_users");
        assert_eq!(updated, Ok(2), "{name}");
        assert_eq!(get(&mut store, 4), Ok(User::new(4, "four")), "{name}");
        let (unknown,): (Result<u64, StoreError>,) = store
            .update(owner(), "delete_users", (vec![5u64, 6, 99],))
            .expect("delete_users");
        assert_eq!(unknown, Err(StoreError::NotFound { id: 99 }), "{name}");
        assert_eq!(
            count(&mut store),
            20,
            "{name}: a failed batch deletes nothing"
        );
        let (deleted,): (Result<u64, StoreError>,) = store
            .update(owner(), "delete_users", (vec![5u64, 6],))
            .expect("delete_users");
        assert_eq!(deleted, Ok(2), "{name}");
        assert_eq!(count(&mut store), 18, "{name}");
        let (stats,): (Result<Stats, StoreError>,) = store.query("stats", ()).expect("stats");
        let stats = stats.expect("stats ok");
        assert_eq!(stats.rows, 18, "{name}");
        assert!(
            stats.stable_memory_pages > 0 && stats.heap_pages > 0,
            "{name}: {stats:?}"
        );
        let config: CanisterConfig = store.query_one("config", ());
        assert_eq!(config.writers.principals, vec![owner()], "{name}");
        assert_eq!(config.limits.max_batch_size, 10_000, "{name}");
    }
}

#[test]
fn config_reports_the_engine_and_the_sqlite_configuration() {
    let mut btree = StoreCanister::install("btree", None).expect("install btree");
    let config: CanisterConfig = btree.query_one("config", ());
    assert_eq!(config.engine.engine, Engine::StableBTreeMap);
    assert_eq!(config.engine.sqlite, None);

    let persist = SqliteConfig::with_journal_mode(JournalMode::Persist);
    let mut sqlite = StoreCanister::install("sqlite", sqlite_args(persist.clone())).unwrap();
    let config: CanisterConfig = sqlite.query_one("config", ());
    assert_eq!(config.engine.engine, Engine::Sqlite);
    assert_eq!(config.engine.sqlite, Some(persist));
    assert!(config.engine.engine_version.starts_with("SQLite 3."));
}

#[test]
fn writes_from_strangers_are_refused_and_change_nothing() {
    for (name, mut store) in every_store() {
        let (denied,): (Result<u64, StoreError>,) = store
            .update(stranger(), "insert_users", (users(0..3),))
            .expect("insert_users replies");
        assert_eq!(
            denied,
            Err(StoreError::Unauthorized { caller: stranger() }),
            "{name}"
        );
        assert_eq!(count(&mut store), 0, "{name}");
        // Controllers may write by default.
        let (by_controller,): (Result<u64, StoreError>,) = store
            .update(controller(), "insert_users", (users(0..3),))
            .expect("insert_users replies");
        assert_eq!(by_controller, Ok(3), "{name}");
    }
}

#[test]
fn bad_input_is_an_error_value_and_changes_nothing() {
    for (name, mut store) in every_store() {
        insert_batch(&mut store, users(0..10)).expect("seed");
        let mut clashing = users(100..200);
        clashing.push(User::new(5, "clash"));
        assert_eq!(
            insert_batch(&mut store, clashing),
            Err(StoreError::DuplicateId { id: 5 }),
            "{name}"
        );
        let oversized = vec![User::new(300, "x".repeat(129))];
        assert!(
            matches!(
                insert_batch(&mut store, oversized),
                Err(StoreError::LimitExceeded { .. })
            ),
            "{name}"
        );
        assert!(matches!(
            insert_batch(&mut store, vec![User::new(301, "")]),
            Err(StoreError::InvalidInput { .. })
        ));
        let malformed = store.update_raw(owner(), "insert_users", b"not candid");
        assert!(
            malformed.reply.is_err(),
            "{name}: malformed Candid is rejected"
        );
        assert_eq!(count(&mut store), 10, "{name}");
        assert_eq!(get(&mut store, 5), Ok(User::new(5, "user-00005")), "{name}");
    }
}

#[test]
fn an_upgrade_may_change_the_journal_mode_but_not_the_page_size() {
    let memory = SqliteConfig::with_journal_mode(JournalMode::Memory);
    let mut store = StoreCanister::install("sqlite", sqlite_args(memory.clone())).unwrap();
    insert_batch(&mut store, users(0..100)).unwrap();

    let persist = SqliteConfig::with_journal_mode(JournalMode::Persist);
    store
        .upgrade(sqlite_args(persist.clone()))
        .expect("journal mode change");
    let config: CanisterConfig = store.query_one("config", ());
    assert_eq!(config.engine.sqlite, Some(persist.clone()));
    assert_eq!(count(&mut store), 100);

    let bigger_pages = SqliteConfig {
        page_size: 8192,
        ..persist.clone()
    };
    let refused = store
        .upgrade(sqlite_args(bigger_pages))
        .expect_err("refused");
    assert!(refused.contains("page_size"), "{refused}");
    // The failed upgrade left the canister as it was.
    let config: CanisterConfig = store.query_one("config", ());
    assert_eq!(config.engine.sqlite, Some(persist));
    assert_eq!(count(&mut store), 100);
    assert_eq!(insert_batch(&mut store, users(100..110)), Ok(10));
}

#[test]
fn the_btree_canister_refuses_a_sqlite_configuration() {
    let refused = StoreCanister::install("btree", sqlite_args(SqliteConfig::default()))
        .err()
        .expect("install refused");
    assert!(refused.contains("SQLite configuration"), "{refused}");
}
