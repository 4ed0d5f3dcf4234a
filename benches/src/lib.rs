//! The benchmark canister: canbench benches of every `userstore` engine and journal mode (the
//! B-tree, SQLite on the polyfill's file system, SQLite straight on stable memory), on
//! preloaded 1,000,000-row tables (and 10,000 / 100,000 rows for the table-size
//! comparison).
//!
//! Built for wasm32-wasip1 and converted with wasi2ic, like the SQLite canister. The tables come
//! from a stable-memory image (canbench.yml's `stable_memory.file`) made by `benches/snapshot`
//! through this canister's `seed` method; canbench loads it after install, so nothing here
//! touches stable memory at install.

pub mod ids;
pub mod tables;
pub mod workloads;

#[cfg(target_os = "wasi")]
mod benches;
#[cfg(target_os = "wasi")]
mod seed;
#[cfg(target_os = "wasi")]
pub mod stores;
