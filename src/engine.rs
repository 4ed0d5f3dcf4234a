//! The seam between an engine and the canister around it: what the service layer and the
//! canister lifecycle need to know about a store beyond the table API ([`UserStore`]).
//!
//! Everything specific to an engine lives behind this trait, in the engine's own folder:
//! how it opens in a canister's stable memory, which configuration it takes, what its batch
//! writes may cost (the instruction budget, [`crate::budget`]) and how it closes before an
//! upgrade. The service layer and the canisters are written once, generic over it.

use crate::budget::{BatchWrite, WriteCost};
use crate::error::StoreError;
use crate::sqlite::SqliteConfig;
use crate::store::UserStore;

/// A storage engine as a canister uses it.
pub trait StorageEngine: UserStore + Sized {
    /// The configuration to run with, from the `sqlite` field of an init or upgrade argument
    /// (`requested`, `None` when absent) and the configuration in force before (`current`,
    /// `None` at install): the configuration to keep, or [`StoreError::InvalidConfig`] with
    /// the reason an engine refuses it.
    fn settle_config(
        requested: Option<SqliteConfig>,
        current: Option<SqliteConfig>,
    ) -> Result<Option<SqliteConfig>, StoreError>;

    /// An upper bound of what a batch `write` costs on this engine, checked before a batch
    /// runs (see [`crate::budget`]).
    fn write_cost(write: BatchWrite) -> WriteCost;

    /// Opens (or creates) the table where a canister keeps it
    /// ([`crate::layout`]), with `config` (from [`StorageEngine::settle_config`]).
    fn open_in_canister(config: Option<SqliteConfig>) -> Result<Self, StoreError>;

    /// Releases the store before an upgrade, flushing what it holds in the heap.
    fn close(self) -> Result<(), StoreError> {
        Ok(())
    }
}
