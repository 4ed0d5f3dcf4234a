//! Chaos runs against the model: every configuration of every store canister, and both
//! SQLite engines at 512 B and 64 KiB pages with caches of a few pages, get a seeded
//! sequence of calls to every method, hostile arguments included, with traps injected (a
//! message's instruction limit cut so that it traps part way, arguments that do not decode)
//! and upgrades (with and without a change of configuration), and after every message the
//! canister must agree with a model of the table: the reply of every call, the count and a
//! sample of rows, and the whole table every [`FULL_CHECK_EVERY`] messages.
//!
//! CI runs [`CI_OPERATIONS`] operations per configuration. The long run sets
//! `CHAOS_OPERATIONS` (10,000 in `docs/reliability.md`); a failing run prints what replays
//! it (`CHAOS_SEED`, and `CHAOS_ONLY` for the one configuration; `CHAOS_TRACE` prints every
//! step). icrun only (it cuts instruction limits), so ignored on PocketIC.

use engine_registry::Configuration;
use std::collections::BTreeMap;
use userstore::limits::{MAX_BATCH_SIZE, MAX_USERNAME_BYTES, MAX_USER_ID};
use userstore::{Limit, StoreError, User, UserStore};
use userstore_e2e::{encode, every_store, new_ic, owner, stranger, Deployed, StoreCanister};

/// Operations per configuration in CI.
const CI_OPERATIONS: usize = 400;
/// The seed of CI's run.
const CI_SEED: u64 = 0xC4A0_2026_1125;
/// Messages between two checks of the whole table.
const FULL_CHECK_EVERY: usize = 100;
/// Ids are drawn from a small range, so inserts clash and updates and deletes hit.
const ID_RANGE: u64 = 2_000;

/// SplitMix64.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, bound: u64) -> u64 {
        self.next() % bound
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    fn id(&mut self) -> u64 {
        match self.below(50) {
            0 => MAX_USER_ID + 1,
            1 => MAX_USER_ID,
            _ => self.below(ID_RANGE),
        }
    }

    fn username(&mut self) -> String {
        match self.below(40) {
            0 => String::new(),
            1 => "x".repeat(MAX_USERNAME_BYTES + 1),
            2 => "ü".repeat(MAX_USERNAME_BYTES / 2),
            _ => format!(
                "user-{:0>width$}",
                self.below(1_000_000),
                width = self.below(100) as usize
            ),
        }
    }

    fn users(&mut self, max: u64) -> Vec<User> {
        let count = self.below(max);
        (0..count)
            .map(|_| User::new(self.id(), self.username()))
            .collect()
    }
}

/// The table as it must be: userstore's own model (names unique, a batch its rows one by
/// one on a copy, kept if every row succeeds).
type Model = userstore::model::ModelStore;

/// Every row of `model`, page by page.
fn model_table(model: &Model) -> BTreeMap<u64, String> {
    let mut all = BTreeMap::new();
    let mut after = None;
    loop {
        let page = model.page(after, 10_000).expect("the model pages");
        let Some(last) = page.last() else {
            return all;
        };
        after = Some(last.id);
        all.extend(page.into_iter().map(|u| (u.id, u.username)));
    }
}

/// What a run did.
#[derive(Default, Debug)]
struct Tally {
    operations: usize,
    traps: usize,
    upgrades: usize,
    refused: usize,
}

fn decode<T: candid::CandidType + for<'de> serde::Deserialize<'de>>(reply: &[u8]) -> T {
    candid::decode_one(reply).expect("a reply of the declared type")
}

/// A canister under chaos, and the configurations an upgrade may switch it to.
struct Subject {
    name: String,
    store: StoreCanister,
    upgrades: Vec<Configuration>,
}

/// Every configuration of the registry, upgraded to the others of its engine.
fn registry_subjects() -> Vec<Subject> {
    every_store()
        .into_iter()
        .map(|(name, store)| {
            let engine = engine_registry::engine(&store.canister).expect("a registered canister");
            Subject {
                name,
                store,
                upgrades: engine.configurations.clone(),
            }
        })
        .collect()
}

/// Beyond the registry's configurations: both SQLite engines at the smallest and the largest
/// page size (512 B, 64 KiB) with caches of a few pages, so that their caches evict all the
/// time, upgraded to other journal modes and cache sizes at the same page size.
fn small_cache_subjects() -> Vec<Subject> {
    let ic = new_ic();
    let journals: [(&str, &[&str]); 2] = [
        ("sqlite", &["Wal", "Delete", "Memory", "Off"]),
        ("stable-sqlite", &["Memory", "Off"]),
    ];
    let mut subjects = Vec::new();
    for (canister, journal_modes) in journals {
        let engine = engine_registry::engine(canister).expect("a registered canister");
        for page_size in [512u32, 65_536] {
            let upgrades: Vec<Configuration> = journal_modes
                .iter()
                .flat_map(|journal| {
                    [4u32, 64].map(|cache| Configuration {
                        key: format!("{canister}_{journal}_{page_size}B_{cache}_pages"),
                        config: Some(format!(
                            "record {{ journal_mode = variant {{ {journal} }}; synchronous = \
                             variant {{ Off }}; page_size = {page_size}; cache_size_pages = \
                             {cache}; locking_mode = variant {{ Exclusive }} }}"
                        )),
                        traced: false,
                    })
                })
                .collect();
            // Installed with the first journal mode at 512 B, the second at 64 KiB.
            let first = &upgrades[if page_size == 512 { 0 } else { 2 }];
            let arg = engine
                .init_arg(first)
                .expect("a configuration the .did types");
            let store = Deployed::install(&ic, canister, arg)
                .unwrap_or_else(|reject| panic!("install {}: {reject}", first.key));
            subjects.push(Subject {
                name: first.key.clone(),
                store,
                upgrades,
            });
        }
    }
    subjects
}

