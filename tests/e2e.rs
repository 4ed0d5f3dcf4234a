//! The end-to-end tests: each file a module, all in one test binary, so that one harness
//! spreads them over the machine's cores (`--test-threads`). Each module's own documentation
//! says what it covers and needs. sqlite_faults.rs stays a binary of its own: it replaces
//! SQLite's allocator and VFS for its whole process.

mod canisters;
mod chaos;
mod client;
mod differential;
mod edge;
mod edge_differential;
mod edge_jco;
mod faults;
mod limits;
mod million_rows;
mod tracing;
mod upgrades;
