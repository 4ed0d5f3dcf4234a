//! The conformance tests every peer passes: the user-table semantics of the `UserStore`
//! trait as userstore's page tree answers them, checked call by call against [`Model`], an
//! ordered map, with the store closed and reopened from its file between calls.

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use std::collections::BTreeMap;
use std::path::Path;
use userstore::limits::{self, MAX_USERNAME_BYTES, MAX_USER_ID};
use userstore::{StoreError, User, UserStore};

/// The reference: the table as an ordered map, with the page tree's answers (validation
/// first, then the first offending id in batch order, then the writes).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Model {
    rows: BTreeMap<u64, String>,
}

impl UserStore for Model {
    fn insert(&mut self, user: User) -> Result<(), StoreError> {
        limits::check_user(&user)?;
        if self.rows.contains_key(&user.id) {
            return Err(StoreError::DuplicateId { id: user.id });
        }
        self.rows.insert(user.id, user.username);
        Ok(())
    }

    fn insert_batch(&mut self, users: &[User]) -> Result<u64, StoreError> {
        limits::check_batch(users)?;
        if let Some(user) = users.iter().find(|user| self.rows.contains_key(&user.id)) {
            return Err(StoreError::DuplicateId { id: user.id });
        }
        for user in users {
            self.rows.insert(user.id, user.username.clone());
        }
        Ok(users.len() as u64)
    }

    fn get(&self, id: u64) -> Result<User, StoreError> {
        self.rows
            .get(&id)
            .map(|username| User::new(id, username.as_str()))
            .ok_or(StoreError::NotFound { id })
    }

    fn page(&self, after: Option<u64>, limit: u32) -> Result<Vec<User>, StoreError> {
        let Some(start) = crate::page_start(after, limit)? else {
            return Ok(Vec::new());
        };
        Ok(self
            .rows
            .range(start..)
            .take(limit as usize)
            .map(|(id, username)| User::new(*id, username.as_str()))
            .collect())
    }

    fn update_username(&mut self, id: u64, username: &str) -> Result<User, StoreError> {
        limits::check_username(username)?;
        let slot = self.rows.get_mut(&id).ok_or(StoreError::NotFound { id })?;
        let before = std::mem::replace(slot, username.to_owned());
        Ok(User::new(id, before))
    }

    fn delete(&mut self, id: u64) -> Result<User, StoreError> {
        let username = self.rows.remove(&id).ok_or(StoreError::NotFound { id })?;
        Ok(User::new(id, username))
    }

    fn update_batch(&mut self, users: &[User]) -> Result<u64, StoreError> {
        limits::check_batch(users)?;
        if let Some(user) = users.iter().find(|user| !self.rows.contains_key(&user.id)) {
            return Err(StoreError::NotFound { id: user.id });
        }
        for user in users {
            self.rows.insert(user.id, user.username.clone());
        }
        Ok(users.len() as u64)
    }

    fn delete_batch(&mut self, ids: &[u64]) -> Result<u64, StoreError> {
        limits::check_id_batch(ids)?;
        if let Some(id) = ids.iter().find(|id| !self.rows.contains_key(id)) {
            return Err(StoreError::NotFound { id: *id });
        }
        for id in ids {
            self.rows.remove(id);
        }
        Ok(ids.len() as u64)
    }

    fn count(&self) -> Result<u64, StoreError> {
        Ok(self.rows.len() as u64)
    }
}

/// One call of the API, as the model test draws it.
#[derive(Clone, Debug)]
pub enum Op {
    /// [`UserStore::insert`].
    Insert(User),
    /// [`UserStore::insert_batch`].
    InsertBatch(Vec<User>),
    /// [`UserStore::get`].
    Get(u64),
    /// [`UserStore::page`].
    Page(Option<u64>, u32),
    /// [`UserStore::update_username`].
    Update(User),
    /// [`UserStore::delete`].
    Delete(u64),
    /// [`UserStore::update_batch`].
    UpdateBatch(Vec<User>),
    /// [`UserStore::delete_batch`].
    DeleteBatch(Vec<u64>),
    /// [`UserStore::count`].
    Count,
    /// Close the store and open it again from its file.
    Reopen,
}