/// The whole table, page by page.
fn whole_table(store: &StoreCanister) -> BTreeMap<u64, String> {
    let mut all = BTreeMap::new();
    let mut after = None::<u64>;
    loop {
        let (page,): (Result<Vec<User>, StoreError>,) = store
            .query("list_users", (after, 10_000u32))
            .expect("list_users");
        let page = page.expect("a page");
        let Some(last) = page.last() else {
            return all;
        };
        after = Some(last.id);
        all.extend(page.into_iter().map(|u| (u.id, u.username)));
    }
}

/// One seeded run on `subject`; panics with the seed and step on any divergence.
/// `replay` is what replays the run (the environment of the test).
fn run(subject: &Subject, seed: u64, operations: usize, replay: &str) -> Tally {
    let (name, store) = (&subject.name, &subject.store);
    let mut rng = Rng(seed);
    let mut model = Model::default();
    let mut tally = Tally::default();
    let engine = engine_registry::engine(&store.canister).expect("a registered canister");
    let trace = std::env::var_os("CHAOS_TRACE").is_some();
    let fail = |step: usize, what: String| -> ! {
        panic!("{name}: step {step} of seed {seed:#x} (replay with {replay}): {what}")
    };
    for step in 0..operations {
        tally.operations += 1;
        let choice = rng.below(100);
        if trace {
            eprintln!(
                "{name} step {step}: choice {choice}, {} rows",
                model.count().expect("the model counts")
            );
        }
        match choice {
            0..=19 => {
                let user = User::new(rng.id(), rng.username());
                let reply = store.update_raw(owner(), "insert_user", encode((&user,)));
                let got: Result<(), StoreError> =
                    decode(&reply.unwrap_or_else(|r| fail(step, r.to_string())));
                let want = model.insert(user.clone());
                if got != want {
                    fail(
                        step,
                        format!("insert_user {user:?}: {got:?}, model {want:?}"),
                    );
                }
            }
            20..=31 => {
                let users = rng.users(40);
                let reply = store.update_raw(owner(), "insert_users", encode((&users,)));
                let got: Result<u64, StoreError> =
                    decode(&reply.unwrap_or_else(|r| fail(step, r.to_string())));
                let want = model.insert_batch(&users);
                if got != want {
                    fail(step, format!("insert_users: {got:?}, model {want:?}"));
                }
            }
            32..=41 => {
                let (id, name) = (rng.id(), rng.username());
                let reply = store.update_raw(owner(), "update_username", encode((id, &name)));
                let got: Result<User, StoreError> =
                    decode(&reply.unwrap_or_else(|r| fail(step, r.to_string())));
                let want = model.update_username(id, &name);
                if got != want {
                    fail(
                        step,
                        format!("update_username {id}: {got:?}, model {want:?}"),
                    );
                }
            }
            42..=47 => {
                let users = rng.users(30);
                let reply = store.update_raw(owner(), "update_users", encode((&users,)));
                let got: Result<u64, StoreError> =
                    decode(&reply.unwrap_or_else(|r| fail(step, r.to_string())));
                let want = model.update_batch(&users);
                if got != want {
                    fail(step, format!("update_users: {got:?}, model {want:?}"));
                }
            }
            48..=57 => {
                let id = rng.id();
                let reply = store.update_raw(owner(), "delete_user", encode((id,)));
                let got: Result<User, StoreError> =
                    decode(&reply.unwrap_or_else(|r| fail(step, r.to_string())));
                let want = model.delete(id);
                if got != want {
                    fail(step, format!("delete_user {id}: {got:?}, model {want:?}"));
                }
            }
            58..=63 => {
                let ids: Vec<u64> = (0..rng.below(30)).map(|_| rng.id()).collect();
                let reply = store.update_raw(owner(), "delete_users", encode((&ids,)));
                let got: Result<u64, StoreError> =
                    decode(&reply.unwrap_or_else(|r| fail(step, r.to_string())));
                let want = model.delete_batch(&ids);
                if got != want {
                    fail(step, format!("delete_users: {got:?}, model {want:?}"));
                }
            }
            64..=73 => {
                let id = rng.id();
                if store.get_user(id) != model.get(id) {
                    fail(step, format!("get_user {id}"));
                }
            }
            74..=77 => {
                let (after, limit) = (rng.chance(80).then(|| rng.id()), rng.below(60) as u32);
                let (got,): (Result<Vec<User>, StoreError>,) = store
                    .query("list_users", (after, limit))
                    .expect("list_users");
                let want = model.page(after, limit);
                if got != want {
                    fail(
                        step,
                        format!("list_users {after:?} {limit}: {got:?}, model {want:?}"),
                    );
                }
            }
            78..=83 => {
                // Hostile: arguments that do not decode, a batch over the limit, a stranger's
                // write. Each is refused and changes nothing.
                let reply = match rng.below(3) {
                    0 => store.update_raw(
                        owner(),
                        "insert_users",
                        b"DIDL\x00\x01\x71\x05junk".to_vec(),
                    ),
                    1 => {
                        let ids: Vec<u64> = (0..MAX_BATCH_SIZE as u64 + 1).collect();
                        let reply = store.update_raw(owner(), "delete_users", encode((&ids,)));
                        let got: Result<u64, StoreError> =
                            decode(&reply.unwrap_or_else(|r| fail(step, r.to_string())));
                        if !matches!(
                            got,
                            Err(StoreError::LimitExceeded {
                                limit: Limit::BatchSize,
                                ..
                            })
                        ) {
                            fail(step, format!("a batch over the limit: {got:?}"));
                        }
                        Err(userstore_e2e::Rejected {
                            code: 0,
                            message: String::new(),
                        })
                    }
                    _ => store.update_raw(stranger(), "delete_user", encode((rng.id(),))),
                };
                if reply.is_ok() {
                    fail(step, "a hostile call was accepted".into());
                }
                tally.refused += 1;
            }
            84..=93 => {
                // A batch trapped part way by a cut instruction limit: nothing of it stays.
                let users: Vec<User> = (0..200)
                    .map(|i| {
                        let id = ID_RANGE + rng.below(1_000_000) * 1_000 + i;
                        User::new(id, format!("trapped-{id}"))
                    })
                    .collect();
                let limit = 2_000_000 + rng.below(20_000_000);
                assert!(store.ic.set_update_instruction_limit(store.id, limit));
                let reply = store.update_raw(owner(), "insert_users", encode((&users,)));
                store.ic.set_update_instruction_limit(
                    store.id,
                    userstore::budget::UPDATE_INSTRUCTION_LIMIT,
                );
                match reply {
                    Err(_) => tally.traps += 1,
                    Ok(reply) => {
                        let got: Result<u64, StoreError> = decode(&reply);
                        let want = model.insert_batch(&users);
                        if got != want {
                            fail(step, format!("an untrapped batch: {got:?}, model {want:?}"));
                        }
                    }
                }
            }
            _ => {
                // An upgrade: the same configuration, or another one of the same engine.
                let upgrades = &subject.upgrades;
                let configuration = &upgrades[rng.below(upgrades.len() as u64) as usize];
                let arg = if rng.chance(50) {
                    "(null)".to_string()
                } else {
                    engine.init_text(configuration)
                };
                store
                    .upgrade(&arg)
                    .unwrap_or_else(|reject| fail(step, format!("upgrade with {arg}: {reject}")));
                tally.upgrades += 1;
            }
        }
        // After every message: the count and a sample of rows.
        if store.count_users() != model.count().expect("the model counts") {
            fail(
                step,
                format!(
                    "count {} but the model has {}",
                    store.count_users(),
                    model.count().expect("the model counts")
                ),
            );
        }
        let sample = rng.below(ID_RANGE);
        if store.get_user(sample) != model.get(sample) {
            fail(step, format!("get_user {sample} after the message"));
        }
        if step % FULL_CHECK_EVERY == FULL_CHECK_EVERY - 1
            && whole_table(store) != model_table(&model)
        {
            fail(step, "the whole table differs from the model".into());
        }
    }
    tally
}

