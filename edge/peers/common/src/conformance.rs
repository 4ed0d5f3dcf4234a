//! The conformance tests every peer passes: the user-table semantics of the `UserStore`
//! trait as userstore's page tree answers them, unique usernames included, checked call by
//! call against [`Model`], an ordered map, with the store closed and reopened from its file
//! between calls; and, for a file a peer's release before unique names wrote (users that
//! share a name), that the store keeps and serves every row and refuses only new clashes.

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use std::path::Path;
use userstore::limits::{self, MAX_USERNAME_BYTES, MAX_USER_ID};
use userstore::unique::taken;
use userstore::{StoreError, User, UserStore};

/// The reference: userstore's own model of the table (`userstore::model::ModelStore`), the
/// rules of [`UserStore`] in their plainest form, which the library's engines are held to as
/// well.
pub use userstore::model::ModelStore as Model;

/// One call of the API, as the model test draws it.
#[derive(Clone, Debug)]
pub enum Op {
    /// [`UserStore::insert`].
    Insert(User),
    /// [`UserStore::insert_batch`].
    InsertBatch(Vec<User>),
    /// [`UserStore::get`].
    Get(u64),
    /// [`UserStore::get_by_name`].
    GetByName(String),
    /// [`UserStore::ids_named`], with its limit.
    IdsNamed(String, usize),
    /// [`UserStore::shared_usernames`], with its limit.
    SharedUsernames(usize),
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

/// Names that differ from one another only in case, a space or an accent: drawn often, so
/// that calls meet taken names and only exact bytes tell them apart.
const NEAR_NAMES: [&str; 6] = ["ann", "Ann", "ann ", "bob", "bób", "x"];

/// Usernames: often one of [`NEAR_NAMES`], else any valid one, sometimes empty, at the
/// limit or one byte over it.
fn username() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::sample::select(NEAR_NAMES.to_vec()).prop_map(String::from),
        4 => "[a-z0-9é€]{1,12}",
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
        2 => username().prop_map(Op::GetByName),
        1 => (username(), 0usize..4).prop_map(|(name, limit)| Op::IdsNamed(name, limit)),
        1 => (0usize..4).prop_map(Op::SharedUsernames),
        2 => (prop::option::of(id()), prop_oneof![0u32..5, Just(10_000), Just(10_001)])
            .prop_map(|(after, limit)| Op::Page(after, limit)),
        3 => user().prop_map(Op::Update),
        2 => id().prop_map(Op::Delete),
        2 => prop::collection::vec(user(), 0..6).prop_map(Op::UpdateBatch),
        1 => prop::collection::vec(id(), 0..6).prop_map(Op::DeleteBatch),
        1 => Just(Op::Count),
        1 => Just(Op::Reopen),
    ]
}

/// The rows of a file written before names were unique: a few users, most of them sharing
/// one of three names.
fn rows_with_shared_names() -> impl Strategy<Value = Vec<User>> {
    let name = prop::sample::select(vec!["x", "y", "ann", "Ann"]);
    prop::collection::btree_map(0u64..24, name, 0..12).prop_map(|rows| {
        rows.into_iter()
            .map(|(id, name)| User::new(id, name))
            .collect()
    })
}

/// What a call answered, comparable across stores.
#[derive(Debug, PartialEq, Eq)]
enum Answer {
    Unit(Result<(), StoreError>),
    Number(Result<u64, StoreError>),
    One(Result<User, StoreError>),
    Many(Result<Vec<User>, StoreError>),
    Ids(Result<Vec<u64>, StoreError>),
    Names(Result<Vec<String>, StoreError>),
}

