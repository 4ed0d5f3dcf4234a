//! The page tree against the model with tables large enough to split, merge and rebalance
//! its 64 KiB leaves (the shared property test's small id range never fills one), reopened
//! with and without the close an upgrade's `pre_upgrade` makes.

use super::harness::{Harness, PageTreeHarness};
use crate::model::ModelStore;
use crate::{StoreError, User, UserStore};
use proptest::prelude::*;

/// Ids over a range that holds about 20 leaves of users.
const IDS: u64 = 12_000;

#[derive(Clone, Debug)]
enum Op {
    InsertBatch(Vec<User>),
    UpdateBatch(Vec<User>),
    DeleteBatch(Vec<u64>),
    Delete(u64),
    Update(u64, String),
    Reopen,
}

fn username() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => Just("u".repeat(100)),
        1 => "[a-z]{1,20}",
        1 => Just("L".repeat(128)),
    ]
}

fn users(max: usize) -> impl Strategy<Value = Vec<User>> {
    prop::collection::btree_map(0..IDS, username(), 0..max).prop_map(|users| {
        users
            .into_iter()
            .map(|(id, username)| User { id, username })
            .collect()
    })
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => users(3_000).prop_map(Op::InsertBatch),
        2 => users(1_000).prop_map(Op::UpdateBatch),
        3 => prop::collection::btree_set(0..IDS, 0..3_000)
            .prop_map(|ids| Op::DeleteBatch(ids.into_iter().collect())),
        2 => (0..IDS).prop_map(Op::Delete),
        2 => (0..IDS, username()).prop_map(|(id, name)| Op::Update(id, name)),
        1 => Just(Op::Reopen),
    ]
}

/// `op` on `store`: its result, as a comparable value.
fn apply(store: &mut dyn UserStore, op: &Op) -> Result<String, StoreError> {
    Ok(match op {
        Op::InsertBatch(users) => store.insert_batch(users)?.to_string(),
        Op::UpdateBatch(users) => store.update_batch(users)?.to_string(),
        Op::DeleteBatch(ids) => store.delete_batch(ids)?.to_string(),
        Op::Delete(id) => format!("{:?}", store.delete(*id)?),
        Op::Update(id, name) => format!("{:?}", store.update_username(*id, name)?),
        Op::Reopen => store.count()?.to_string(),
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn the_page_tree_behaves_like_the_model_through_splits_and_merges(
        ops in prop::collection::vec(op(), 1..24)
    ) {
        let mut harness = PageTreeHarness::new();
        let mut model = ModelStore::default();
        for (step, op) in ops.iter().enumerate() {
            if matches!(op, Op::Reopen) {
                harness.reopen();
            }
            let expected = apply(&mut model, op);
            let actual = apply(harness.store(), op);
            prop_assert_eq!(&actual, &expected, "step {} ({:?})", step, op);
            prop_assert_eq!(harness.store().count(), model.count());
        }
        let everything = harness.store().page(None, 10_000)?;
        prop_assert_eq!(everything, model.page(None, 10_000)?);
    }
}
