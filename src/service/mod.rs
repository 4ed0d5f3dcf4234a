//! The Candid service both store canisters export, written once.
//!
//! A canister holds a [`StoreState`] in a `thread_local!` and invokes
//! [`export_user_table_api!`](crate::export_user_table_api) with a function that lends it out;
//! the macro defines every query and update method, so the two canisters' services are
//! identical by construction.

use crate::access::Writers;
use crate::budget::{BatchWrite, WriteCost};
use crate::error::StoreError;
use crate::limits;
use crate::store::{Engine, EngineInfo, UserStore};
use candid::{CandidType, Principal};
use serde::{Deserialize, Serialize};

/// The limits a caller must respect, as the `config` query reports them.
#[derive(CandidType, Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Longest username, in UTF-8 bytes.
    pub max_username_bytes: u64,
    /// Most users one batch insert may carry.
    pub max_batch_size: u64,
    /// Most users one page may return.
    pub max_page_size: u64,
    /// Largest user id.
    pub max_user_id: u64,
    /// Most instructions one update message may spend; batches that might cost more are
    /// refused up front.
    pub instruction_budget: u64,
}

impl Limits {
    /// The limits this build enforces, with the canister's `instruction_budget`.
    pub fn with_budget(instruction_budget: u64) -> Self {
        Self {
            max_username_bytes: limits::MAX_USERNAME_BYTES as u64,
            max_batch_size: limits::MAX_BATCH_SIZE as u64,
            max_page_size: u64::from(limits::MAX_PAGE_SIZE),
            max_user_id: limits::MAX_USER_ID,
            instruction_budget,
        }
    }
}

/// The reply of the `config` query.
#[derive(CandidType, Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct CanisterConfig {
    /// The engine and its configuration.
    pub engine: EngineInfo,
    /// Who may write.
    pub writers: Writers,
    /// The limits requests must respect.
    pub limits: Limits,
}

/// The reply of the `stats` query.
#[derive(CandidType, Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Stats {
    /// Users in the table.
    pub rows: u64,
    /// Stable memory size in 64 KiB pages.
    pub stable_memory_pages: u64,
    /// Wasm heap size in 64 KiB pages.
    pub heap_pages: u64,
}

/// A store canister's live state: its store, who may write to it, and how many
/// instructions one update message may spend.
pub struct StoreState<S: UserStore> {
    store: S,
    writers: Writers,
    instruction_budget: u64,
    engine: Engine,
}

impl<S: UserStore> StoreState<S> {
    /// Wraps an open store; batches are checked against `instruction_budget`
    /// (see [`crate::budget`]).
    pub fn new(store: S, writers: Writers, instruction_budget: u64) -> Self {
        let engine = store.describe().engine;
        Self {
            store,
            writers,
            instruction_budget,
            engine,
        }
    }

    /// The store, for reads (public).
    pub fn store(&self) -> &S {
        &self.store
    }

    /// The store, for writes by `caller`; [`StoreError::Unauthorized`] unless `caller` is a
    /// writer. `is_controller` is asked only for callers not listed.
    pub fn store_for_writer(
        &mut self,
        caller: Principal,
        is_controller: impl FnOnce(&Principal) -> bool,
    ) -> Result<&mut S, StoreError> {
        self.writers.authorize(caller, is_controller)?;
        Ok(&mut self.store)
    }

    /// The store, for a batch `write` of `rows` rows by `caller`, after `instructions_used`
    /// instructions of the message (its performance counter): [`StoreError::Unauthorized`]
    /// unless `caller` is a writer, then [`StoreError::LimitExceeded`] with
    /// [`Limit::InstructionBudget`](crate::Limit::InstructionBudget) if the batch might not
    /// fit what is left of the budget, with the number of rows that fit.
    pub fn store_for_batch_writer(
        &mut self,
        caller: Principal,
        is_controller: impl FnOnce(&Principal) -> bool,
        write: BatchWrite,
        rows: usize,
        instructions_used: u64,
    ) -> Result<&mut S, StoreError> {
        self.writers.authorize(caller, is_controller)?;
        let instructions_left = self.instruction_budget.saturating_sub(instructions_used);
        WriteCost::of(self.engine, write).check(rows, instructions_left)?;
        Ok(&mut self.store)
    }

