//! [`Ic`] on the PocketIC server (`POCKET_IC_BIN`), through the `pocket-ic` crate.

use super::ic::{Ic, Rejected};
use candid::Principal;
use pocket_ic::{CanisterSettings, PocketIc, RejectResponse};

fn rejected(response: RejectResponse) -> Rejected {
    Rejected {
        code: response.reject_code as u64,
        message: response.reject_message,
    }
}

impl Ic for PocketIc {
    fn backend(&self) -> &'static str {
        "PocketIC"
    }

    fn create_canister(&self, controllers: Vec<Principal>) -> Principal {
        let settings = CanisterSettings {
            controllers: Some(controllers),
            ..CanisterSettings::default()
        };
        self.create_canister_with_settings(None, Some(settings))
    }

    fn install_canister(
        &self,
        id: Principal,
        wasm: Vec<u8>,
        arg: Vec<u8>,
        sender: Principal,
    ) -> Result<(), Rejected> {
        // `PocketIc::install_canister` panics on failure; the IC's `reinstall` mode installs an
        // empty canister the same way and returns the reject, which the tests need.
        self.reinstall_canister(id, wasm, arg, Some(sender))
            .map_err(rejected)
    }

    fn upgrade_canister(
        &self,
        id: Principal,
        wasm: Vec<u8>,
        arg: Vec<u8>,
        sender: Principal,
    ) -> Result<(), Rejected> {
        PocketIc::upgrade_canister(self, id, wasm, arg, Some(sender)).map_err(rejected)
    }

    fn update_call(
        &self,
        id: Principal,
        sender: Principal,
        method: &str,
        payload: Vec<u8>,
    ) -> Result<Vec<u8>, Rejected> {
        PocketIc::update_call(self, id, sender, method, payload).map_err(rejected)
    }

    fn query_call(
        &self,
        id: Principal,
        sender: Principal,
        method: &str,
        payload: Vec<u8>,
    ) -> Result<Vec<u8>, Rejected> {
        PocketIc::query_call(self, id, sender, method, payload).map_err(rejected)
    }

    fn last_update_instructions(&self) -> Option<u64> {
        None
    }

    fn last_upgrade_instructions(&self) -> Option<u64> {
        None
    }

    fn set_stable_memory_limit(&self, _id: Principal, _pages: Option<u64>) -> bool {
        false
    }

    fn set_heap_limit(&self, _id: Principal, _pages: Option<u64>) -> bool {
        false
    }

    fn set_update_instruction_limit(&self, _id: Principal, _limit: u64) -> bool {
        false
    }
}