#[test]
#[cfg_attr(pocket_ic, ignore = "cuts instruction limits, which only icrun can do")]
fn every_configuration_agrees_with_the_model_through_traps_and_upgrades() {
    let operations = std::env::var("CHAOS_OPERATIONS")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(CI_OPERATIONS);
    let seed = std::env::var("CHAOS_SEED")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(CI_SEED);
    let mut total = Tally::default();
    let subjects = registry_subjects()
        .into_iter()
        .chain(small_cache_subjects());
    let only = std::env::var("CHAOS_ONLY").ok();
    for (index, subject) in subjects.enumerate() {
        if only.as_ref().is_some_and(|only| *only != subject.name) {
            continue;
        }
        let replay = format!(
            "CHAOS_SEED={seed} CHAOS_ONLY={} CHAOS_OPERATIONS={operations}",
            subject.name
        );
        let tally = run(
            &subject,
            seed.wrapping_add(index as u64),
            operations,
            &replay,
        );
        eprintln!("chaos {}: {tally:?}", subject.name);
        total.operations += tally.operations;
        total.traps += tally.traps;
        total.upgrades += tally.upgrades;
        total.refused += tally.refused;
    }
    eprintln!("chaos, every configuration, seed {seed}: {total:?}, 0 divergences");
    assert!(
        total.traps > 0 && total.upgrades > 0 && total.refused > 0,
        "{total:?}"
    );
}