    /// The `config` query's reply.
    pub fn config(&self) -> CanisterConfig {
        CanisterConfig {
            engine: self.store.describe(),
            writers: self.writers.clone(),
            limits: Limits::with_budget(self.instruction_budget),
        }
    }

    /// Gives the store back (to close it before an upgrade).
    pub fn into_store(self) -> S {
        self.store
    }
}

/// For a canister's tests: the Candid `exported` by the code must equal the committed `.did`
/// file at `did_path`. With the environment variable `UPDATE_CANDID` set, the file is
/// rewritten from the code first (to accept an intended change).
pub fn committed_candid_matches(exported: &str, did_path: &str) -> Result<(), String> {
    if std::env::var_os("UPDATE_CANDID").is_some() {
        std::fs::write(did_path, format!("{}\n", exported.trim()))
            .map_err(|error| format!("writing {did_path}: {error}"))?;
    }
    let committed = std::fs::read_to_string(did_path)
        .map_err(|error| format!("reading {did_path}: {error}"))?;
    if committed.trim() == exported.trim() {
        Ok(())
    } else {
        Err(format!(
            "{did_path} differs from the Candid the code exports; if the change is intended, \
             rerun the test with UPDATE_CANDID=1.\n--- exported:\n{exported}"
        ))
    }
}

/// Defines a store canister's state slot and the helpers around it, for a store of type
/// `$store`:
/// - `with_state(f)` lends the [`StoreState`] to `f` (for
///   [`export_user_table_api!`](crate::export_user_table_api)); it traps if the canister has
///   no state yet, which cannot happen after `init` or `post_upgrade` succeeded;
/// - `set_state(state)` puts the state in (from `init` and `post_upgrade`);
/// - `take_state()` takes it out (from `pre_upgrade`, to close the store);
/// - `trap_on_error(result)` unwraps a result or traps with the error's text, so that a failed
///   `init` or `post_upgrade` fails the install or upgrade and changes nothing.
///
/// The canister crate must depend on `ic-cdk`.
#[macro_export]
macro_rules! store_canister_state {
    ($store:ty) => {
        ::std::thread_local! {
            static __USERSTORE_STATE: ::std::cell::RefCell<
                Option<::userstore::service::StoreState<$store>>,
            > = const { ::std::cell::RefCell::new(None) };
        }

        /// Lends the canister's state to `f`. The state exists from `init`/`post_upgrade` on.
        fn with_state<R>(f: impl FnOnce(&mut ::userstore::service::StoreState<$store>) -> R) -> R {
            __USERSTORE_STATE.with(|slot| match slot.borrow_mut().as_mut() {
                Some(state) => f(state),
                None => ::ic_cdk::trap("the store is not initialized"),
            })
        }

        /// Puts the canister's state in.
        fn set_state(state: ::userstore::service::StoreState<$store>) {
            __USERSTORE_STATE.with(|slot| *slot.borrow_mut() = Some(state));
        }

        /// Takes the canister's state out, if there is one.
        #[allow(dead_code)]
        fn take_state() -> Option<::userstore::service::StoreState<$store>> {
            __USERSTORE_STATE.with(|slot| slot.borrow_mut().take())
        }

        /// The result's value, or a trap with the error's text.
        fn trap_on_error<T>(result: Result<T, ::userstore::StoreError>) -> T {
            result.unwrap_or_else(|error| ::ic_cdk::trap(error.to_string()))
        }
    };
}

