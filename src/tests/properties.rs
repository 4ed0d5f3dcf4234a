//! Random operation sequences against every engine and the model: identical results.

use super::harness::{all_harnesses, Harness};
use crate::limits::{MAX_PAGE_SIZE, MAX_USERNAME_BYTES, MAX_USER_ID};
use crate::model::ModelStore;
use crate::{StoreError, User, UserStore};
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Op {
    Insert(User),
    InsertBatch(Vec<User>),
    Get(u64),
    Page(Option<u64>, u32),
    Update(u64, String),
    Delete(u64),
    UpdateBatch(Vec<User>),
    DeleteBatch(Vec<u64>),
    Count,
    GetByName(String),
    SharedNames,
    Reopen,
}

/// Mostly a small id range (so clashes are common), sometimes the edges.
fn id() -> impl Strategy<Value = u64> {
    prop_oneof![
        10 => 0u64..24,
        1 => Just(MAX_USER_ID),
        1 => Just(MAX_USER_ID + 1),
        1 => Just(u64::MAX),
    ]
}

/// Often one of a few names (so that names are taken as often as ids are), sometimes any.
fn username() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => prop::sample::select(vec!["ann", "bob", "cy", "Ann", "ann "]).prop_map(String::from),
        4 => "[a-z]{1,12}",
        1 => "[äöü€😀]{1,4}",
        1 => Just(String::new()),
        1 => Just("x".repeat(MAX_USERNAME_BYTES)),
        1 => Just("y".repeat(MAX_USERNAME_BYTES + 1)),
    ]
}

fn user() -> impl Strategy<Value = User> {
    (id(), username()).prop_map(|(id, username)| User { id, username })
}

fn page_size() -> impl Strategy<Value = u32> {
    prop_oneof![8 => 0u32..8, 1 => Just(MAX_PAGE_SIZE), 1 => Just(MAX_PAGE_SIZE + 1)]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => user().prop_map(Op::Insert),
        4 => prop::collection::vec(user(), 0..8).prop_map(Op::InsertBatch),
        3 => id().prop_map(Op::Get),
        2 => (prop::option::of(id()), page_size()).prop_map(|(after, limit)| Op::Page(after, limit)),
        2 => (id(), username()).prop_map(|(id, name)| Op::Update(id, name)),
        2 => id().prop_map(Op::Delete),
        2 => prop::collection::vec(user(), 0..6).prop_map(Op::UpdateBatch),
        2 => prop::collection::vec(id(), 0..6).prop_map(Op::DeleteBatch),
        1 => Just(Op::Count),
        2 => username().prop_map(Op::GetByName),
        1 => Just(Op::SharedNames),
        1 => Just(Op::Reopen),
    ]
}

/// Every observable result, as one comparable value.
#[derive(Debug, PartialEq)]
enum Outcome {
    Unit(Result<(), StoreError>),
    Number(Result<u64, StoreError>),
    One(Result<User, StoreError>),
    Many(Result<Vec<User>, StoreError>),
    Names(Result<Vec<String>, StoreError>),
}

fn apply(store: &mut dyn UserStore, op: &Op) -> Outcome {
    match op {
        Op::Insert(user) => Outcome::Unit(store.insert(user.clone())),
        Op::InsertBatch(users) => Outcome::Number(store.insert_batch(users)),
        Op::Get(id) => Outcome::One(store.get(*id)),
        Op::Page(after, limit) => Outcome::Many(store.page(*after, *limit)),
        Op::Update(id, username) => Outcome::One(store.update_username(*id, username)),
        Op::Delete(id) => Outcome::One(store.delete(*id)),
        Op::UpdateBatch(users) => Outcome::Number(store.update_batch(users)),
        Op::DeleteBatch(ids) => Outcome::Number(store.delete_batch(ids)),
        Op::Count | Op::Reopen => Outcome::Number(store.count()),
        Op::GetByName(username) => Outcome::One(store.get_by_name(username)),
        Op::SharedNames => Outcome::Names(store.shared_usernames(10)),
    }
}

/// The whole table, read page by page through the public API.
fn contents(store: &dyn UserStore) -> Vec<User> {
    let mut all = Vec::new();
    let mut after = None;
    loop {
        let page = store.page(after, 5).expect("page");
        let full = page.len() == 5;
        after = page.last().map(|user| user.id);
        all.extend(page);
        if !full {
            return all;
        }
    }
}

fn check_against_model(harness: &mut dyn Harness, ops: &[Op]) -> Result<(), TestCaseError> {
    let mut model = ModelStore::default();
    for (step, op) in ops.iter().enumerate() {
        if matches!(op, Op::Reopen) {
            harness.reopen();
        }
        let expected = apply(&mut model, op);
        let actual = apply(harness.store(), op);
        prop_assert_eq!(
            &actual,
            &expected,
            "{} differs from the model at step {} ({:?})",
            harness.name(),
            step,
            op
        );
    }
    prop_assert_eq!(
        contents(harness.store()),
        contents(&model),
        "{}",
        harness.name()
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn every_engine_behaves_like_the_model(ops in prop::collection::vec(op(), 1..60)) {
        for mut harness in all_harnesses() {
            check_against_model(harness.as_mut(), &ops)?;
        }
    }
}
