//! Faults the IC can produce: stable memory that cannot grow (past a canister's memory
//! allocation) and a heap that cannot grow. Every write that meets a limit traps or returns a
//! clean error value, and the table is exactly as it was; with the canister's stable memory
//! limit configured (`stable_memory_limit_pages`), inserts are refused with `StorageFull`
//! while updates and deletes keep working in the headroom kept for them. icrun only: PocketIC
//! cannot lower a canister's limits here, so these are ignored there, with their reason.

use std::collections::BTreeMap;
use userstore::limits::HEADROOM_PAGES;
use userstore::service::Stats;
use userstore::{StoreError, User};
use userstore_e2e::{every_store, owner, plain_args, PlainArgs, StoreCanister};

fn user(id: u64) -> User {
    User::new(id, format!("user-{id:0>95}"))
}

/// The store's whole table, by paging.
fn table(store: &StoreCanister) -> BTreeMap<u64, String> {
    let mut rows = BTreeMap::new();
    let mut after = None;
    loop {
        let (page,): (Result<Vec<User>, StoreError>,) = store
            .query("list_users", (after, 10_000u32))
            .unwrap_or_else(|reject| panic!("{}: list_users: {reject}", store.canister));
        let page = page.expect("a page");
        let Some(last) = page.last() else {
            return rows;
        };
        after = Some(last.id);
        rows.extend(page.into_iter().map(|user| (user.id, user.username)));
    }
}

fn stats(store: &StoreCanister) -> Stats {
    let (stats,): (Result<Stats, StoreError>,) = store.query("stats", ()).expect("stats");
    stats.expect("stats")
}

/// The outcome of a write: its reply decoded, or the reject of a trap.
fn write<R: candid::CandidType + for<'de> serde::Deserialize<'de>>(
    store: &StoreCanister,
    method: &str,
    arg: Vec<u8>,
) -> Result<Result<R, StoreError>, String> {
    store
        .update_raw(owner(), method, arg)
        .map(|reply| candid::decode_one(&reply).expect("a Result reply"))
        .map_err(|reject| reject.message)
}

/// A batch of `count` users from `start`, ids stepping by 10.
fn batch(start: u64, count: u64) -> Vec<User> {
    (start..start + count).map(|i| user(i * 10)).collect()
}

#[test]
#[cfg_attr(
    pocket_ic,
    ignore = "needs a lowered stable memory limit, which only icrun can set"
)]
fn inserts_are_refused_near_the_configured_limit_and_deletes_still_work() {
    let mut configurations = 0;
    for (name, store) in every_store() {
        configurations += 1;
        let mut model = BTreeMap::new();
        for start in (0..2_000).step_by(500) {
            let rows = batch(start, 500);
            assert_eq!(store.insert_users(rows.clone()), Ok(500), "{name}");
            model.extend(rows.into_iter().map(|user| (user.id, user.username)));
        }
        // The canister's limit, configured as the IC's: a little room past the headroom.
        let limit = stats(&store).stable_memory_pages + HEADROOM_PAGES + 16;
        let configured = plain_args(PlainArgs {
            stable_memory_limit_pages: Some(limit),
            ..PlainArgs::default()
        });
        store
            .upgrade_with(configured)
            .expect("the limit is configured");
        assert!(
            store.ic.set_stable_memory_limit(store.id, Some(limit)),
            "{name}"
        );

        let mut refused = false;
        for start in (2_000..400_000).step_by(1_000) {
            let rows = batch(start, 1_000);
            let arg = userstore_e2e::encode((rows.clone(),));
            match write::<u64>(&store, "insert_users", arg) {
                Ok(Ok(1_000)) => {
                    model.extend(rows.into_iter().map(|user| (user.id, user.username)))
                }
                Ok(Err(StoreError::StorageFull { limit_pages, .. })) => {
                    assert_eq!(limit_pages, limit, "{name}");
                    refused = true;
                    break;
                }
                other => panic!("{name}: an insert near the limit gave {other:?}"),
            }
        }
        assert!(refused, "{name}: inserts were refused before the limit");
        assert_eq!(
            table(&store),
            model,
            "{name}: a refused insert changes nothing"
        );

        // Deletes and updates work in the headroom.
        let ids: Vec<u64> = model.keys().copied().step_by(7).take(300).collect();
        for id in &ids[..100] {
            let deleted = write::<User>(&store, "delete_user", userstore_e2e::encode((*id,)));
            assert!(
                matches!(deleted, Ok(Ok(_))),
                "{name}: delete {id}: {deleted:?}"
            );
            model.remove(id);
        }
        let renames: Vec<User> = ids[100..200]
            .iter()
            .map(|id| User::new(*id, format!("renamed-{id:0>92}")))
            .collect();
        let renamed = write::<u64>(
            &store,
            "update_users",
            userstore_e2e::encode((renames.clone(),)),
        );
        assert_eq!(renamed, Ok(Ok(100)), "{name}");
        model.extend(renames.into_iter().map(|user| (user.id, user.username)));
        let deleted = write::<u64>(
            &store,
            "delete_users",
            userstore_e2e::encode((ids[200..].to_vec(),)),
        );
        assert_eq!(deleted, Ok(Ok(100)), "{name}");
        for id in &ids[200..] {
            model.remove(id);
        }
        assert_eq!(table(&store), model, "{name}");
        store.ic.set_stable_memory_limit(store.id, None);
    }
    eprintln!(
        "configured limit, {configurations} configurations: each refused an insert with \
         StorageFull and changed nothing, then took 100 deletes, 100 updates and a batch of 100 \
         deletes in its headroom"
    );
}

