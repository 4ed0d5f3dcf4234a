//! End-to-end tests of every store canister: the real release Wasm, installed on icrun,
//! called over Candid. They check what the library's native tests cannot: the canisters'
//! Candid methods, authorization, and that data survives upgrades for the B-tree and for
//! SQLite in every journal mode.

use userstore::service::Stats;
use userstore::{Limit, StoreError, User};
use userstore_e2e::{
    controller, every_store, new_ic, owner, plain_args, stranger, CommonConfig, PlainArgs,
    StoreCanister,
};

fn users(ids: impl IntoIterator<Item = u64>) -> Vec<User> {
    ids.into_iter()
        .map(|id| User::new(id, format!("user-{id:05}")))
        .collect()
}

/// An SQLite configuration in Candid text with `journal_mode` and `cache_size_pages`.
fn sqlite_config(journal_mode: &str, page_size: u32, cache_size_pages: u32) -> String {
    format!(
        "record {{ journal_mode = variant {{ {journal_mode} }}; synchronous = variant {{ Off }}; \
         page_size = {page_size}; cache_size_pages = {cache_size_pages}; \
         locking_mode = variant {{ Exclusive }} }}"
    )
}

/// The init argument that gives engine `name` the configuration `config`.
fn with_config(name: &str, config: &str) -> String {
    format!("(opt record {{ config = opt variant {{ {name} = {config} }} }})")
}

#[test]
fn data_survives_upgrades_and_writes_continue() {
    for (name, store) in every_store() {
        assert_eq!(store.insert_users(users(0..500)), Ok(500), "{name}");
        for round in 0..3u64 {
            store
                .upgrade("(null)")
                .unwrap_or_else(|error| panic!("{name}: upgrade {round}: {error}"));
            assert_eq!(
                store.count_users(),
                500 + round * 10,
                "{name} after upgrade {round}"
            );
            assert_eq!(
                store.get_user(499),
                Ok(User::new(499, "user-00499")),
                "{name}"
            );
            let more = users(1000 + round * 10..1010 + round * 10);
            assert_eq!(store.insert_users(more), Ok(10), "{name}");
        }
        let (page,): (Result<Vec<User>, StoreError>,) = store
            .query("list_users", (Some(995u64), 5u32))
            .expect("page");
        assert_eq!(page, Ok(users(1000..1005)), "{name}");
    }
}

#[test]
fn every_method_over_candid() {
    for (name, store) in every_store() {
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
        assert_eq!(store.get_user(7), Ok(User::new(7, "SEVEN")), "{name}");
        let (removed,): (Result<User, StoreError>,) = store
            .update(owner(), "delete_user", (7u64,))
            .expect("delete_user");
        assert_eq!(removed, Ok(User::new(7, "SEVEN")), "{name}");
        assert_eq!(
            store.get_user(7),
            Err(StoreError::NotFound { id: 7 }),
            "{name}"
        );
        let (empty,): (Result<Vec<User>, StoreError>,) = store
            .query("list_users", (None::<u64>, 10u32))
            .expect("page");
        assert_eq!(empty, Ok(vec![]), "{name}");
        store.insert_users(users(0..20)).expect("seed");
        let renames = vec![User::new(3, "three"), User::new(4, "four")];
        let (updated,): (Result<u64, StoreError>,) = store
            .update(owner(), "update_users", (renames,))
            .expect("update_users");
        assert_eq!(updated, Ok(2), "{name}");
        assert_eq!(store.get_user(4), Ok(User::new(4, "four")), "{name}");
        let (unknown,): (Result<u64, StoreError>,) = store
            .update(owner(), "delete_users", (vec![5u64, 6, 99],))
            .expect("delete_users");
        assert_eq!(unknown, Err(StoreError::NotFound { id: 99 }), "{name}");
        assert_eq!(
            store.count_users(),
            20,
            "{name}: a failed batch deletes nothing"
        );
        let (deleted,): (Result<u64, StoreError>,) = store
            .update(owner(), "delete_users", (vec![5u64, 6],))
            .expect("delete_users");
        assert_eq!(deleted, Ok(2), "{name}");
        assert_eq!(store.count_users(), 18, "{name}");
        let (stats,): (Result<Stats, StoreError>,) = store.query("stats", ()).expect("stats");
        let stats = stats.expect("stats ok");
        assert_eq!(stats.rows, 18, "{name}");
        assert!(
            stats.stable_memory_pages > 0 && stats.heap_pages > 0,
            "{name}: {stats:?}"
        );
        let config: CommonConfig = store.query_one("config", ());
        assert_eq!(config.writers.principals, vec![owner()], "{name}");
        assert_eq!(config.limits.max_batch_size, 10_000, "{name}");
    }
}

