//! The slow test: each store canister of the registry fills a 1,000,000-row table through its Candid API
//! (100 batches of 10,000 rows, each batch one update message within the IC's limits), is
//! upgraded, and still has every row and takes more writes. Under icrun it prints what the
//! upgrade cost at 10,000 rows and at 1,000,000, and checks it against the IC's limit.

use userstore::{StoreError, User};
use userstore_e2e::{new_ic, owner, StoreCanister};

const ROWS: u64 = 1_000_000;
const BATCH: u64 = 10_000;

/// The instruction limit of an install or upgrade message (`pre_upgrade` and `post_upgrade`
/// together; docs/metering.md §7). An upgrade over it would trap and the canister could never
/// be upgraded again.
const UPGRADE_LIMIT: u64 = 300_000_000_000;

/// Upgrades `store` to its own Wasm; the instructions the upgrade took, where the backend
/// reports them (icrun). Where it does not (PocketIC), the IC itself enforces the limit: an
/// upgrade over it traps, and the `expect` fails.
fn upgrade(store: &StoreCanister, rows: u64) {
    let canister = store.canister.as_str();
    store
        .upgrade("(null)")
        .unwrap_or_else(|reject| panic!("{canister}: upgrade at {rows} rows: {reject}"));
    if let Some(instructions) = store.ic.last_upgrade_instructions() {
        eprintln!("{canister}: upgrade at {rows} rows: {instructions} instructions");
        assert!(
            instructions < UPGRADE_LIMIT,
            "{canister}: the upgrade at {rows} rows took {instructions} instructions"
        );
    }
}

fn user(id: u64) -> User {
    User::new(id, format!("user-{id:07}"))
}

/// Every engine at once, each on its own IC in its own thread: the engines' fills are
/// independent, and one after the other they were the end-to-end suite's longest tail (one
/// core busy, the other idle). A failure in any thread fails the test with its message.
#[test]
fn a_million_row_table_survives_an_upgrade() {
    std::thread::scope(|scope| {
        for engine in engine_registry::engines() {
            let canister = engine.canister.as_str();
            std::thread::Builder::new()
                .name(format!("million-rows-{canister}"))
                .spawn_scoped(scope, move || fill_upgrade_and_check(canister))
                .expect("spawn a thread");
        }
    });
}

/// Fills `canister`'s table with a million rows, upgrades it, and checks every row survived
/// and writes go on.
fn fill_upgrade_and_check(canister: &str) {
    let ic = new_ic();
    let store = StoreCanister::install_store(&ic, canister, "(null)");
    for start in (0..ROWS).step_by(BATCH as usize) {
        // Even ids, so the table has room for middle inserts afterwards.
        let batch: Vec<User> = (start..start + BATCH).map(|i| user(2 * i)).collect();
        let (inserted,): (Result<u64, StoreError>,) = store
            .update(owner(), "insert_users", (batch,))
            .unwrap_or_else(|reject| panic!("{canister}: batch at {start}: {reject}"));
        assert_eq!(inserted, Ok(BATCH), "{canister}: batch at {start}");
        if start == 0 {
            upgrade(&store, BATCH);
        }
    }
    assert_eq!(store.count_users(), ROWS, "{canister}");

    upgrade(&store, ROWS);
    assert_eq!(store.count_users(), ROWS, "{canister} after the upgrade");
    for id in [0, 2 * 123_457, 2 * (ROWS - 1)] {
        assert_eq!(store.get_user(id), Ok(user(id)), "{canister}");
    }
    let (tail,): (Result<Vec<User>, StoreError>,) = store
        .query("list_users", (Some(2 * (ROWS - 3)), 10u32))
        .expect("list_users");
    assert_eq!(tail, Ok(vec![user(2 * (ROWS - 2)), user(2 * (ROWS - 1))]));

    // Writes go on: a middle insert and an append.
    let more = vec![user(2 * 500_000 + 1), user(2 * ROWS)];
    let (inserted,): (Result<u64, StoreError>,) = store
        .update(owner(), "insert_users", (more,))
        .expect("insert after the upgrade");
    assert_eq!(inserted, Ok(2), "{canister}");
    assert_eq!(store.count_users(), ROWS + 2, "{canister}");
}
