//! The seam between an engine and the canister around it: what the service layer and the
//! canister lifecycle need to know about a store beyond the table API ([`UserStore`]).
//!
//! Everything specific to an engine lives behind [`StorageEngine`], in the engine's own
//! folder: its name, its configuration type, what its batch writes may cost (a
//! [`WriteCost`]), how it opens in the stable memory the canister hands it
//! ([`EngineStorage`]), how it closes, and what it does before an upgrade. The canister
//! layer decides where in stable memory each engine lives, and the Candid service carries an
//! engine's configuration as a variant with the engine's own case ([`EngineConfig`]), so an
//! engine with settings of its own changes neither this trait nor another engine's `.did`
//! file.

use crate::error::StoreError;
use crate::store::UserStore;
use candid::types::{Field, Label, Serializer, Type, TypeInner};
use candid::CandidType;
use ic_stable_structures::memory_manager::{MemoryManager, VirtualMemory};
use ic_stable_structures::{DefaultMemoryImpl, Memory, RestrictedMemory};
use serde::de::{DeserializeOwned, EnumAccess, VariantAccess};
use serde::{Deserialize, Deserializer};
use std::fmt;
use std::marker::PhantomData;
use std::ops::Range;

/// A storage engine as a canister uses it.
pub trait StorageEngine: UserStore + Sized {
    /// The engine's name: the case of its configuration in Candid ([`EngineConfig`]), what
    /// the `config` query reports, and what a canister records in stable memory at install
    /// so that an upgrade to another engine's Wasm is refused. Never changes once released.
    const NAME: &'static str;

    /// How the engine reaches its stable memory; the canister layer places it accordingly.
    const MEMORY_ACCESS: MemoryAccess = MemoryAccess::Handed;

    /// The engine's configuration, chosen at install (an init argument) and kept across
    /// upgrades. An engine without settings takes an empty record.
    type Config: CandidType + DeserializeOwned + Clone + fmt::Debug + PartialEq + 'static;

    /// The configuration to run with, from an init or upgrade argument (`requested`, `None`
    /// when absent) and the configuration in force before (`current`, `None` at install):
    /// the configuration to keep, or [`StoreError::InvalidConfig`] with the reason the engine
    /// refuses it.
    fn settle_config(
        requested: Option<Self::Config>,
        current: Option<Self::Config>,
    ) -> Result<Self::Config, StoreError>;

    /// An upper bound of what a batch `write` costs on this engine, checked before a batch
    /// runs.
    fn write_cost(write: BatchWrite) -> WriteCost;

    /// Opens (or creates) the table in `storage`, the stable memory the canister gives this
    /// engine, with `config` (from [`StorageEngine::settle_config`]).
    fn open(storage: EngineStorage<'_>, config: Self::Config) -> Result<Self, StoreError>;

    /// The configuration in force.
    fn config(&self) -> Self::Config;

    /// The engine's version: the library it is built on, with its version.
    fn version(&self) -> String;

    /// Releases the store, flushing what it holds in the heap: what a host that keeps no
    /// heap between opens (an edge request, a test) calls before it opens the store again.
    fn close(self) -> Result<(), StoreError> {
        Ok(())
    }

    /// What the store does in `pre_upgrade`, just before the IC discards the heap: by
    /// default [`StorageEngine::close`]. An engine whose every commit is already whole in
    /// stable memory, and whose open in the next Wasm instance needs nothing the close
    /// writes, may leave its heap to the discard instead: its close then costs the upgrade
    /// instructions and heap pages (docs/metering.md §6) for nothing.
    fn before_upgrade(self) -> Result<(), StoreError> {
        self.close()
    }
}

/// The batch writes whose cost is checked before they run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BatchWrite {
    /// `insert_users`.
    Insert,
    /// `update_users`.
    Update,
    /// `delete_users`.
    Delete,
}

impl BatchWrite {
    /// The three writes.
    pub const ALL: [BatchWrite; 3] = [Self::Insert, Self::Update, Self::Delete];
}