/// Ids: mostly a few small ones (so that calls meet existing rows), sometimes the largest
/// allowed, one over it, or `u64::MAX`.
fn id() -> impl Strategy<Value = u64> {
    prop_oneof![
        8 => 0u64..24,
        1 => Just(MAX_USER_ID),
        1 => Just(MAX_USER_ID + 1),
        1 => Just(u64::MAX),
    ]
}

/// Usernames: mostly valid, sometimes empty, at the limit or one byte over it.
fn username() -> impl Strategy<Value = String> {
    prop_oneof![
        8 => "[a-z0-9é€]{1,12}",
        1 => Just(String::new()),
        1 => Just("x".repeat(MAX_USERNAME_BYTES)),
        1 => Just("x".repeat(MAX_USERNAME_BYTES + 1)),
    ]
}

fn user() -> impl Strategy<Value = User> {
    (id(), username()).prop_map(|(id, username)| User { id, username })
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => user().prop_map(Op::Insert),
        2 => prop::collection::vec(user(), 0..6).prop_map(Op::InsertBatch),
        2 => id().prop_map(Op::Get),
        2 => (prop::option::of(id()), prop_oneof![0u32..5, Just(10_000), Just(10_001)])
            .prop_map(|(after, limit)| Op::Page(after, limit)),
        2 => user().prop_map(Op::Update),
        2 => id().prop_map(Op::Delete),
        1 => prop::collection::vec(user(), 0..6).prop_map(Op::UpdateBatch),
        1 => prop::collection::vec(id(), 0..6).prop_map(Op::DeleteBatch),
        1 => Just(Op::Count),
        1 => Just(Op::Reopen),
    ]
}

/// What a call answered, comparable across stores.
#[derive(Debug, PartialEq, Eq)]
enum Answer {
    Unit(Result<(), StoreError>),
    Number(Result<u64, StoreError>),
    One(Result<User, StoreError>),
    Many(Result<Vec<User>, StoreError>),
}

/// Runs `op` on `store`.
fn apply<S: UserStore>(store: &mut S, op: &Op) -> Option<Answer> {
    Some(match op {
        Op::Insert(user) => Answer::Unit(store.insert(user.clone())),
        Op::InsertBatch(users) => Answer::Number(store.insert_batch(users)),
        Op::Get(id) => Answer::One(store.get(*id)),
        Op::Page(after, limit) => Answer::Many(store.page(*after, *limit)),
        Op::Update(user) => Answer::One(store.update_username(user.id, &user.username)),
        Op::Delete(id) => Answer::One(store.delete(*id)),
        Op::UpdateBatch(users) => Answer::Number(store.update_batch(users)),
        Op::DeleteBatch(ids) => Answer::Number(store.delete_batch(ids)),
        Op::Count => Answer::Number(store.count()),
        Op::Reopen => return None,
    })
}

/// Checks, over `cases` random sequences of calls, that a store opened by `open` on a new
/// file answers every call as [`Model`] does and holds the same rows after it, including
/// across a close and reopen.
pub fn model_test<S: UserStore>(cases: u32, open: impl Fn(&Path) -> Result<S, StoreError>) {
    let mut runner = TestRunner::new(Config {
        cases,
        ..Config::default()
    });
    let strategy = prop::collection::vec(op(), 1..40);
    let outcome = runner.run(&strategy, |ops| {
        let dir = tempfile::tempdir().map_err(|error| TestCaseError::fail(error.to_string()))?;
        let path = dir.path().join("users.db");
        let reopen = || open(&path).map_err(|error| TestCaseError::fail(error.to_string()));
        let mut store = reopen()?;
        let mut model = Model::default();
        for op in &ops {
            match apply(&mut store, op) {
                Some(answer) => prop_assert_eq!(Some(answer), apply(&mut model, op), "{:?}", op),
                None => {
                    drop(store);
                    store = reopen()?;
                }
            }
            prop_assert_eq!(store.count(), model.count());
        }
        prop_assert_eq!(store.page(None, 10_000), model.page(None, 10_000));
        Ok(())
    });
    if let Err(failure) = outcome {
        panic!("the store differs from the model: {failure}");
    }
}