/// A client's user type with a field the store does not know: Candid lets the store skip it.
#[derive(candid::CandidType)]
struct UserWithEmail {
    id: u64,
    username: String,
    email: String,
}

/// Arguments encoded otherwise than by the `candid` crate for the store's own types (a
/// subtype, a type table with an entry nobody uses) are not read directly: they go to
/// `candid`'s decoder and mean what they meant before.
#[test]
fn arguments_in_another_candid_encoding_decode_as_before() {
    for (name, store) in every_store() {
        let subtype = userstore_e2e::encode((UserWithEmail {
            id: 41,
            username: "erin".into(),
            email: "erin@example.org".into(),
        },));
        let reply = store
            .update_raw(owner(), "insert_user", subtype)
            .expect("insert_user replies");
        let inserted: Result<(), StoreError> = candid::decode_one(&reply).expect("reply");
        assert_eq!(inserted, Ok(()), "{name}");
        // `(nat64)` with an unused `vec nat64` in the type table.
        let mut get = b"DIDL\x01\x6d\x78\x01\x78".to_vec();
        get.extend_from_slice(&41u64.to_le_bytes());
        let reply = store.query_raw("get_user", get).expect("get_user replies");
        let found: Result<User, StoreError> = candid::decode_one(&reply).expect("reply");
        assert_eq!(found, Ok(User::new(41, "erin")), "{name}");
        // The same argument with a byte too many is refused, as candid refuses it.
        let mut trailing = userstore_e2e::encode((41u64,));
        trailing.push(0);
        assert!(
            store.query_raw("get_user", trailing).is_err(),
            "{name}: trailing bytes are refused"
        );
        assert_eq!(store.count_users(), 1, "{name}");
    }
}

#[test]
fn config_reports_the_engine_and_the_configuration_it_was_installed_with() {
    let ic = new_ic();
    for (engine, configuration) in engine_registry::configurations() {
        let service = engine_registry::Service::of(&engine.canister).expect(".did");
        let init = engine.init_text(configuration);
        let store = StoreCanister::install_store(&ic, &engine.canister, &init);
        let text = store.config_text();
        assert!(
            text.contains(&format!("engine = \"{}\"", engine.name)),
            "{}: {text}",
            configuration.key
        );
        let reply = store
            .query_raw("config", userstore_e2e::encode(()))
            .unwrap();
        let reported = service.config_reported(&reply).unwrap();
        match service.config_given(&init).unwrap() {
            Some(given) => assert_eq!(reported, given, "{}", configuration.key),
            // The engine's default: reported as what the registry's own default gives, if any.
            None => assert!(
                text.contains(&format!("variant {{ {} =", engine.name)),
                "{}: {text}",
                configuration.key
            ),
        }
    }
}

#[test]
fn every_canister_refuses_another_engine_s_configuration_and_the_earlier_sqlite_field() {
    let ic = new_ic();
    for engine in engine_registry::engines() {
        for other in engine_registry::engines()
            .iter()
            .filter(|o| o.name != engine.name)
        {
            let foreign = other.init_arg(other.traced());
            let Some(_) = other.traced().config else {
                continue;
            };
            let refused = userstore_e2e::Deployed::install(&ic, &engine.canister, foreign.unwrap())
                .err()
                .unwrap_or_else(|| {
                    panic!("{} accepted {}'s configuration", engine.name, other.name)
                });
            assert!(
                refused
                    .message
                    .contains(&format!("not the {} engine's", engine.name)),
                "{}: {refused}",
                engine.name
            );
        }
        let earlier = "(opt record { sqlite = opt record { page_size = 4096 : nat32 } })";
        let refused = StoreCanister::try_install_store(&ic, &engine.canister, earlier)
            .err()
            .unwrap_or_else(|| panic!("{} accepted the `sqlite` field", engine.name));
        assert!(
            refused.message.contains("replaced by `config`"),
            "{refused}"
        );
    }
}

