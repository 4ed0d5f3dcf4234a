//! The Candid service every store canister exports, written once as plain Rust.
//!
//! - [`api`]: one function per Candid method, over the canister's [`StoreState`] and the
//!   call's [`env::CallEnv`];
//! - [`lifecycle`]: `init`, `pre_upgrade` and `post_upgrade`;
//! - [`env`]: what the service asks of the IC (caller, controllers, performance counter,
//!   memory sizes, trap), answered by [`env::IcEnv`] in a canister and by a test double in
//!   native tests;
//! - [`args`]: Candid arguments read directly when they come in `candid`'s own encoding;
//! - [`reply`]: Candid replies with their type table built once per type;
//! - [`state_slot`] (feature `canister`): the canister's state above the stack, in the stack's
//!   own page;
//! - [`export_user_table_api!`](crate::export_user_table_api): the one-line `#[update]` and
//!   `#[query]` wrappers a canister crate needs, so that the services of all store canisters
//!   are identical by construction.

pub mod api;
pub mod args;
pub mod env;
pub mod lifecycle;
mod macros;
pub mod reply;
#[cfg(feature = "canister")]
pub mod state_slot;

use crate::access::Writers;
use crate::describe::EngineInfo;
use crate::engine::{BatchWrite, EngineConfig, StorageEngine, WriteCost};
use crate::error::StoreError;
use crate::limits;
use candid::{CandidType, Principal};
use env::CallEnv;
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
    /// The stable memory the canister may use, in 64 KiB pages, if its settings give one:
    /// inserts are refused 256 pages (16 MiB) before it.
    pub stable_memory_limit_pages: Option<u64>,
}

impl Limits {
    /// The limits this build enforces, with the canister's `instruction_budget` and stable
    /// memory limit.
    pub fn with_budget(instruction_budget: u64, stable_memory_limit_pages: Option<u64>) -> Self {
        Self {
            stable_memory_limit_pages,
            max_username_bytes: limits::MAX_USERNAME_BYTES as u64,
            max_batch_size: limits::MAX_BATCH_SIZE as u64,
            max_page_size: u64::from(limits::MAX_PAGE_SIZE),
            max_user_id: limits::MAX_USER_ID,
            instruction_budget,
        }
    }
}

/// The reply of the `config` query.
#[derive(CandidType, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct CanisterConfig<C> {
    /// The engine and its configuration.
    pub engine: EngineInfo<C>,
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
    /// Usernames more than one user has, at most 100, in byte order: only a table written
    /// before names were unique has any, and writes never add to them (they only get fewer
    /// as those users are renamed or deleted).
    pub shared_usernames: Vec<String>,
}

/// A value aligned to a 64 KiB Wasm page: the canister keeps its state in one, so that the
/// state every call reads (the borrow flag, the store, the writers, the budget) shares as few
/// Wasm pages as it can, each of which a message pays for touching (docs/metering.md §6).
#[repr(C, align(65536))]
pub struct PageAligned<T>(pub T);

/// A store canister's live state: its store, who may write to it, and how many
/// instructions one update message may spend.
pub struct StoreState<E: StorageEngine> {
    store: E,
    writers: Writers,
    /// The first listed writer, kept beside the store: most writes come from it, and
    /// checking it here reads no heap page (the list itself is on the heap, and every page a
    /// message touches costs instructions, docs/metering.md §6).
    first_writer: Option<Principal>,
    instruction_budget: u64,
    stable_memory_limit_pages: Option<u64>,
}

impl<E: StorageEngine> StoreState<E> {
    /// Wraps an open store; batches are checked against `instruction_budget`
    /// (see [`crate::budget`]).
    pub fn new(store: E, writers: Writers, instruction_budget: u64) -> Self {
        Self {
            store,
            first_writer: writers.principals.first().copied(),
            writers,
            instruction_budget,
            stable_memory_limit_pages: None,
        }
    }

    /// Refuses inserts once stable memory comes within the headroom of `limit_pages`
    /// ([`limits::check_room_to_insert`]).
    pub fn with_stable_memory_limit(mut self, limit_pages: Option<u64>) -> Self {
        self.stable_memory_limit_pages = limit_pages;
        self
    }

    /// The store, for an insert by the caller of `env`: a writer's, and only while stable
    /// memory has room for it ([`StoreError::StorageFull`] otherwise).
    pub fn inserter(&mut self, env: &impl CallEnv) -> Result<&mut E, StoreError> {
        self.authorize(env)?;
        limits::check_room_to_insert(env.stable_memory_pages(), self.stable_memory_limit_pages)?;
        Ok(&mut self.store)
    }

    /// Whether the caller of `env` may write.
    pub fn may_write(&self, env: &impl CallEnv) -> bool {
        self.authorize(env).is_ok()
    }

    /// `Ok` if the caller of `env` may write: the first writer without reading the list.
    fn authorize(&self, env: &impl CallEnv) -> Result<(), StoreError> {
        let caller = env.caller();
        if self.first_writer == Some(caller) {
            return Ok(());
        }
        self.writers
            .authorize(caller, |principal| env.is_controller(principal))
    }

    /// The store, for reads (public).
    pub fn store(&self) -> &E {
        &self.store
    }

    /// The store, for writes by the caller of `env`; [`StoreError::Unauthorized`] unless the
    /// caller is a writer. The controllers are asked only for callers not listed.
    pub fn writer(&mut self, env: &impl CallEnv) -> Result<&mut E, StoreError> {
        self.authorize(env)?;
        Ok(&mut self.store)
    }

    /// The store, for a batch `write` of `rows` rows by the caller of `env`:
    /// [`StoreError::Unauthorized`] unless the caller is a writer, then
    /// [`StoreError::LimitExceeded`] with
    /// [`Limit::InstructionBudget`](crate::Limit::InstructionBudget) if the batch might not
    /// fit what is left of the budget after the instructions the message used so far, with
    /// the number of rows that fit.
    pub fn batch_writer(
        &mut self,
        env: &impl CallEnv,
        write: BatchWrite,
        rows: usize,
    ) -> Result<&mut E, StoreError> {
        self.authorize(env)?;
        if write == BatchWrite::Insert {
            limits::check_room_to_insert(
                env.stable_memory_pages(),
                self.stable_memory_limit_pages,
            )?;
        }
        let instructions_left = self
            .instruction_budget
            .saturating_sub(env.instructions_used());
        E::write_cost(write).check(rows, instructions_left)?;
        Ok(&mut self.store)
    }

    /// What a batch `write` may cost on this store's engine.
    pub fn write_cost(&self, write: BatchWrite) -> WriteCost {
        E::write_cost(write)
    }

    /// The `config` query's reply.
    pub fn config(&self) -> CanisterConfig<EngineConfig<E>> {
        CanisterConfig {
            engine: EngineInfo::of(&self.store),
            writers: self.writers.clone(),
            limits: Limits::with_budget(self.instruction_budget, self.stable_memory_limit_pages),
        }
    }

    /// Gives the store back (to close it before an upgrade).
    pub fn into_store(self) -> E {
        self.store
    }
}

#[cfg(test)]
mod tests;