/// Defines the user-table Candid methods in a canister crate.
///
/// `$with_state` must be a function `fn<R>(f: impl FnOnce(&mut StoreState<S>) -> R) -> R`
/// that lends the canister's state. Storage failures in update methods trap, so the IC
/// discards everything the failed message changed; every other error is returned as a value.
/// The canister crate must depend on `ic-cdk` and on this crate under the name `userstore`
/// (Candid export reads the paths in the signatures, so they are spelled `::userstore::…`).
#[macro_export]
macro_rules! export_user_table_api {
    ($with_state:path) => {
        fn __userstore_writer_store<S: ::userstore::UserStore, R>(
            state: &mut ::userstore::service::StoreState<S>,
            write: impl FnOnce(&mut S) -> Result<R, ::userstore::StoreError>,
        ) -> Result<R, ::userstore::StoreError> {
            let caller = ::ic_cdk::api::msg_caller();
            let store = state.store_for_writer(caller, ::ic_cdk::api::is_controller)?;
            __userstore_trap_on_storage_failure(write(store))
        }

        fn __userstore_batch_writer_store<S: ::userstore::UserStore, R>(
            state: &mut ::userstore::service::StoreState<S>,
            batch: (::userstore::budget::BatchWrite, usize),
            write: impl FnOnce(&mut S) -> Result<R, ::userstore::StoreError>,
        ) -> Result<R, ::userstore::StoreError> {
            let caller = ::ic_cdk::api::msg_caller();
            // Counter 0: the instructions this message has executed so far (decoding included).
            let used = ::ic_cdk::api::performance_counter(0);
            let (kind, rows) = batch;
            let is_controller = ::ic_cdk::api::is_controller;
            let store = state.store_for_batch_writer(caller, is_controller, kind, rows, used)?;
            __userstore_trap_on_storage_failure(write(store))
        }

        fn __userstore_trap_on_storage_failure<R>(
            result: Result<R, ::userstore::StoreError>,
        ) -> Result<R, ::userstore::StoreError> {
            match result {
                Err(::userstore::StoreError::Storage { message }) => {
                    ::ic_cdk::trap(format!("storage failure, message rolled back: {message}"))
                }
                result => result,
            }
        }

        /// Inserts one user.
        #[::ic_cdk::update]
        fn insert_user(user: ::userstore::User) -> Result<(), ::userstore::StoreError> {
            $with_state(|state| {
                __userstore_writer_store(state, |store| ::userstore::UserStore::insert(store, user))
            })
        }

        /// Inserts a batch of users, all or nothing; returns how many were inserted.
        #[::ic_cdk::update]
        fn insert_users(users: Vec<::userstore::User>) -> Result<u64, ::userstore::StoreError> {
            $with_state(|state| {
                __userstore_batch_writer_store(
                    state,
                    (::userstore::budget::BatchWrite::Insert, users.len()),
                    |store| ::userstore::UserStore::insert_batch(store, &users),
                )
            })
        }

        /// Returns one user.
        #[::ic_cdk::query]
        fn get_user(id: u64) -> Result<::userstore::User, ::userstore::StoreError> {
            $with_state(|state| ::userstore::UserStore::get(state.store(), id))
        }

        /// Returns up to `limit` users in id order after the id `after`.
        #[::ic_cdk::query]
        fn list_users(
            after: Option<u64>,
            limit: u32,
        ) -> Result<Vec<::userstore::User>, ::userstore::StoreError> {
            $with_state(|state| ::userstore::UserStore::page(state.store(), after, limit))
        }

        /// Changes a username; returns the user as it was before.
        #[::ic_cdk::update]
        fn update_username(
            id: u64,
            username: String,
        ) -> Result<::userstore::User, ::userstore::StoreError> {
            $with_state(|state| {
                __userstore_writer_store(state, |store| {
                    ::userstore::UserStore::update_username(store, id, &username)
                })
            })
        }

        /// Deletes a user; returns it.
        #[::ic_cdk::update]
        fn delete_user(id: u64) -> Result<::userstore::User, ::userstore::StoreError> {
            $with_state(|state| {
                __userstore_writer_store(state, |store| ::userstore::UserStore::delete(store, id))
            })
        }

        /// Renames every listed user, all or nothing; returns how many were updated.
        #[::ic_cdk::update]
        fn update_users(users: Vec<::userstore::User>) -> Result<u64, ::userstore::StoreError> {
            $with_state(|state| {
                __userstore_batch_writer_store(
                    state,
                    (::userstore::budget::BatchWrite::Update, users.len()),
                    |store| ::userstore::UserStore::update_batch(store, &users),
                )
            })
        }

        /// Deletes every listed user, all or nothing; returns how many were deleted.
        #[::ic_cdk::update]
        fn delete_users(ids: Vec<u64>) -> Result<u64, ::userstore::StoreError> {
            $with_state(|state| {
                __userstore_batch_writer_store(
                    state,
                    (::userstore::budget::BatchWrite::Delete, ids.len()),
                    |store| ::userstore::UserStore::delete_batch(store, &ids),
                )
            })
        }

        /// The number of users.
        #[::ic_cdk::query]
        fn count_users() -> Result<u64, ::userstore::StoreError> {
            $with_state(|state| ::userstore::UserStore::count(state.store()))
        }

        /// The engine, its configuration, the writers and the limits.
        #[::ic_cdk::query]
        fn config() -> ::userstore::service::CanisterConfig {
            $with_state(|state| state.config())
        }

        /// Rows, stable memory pages and heap pages.
        #[::ic_cdk::query]
        fn stats() -> Result<::userstore::service::Stats, ::userstore::StoreError> {
            let rows = $with_state(|state| ::userstore::UserStore::count(state.store()))?;
            #[cfg(target_family = "wasm")]
            let heap_pages = ::core::arch::wasm32::memory_size(0) as u64;
            #[cfg(not(target_family = "wasm"))]
            let heap_pages = 0;
            Ok(::userstore::service::Stats {
                rows,
                stable_memory_pages: ::ic_cdk::stable::stable_size(),
                heap_pages,
            })
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{BTreeStore, User};
    use ic_stable_structures::VectorMemory;

    fn principal(byte: u8) -> Principal {
        Principal::from_slice(&[byte; 29])
    }

    fn state() -> StoreState<BTreeStore<VectorMemory>> {
        let store = BTreeStore::init(VectorMemory::default());
        StoreState::new(
            store,
            Writers::installer_and_controllers(principal(1)),
            crate::budget::MIN_INSTRUCTION_BUDGET,
        )
    }

    #[test]
    fn a_batch_over_the_budget_is_refused_with_the_rows_that_fit() {
        let mut state = state();
        let cost = WriteCost::of(crate::Engine::StableBTreeMap, BatchWrite::Delete);
        let fit = cost.rows_that_fit(crate::budget::MIN_INSTRUCTION_BUDGET - 1_000_000);
        let delete = BatchWrite::Delete;
        let refused = state
            .store_for_batch_writer(principal(1), |_| false, delete, fit as usize + 1, 1_000_000)
            .map(|_| ());
        assert_eq!(
            refused,
            Err(StoreError::LimitExceeded {
                limit: crate::Limit::InstructionBudget,
                max: fit,
                actual: fit + 1,
            })
        );
        let allowed =
            state.store_for_batch_writer(principal(1), |_| false, delete, fit as usize, 1_000_000);
        assert!(allowed.is_ok());
        let stranger = state.store_for_batch_writer(principal(2), |_| false, delete, 1, 0);
        assert!(matches!(stranger, Err(StoreError::Unauthorized { .. })));
    }

    #[test]
    fn a_stranger_cannot_write_and_changes_nothing() {
        let mut state = state();
        let denied = state
            .store_for_writer(principal(2), |_| false)
            .map(|store| store.insert(User::new(1, "x")));
        assert_eq!(
            denied.err(),
            Some(StoreError::Unauthorized {
                caller: principal(2)
            })
        );
        assert_eq!(state.store().count(), Ok(0));
    }

    #[test]
    fn writers_and_controllers_can_write() {
        let mut state = state();
        let by_installer = state.store_for_writer(principal(1), |_| false);
        assert_eq!(
            by_installer.map(|store| store.insert(User::new(1, "a"))),
            Ok(Ok(()))
        );
        let by_controller = state.store_for_writer(principal(5), |_| true);
        assert_eq!(
            by_controller.map(|store| store.insert(User::new(2, "b"))),
            Ok(Ok(()))
        );
        assert_eq!(state.store().count(), Ok(2));
    }

    #[test]
    fn config_reports_engine_writers_and_limits() {
        let config = state().config();
        assert_eq!(config.engine.engine, crate::Engine::StableBTreeMap);
        assert_eq!(config.writers.principals, vec![principal(1)]);
        assert_eq!(
            config.limits.max_batch_size,
            crate::limits::MAX_BATCH_SIZE as u64
        );
        assert_eq!(config.limits.max_username_bytes, 128);
        assert_eq!(
            config.limits.instruction_budget,
            crate::budget::MIN_INSTRUCTION_BUDGET
        );
    }
}
