//! The upgrade matrix: every store canister's Wasm upgraded to every other's. The same engine
//! keeps every row; another engine's Wasm is refused before it writes anything, with an error
//! that names both engines, and the canister keeps running its own with every row. The
//! canisters of the release before the engine was recorded (`tests/fixtures/earlier/`, built
//! from commit d1484ae) are upgraded the same way: their engine is worked out from the
//! layout, recorded at that upgrade, and kept from then on.

use std::io::Read;
use std::path::PathBuf;
use std::rc::Rc;
use userstore::{StoreError, User};
use userstore_e2e::{canister_wasm, controller, encode, new_ic, owner, Deployed, Ic};

fn users(ids: impl IntoIterator<Item = u64>) -> Vec<User> {
    ids.into_iter()
        .map(|id| User::new(id, format!("user-{id:05}")))
        .collect()
}

/// The earlier release's canisters kept as fixtures: `(canister, engine name)`.
const EARLIER: [(&str, &str); 3] = [
    ("btree", "StableBTreeMap"),
    ("sqlite", "Sqlite"),
    ("stable-sqlite", "StableSqlite"),
];

/// The earlier release's Wasm of `canister`.
fn earlier_wasm(canister: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/earlier")
        .join(format!("{canister}.wasm.gz"));
    let file =
        std::fs::File::open(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()));
    let mut wasm = Vec::new();
    flate2::read::GzDecoder::new(file)
        .read_to_end(&mut wasm)
        .expect("a gzipped Wasm");
    wasm
}

/// A canister running `wasm`, with `rows` users inserted through it.
fn filled(ic: &Rc<dyn Ic>, wasm: Vec<u8>, rows: u64) -> Principal {
    let id = ic.create_canister(vec![controller(), owner()]);
    ic.install_canister(id, wasm, encode((None::<()>,)), owner())
        .expect("installs");
    let (inserted,): (Result<u64, StoreError>,) = candid::decode_args(
        &ic.update_call(id, owner(), "insert_users", encode((users(0..rows),)))
            .expect("insert_users replies"),
    )
    .expect("decodes");
    assert_eq!(inserted, Ok(rows));
    id
}

use candid::Principal;

fn count(ic: &Rc<dyn Ic>, id: Principal) -> u64 {
    let reply = ic
        .query_call(id, Principal::anonymous(), "count_users", encode(()))
        .expect("count_users replies");
    let (count,): (Result<u64, StoreError>,) = candid::decode_args(&reply).expect("decodes");
    count.expect("count_users")
}

fn upgrade(ic: &Rc<dyn Ic>, id: Principal, wasm: Vec<u8>) -> Result<(), userstore_e2e::Rejected> {
    ic.upgrade_canister(id, wasm, encode((None::<()>,)), controller())
}

/// Pairs tried: accepted with every row kept, refused with every row kept.
#[derive(Debug, Default)]
struct Pairs {
    accepted: usize,
    refused: usize,
}

/// Upgrades a canister of engine `from` (running `wasm`) to every registered store's Wasm.
fn upgrade_to_every_store(ic: &Rc<dyn Ic>, from: &str, wasm: impl Fn() -> Vec<u8>) -> Pairs {
    let mut pairs = Pairs::default();
    for to in engine_registry::engines() {
        let id = filled(ic, wasm(), 40);
        let outcome = upgrade(ic, id, canister_wasm(&to.canister));
        if to.name == from {
            outcome.unwrap_or_else(|reject| panic!("{from} to {}: {reject}", to.name));
            assert_eq!(count(ic, id), 40, "{from} to {}: every row kept", to.name);
            let (more,): (Result<u64, StoreError>,) = candid::decode_args(
                &ic.update_call(id, owner(), "insert_users", encode((users(100..110),)))
                    .expect("replies"),
            )
            .expect("decodes");
            assert_eq!(more, Ok(10), "{from} to {}: writes go on", to.name);
            pairs.accepted += 1;
        } else {
            let reject = outcome.expect_err("an upgrade to another engine is refused");
            assert!(
                reject.message.contains(from) && reject.message.contains(&to.name),
                "{from} to {}: the refusal names both engines: {reject}",
                to.name
            );
            assert_eq!(count(ic, id), 40, "{from} to {}: every row kept", to.name);
            pairs.refused += 1;
        }
    }
    pairs
}

#[test]
fn every_store_wasm_upgraded_to_every_other() {
    let ic = new_ic();
    let mut total = Pairs::default();
    for from in engine_registry::engines() {
        let pairs = upgrade_to_every_store(&ic, &from.name, || canister_wasm(&from.canister));
        total.accepted += pairs.accepted;
        total.refused += pairs.refused;
    }
    eprintln!("upgrade matrix, every store Wasm to every other: {total:?}, every row kept");
    let engines = engine_registry::engines().len();
    assert_eq!(total.accepted, engines);
    assert_eq!(total.accepted + total.refused, engines * engines);
}

