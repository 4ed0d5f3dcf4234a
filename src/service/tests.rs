//! The service layer run natively: authorization, the instruction budget, error mapping and
//! the lifecycle, with a test environment instead of the IC.

use super::api;
use super::env::CallEnv;
use super::lifecycle;
use super::StoreState;
use crate::btree::{BTreeCanisterStore, BTreeConfig};
use crate::budget::MIN_INSTRUCTION_BUDGET;
use crate::engine::{BatchWrite, EngineStorage, StorageEngine, WriteCost};
use crate::error::{Limit, StoreError};
use crate::settings::InitArgs;
use crate::store::UserStore;
use crate::User;
use candid::Principal;
use std::cell::Cell;

fn principal(byte: u8) -> Principal {
    Principal::from_slice(&[byte; 29])
}

/// A call from `caller`, whose controllers are `controllers`, `used` instructions in.
struct TestEnv {
    caller: Principal,
    controllers: Vec<Principal>,
    used: u64,
    controller_checks: Cell<u32>,
}

impl TestEnv {
    fn from(caller: Principal) -> Self {
        TestEnv {
            caller,
            controllers: Vec::new(),
            used: 0,
            controller_checks: Cell::new(0),
        }
    }
}

impl CallEnv for TestEnv {
    fn caller(&self) -> Principal {
        self.caller
    }
    fn is_controller(&self, principal: &Principal) -> bool {
        self.controller_checks.set(self.controller_checks.get() + 1);
        self.controllers.contains(principal)
    }
    fn instructions_used(&self) -> u64 {
        self.used
    }
    fn stable_memory_pages(&self) -> u64 {
        7
    }
    fn heap_pages(&self) -> u64 {
        9
    }
    fn trap(&self, message: &str) -> ! {
        panic!("trap: {message}")
    }
}

type BTree = BTreeCanisterStore;

/// A store canister over a B-tree installed by principal 1, with the smallest budget.
fn installed() -> StoreState<BTree> {
    let args = InitArgs {
        instruction_budget: Some(MIN_INSTRUCTION_BUDGET),
        ..InitArgs::default()
    };
    lifecycle::init::<BTree>(&TestEnv::from(principal(1)), Some(args), &[]).expect("installs")
}

#[test]
fn a_stranger_cannot_write_and_changes_nothing() {
    let mut state = installed();
    let stranger = TestEnv::from(principal(2));
    assert_eq!(
        api::insert_user(&mut state, &stranger, User::new(1, "x")),
        Err(StoreError::Unauthorized {
            caller: principal(2)
        })
    );
    assert_eq!(
        api::delete_users(&mut state, &stranger, &[1]),
        Err(StoreError::Unauthorized {
            caller: principal(2)
        })
    );
    assert_eq!(api::count_users(&state), Ok(0));
}

#[test]
fn writers_need_no_controller_check_and_controllers_may_write() {
    let mut state = installed();
    let installer = TestEnv::from(principal(1));
    assert_eq!(
        api::insert_user(&mut state, &installer, User::new(1, "a")),
        Ok(())
    );
    assert_eq!(installer.controller_checks.get(), 0);
    let controller = TestEnv {
        controllers: vec![principal(5)],
        ..TestEnv::from(principal(5))
    };
    assert_eq!(
        api::insert_users(&mut state, &controller, &[User::new(2, "b")]),
        Ok(1)
    );
    assert_eq!(controller.controller_checks.get(), 1);
    assert_eq!(api::get_user(&state, 2), Ok(User::new(2, "b")));
}

#[test]
fn a_batch_over_the_budget_is_refused_with_the_rows_that_fit() {
    let mut state = installed();
    let used = 1_000_000;
    let fit = BTree::write_cost(BatchWrite::Delete).rows_that_fit(MIN_INSTRUCTION_BUDGET - used);
    let env = TestEnv {
        used,
        ..TestEnv::from(principal(1))
    };
    let ids: Vec<u64> = (0..=fit).collect();
    assert_eq!(
        api::delete_users(&mut state, &env, &ids),
        Err(StoreError::LimitExceeded {
            limit: Limit::InstructionBudget,
            max: fit,
            actual: fit + 1,
        })
    );
    // One row fewer passes the check (and then finds no such user: nothing was inserted).
    assert_eq!(
        api::delete_users(&mut state, &env, &ids[..fit as usize]),
        Err(StoreError::NotFound { id: 0 })
    );
}

/// A store whose writes fail in the engine.
struct BrokenStore;