#[test]
fn the_stable_sqlite_canister_refuses_journal_files_at_install_and_upgrade() {
    let ic = new_ic();
    let persist = with_config("StableSqlite", &sqlite_config("Persist", 4096, 40_960));
    let refused = StoreCanister::try_install_store(&ic, "stable-sqlite", &persist)
        .err()
        .expect("install refused");
    assert!(
        refused.message.contains("journal_mode Persist"),
        "{refused}"
    );

    let store = StoreCanister::install_store(&ic, "stable-sqlite", "(null)");
    store.insert_users(users(0..10)).expect("insert");
    let before = store.config_text();
    let refused = store.upgrade(&persist).expect_err("upgrade refused");
    assert!(
        refused.message.contains("journal_mode Persist"),
        "{refused}"
    );
    // The refused upgrade changed nothing: same data, same configuration.
    assert_eq!(store.count_users(), 10);
    assert_eq!(store.config_text(), before);
}

#[test]
fn writes_from_strangers_are_refused_and_change_nothing() {
    for (name, store) in every_store() {
        // An ingress write from a stranger is refused by inspect_message, before the
        // canister pays for running it; a read is accepted.
        let refused = store.update_raw(
            stranger(),
            "insert_users",
            userstore_e2e::encode((users(0..3),)),
        );
        let reject = refused.expect_err("a stranger's ingress write is refused");
        assert!(
            reject.message.contains("inspect") || reject.code == 4,
            "{name}: {reject}"
        );
        assert_eq!(store.count_users(), 0, "{name}");
        let read = store.update_raw(stranger(), "count_users", userstore_e2e::encode(()));
        assert!(read.is_ok(), "{name}: reads are public: {read:?}");
        // Controllers may write by default.
        let (by_controller,): (Result<u64, StoreError>,) = store
            .update(controller(), "insert_users", (users(0..3),))
            .expect("insert_users replies");
        assert_eq!(by_controller, Ok(3), "{name}");
    }
}

#[test]
fn arguments_longer_than_their_method_needs_are_refused_before_they_run() {
    for (name, store) in every_store() {
        let long = User::new(1, "x".repeat(20_000));
        let refused = store.update_raw(owner(), "insert_user", userstore_e2e::encode((long,)));
        assert!(
            refused.is_err(),
            "{name}: a 20 KB one-row argument is refused"
        );
        // A batch may be long.
        let batch = users(0..1_000);
        assert_eq!(store.insert_users(batch), Ok(1_000), "{name}");
    }
}

#[test]
fn bad_input_is_an_error_value_and_changes_nothing() {
    for (name, store) in every_store() {
        store.insert_users(users(0..10)).expect("seed");
        let mut clashing = users(100..200);
        clashing.push(User::new(5, "clash"));
        assert_eq!(
            store.insert_users(clashing),
            Err(StoreError::DuplicateId { id: 5 }),
            "{name}"
        );
        let oversized = vec![User::new(300, "x".repeat(129))];
        assert!(
            matches!(
                store.insert_users(oversized),
                Err(StoreError::LimitExceeded { .. })
            ),
            "{name}"
        );
        assert!(matches!(
            store.insert_users(vec![User::new(301, "")]),
            Err(StoreError::InvalidInput { .. })
        ));
        let malformed = store.update_raw(owner(), "insert_users", b"not candid".to_vec());
        assert!(malformed.is_err(), "{name}: malformed Candid is rejected");
        let wrong_type =
            store.update_raw(owner(), "insert_users", userstore_e2e::encode(("text",)));
        assert!(
            wrong_type.is_err(),
            "{name}: a wrong argument type is rejected"
        );
        let (unknown,): (Result<User, StoreError>,) = store
            .update(
                owner(),
                "update_username",
                (12_345u64, "nobody".to_string()),
            )
            .expect("update_username replies");
        assert_eq!(unknown, Err(StoreError::NotFound { id: 12_345 }), "{name}");
        let (gone,): (Result<User, StoreError>,) = store
            .update(owner(), "delete_user", (12_345u64,))
            .expect("delete_user replies");
        assert_eq!(gone, Err(StoreError::NotFound { id: 12_345 }), "{name}");
        assert_eq!(
            store.insert_users(users(1_000..11_001)),
            Err(StoreError::LimitExceeded {
                limit: Limit::BatchSize,
                max: 10_000,
                actual: 10_001
            }),
            "{name}"
        );
        let (page,): (Result<Vec<User>, StoreError>,) = store
            .query("list_users", (None::<u64>, 10_001u32))
            .expect("list_users replies");
        assert_eq!(
            page,
            Err(StoreError::LimitExceeded {
                limit: Limit::PageSize,
                max: 10_000,
                actual: 10_001
            }),
            "{name}"
        );
        assert_eq!(store.count_users(), 10, "{name}");
        assert_eq!(store.get_user(5), Ok(User::new(5, "user-00005")), "{name}");
    }
}

