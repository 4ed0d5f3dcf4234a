//! The benchmark canister: canbench benches of every `userstore` engine and journal mode (the
//! B-tree, SQLite on the polyfill's file system, SQLite straight on stable memory, the page
//! tree), on preloaded 1,000,000-row tables (and 10,000 / 100,000 rows for the table-size
//! comparison).
//!
//! Built for wasm32-wasip1 and converted with wasi2ic, like the SQLite canister. The tables come
//! from a stable-memory image (canbench.yml's `stable_memory.file`) made by `benches/snapshot`
//! through this canister's `seed` method; canbench loads it after install, so nothing here
//! touches stable memory at install.
//!
//! Without its default feature `engines` the crate is the suite alone (the tables, the
//! workloads, [`suite`]'s measuring and bench macros) with no SQLite in it: what the
//! ic-sqlite-vfs peer's bench canister builds on.

pub mod ids;
pub mod suite;
pub mod tables;
pub mod workloads;

#[cfg(all(target_os = "wasi", feature = "engines"))]
mod benches;
#[cfg(all(target_os = "wasi", feature = "engines"))]
mod seed;
#[cfg(all(target_os = "wasi", feature = "engines"))]
pub mod stores;
