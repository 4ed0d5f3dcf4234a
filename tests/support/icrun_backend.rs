//! [`Ic`] on icrun: every canister of a test in one [`icrun::World`].

use super::ic::{Ic, Rejected};
use candid::Principal;
use icrun::{CallResult, Limits, Metering, Options, World};
use std::cell::{Cell, RefCell};

/// An icrun world of canisters.
pub struct IcrunIc {
    world: RefCell<World>,
    last_update_instructions: Cell<Option<u64>>,
    last_upgrade_instructions: Cell<Option<u64>>,
}

impl Default for IcrunIc {
    /// A world metered as the IC is today (docs/metering.md §6, `Metering::Current`).
    fn default() -> Self {
        Self::with_metering(Metering::Current)
    }
}

impl IcrunIc {
    /// A world metered by `metering`.
    pub fn with_metering(metering: Metering) -> Self {
        IcrunIc {
            world: RefCell::new(World::with_options(Options {
                metering,
                ..Options::default()
            })),
            last_update_instructions: Cell::new(None),
            last_upgrade_instructions: Cell::new(None),
        }
    }
}

fn rejected(reject: icrun::Reject) -> Rejected {
    Rejected {
        code: reject.code as u64,
        message: reject.message,
    }
}

fn reply_of(result: CallResult) -> Result<Vec<u8>, Rejected> {
    result.reply.map_err(rejected)
}

fn install_failure(error: icrun::InstallError) -> Rejected {
    // The IC answers a failed install_code with CANISTER_ERROR.
    Rejected {
        code: 5,
        message: error.to_string(),
    }
}

impl Ic for IcrunIc {
    fn backend(&self) -> &'static str {
        "icrun"
    }

    fn create_canister(&self, controllers: Vec<Principal>) -> Principal {
        self.world.borrow_mut().create_canister(&controllers)
    }

    fn install_canister(
        &self,
        id: Principal,
        wasm: Vec<u8>,
        arg: Vec<u8>,
        sender: Principal,
    ) -> Result<(), Rejected> {
        let mut world = self.world.borrow_mut();
        world
            .install(id, &wasm, &arg, sender)
            .map(|_| ())
            .map_err(install_failure)
    }

    fn upgrade_canister(
        &self,
        id: Principal,
        wasm: Vec<u8>,
        arg: Vec<u8>,
        sender: Principal,
    ) -> Result<(), Rejected> {
        let mut world = self.world.borrow_mut();
        let result = world
            .upgrade(id, &wasm, &arg, sender)
            .map_err(install_failure)?;
        self.last_upgrade_instructions
            .set(Some(result.instructions));
        Ok(())
    }

    fn update_call(
        &self,
        id: Principal,
        sender: Principal,
        method: &str,
        payload: Vec<u8>,
    ) -> Result<Vec<u8>, Rejected> {
        let result = self.world.borrow_mut().update(id, method, &payload, sender);
        self.last_update_instructions.set(Some(result.instructions));
        reply_of(result)
    }

    fn query_call(
        &self,
        id: Principal,
        sender: Principal,
        method: &str,
        payload: Vec<u8>,
    ) -> Result<Vec<u8>, Rejected> {
        let result = self.world.borrow_mut().query(id, method, &payload, sender);
        reply_of(result)
    }

    fn last_update_instructions(&self) -> Option<u64> {
        self.last_update_instructions.get()
    }

    fn last_upgrade_instructions(&self) -> Option<u64> {
        self.last_upgrade_instructions.get()
    }

    fn set_stable_memory_limit(&self, id: Principal, pages: Option<u64>) -> bool {
        let mut world = self.world.borrow_mut();
        let Some(canister) = world.canister_mut(id) else {
            return false;
        };
        canister.set_stable_memory_limit(pages);
        true
    }

    fn set_heap_limit(&self, id: Principal, pages: Option<u64>) -> bool {
        let mut world = self.world.borrow_mut();
        let Some(canister) = world.canister_mut(id) else {
            return false;
        };
        canister.set_heap_limit(pages);
        true
    }

    fn set_update_instruction_limit(&self, id: Principal, limit: u64) -> bool {
        let mut world = self.world.borrow_mut();
        let Some(canister) = world.canister_mut(id) else {
            return false;
        };
        canister.set_limits(Limits {
            update: limit,
            ..canister.limits()
        });
        true
    }
}
