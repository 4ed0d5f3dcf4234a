//! The test API the end-to-end tests are written against, shaped like the `pocket-ic`
//! crate's `PocketIc` (create, install, upgrade, update and query calls with a sender,
//! rejects as values), and implemented by both backends: icrun ([`super::icrun_backend`])
//! and the PocketIC server (`super::pocket_ic_backend`, with the feature `pocket-ic`).

use candid::Principal;
use std::fmt;

/// A rejected call or a failed install or upgrade: the IC's reject code and message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rejected {
    /// 1 SYS_FATAL, 2 SYS_TRANSIENT, 3 DESTINATION_INVALID, 4 CANISTER_REJECT, 5 CANISTER_ERROR.
    pub code: u64,
    /// The reject message.
    pub message: String,
}

impl fmt::Display for Rejected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "reject code {}: {}", self.code, self.message)
    }
}

/// An IC with canisters on it, as the tests see it.
pub trait Ic {
    /// Which runtime this is, for messages.
    fn backend(&self) -> &'static str;

    /// Creates an empty canister controlled by `controllers`; returns its id.
    fn create_canister(&self, controllers: Vec<Principal>) -> Principal;

    /// Installs `wasm` on the empty canister `id`, running `init` with `arg`, as `sender`.
    fn install_canister(
        &self,
        id: Principal,
        wasm: Vec<u8>,
        arg: Vec<u8>,
        sender: Principal,
    ) -> Result<(), Rejected>;

    /// Upgrades `id` to `wasm` with `arg`, as `sender` (a controller).
    fn upgrade_canister(
        &self,
        id: Principal,
        wasm: Vec<u8>,
        arg: Vec<u8>,
        sender: Principal,
    ) -> Result<(), Rejected>;

    /// An update call from `sender`, run to its reply (and every message it causes).
    fn update_call(
        &self,
        id: Principal,
        sender: Principal,
        method: &str,
        payload: Vec<u8>,
    ) -> Result<Vec<u8>, Rejected>;

    /// A query call from `sender`.
    fn query_call(
        &self,
        id: Principal,
        sender: Principal,
        method: &str,
        payload: Vec<u8>,
    ) -> Result<Vec<u8>, Rejected>;

    /// icrun only: the instructions the last ingress update message executed, heap dirty-page
    /// charge included (PocketIC does not report them: `None`).
    fn last_update_instructions(&self) -> Option<u64>;

    /// icrun only: the instructions the last successful upgrade executed (`pre_upgrade`,
    /// the new instance's start and `post_upgrade`: one install message, docs/metering.md
    /// §7); PocketIC does not report them: `None`.
    fn last_upgrade_instructions(&self) -> Option<u64>;

    /// icrun only: lowers canister `id`'s instruction limit of update messages, to make a
    /// message trap part way as the IC traps one that exceeds its limit. Returns `false`
    /// where the backend cannot (PocketIC).
    fn set_update_instruction_limit(&self, id: Principal, limit: u64) -> bool;

    /// icrun only: makes canister `id`'s `stable64_grow` fail past `pages` (or lifts the
    /// limit with `None`), as the IC does past a canister's memory allocation. Returns
    /// `false` where the backend cannot (PocketIC).
    fn set_stable_memory_limit(&self, id: Principal, pages: Option<u64>) -> bool;

    /// icrun only: makes canister `id`'s `memory.grow` fail past `pages` of Wasm heap (or
    /// lifts the limit with `None`). Returns `false` where the backend cannot (PocketIC).
    fn set_heap_limit(&self, id: Principal, pages: Option<u64>) -> bool;
}
