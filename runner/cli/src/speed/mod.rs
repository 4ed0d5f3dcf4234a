//! `icrun speed`: how fast icrun runs canister code, a benchmark of the
//! runtime itself (not a test).
//!
//! - [`workload`] defines what is run: batches of `insert_users` on a B-tree
//!   canister, or repeated calls of one query (e.g. a canbench bench);
//! - [`icrun::Unmetered`] runs the same, uninstrumented module in wasmtime with the
//!   same host functions minus the charges: the baseline of the slowdown;
//! - [`cli`] parses the command line and prints the figures;
//! - [`clock`] measures the thread's CPU time (robust on a shared machine);
//! - [`heap_size`] times a small message on canisters with small and large
//!   heaps, to show the per-message cost does not grow with untouched heap.

pub mod cli;
pub mod clock;
pub mod heap_size;
pub mod workload;

pub use workload::{measure, Speed, Workload};