/// Checks the error cases one by one on a store opened by `open` on a new file: each error
/// exactly as the page tree answers it, and the table unchanged after it.
pub fn error_cases<S: UserStore>(open: impl Fn(&Path) -> Result<S, StoreError>) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("users.db");
    let mut store = open(&path).expect("a new store");
    let too_long = "x".repeat(MAX_USERNAME_BYTES + 1);
    let users = vec![
        User::new(1, "one"),
        User::new(2, "two"),
        User::new(3, "three"),
    ];
    assert_eq!(store.insert_batch(&users), Ok(3));
    let before = store.page(None, 100).expect("a page");

    let failures: Vec<(&str, Result<u64, StoreError>)> = vec![
        (
            "insert of an existing id",
            store.insert(User::new(2, "x")).map(|()| 0),
        ),
        (
            "insert of an empty name",
            store.insert(User::new(9, "")).map(|()| 0),
        ),
        (
            "insert of a long name",
            store.insert(User::new(9, too_long.as_str())).map(|()| 0),
        ),
        (
            "insert over the largest id",
            store.insert(User::new(MAX_USER_ID + 1, "x")).map(|()| 0),
        ),
        (
            "batch: the first existing id in batch order",
            store.insert_batch(&[User::new(8, "a"), User::new(3, "b"), User::new(1, "c")]),
        ),
        (
            "batch: an id twice",
            store.insert_batch(&[User::new(8, "a"), User::new(9, "b"), User::new(8, "c")]),
        ),
        (
            "batch: a long name after an existing id",
            store.insert_batch(&[User::new(1, "a"), User::new(9, too_long.as_str())]),
        ),
        (
            "update of a missing id",
            store.update_username(7, "x").map(|_| 0),
        ),
        (
            "update to an empty name",
            store.update_username(1, "").map(|_| 0),
        ),
        ("delete of a missing id", store.delete(7).map(|_| 0)),
        (
            "update batch: the first missing id in batch order",
            store.update_batch(&[User::new(1, "a"), User::new(8, "b"), User::new(7, "c")]),
        ),
        (
            "delete batch: the first missing id in batch order",
            store.delete_batch(&[1, 8, 7]),
        ),
        ("delete batch: an id twice", store.delete_batch(&[1, 2, 1])),
        ("page of 0", store.page(None, 0).map(|_| 0)),
        ("page over the limit", store.page(None, 10_001).map(|_| 0)),
        ("get of a missing id", store.get(7).map(|_| 0)),
    ];
    let expected = [
        StoreError::DuplicateId { id: 2 },
        Model::default().insert(User::new(9, "")).unwrap_err(),
        limits::check_username(&too_long).unwrap_err(),
        limits::check_id(MAX_USER_ID + 1).unwrap_err(),
        StoreError::DuplicateId { id: 3 },
        StoreError::DuplicateId { id: 8 },
        limits::check_username(&too_long).unwrap_err(),
        StoreError::NotFound { id: 7 },
        Model::default().update_username(1, "").unwrap_err(),
        StoreError::NotFound { id: 7 },
        StoreError::NotFound { id: 8 },
        StoreError::NotFound { id: 8 },
        StoreError::DuplicateId { id: 1 },
        limits::check_page_size(0).unwrap_err(),
        limits::check_page_size(10_001).unwrap_err(),
        StoreError::NotFound { id: 7 },
    ];
    for ((case, outcome), error) in failures.into_iter().zip(expected) {
        assert_eq!(outcome, Err(error), "{case}");
    }
    assert_eq!(
        store.page(None, 100).as_ref(),
        Ok(&before),
        "the table changed"
    );
    assert_eq!(store.page(Some(u64::MAX), 10), Ok(Vec::new()));
    assert_eq!(store.page(Some(1), 1), Ok(vec![User::new(2, "two")]));
    drop(store);
    let store = open(&path).expect("the store reopened");
    assert_eq!(store.page(None, 100), Ok(before), "the rows after a reopen");
}