/// Runs `op` on `store`.
fn apply<S: UserStore>(store: &mut S, op: &Op) -> Option<Answer> {
    Some(match op {
        Op::Insert(user) => Answer::Unit(store.insert(user.clone())),
        Op::InsertBatch(users) => Answer::Number(store.insert_batch(users)),
        Op::Get(id) => Answer::One(store.get(*id)),
        Op::GetByName(username) => Answer::One(store.get_by_name(username)),
        Op::IdsNamed(username, limit) => Answer::Ids(store.ids_named(username, *limit)),
        Op::SharedUsernames(limit) => Answer::Names(store.shared_usernames(*limit)),
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
    run_model_test(cases, Just(Vec::new()), |_, _| {}, open);
}

/// [`model_test`] from a file the peer's release before unique names wrote: `write_earlier`
/// writes random rows, many of them sharing names, to a file at a path as that release did
/// (without the by-name index), and the store opened by `open` on it must answer as
/// [`Model::with_rows`] of them.
pub fn model_test_from_earlier_file<S: UserStore>(
    cases: u32,
    write_earlier: impl Fn(&Path, &[User]),
    open: impl Fn(&Path) -> Result<S, StoreError>,
) {
    run_model_test(cases, rows_with_shared_names(), write_earlier, open);
}

/// The model test: `rows` written by `write_rows` before the first open, then random calls.
fn run_model_test<S: UserStore>(
    cases: u32,
    rows: impl Strategy<Value = Vec<User>>,
    write_rows: impl Fn(&Path, &[User]),
    open: impl Fn(&Path) -> Result<S, StoreError>,
) {
    let mut runner = TestRunner::new(Config {
        cases,
        ..Config::default()
    });
    let strategy = (rows, prop::collection::vec(op(), 1..40));
    let outcome = runner.run(&strategy, |(rows, ops)| {
        let dir = tempfile::tempdir().map_err(|error| TestCaseError::fail(error.to_string()))?;
        let path = dir.path().join("users.db");
        write_rows(&path, &rows);
        let reopen = || open(&path).map_err(|error| TestCaseError::fail(error.to_string()));
        let mut store = reopen()?;
        let mut model = Model::with_rows(rows);
        prop_assert_eq!(store.page(None, 10_000), model.page(None, 10_000));
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
        prop_assert_eq!(store.shared_usernames(100), model.shared_usernames(100));
        Ok(())
    });
    if let Err(failure) = outcome {
        panic!("the store differs from the model: {failure}");
    }
}

/// `Err(UsernameTaken)` for `username`, as a call answers it.
fn taken_err<T>(username: &str) -> Result<T, StoreError> {
    Err(taken(username))
}

/// `Err(UsernameNotFound)` for `username`, as a call answers it.
fn not_named<T>(username: &str) -> Result<T, StoreError> {
    Err(StoreError::UsernameNotFound {
        username: username.to_owned(),
    })
}

/// Checks the unique-username rules on a store opened by `open` on a new file, [`Model`]
/// first (the reference states the same rules): each call answered as expected, a refused
/// call changing nothing, and the names kept across a reopen.
pub fn unique_cases<S: UserStore>(open: impl Fn(&Path) -> Result<S, StoreError>) {
    unique_rules(&mut Model::default(), "the model");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("users.db");
    let mut store = open(&path).expect("a new store");
    unique_rules(&mut store, "the store");
    let after = store.page(None, 100).expect("a page");
    drop(store);
    let store = open(&path).expect("the store reopened");
    assert_eq!(store.page(None, 100), Ok(after), "the rows after a reopen");
    assert_eq!(store.get_by_name("ann"), Ok(User::new(8, "ann")));
    assert_eq!(store.get_by_name("Ann"), Ok(User::new(3, "Ann")));
    assert_eq!(store.get_by_name("ann "), not_named("ann "));
    assert_eq!(store.shared_usernames(10), Ok(Vec::new()));
}

/// The unique-username rules, call by call, on an empty `store` (`engine` names it in a
/// failure).
pub fn unique_rules<S: UserStore>(store: &mut S, engine: &str) {
    taken_on_insert_by_exact_bytes(store, engine);
    a_batch_that_clashes_changes_nothing(store, engine);
    a_rename_frees_the_old_name(store, engine);
    batch_renames_run_in_order(store, engine);
    a_delete_frees_the_name(store, engine);
    assert_eq!(store.shared_usernames(10), Ok(Vec::new()), "{engine}");
}

/// A name is taken on insert, compared as exact bytes (no case folding, trimming or
/// normalization); the id is checked first; `get_by_name` finds exactly its name.
fn taken_on_insert_by_exact_bytes<S: UserStore>(store: &mut S, engine: &str) {
    assert_eq!(store.insert(User::new(1, "ann")), Ok(()), "{engine}");
    assert_eq!(
        store.insert(User::new(2, "ann")),
        taken_err("ann"),
        "{engine}"
    );
    for (id, near) in [(2, "Ann"), (3, "ann "), (4, "an"), (5, "a\u{308}nn")] {
        assert_eq!(
            store.insert(User::new(id, near)),
            Ok(()),
            "{engine}: {near:?}"
        );
    }
    // The id before the name: an existing id is DuplicateId, whatever the name.
    let duplicate = Err(StoreError::DuplicateId { id: 1 });
    assert_eq!(store.insert(User::new(1, "ann")), duplicate, "{engine}");
    assert_eq!(store.insert(User::new(1, "fresh")), duplicate, "{engine}");
    assert_eq!(
        store.get_by_name("ann"),
        Ok(User::new(1, "ann")),
        "{engine}"
    );
    assert_eq!(
        store.get_by_name("Ann"),
        Ok(User::new(2, "Ann")),
        "{engine}"
    );
    assert_eq!(
        store.get_by_name("ann "),
        Ok(User::new(3, "ann ")),
        "{engine}"
    );
    for absent in ["ANN", " ann", "än", "fresh", ""] {
        assert_eq!(store.get_by_name(absent), not_named(absent), "{engine}");
    }
    assert_eq!(store.ids_named("ann", 5), Ok(vec![1]), "{engine}");
    assert_eq!(store.ids_named("ann", 0), Ok(Vec::new()), "{engine}");
    assert_eq!(store.ids_named("ANN", 5), Ok(Vec::new()), "{engine}");
    assert_eq!(store.count(), Ok(5), "{engine}");
}

/// A batch whose row takes a name (the table's, or an earlier row's) changes nothing; the
/// first failing row, in order, names the error, and within a row the id comes first.
fn a_batch_that_clashes_changes_nothing<S: UserStore>(store: &mut S, engine: &str) {
    let before = store.page(None, 100).expect("a page");
    let batches: [(&[User], StoreError); 5] = [
        (
            &[
                User::new(10, "dan"),
                User::new(11, "eve"),
                User::new(12, "Ann"),
            ],
            taken("Ann"),
        ),
        (&[User::new(10, "dan"), User::new(11, "dan")], taken("dan")),
        (
            &[User::new(10, "dan"), User::new(1, "eve")],
            StoreError::DuplicateId { id: 1 },
        ),
        (&[User::new(10, "ann"), User::new(1, "eve")], taken("ann")),
        (
            &[User::new(10, "dan"), User::new(2, "ann")],
            StoreError::DuplicateId { id: 2 },
        ),
    ];
    for (batch, error) in batches {
        assert_eq!(store.insert_batch(batch), Err(error), "{engine}: {batch:?}");
    }
    assert_eq!(store.page(None, 100).as_ref(), Ok(&before), "{engine}");
    assert_eq!(store.get_by_name("dan"), not_named("dan"), "{engine}");
    assert_eq!(
        store.get(10),
        Err(StoreError::NotFound { id: 10 }),
        "{engine}"
    );
}

/// A rename to a name another user has is refused (after the id check); to its own name it
/// is no change; otherwise it frees the old name at once.
fn a_rename_frees_the_old_name<S: UserStore>(store: &mut S, engine: &str) {
    assert_eq!(
        store.update_username(2, "ann"),
        taken_err("ann"),
        "{engine}"
    );
    let missing = Err(StoreError::NotFound { id: 9 });
    assert_eq!(store.update_username(9, "ann"), missing, "{engine}");
    assert_eq!(store.get(2), Ok(User::new(2, "Ann")), "{engine}");
    let own = store.update_username(1, "ann");
    assert_eq!(own, Ok(User::new(1, "ann")), "{engine}");
    let renamed = store.update_username(1, "anna");
    assert_eq!(renamed, Ok(User::new(1, "ann")), "{engine}");
    assert_eq!(store.get_by_name("ann"), not_named("ann"), "{engine}");
    assert_eq!(
        store.get_by_name("anna"),
        Ok(User::new(1, "anna")),
        "{engine}"
    );
    assert_eq!(store.insert(User::new(6, "ann")), Ok(()), "{engine}");
    assert_eq!(
        store.get_by_name("ann"),
        Ok(User::new(6, "ann")),
        "{engine}"
    );
}

/// A batch of renames does what its rows would do one by one: a name an earlier row frees
/// may be taken by a later one, a name another user still has may not (so two users cannot
/// swap names in one batch), and a refused batch changes nothing.
fn batch_renames_run_in_order<S: UserStore>(store: &mut S, engine: &str) {
    let chain = [User::new(2, "bob"), User::new(3, "Ann")];
    assert_eq!(store.update_batch(&chain), Ok(2), "{engine}");
    assert_eq!(
        store.get_by_name("Ann"),
        Ok(User::new(3, "Ann")),
        "{engine}"
    );
    assert_eq!(store.get_by_name("ann "), not_named("ann "), "{engine}");
    let before = store.page(None, 100).expect("a page");
    let refused: [(&[User], &str); 3] = [
        (&[User::new(2, "Ann"), User::new(3, "bob")], "Ann"),
        (&[User::new(1, "zed"), User::new(2, "an")], "an"),
        (&[User::new(1, "q"), User::new(2, "q")], "q"),
    ];
    for (batch, name) in refused {
        assert_eq!(
            store.update_batch(batch),
            taken_err(name),
            "{engine}: {batch:?}"
        );
    }
    assert_eq!(store.page(None, 100).as_ref(), Ok(&before), "{engine}");
    assert_eq!(store.get_by_name("zed"), not_named("zed"), "{engine}");
    let own = [User::new(1, "anna"), User::new(2, "bob")];
    assert_eq!(store.update_batch(&own), Ok(2), "{engine}");
    assert_eq!(store.page(None, 100).as_ref(), Ok(&before), "{engine}");
}

/// A delete, alone or in a batch, frees the name.
fn a_delete_frees_the_name<S: UserStore>(store: &mut S, engine: &str) {
    assert_eq!(store.delete(4), Ok(User::new(4, "an")), "{engine}");
    assert_eq!(store.insert(User::new(7, "an")), Ok(()), "{engine}");
    assert_eq!(store.get_by_name("an"), Ok(User::new(7, "an")), "{engine}");
    assert_eq!(store.delete_batch(&[6, 7]), Ok(2), "{engine}");
    let again = [User::new(8, "ann"), User::new(9, "an")];
    assert_eq!(store.insert_batch(&again), Ok(2), "{engine}");
    assert_eq!(store.ids_named("an", 5), Ok(vec![9]), "{engine}");
    assert_eq!(store.count(), Ok(6), "{engine}");
}

/// The rows of a file written before names were unique: ids 1 to 6 named x, y, x, z, z, x.
pub fn earlier_rows() -> Vec<User> {
    [(1, "x"), (2, "y"), (3, "x"), (4, "z"), (5, "z"), (6, "x")]
        .into_iter()
        .map(|(id, name)| User::new(id, name))
        .collect()
}

/// Checks a store opened by `open` on a file that `write_earlier` wrote as the peer's
/// release before unique names did (the rows of [`earlier_rows`], without the by-name
/// index), [`Model::with_rows`] first: every row kept and served, the shared names listed,
/// only new clashes refused; and the same after a reopen, which finds the index built.
pub fn earlier_file_cases<S: UserStore>(
    write_earlier: impl Fn(&Path, &[User]),
    open: impl Fn(&Path) -> Result<S, StoreError>,
) {
    shared_name_rules(&mut Model::with_rows(earlier_rows()), "the model");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("users.db");
    write_earlier(&path, &earlier_rows());
    let mut store = open(&path).expect("the earlier file opened");
    shared_name_rules(&mut store, "the store");
    let after = store.page(None, 100).expect("a page");
    drop(store);
    let store = open(&path).expect("the store reopened");
    assert_eq!(store.page(None, 100), Ok(after), "the rows after a reopen");
    assert_eq!(store.shared_usernames(10), Ok(Vec::new()));
    assert_eq!(store.get_by_name("z"), Ok(User::new(8, "z")));
    assert_eq!(store.get_by_name("y"), Ok(User::new(2, "y")));
}

/// What a store holding [`earlier_rows`] must do, call by call (`engine` names it in a
/// failure).
pub fn shared_name_rules<S: UserStore>(store: &mut S, engine: &str) {
    every_earlier_row_is_served(store, engine);
    only_new_clashes_are_refused(store, engine);
    names_stop_being_shared(store, engine);
}

/// Every row kept; the shared names listed in byte order; the lowest id found by name.
fn every_earlier_row_is_served<S: UserStore>(store: &mut S, engine: &str) {
    assert_eq!(store.count(), Ok(6), "{engine}");
    assert_eq!(store.page(None, 10), Ok(earlier_rows()), "{engine}");
    let shared = vec!["x".to_owned(), "z".to_owned()];
    assert_eq!(store.shared_usernames(10), Ok(shared), "{engine}");
    assert_eq!(
        store.shared_usernames(1),
        Ok(vec!["x".to_owned()]),
        "{engine}"
    );
    assert_eq!(store.shared_usernames(0), Ok(Vec::new()), "{engine}");
    assert_eq!(store.get_by_name("x"), Ok(User::new(1, "x")), "{engine}");
    assert_eq!(store.get_by_name("z"), Ok(User::new(4, "z")), "{engine}");
    assert_eq!(store.get_by_name("y"), Ok(User::new(2, "y")), "{engine}");
    assert_eq!(store.ids_named("x", 10), Ok(vec![1, 3, 6]), "{engine}");
    assert_eq!(store.ids_named("x", 2), Ok(vec![1, 3]), "{engine}");
}

/// A shared name takes no new user, but its users keep it (a rename to it is no change).
fn only_new_clashes_are_refused<S: UserStore>(store: &mut S, engine: &str) {
    assert_eq!(store.insert(User::new(7, "z")), taken_err("z"), "{engine}");
    assert_eq!(store.insert(User::new(7, "x")), taken_err("x"), "{engine}");
    let batch = [User::new(7, "w"), User::new(8, "z")];
    assert_eq!(store.insert_batch(&batch), taken_err("z"), "{engine}");
    assert_eq!(store.update_username(2, "x"), taken_err("x"), "{engine}");
    let own = store.update_username(3, "x");
    assert_eq!(own, Ok(User::new(3, "x")), "{engine}");
    let own = [User::new(6, "x"), User::new(5, "z")];
    assert_eq!(store.update_batch(&own), Ok(2), "{engine}");
    assert_eq!(store.page(None, 10), Ok(earlier_rows()), "{engine}");
}

/// As users leave a shared name (deleted or renamed), it stops being listed; a name is
/// free once no user has it.
fn names_stop_being_shared<S: UserStore>(store: &mut S, engine: &str) {
    assert_eq!(store.delete(4), Ok(User::new(4, "z")), "{engine}");
    assert_eq!(
        store.shared_usernames(10),
        Ok(vec!["x".to_owned()]),
        "{engine}"
    );
    assert_eq!(store.insert(User::new(8, "z")), taken_err("z"), "{engine}");
    assert_eq!(
        store.update_username(1, "w"),
        Ok(User::new(1, "x")),
        "{engine}"
    );
    assert_eq!(store.get_by_name("x"), Ok(User::new(3, "x")), "{engine}");
    assert_eq!(store.ids_named("x", 10), Ok(vec![3, 6]), "{engine}");
    // Row by row: 3 leaves "x", but 6 still has it when 2 asks for it.
    let batch = [User::new(3, "v"), User::new(2, "x")];
    assert_eq!(store.update_batch(&batch), taken_err("x"), "{engine}");
    assert_eq!(store.get(3), Ok(User::new(3, "x")), "{engine}");
    assert_eq!(store.delete_batch(&[5, 3]), Ok(2), "{engine}");
    assert_eq!(store.shared_usernames(10), Ok(Vec::new()), "{engine}");
    assert_eq!(store.insert(User::new(8, "z")), Ok(()), "{engine}");
    assert_eq!(store.get_by_name("z"), Ok(User::new(8, "z")), "{engine}");
    assert_eq!(store.count(), Ok(4), "{engine}");
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