#[test]
fn an_upgrade_may_change_the_journal_mode_but_not_the_page_size() {
    let memory = with_config("Sqlite", &sqlite_config("Memory", 4096, 8192));
    let store = StoreCanister::install_store(&new_ic(), "sqlite", &memory);
    store.insert_users(users(0..100)).unwrap();

    let persist = with_config("Sqlite", &sqlite_config("Persist", 4096, 8192));
    store.upgrade(&persist).expect("journal mode change");
    let config = store.config_text();
    assert!(config.contains("Persist"), "{config}");
    assert_eq!(store.count_users(), 100);

    let bigger_pages = with_config("Sqlite", &sqlite_config("Persist", 8192, 8192));
    let refused = store.upgrade(&bigger_pages).expect_err("refused");
    assert!(refused.message.contains("page_size"), "{refused}");
    // The failed upgrade left the canister as it was.
    assert_eq!(store.config_text(), config);
    assert_eq!(store.count_users(), 100);
    assert_eq!(store.insert_users(users(100..110)), Ok(10));
}

#[test]
fn an_empty_writer_list_is_refused_at_install_and_upgrade() {
    let ic = new_ic();
    let nobody = || {
        plain_args(PlainArgs {
            writers: Some(Vec::new()),
            ..PlainArgs::default()
        })
    };
    for engine in engine_registry::engines() {
        let refused = userstore_e2e::Deployed::install(&ic, &engine.canister, nobody())
            .err()
            .unwrap_or_else(|| panic!("{}: installed with no writers", engine.name));
        assert!(refused.message.contains("at least one"), "{refused}");
        let store = StoreCanister::install_store(&ic, &engine.canister, "(null)");
        store.insert_users(users(0..3)).unwrap();
        assert!(store.upgrade_with(nobody()).is_err(), "{}", engine.name);
        assert_eq!(store.insert_users(users(3..4)), Ok(1), "{}", engine.name);
    }
}

#[test]
fn paging_walks_the_whole_table_and_the_empty_table() {
    for (name, store) in every_store() {
        let (empty,): (Result<Vec<User>, StoreError>,) = store
            .query("list_users", (None::<u64>, 100u32))
            .expect("list_users");
        assert_eq!(empty, Ok(vec![]), "{name}: the empty table");
        assert_eq!(store.count_users(), 0, "{name}");

        let expected: Vec<User> = users((0..1_000).map(|i| i * 3));
        store.insert_users(expected.clone()).expect("seed");
        let mut seen = Vec::new();
        let mut after = None;
        loop {
            let (page,): (Result<Vec<User>, StoreError>,) = store
                .query("list_users", (after, 64u32))
                .expect("list_users");
            let page = page.expect("page");
            assert!(page.len() <= 64, "{name}");
            match page.last() {
                Some(last) => after = Some(last.id),
                None => break,
            }
            seen.extend(page);
        }
        assert_eq!(seen, expected, "{name}: every row once, in id order");
        // Starting between ids, and past the end.
        let (from_middle,): (Result<Vec<User>, StoreError>,) = store
            .query("list_users", (Some(1u64), 2u32))
            .expect("list_users");
        assert_eq!(from_middle, Ok(users([3, 6])), "{name}");
        let (past_end,): (Result<Vec<User>, StoreError>,) = store
            .query("list_users", (Some(2_997u64), 10u32))
            .expect("list_users");
        assert_eq!(past_end, Ok(vec![]), "{name}");
    }
}
