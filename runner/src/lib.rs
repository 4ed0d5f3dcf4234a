//! icrun: an offline Internet Computer runtime that meters instructions as the replica
//! does (the rules, with their sources, are in the repository's `docs/metering.md`).
//!
//! The public surface is small:
//! - [`Canister`]: one canister with the IC's message semantics (install, update, query,
//!   upgrade, rollback on trap or exceeded limit), its [`CallResult`]s with a [`Breakdown`]
//!   of where the instructions went, optional [`Trace`]s with the memory pages each message
//!   touched ([`PageTouch`]), and its [`HeapLayout`];
//! - [`World`]: several canisters with inter-canister calls;
//! - [`Options`]: instruction [`Limits`], memory limits, the [`Metering`] profile and trace
//!   hooks;
//! - [`Env`]: a canister's identity, controllers, clock and balance;
//! - the replica's [`Reject`]s, [`RejectCode`]s and [`ErrorCode`]s;
//! - [`Unmetered`]: a module run without metering, as a speed baseline;
//! - [`flamegraph`]: a folded trace rendered as an SVG flame graph.
//!
//! Inside, `instrument` rewrites a module with the charges of `prices` at the basic blocks
//! of `partition`; `system_api` provides the ic0 imports over a canister's `state`, with
//! stable memory in `stable`; `live` instances are snapshotted and rolled back by `heap`,
//! with the heap pages a message touches tracked by `memory_tracker`; `ledger` and `trace`
//! record where the instructions went, `page_map` which pages were touched and by whom;
//! `heap_layout` reads from a module what its heap's bytes hold.

mod canister;
mod errors;
pub mod flamegraph;
mod function_names;
mod heap;
mod heap_layout;
mod instrument;
mod ledger;
mod live;
mod memory_limits;
mod memory_tracker;
mod page_map;
mod partition;
mod prices;
mod stable;
mod state;
mod system_api;
mod trace;
mod unmetered;
mod world;

pub use canister::{Canister, CanisterSnapshot, InstallError};
pub use errors::{CallResult, ErrorCode, Reject, RejectCode};
pub use heap_layout::{HeapLayout, HeapRegion};
pub use ledger::{ApiUse, Breakdown, PageUse};
pub use live::LoadError;
pub use page_map::{MemoryKind, PageTouch, PAGE_BYTES, RUNTIME_TOUCHER};
pub use prices::Metering;
pub use stable::StableMemory;
pub use state::{Closure, Env, Limits, Options};
pub use trace::{
    FoldError, Folded, FunctionCost, PageCharge, Stack, Trace, TraceEvent, Window,
    HEAP_PAGES_DIRTIED_FRAME,
};
pub use unmetered::Unmetered;
pub use world::{ExecutedKind, ExecutedMessage, World, DEFAULT_MESSAGE_LIMIT};
