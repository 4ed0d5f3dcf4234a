//! Limits of one message: a batch that might exceed the instruction budget is refused up front
//! with the number of rows that fit, and a batch that traps part way (the IC's instruction
//! limit, injected by lowering it on icrun) leaves no row of it behind.

use std::rc::Rc;
use userstore::budget::MIN_INSTRUCTION_BUDGET;
use userstore::service::CanisterConfig;
use userstore::{InitArgs, JournalMode, Limit, SqliteConfig, StoreError, User};
use userstore_e2e::{new_ic, owner, stranger, Ic, StoreCanister};

fn users(ids: impl IntoIterator<Item = u64>) -> Vec<User> {
    ids.into_iter()
        .map(|id| User::new(id, format!("user-{id:07}")))
        .collect()
}

fn install(ic: &Rc<dyn Ic>, canister: &str, args: InitArgs) -> StoreCanister {
    StoreCanister::install_store(ic, canister, Some(args))
}

fn sqlite_args(journal_mode: JournalMode) -> InitArgs {
    userstore_e2e::sqlite_args(SqliteConfig::with_journal_mode(journal_mode))
}

#[test]
fn a_batch_over_the_instruction_budget_is_refused_with_the_rows_that_fit() {
    let ic = new_ic();
    let budget = MIN_INSTRUCTION_BUDGET;
    let stores = [
        ("btree", InitArgs::default()),
        ("sqlite", sqlite_args(JournalMode::Persist)),
        ("stable-sqlite", InitArgs::default()),
    ];
    for (canister, args) in stores {
        let args = InitArgs {
            instruction_budget: Some(budget),
            ..args
        };
        let store = install(&ic, canister, args);
        let config: CanisterConfig = store.query_one("config", ());
        assert_eq!(config.limits.instruction_budget, budget, "{canister}");

        let refused = store.insert_users(users(0..10_000));
        let fit = match refused {
            Err(StoreError::LimitExceeded {
                limit: Limit::InstructionBudget,
                max,
                actual: 10_000,
            }) => max,
            other => panic!("{canister}: a 10,000-row batch over the budget gave {other:?}"),
        };
        assert_eq!(
            store.count_users(),
            0,
            "{canister}: the refused batch wrote nothing"
        );
        assert!(fit > 0, "{canister}: some rows fit");

        // The number the error gave is a batch that is accepted and stays within the budget.
        let fit_rows = usize::try_from(fit).unwrap();
        assert_eq!(store.insert_users(users(0..fit)), Ok(fit), "{canister}");
        assert_eq!(store.count_users(), fit, "{canister}");
        if let Some(used) = ic.last_update_instructions() {
            eprintln!("{canister}: budget {budget}, {fit_rows} rows fit, they took {used}");
            assert!(
                used <= budget,
                "{canister}: {fit_rows} rows took {used} instructions, over the budget {budget}"
            );
        }

        // Deletes cost more per row than inserts (a B-tree node may merge): fewer of them fit.
        let (refused,): (Result<u64, StoreError>,) = store
            .update(owner(), "delete_users", ((0..fit).collect::<Vec<u64>>(),))
            .expect("delete_users replies");
        let deletable = match refused {
            Err(StoreError::LimitExceeded {
                limit: Limit::InstructionBudget,
                max,
                ..
            }) if max < fit => max,
            other => panic!("{canister}: deleting {fit} rows gave {other:?}"),
        };
        let (deleted,): (Result<u64, StoreError>,) = store
            .update(
                owner(),
                "delete_users",
                ((0..deletable).collect::<Vec<u64>>(),),
            )
            .expect("delete_users replies");
        assert_eq!(deleted, Ok(deletable), "{canister}");
        assert_eq!(store.count_users(), fit - deletable, "{canister}");
        if let Some(used) = ic.last_update_instructions() {
            eprintln!("{canister}: {deletable} deletes fit, they took {used}");
            assert!(
                used <= budget,
                "{canister}: {used} over the budget {budget}"
            );
        }
    }
}

#[test]
fn a_budget_outside_the_allowed_range_is_refused_at_install() {
    let ic = new_ic();
    let args = InitArgs {
        instruction_budget: Some(MIN_INSTRUCTION_BUDGET - 1),
        ..InitArgs::default()
    };
    let refused = StoreCanister::try_install_store(&ic, "btree", Some(args))
        .err()
        .expect("install refused");
    assert!(refused.message.contains("instruction_budget"), "{refused}");
}

#[test]
fn a_batch_that_traps_part_way_leaves_no_row_behind() {
    let ic = new_ic();
    let mut stores = vec![(
        "btree".to_string(),
        install(&ic, "btree", InitArgs::default()),
    )];
    for journal_mode in JournalMode::ALL {
        let store = install(&ic, "sqlite", sqlite_args(journal_mode));
        stores.push((format!("sqlite {journal_mode:?}"), store));
    }
    for journal_mode in [JournalMode::Memory, JournalMode::Off] {
        let config = SqliteConfig::for_stable_sqlite_with_journal_mode(journal_mode);
        let store = install(&ic, "stable-sqlite", userstore_e2e::sqlite_args(config));
        stores.push((format!("stable-sqlite {journal_mode:?}"), store));
    }
    for (name, store) in &stores {
        assert_eq!(store.insert_users(users(0..100)), Ok(100), "{name}");
        let batch = userstore_e2e::encode((users(1_000..6_000),));
        // What decoding the batch costs: a stranger's call is refused right after it.
        let refused = store.update_raw(stranger(), "insert_users", batch.clone());
        assert!(refused.is_ok(), "{name}: the stranger gets an error value");
        let Some(decoding) = ic.last_update_instructions() else {
            eprintln!(
                "skipped on {}: it reports no instruction counts",
                ic.backend()
            );
            return;
        };
        // The limit lets the message decode the batch and write a few hundred rows, then trap.
        let limit = decoding + 5_000_000;
        assert!(ic.set_update_instruction_limit(store.id, limit), "{name}");
        let trapped = store.update_raw(owner(), "insert_users", batch);
        let reject = trapped.expect_err("the batch exceeds the lowered limit");
        assert_eq!(reject.code, 5, "{name}: {reject}");
        assert!(reject.message.contains("instructions"), "{name}: {reject}");

        ic.set_update_instruction_limit(store.id, userstore::budget::UPDATE_INSTRUCTION_LIMIT);
        assert_eq!(
            store.count_users(),
            100,
            "{name}: no row of the trapped batch is left"
        );
        let (first,): (Result<User, StoreError>,) =
            store.query("get_user", (1_000u64,)).expect("get_user");
        assert_eq!(first, Err(StoreError::NotFound { id: 1_000 }), "{name}");
        // The store works on, and the same batch now goes in whole.
        assert_eq!(store.insert_users(users(1_000..6_000)), Ok(5_000), "{name}");
        let whole = ic.last_update_instructions().unwrap_or_default();
        assert!(
            whole > limit + 10_000_000,
            "{name}: the trap came part way through the writes ({limit} of {whole})"
        );
        assert_eq!(store.count_users(), 5_100, "{name}");
    }
}