impl UserStore for BrokenStore {
    fn insert(&mut self, _: User) -> Result<(), StoreError> {
        Err(StoreError::storage("writing", "the disk is gone"))
    }
    fn insert_batch(&mut self, _: &[User]) -> Result<u64, StoreError> {
        Err(StoreError::DuplicateId { id: 3 })
    }
    fn get(&self, id: u64) -> Result<User, StoreError> {
        Err(StoreError::NotFound { id })
    }
    fn get_by_name(&self, username: &str) -> Result<User, StoreError> {
        Err(StoreError::UsernameNotFound {
            username: username.into(),
        })
    }
    fn ids_named(&self, _: &str, _: usize) -> Result<Vec<u64>, StoreError> {
        Ok(Vec::new())
    }
    fn shared_usernames(&self, _: usize) -> Result<Vec<String>, StoreError> {
        Ok(Vec::new())
    }
    fn page(&self, _: Option<u64>, _: u32) -> Result<Vec<User>, StoreError> {
        Ok(Vec::new())
    }
    fn update_username(&mut self, id: u64, _: &str) -> Result<User, StoreError> {
        Err(StoreError::NotFound { id })
    }
    fn delete(&mut self, id: u64) -> Result<User, StoreError> {
        Err(StoreError::NotFound { id })
    }
    fn update_batch(&mut self, _: &[User]) -> Result<u64, StoreError> {
        Ok(0)
    }
    fn delete_batch(&mut self, _: &[u64]) -> Result<u64, StoreError> {
        Ok(0)
    }
    fn count(&self) -> Result<u64, StoreError> {
        Ok(0)
    }
}

impl StorageEngine for BrokenStore {
    const NAME: &'static str = "Broken";
    type Config = BTreeConfig;
    fn settle_config(
        _: Option<BTreeConfig>,
        _: Option<BTreeConfig>,
    ) -> Result<BTreeConfig, StoreError> {
        Ok(BTreeConfig {})
    }
    fn write_cost(_: BatchWrite) -> WriteCost {
        WriteCost {
            per_batch: 0,
            per_row: 1,
        }
    }
    fn open(_: EngineStorage<'_>, _: BTreeConfig) -> Result<Self, StoreError> {
        Ok(BrokenStore)
    }
    fn config(&self) -> BTreeConfig {
        BTreeConfig {}
    }
    fn version(&self) -> String {
        "broken".into()
    }
}

#[test]
fn a_storage_failure_traps_and_other_errors_are_values() {
    let writer = TestEnv::from(principal(1));
    let mut state = StoreState::new(
        BrokenStore,
        crate::access::Writers::only(vec![principal(1)]),
        MIN_INSTRUCTION_BUDGET,
    );
    assert_eq!(
        api::insert_users(&mut state, &writer, &[User::new(3, "c")]),
        Err(StoreError::DuplicateId { id: 3 })
    );
    let trapped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        api::insert_user(&mut state, &writer, User::new(1, "a"))
    }));
    let message = trapped.expect_err("traps");
    let text = message
        .downcast_ref::<String>()
        .cloned()
        .unwrap_or_default();
    assert!(
        text.contains("storage failure, message rolled back"),
        "{text}"
    );
}

#[test]
fn config_and_stats_report_the_canister() {
    let mut state = installed();
    api::insert_user(&mut state, &TestEnv::from(principal(1)), User::new(4, "d")).unwrap();
    let config = api::config(&state);
    assert_eq!(config.engine.engine, "StableBTreeMap");
    assert_eq!(config.writers.principals, vec![principal(1)]);
    assert_eq!(config.limits.instruction_budget, MIN_INSTRUCTION_BUDGET);
    let stats = api::stats(&state, &TestEnv::from(principal(2))).unwrap();
    assert_eq!(
        (stats.rows, stats.stable_memory_pages, stats.heap_pages),
        (1, 7, 9)
    );
}

#[test]
fn an_upgrade_keeps_the_table_and_the_settings_it_is_not_given() {
    let mut state = installed();
    api::insert_user(
        &mut state,
        &TestEnv::from(principal(1)),
        User::new(8, "kept"),
    )
    .unwrap();
    lifecycle::pre_upgrade(state).unwrap();
    let writers = InitArgs {
        writers: Some(vec![principal(3)]),
        ..InitArgs::default()
    };
    let state = lifecycle::post_upgrade::<BTree>(Some(writers), &[]).expect("upgrades");
    assert_eq!(api::get_user(&state, 8), Ok(User::new(8, "kept")));
    let config = api::config(&state);
    assert_eq!(config.writers.principals, vec![principal(3)]);
    assert_eq!(config.limits.instruction_budget, MIN_INSTRUCTION_BUDGET);
    // The earlier interface's `sqlite` field is refused; the upgrade fails.
    let sqlite = InitArgs {
        sqlite: Some(candid::Reserved),
        ..InitArgs::default()
    };
    assert!(matches!(
        lifecycle::post_upgrade::<BTree>(Some(sqlite), &[]),
        Err(StoreError::InvalidConfig { .. })
    ));
}

/// The page tree's state fits one Wasm page in the default form of the canister macro, even
/// natively (wider pointers): its index of leaves (most of it) is read by every call, and a
/// state across two pages would be charged two (docs/metering.md §6). Its canister keeps it in
/// the 60 KiB above the stack instead, which `page_tree::group::INLINE_ENTRIES` is sized to
/// on wasm32 and `export_user_table_api!(.., state_beside_stack)` asserts when it compiles.
#[test]
fn the_page_tree_canisters_state_fits_one_page() {
    use crate::engine::EngineMemory;
    type State = crate::service::PageAligned<
        std::cell::RefCell<Option<StoreState<crate::PageTreeStore<EngineMemory>>>>,
    >;
    assert_eq!(std::mem::size_of::<State>(), 65_536);
}
