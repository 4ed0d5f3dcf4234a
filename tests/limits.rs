//! Limits of one message: a batch that might exceed the instruction budget is refused up front
//! with the number of rows that fit, and a batch that traps part way (the IC's instruction
//! limit, injected by lowering it on icrun) leaves no row of it behind.

use userstore::budget::MIN_INSTRUCTION_BUDGET;
use userstore::{Limit, StoreError, User};
use userstore_e2e::{every_store, new_ic, owner, plain_args, CommonConfig, Deployed, PlainArgs};

fn users(ids: impl IntoIterator<Item = u64>) -> Vec<User> {
    ids.into_iter()
        .map(|id| User::new(id, format!("user-{id:07}")))
        .collect()
}

/// The rows the error gave are a batch that is accepted and stays within the budget: only
/// icrun reports what a message used, so on PocketIC this test is ignored, with its reason.
#[test]
#[cfg_attr(
    pocket_ic,
    ignore = "needs the instructions a message used, which only icrun reports"
)]
fn a_batch_over_the_instruction_budget_is_refused_with_the_rows_that_fit() {
    for metering in icrun::Metering::ALL {
        let ic = userstore_e2e::new_ic_metered(metering);
        for engine in engine_registry::engines() {
            let canister = &format!("{} ({metering})", engine.name);
            check_budget(&ic, engine, canister);
        }
    }
}

/// Fills `engine`'s canister up to what the budget lets one batch do, then deletes as much.
fn check_budget(
    ic: &std::rc::Rc<dyn userstore_e2e::Ic>,
    engine: &engine_registry::Engine,
    canister: &str,
) {
    let budget = MIN_INSTRUCTION_BUDGET;
    {
        let args = plain_args(PlainArgs {
            instruction_budget: Some(budget),
            ..PlainArgs::default()
        });
        let store = Deployed::install(ic, &engine.canister, args).expect("installs");
        let config: CommonConfig = store.query_one("config", ());
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
        let used = ic
            .last_update_instructions()
            .expect("icrun reports instructions");
        assert!(
            used <= budget,
            "{canister}: {fit_rows} rows took {used} instructions, over the budget {budget}"
        );

        // Deleting every row may or may not fit (a B-tree delete may merge nodes and costs
        // more per row than an insert); the refusal says how many do, and they fit.
        let (attempt,): (Result<u64, StoreError>,) = store
            .update(owner(), "delete_users", ((0..fit).collect::<Vec<u64>>(),))
            .expect("delete_users replies");
        let (deleted, deletable) = match attempt {
            Ok(deleted) => (Ok(deleted), fit),
            Err(StoreError::LimitExceeded {
                limit: Limit::InstructionBudget,
                max,
                ..
            }) if max < fit => {
                let (deleted,): (Result<u64, StoreError>,) = store
                    .update(owner(), "delete_users", ((0..max).collect::<Vec<u64>>(),))
                    .expect("delete_users replies");
                (deleted, max)
            }
            other => panic!("{canister}: deleting {fit} rows gave {other:?}"),
        };
        assert_eq!(deleted, Ok(deletable), "{canister}");
        assert_eq!(store.count_users(), fit - deletable, "{canister}");
        let used = ic
            .last_update_instructions()
            .expect("icrun reports instructions");
        assert!(
            used <= budget,
            "{canister}: {deletable} deletes took {used}, over the budget {budget}"
        );
    }
}

#[test]
fn a_budget_outside_the_allowed_range_is_refused_at_install() {
    let ic = new_ic();
    for engine in engine_registry::engines() {
        let args = plain_args(PlainArgs {
            instruction_budget: Some(MIN_INSTRUCTION_BUDGET - 1),
            ..PlainArgs::default()
        });
        let refused = Deployed::install(&ic, &engine.canister, args)
            .err()
            .expect("install refused");
        assert!(refused.message.contains("instruction_budget"), "{refused}");
    }
}

/// A message that exceeds its instruction limit traps: only icrun lets a test lower the
/// limit, so on PocketIC this test is ignored, with its reason.
#[test]
#[cfg_attr(
    pocket_ic,
    ignore = "needs a lowered instruction limit, which only icrun can set"
)]
fn a_batch_that_traps_part_way_leaves_no_row_behind() {
    let stores = every_store();
    let ic = &stores[0].1.ic;
    for (name, store) in &stores {
        assert_eq!(store.insert_users(users(0..100)), Ok(100), "{name}");
        let batch = userstore_e2e::encode((users(1_000..6_000),));
        // What decoding the batch costs: the same batch with its first id again at the end is
        // refused by the checks that follow the decoding, before anything is written.
        let mut clashing = users(1_000..6_000);
        clashing.push(User::new(1_000, "again"));
        let (refused,): (Result<u64, StoreError>,) = store
            .update(owner(), "insert_users", (clashing,))
            .expect("insert_users replies");
        assert!(refused.is_err(), "{name}: a clash is an error value");
        let decoding = ic
            .last_update_instructions()
            .expect("icrun reports instructions");
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
        // The limit fell inside the writes: 5,000,000 instructions of them ran before the
        // trap, and at least a million more were still to come.
        let whole = ic.last_update_instructions().unwrap_or_default();
        assert!(
            whole > limit + 1_000_000,
            "{name}: the trap came part way through the writes ({limit} of {whole})"
        );
        assert_eq!(store.count_users(), 5_100, "{name}");
    }
}
