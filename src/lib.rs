//! # userstore
//!
//! One user-table API ([`UserStore`]) over three storage engines for Internet Computer
//! canisters:
//! - [`BTreeStore`]: ic-stable-structures' `StableBTreeMap<u64, Username>` on any
//!   [`ic_stable_structures::Memory`];
//! - [`SqliteStore`]: one SQLite table, on stable memory inside a canister (through
//!   ic-wasi-polyfill) or on a native file or in-memory database;
//! - [`StableSqliteStore`]: the same table with its pages straight in a stable-memory
//!   `Memory`, through this crate's SQLite VFS, with no file system in between.
//!
//! Both validate every request against the published [`limits`] before they write, return
//! errors as [`StoreError`] values, and make batch inserts all or nothing. Each engine also
//! implements [`engine::StorageEngine`], what a canister needs beyond the table; the
//! [`service`] module holds the Candid service and the lifecycle every store canister shares.
//!
//! ```
//! use ic_stable_structures::VectorMemory;
//! use userstore::{BTreeStore, StoreError, User, UserStore};
//!
//! let mut store = BTreeStore::init(VectorMemory::default());
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
pub mod engine;
pub mod error;
pub mod layout;
pub mod limits;
pub mod service;
pub mod settings;
pub mod sqlite;
#[cfg(feature = "sqlite")]
pub mod stable_sqlite;
pub mod store;
pub mod user;

pub use btree::BTreeStore;
pub use describe::{Engine, EngineInfo};
pub use engine::StorageEngine;
pub use error::{Limit, StoreError};
pub use settings::InitArgs;
#[cfg(feature = "sqlite")]
pub use sqlite::SqliteStore;
pub use sqlite::{JournalMode, LockingMode, SqliteConfig, Synchronous};
#[cfg(feature = "sqlite")]
pub use stable_sqlite::StableSqliteStore;
pub use store::UserStore;
pub use user::User;

#[cfg(all(test, feature = "sqlite"))]
mod tests;