#[test]
fn the_earlier_release_upgraded_to_every_store() {
    let ic = new_ic();
    let mut total = Pairs::default();
    for (canister, engine) in EARLIER {
        let pairs = upgrade_to_every_store(&ic, engine, || earlier_wasm(canister));
        total.accepted += pairs.accepted;
        total.refused += pairs.refused;
    }
    eprintln!("upgrade matrix, the earlier release to every store: {total:?}, every row kept");
    assert_eq!(
        total.accepted + total.refused,
        EARLIER.len() * engine_registry::engines().len()
    );
}

#[test]
fn an_earlier_canister_once_upgraded_records_its_engine_and_refuses_the_others_after() {
    let ic = new_ic();
    let id = filled(&ic, earlier_wasm("sqlite"), 25);
    upgrade(&ic, id, canister_wasm("sqlite")).expect("the same engine");
    // From now on the engine is recorded: another engine is refused, naming it.
    let reject = upgrade(&ic, id, canister_wasm("stable-sqlite")).expect_err("refused");
    assert!(reject.message.contains("Sqlite engine"), "{reject}");
    assert_eq!(count(&ic, id), 25);
    let store = Deployed::install(&ic, "btree", encode((None::<()>,))).expect("installs");
    assert_eq!(store.count_users(), 0);
}

/// The page tree of the release before (commit 4472cda, layout 1: a one-level index read
/// whole at every open; `tests/fixtures/earlier/page-tree.wasm.gz`) upgraded to this one
/// (layout 2, converted at that upgrade): every row kept and readable, writes go on, and the
/// canister upgrades again.
#[test]
fn the_page_tree_of_layout_one_upgrades_and_keeps_every_row() {
    let ic = new_ic();
    // 8,000 rows of long names: about 14 leaves, in a random order.
    let rows: Vec<User> = (0..8_000u64)
        .map(|i| i * 7_919 % 8_000)
        .map(|id| User::new(id * 2, format!("{id:0>120}")))
        .collect();
    let id = ic.create_canister(vec![controller(), owner()]);
    ic.install_canister(
        id,
        earlier_wasm("page-tree"),
        encode((None::<()>,)),
        owner(),
    )
    .expect("installs");
    for batch in rows.chunks(4_000) {
        let (inserted,): (Result<u64, StoreError>,) = candid::decode_args(
            &ic.update_call(id, owner(), "insert_users", encode((batch.to_vec(),)))
                .expect("insert_users replies"),
        )
        .expect("decodes");
        assert_eq!(inserted, Ok(4_000));
    }
    upgrade(&ic, id, canister_wasm("page-tree")).expect("upgrades");
    assert_eq!(count(&ic, id), 8_000);
    let mut expected = rows.clone();
    expected.sort_by_key(|user| user.id);
    let reply = ic
        .query_call(
            id,
            Principal::anonymous(),
            "list_users",
            encode((None::<u64>, 10_000u32)),
        )
        .expect("list_users replies");
    let (table,): (Result<Vec<User>, StoreError>,) = candid::decode_args(&reply).expect("decodes");
    let table = table.expect("a page");
    assert_eq!(table, expected, "every row, in id order");
    let (more,): (Result<u64, StoreError>,) = candid::decode_args(
        &ic.update_call(
            id,
            owner(),
            "insert_users",
            encode((users([1, 3, 20_001]),)),
        )
        .expect("replies"),
    )
    .expect("decodes");
    assert_eq!(more, Ok(3));
    upgrade(&ic, id, canister_wasm("page-tree")).expect("upgrades again");
    assert_eq!(count(&ic, id), 8_003);
}

/// A rollback after an upgrade undoes its own write and nothing else. SQLite's rollback
/// journal outlives a transaction (exclusive locking keeps the file, its header zeroed), and
/// what tells its stale records from the current ones is a checksum nonce SQLite draws at
/// random: if every Wasm instance drew the same numbers, the first transaction after an
/// upgrade would reuse the nonce of the first one after the previous upgrade, and a rollback
/// would replay that one's stale pages too.
#[test]
fn a_rollback_after_an_upgrade_undoes_its_own_write_and_nothing_else() {
    for (name, store) in userstore_e2e::every_store() {
        // 2,000 rows at even ids, then, in the first write after an upgrade, 200 at odd ids
        // spread over them: the journal records most pages of the table.
        for start in (0..4_000).step_by(1_000) {
            let batch = users((start..start + 1_000).step_by(2));
            assert_eq!(store.insert_users(batch), Ok(500), "{name}");
        }
        store.upgrade("(null)").expect("upgrades");
        assert_eq!(
            store.insert_users(users((1..4_000).step_by(20))),
            Ok(200),
            "{name}"
        );
        let before = whole_table(&store);
        // The first write after the next upgrade journals fewer pages and is rolled back.
        store.upgrade("(null)").expect("upgrades");
        let mut clashing = users((3..400).step_by(10));
        clashing.push(User::new(0, "clash"));
        assert_eq!(
            store.insert_users(clashing),
            Err(StoreError::DuplicateId { id: 0 }),
            "{name}"
        );
        assert_eq!(store.count_users(), 2_200, "{name}: the kept count");
        assert!(whole_table(&store) == before, "{name}: the table changed");
    }
}