/// An upper bound of what a batch write costs on one engine, in IC instructions.
///
/// Engines set each bound at about twice the worst per-row figure the benchmarks measured
/// for that write (`docs/RESULTS.md`), so that a batch that passes the check also fits on
/// larger tables and with the longest usernames. The margin also covers decoding the request
/// and the page charges of the message (docs/metering.md §6).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriteCost {
    /// Instructions a batch costs whatever its size (transaction, journal, reply).
    pub per_batch: u64,
    /// Instructions each row costs at most.
    pub per_row: u64,
}

impl WriteCost {
    /// How many rows fit in `instructions_left`.
    pub fn rows_that_fit(&self, instructions_left: u64) -> u64 {
        instructions_left.saturating_sub(self.per_batch) / self.per_row
    }

    /// `Ok` if a batch of `rows` fits in `instructions_left`; otherwise
    /// [`StoreError::LimitExceeded`] with
    /// [`Limit::InstructionBudget`](crate::Limit::InstructionBudget) and, as `max`, the number
    /// of rows that fit.
    pub fn check(&self, rows: usize, instructions_left: u64) -> Result<(), StoreError> {
        let rows = rows as u64;
        let fit = self.rows_that_fit(instructions_left);
        if rows > fit {
            return Err(StoreError::LimitExceeded {
                limit: crate::Limit::InstructionBudget,
                max: fit,
                actual: rows,
            });
        }
        Ok(())
    }
}

/// How an engine reaches the stable memory it keeps its data in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemoryAccess {
    /// Through the [`EngineStorage::memory`] it is handed, a region or a virtual memory as
    /// the canister layer decides.
    Handed,
    /// Through the memory it is handed and a file system of its own beside it
    /// ([`EngineStorage::file_system`]), in virtual memories of the canister's manager.
    HandedWithFileSystem,
    /// Through a memory manager of its own over the canister's memory-manager header (a
    /// library built on a fork of ic-stable-structures' manager, with the same layout),
    /// using the virtual memory [`EngineStorage::memory_id`]. The canister's own manager then
    /// writes nothing after the engine opens: the settings are saved before.
    OwnManager,
}

/// A part of the canister's stable memory that holds one engine's data, chosen by the
/// canister layer.
#[derive(Clone)]
pub enum EngineMemory {
    /// A virtual memory of the canister's memory manager.
    Virtual(VirtualMemory<DefaultMemoryImpl>),
    /// Stable memory from a fixed page on, which the memory manager never hands out: reads
    /// and writes go to a constant offset, with no address translation.
    Region(RestrictedMemory<DefaultMemoryImpl>),
}

impl EngineMemory {
    /// The memory inside, boxed: reads and writes then dispatch once, through the box, not
    /// through this enum as well.
    pub fn into_boxed(self) -> Box<dyn Memory> {
        match self {
            Self::Virtual(memory) => Box::new(memory),
            Self::Region(memory) => Box::new(memory),
        }
    }
}

impl Memory for EngineMemory {
    fn size(&self) -> u64 {
        match self {
            Self::Virtual(memory) => memory.size(),
            Self::Region(memory) => memory.size(),
        }
    }

    fn grow(&self, pages: u64) -> i64 {
        match self {
            Self::Virtual(memory) => memory.grow(pages),
            Self::Region(memory) => memory.grow(pages),
        }
    }

    fn read(&self, offset: u64, dst: &mut [u8]) {
        match self {
            Self::Virtual(memory) => memory.read(offset, dst),
            Self::Region(memory) => memory.read(offset, dst),
        }
    }

    unsafe fn read_unsafe(&self, offset: u64, dst: *mut u8, count: usize) {
        // SAFETY: the caller's guarantees for `dst` and `count` are passed on unchanged.
        unsafe {
            match self {
                Self::Virtual(memory) => memory.read_unsafe(offset, dst, count),
                Self::Region(memory) => memory.read_unsafe(offset, dst, count),
            }
        }
    }

    fn write(&self, offset: u64, src: &[u8]) {
        match self {
            Self::Virtual(memory) => memory.write(offset, src),
            Self::Region(memory) => memory.write(offset, src),
        }
    }
}

