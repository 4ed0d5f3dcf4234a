//! # userstore
//!
//! One user-table API ([`UserStore`]) over storage engines for Internet Computer canisters:
//! - [`BTreeStore`]: ic-stable-structures' `StableBTreeMap<u64, Username>` on any
//!   [`ic_stable_structures::Memory`];
//! - [`SqliteStore`]: one SQLite table, on stable memory inside a canister (through
//!   ic-wasi-polyfill) or on a native file or in-memory database;
//! - [`StableSqliteStore`]: the same table with its pages straight in a stable-memory
//!   `Memory`, through this crate's SQLite VFS, with no file system in between.
//!
//! On an edge host (WASI) the engines that run on a `Memory` run on a `FileMemory`
//! (module `file_memory`, feature `file-memory`): a file with an atomic commit per request.
//!
//! Every engine validates each request against the published [`limits`] before it writes,
//! returns errors as [`StoreError`] values, and makes batches all or nothing. Each engine
//! also implements [`engine::StorageEngine`], what a canister needs beyond the table; the
//! [`service`] module holds the Candid service and the lifecycle every store canister
//! shares, and [`layout`] decides where each engine lives in stable memory.
//!
//! ```
//! use ic_stable_structures::VectorMemory;
//! use userstore::{BTreeStore, StoreError, User, UserStore};
//!
//! let mut store = BTreeStore::open(VectorMemory::default())?;
//! store.insert_batch(&[User::new(1, "alice"), User::new(2, "bob")])?;
//! assert_eq!(store.get(2)?.username, "bob");
//! // A batch with an existing id changes nothing.
//! let clash = store.insert_batch(&[User::new(3, "carol"), User::new(1, "again")]);
//! assert_eq!(clash, Err(StoreError::DuplicateId { id: 1 }));
//! assert_eq!(store.count()?, 2);
//! # Ok::<(), StoreError>(())
//! ```

pub mod access;
pub mod btree;
pub mod budget;
pub mod describe;
#[cfg(feature = "edge")]
pub mod edge;
pub mod engine;
pub mod error;
#[cfg(feature = "file-memory")]
pub mod file_memory;
pub mod layout;
pub mod limits;
#[cfg(any(test, feature = "model"))]
pub mod model;
pub mod name_index;
pub mod page_tree;
pub mod service;
pub mod settings;
#[cfg(feature = "sqlite")]
pub mod sqlite;
#[cfg(any(feature = "sqlite", feature = "stable-sqlite"))]
pub mod sqlite_shared;
#[cfg(any(feature = "sqlite", feature = "stable-sqlite"))]
pub mod stable_sqlite;
pub mod store;
pub mod unique;
pub mod user;

pub use btree::{BTreeCanisterStore, BTreeStore};
pub use describe::EngineInfo;
pub use engine::{EngineConfig, StorageEngine};
pub use error::{Limit, StoreError};
pub use page_tree::{PageTreeStore, PerRequestPageTree};
pub use settings::{InitArgs, InitArgsOf};
#[cfg(feature = "sqlite")]
pub use sqlite::SqliteStore;
#[cfg(any(feature = "sqlite", feature = "stable-sqlite"))]
pub use sqlite_shared::{JournalMode, LockingMode, SqliteConfig, Synchronous};
#[cfg(any(feature = "sqlite", feature = "stable-sqlite"))]
pub use stable_sqlite::StableSqliteStore;
pub use store::UserStore;
pub use user::{User, UsernameBuf};

#[cfg(all(test, feature = "sqlite"))]
mod tests;

/// The README's Rust examples, compiled and run as doctests (the canister recipes are
/// compared with the canisters' sources by their own tests instead).
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