/// Every row of `store`.
fn whole_table(store: &Deployed) -> Vec<User> {
    let (page,): (Result<Vec<User>, StoreError>,) = store
        .query("list_users", (None::<u64>, 10_000u32))
        .expect("list_users");
    page.expect("a page")
}

/// The rows an earlier release took without a word: three users named "x", two "z".
fn users_with_shared_names() -> Vec<User> {
    [(1, "x"), (2, "y"), (3, "x"), (4, "z"), (5, "z"), (6, "x")]
        .into_iter()
        .map(|(id, name)| User::new(id, name))
        .collect()
}

/// A canister of the release before unique usernames, holding users that share names,
/// upgraded to this release's canister of its engine: every row is kept and served, the
/// index is built at the upgrade, `stats` names the shared names, and only new clashes are
/// refused.
#[test]
fn an_earlier_canister_with_shared_names_keeps_every_row_and_refuses_only_new_clashes() {
    let ic = new_ic();
    let earlier = [
        ("btree", "btree"),
        ("sqlite", "sqlite"),
        ("stable-sqlite", "stable-sqlite"),
        ("page-tree", "page-tree"),
    ];
    for (fixture, canister) in earlier {
        let id = ic.create_canister(vec![controller(), owner()]);
        ic.install_canister(id, earlier_wasm(fixture), encode((None::<()>,)), owner())
            .expect("installs");
        let update = |method: &str, args: Vec<u8>| {
            ic.update_call(id, owner(), method, args)
                .unwrap_or_else(|reject| panic!("{canister} {method}: {reject}"))
        };
        let (inserted,): (Result<u64, StoreError>,) = candid::decode_args(&update(
            "insert_users",
            encode((users_with_shared_names(),)),
        ))
        .expect("decodes");
        assert_eq!(inserted, Ok(6), "{canister}: the earlier release took them");

        upgrade(&ic, id, canister_wasm(canister)).expect("upgrades");
        assert_eq!(count(&ic, id), 6, "{canister}: every row kept");
        let query = |method: &str, args: Vec<u8>| {
            ic.query_call(id, Principal::anonymous(), method, args)
                .unwrap_or_else(|reject| panic!("{canister} {method}: {reject}"))
        };
        let (stats,): (Result<userstore::service::Stats, StoreError>,) =
            candid::decode_args(&query("stats", encode(()))).expect("decodes");
        assert_eq!(
            stats.expect("stats").shared_usernames,
            ["x", "z"],
            "{canister}: the shared names"
        );
        let by_name = |name: &str| -> Result<User, StoreError> {
            let (found,): (Result<User, StoreError>,) =
                candid::decode_args(&query("get_user_by_name", encode((name,)))).expect("decodes");
            found
        };
        assert_eq!(by_name("x"), Ok(User::new(1, "x")), "{canister}");
        assert_eq!(by_name("y"), Ok(User::new(2, "y")), "{canister}");
        let insert = |user: User| -> Result<(), StoreError> {
            let (done,): (Result<(), StoreError>,) =
                candid::decode_args(&update("insert_user", encode((user,)))).expect("decodes");
            done
        };
        assert_eq!(
            insert(User::new(7, "z")),
            Err(StoreError::UsernameTaken {
                username: "z".into()
            }),
            "{canister}: a new clash is refused"
        );
        assert_eq!(insert(User::new(7, "w")), Ok(()), "{canister}");
        let (renamed,): (Result<User, StoreError>,) =
            candid::decode_args(&update("update_username", encode((3u64, "x")))).expect("decodes");
        assert_eq!(renamed, Ok(User::new(3, "x")), "{canister}: its own name");
        assert_eq!(count(&ic, id), 7, "{canister}");
        // And the index is kept across the next upgrade.
        upgrade(&ic, id, canister_wasm(canister)).expect("upgrades again");
        assert_eq!(by_name("w"), Ok(User::new(7, "w")), "{canister}");
    }
}