/// Virtual memories of the canister's memory manager that an engine may give a file system
/// of its own (the WASI SQLite engine keeps its journals there).
pub struct FileSystemMemories<'a> {
    /// The canister's memory manager.
    pub manager: &'a MemoryManager<DefaultMemoryImpl>,
    /// The ids of the virtual memories the file system may use.
    pub ids: Range<u8>,
}

/// The stable memory a canister hands an engine at [`StorageEngine::open`]: where it keeps
/// its data and, for an engine that asks for one ([`MemoryAccess::HandedWithFileSystem`]),
/// memories for a file system. The canister layer decides both.
pub struct EngineStorage<'a> {
    /// Where the engine keeps its data.
    pub memory: EngineMemory,
    /// The id of [`EngineStorage::memory`] in the canister's memory manager, when it is a
    /// virtual memory (for an engine with [`MemoryAccess::OwnManager`]).
    pub memory_id: Option<u8>,
    /// Memories for a file system beside the data, if the canister layer gives any.
    pub file_system: Option<FileSystemMemories<'a>>,
    /// A number no earlier Wasm instance of this canister opened the engine with (the
    /// install is 1, each upgrade one more; an upgrade that traps is discarded with its
    /// number). The seed of an engine's randomness: SQLite tells a rollback journal's stale
    /// records from the current transaction's by a nonce it draws at random, so an instance
    /// that drew the numbers an earlier one drew could replay another transaction's pages.
    pub instance: u64,
}

/// An engine's configuration as the Candid service carries it: a variant with one case,
/// named after the engine ([`StorageEngine::NAME`]), that holds the engine's
/// [`StorageEngine::Config`]. A canister declares only its own engine's case, so adding an
/// engine changes no other canister's Candid; a caller that sends another engine's case gets
/// a Candid decoding error, and nothing is installed.
pub struct EngineConfig<E: StorageEngine>(pub E::Config);

impl<E: StorageEngine> EngineConfig<E> {
    /// Wraps `config`.
    pub fn new(config: E::Config) -> Self {
        Self(config)
    }

    /// The configuration inside.
    pub fn into_inner(self) -> E::Config {
        self.0
    }
}

impl<E: StorageEngine> Clone for EngineConfig<E> {
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

impl<E: StorageEngine> fmt::Debug for EngineConfig<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple(E::NAME).field(&self.0).finish()
    }
}

impl<E: StorageEngine> PartialEq for EngineConfig<E> {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}

impl<E: StorageEngine> CandidType for EngineConfig<E> {
    fn _ty() -> Type {
        TypeInner::Variant(vec![Field {
            id: Label::Named(E::NAME.to_string()).into(),
            ty: E::Config::ty(),
        }])
        .into()
    }

    fn idl_serialize<S: Serializer>(&self, serializer: S) -> Result<(), S::Error> {
        use candid::types::Compound;
        // The one case, index 0 of the variant's fields.
        let mut case = serializer.serialize_variant(0)?;
        case.serialize_element(&self.0)
    }
}

impl<'de, E: StorageEngine> Deserialize<'de> for EngineConfig<E> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_enum("EngineConfig", &[], CaseVisitor::<E>(PhantomData))
    }
}

/// The name of a variant's case, read as Candid gives it (an identifier).
struct CaseName;

impl<'de> serde::de::DeserializeSeed<'de> for CaseName {
    type Value = String;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<String, D::Error> {
        deserializer.deserialize_identifier(self)
    }
}

impl serde::de::Visitor<'_> for CaseName {
    type Value = String;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the name of an engine")
    }

    fn visit_str<E: serde::de::Error>(self, name: &str) -> Result<String, E> {
        Ok(name.to_string())
    }
}

/// Reads the one case of an [`EngineConfig`].
struct CaseVisitor<E>(PhantomData<E>);

impl<'de, E: StorageEngine> serde::de::Visitor<'de> for CaseVisitor<E> {
    type Value = EngineConfig<E>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the configuration of the {} engine", E::NAME)
    }

    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<Self::Value, A::Error> {
        let (case, variant) = data.variant_seed(CaseName)?;
        if case != E::NAME {
            return Err(serde::de::Error::custom(format!(
                "this canister runs the {} engine, not {case}",
                E::NAME
            )));
        }
        variant.newtype_variant().map(EngineConfig)
    }
}