#[test]
#[cfg_attr(
    pocket_ic,
    ignore = "needs lowered memory limits, which only icrun can set"
)]
fn a_write_that_meets_a_memory_limit_traps_or_fails_cleanly_and_changes_nothing() {
    let (mut trapped_writes, mut fitted_writes, mut configurations) = (0, 0, 0);
    for (name, store) in every_store() {
        configurations += 1;
        for start in (0..2_000).step_by(500) {
            assert_eq!(store.insert_users(batch(start, 500)), Ok(500), "{name}");
        }
        let before = table(&store);

        // Stable memory that cannot grow at all, and no configured limit: inserts run into the
        // IC's limit. Each one that cannot fit traps (or, if it fits in the pages already
        // there, succeeds); a trap leaves the table as it was.
        let pages = stats(&store).stable_memory_pages;
        assert!(
            store.ic.set_stable_memory_limit(store.id, Some(pages)),
            "{name}"
        );
        let mut expected = before.clone();
        let mut trapped = false;
        for start in (10_000..200_000).step_by(2_000) {
            let rows = batch(start, 2_000);
            match write::<u64>(
                &store,
                "insert_users",
                userstore_e2e::encode((rows.clone(),)),
            ) {
                Ok(Ok(2_000)) => {
                    fitted_writes += 1;
                    expected.extend(rows.into_iter().map(|u| (u.id, u.username)))
                }
                Err(_trap) => {
                    trapped = true;
                    trapped_writes += 1;
                    break;
                }
                other => panic!("{name}: an insert at the stable limit gave {other:?}"),
            }
        }
        assert!(trapped, "{name}: some insert met the stable memory limit");
        assert_eq!(
            table(&store),
            expected,
            "{name}: the trapped insert changed nothing"
        );
        store.ic.set_stable_memory_limit(store.id, None);

        // A heap that cannot grow: a large batch needs heap for its arguments at least.
        let heap = stats(&store).heap_pages;
        assert!(store.ic.set_heap_limit(store.id, Some(heap)), "{name}");
        let rows = batch(1_000_000, 5_000);
        match write::<u64>(
            &store,
            "insert_users",
            userstore_e2e::encode((rows.clone(),)),
        ) {
            Ok(Ok(5_000)) => {
                fitted_writes += 1;
                expected.extend(rows.into_iter().map(|u| (u.id, u.username)))
            }
            Err(_trap) => trapped_writes += 1,
            other => panic!("{name}: an insert at the heap limit gave {other:?}"),
        }
        // Reading the whole table needs heap for its pages of 10,000 users.
        store.ic.set_heap_limit(store.id, None);
        assert_eq!(table(&store), expected, "{name}: at the heap limit");
        assert_eq!(
            store.insert_users(batch(2_000_000, 10)),
            Ok(10),
            "{name}: writes go on"
        );
    }
    eprintln!(
        "memory limits, {configurations} configurations: {trapped_writes} writes trapped at a \
         limit, {fitted_writes} fitted, every table as the model says"
    );
}
