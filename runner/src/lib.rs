//! icrun: an offline Internet Computer runtime that meters instructions as the
//! replica does (see `ic-metering.md` in the shared notes).
//!
//! - [`instrument`] rewrites a canister module with the replica's metering,
//!   using the costs of [`cost`] and the basic blocks of [`partition`];
//! - [`system_api`] provides the ic0 imports over the [`state`] of a canister,
//!   with stable memory in [`stable`];
//! - [`canister`] gives the message semantics (install, update, query, upgrade,
//!   rollback), on top of [`live`] instances and [`heap`] snapshots (with
//!   copy-on-write tracking of heap writes in [`write_tracker`]);
//! - [`world`] runs several canisters with inter-canister calls, answering
//!   with the replica's [`errors`];
//! - [`candid_io`] converts Candid text to bytes and back for the CLI;
//! - [`bench`] is `icrun bench`, canbench on icrun;
//! - [`speed`] is `icrun speed`, a benchmark of icrun itself.

pub mod bench;
pub mod candid_io;
pub mod canister;
pub mod cost;
pub mod errors;
pub mod heap;
pub mod instrument;
pub mod live;
pub mod partition;
pub mod speed;
pub mod stable;
pub mod state;
pub mod system_api;
pub mod world;
pub mod write_tracker;

pub use canister::{CallResult, Canister, InstallError, Reject, RejectCode};
pub use errors::ErrorCode;
pub use state::{Closure, Env, Limits, MessageKind, ANONYMOUS};
pub use world::{ExecutedKind, ExecutedMessage, World};
