//! The `icrun` command line, apart from the runtime library (`icrun`):
//!
//! - [`bench`] is `icrun bench`, canbench on icrun, with `--instruction-tracing`,
//!   `--breakdown` and `--metering`;
//! - [`call`] is `icrun call`, one method call on a freshly installed canister;
//! - [`speed`] is `icrun speed`, a benchmark of icrun itself;
//! - [`candid_io`] converts Candid text to bytes and back;
//! - [`flamegraph`] places `icrun bench`'s flame graphs (rendered by `icrun::flamegraph`);
//! - [`breakdown`] prints where a message's instructions went;
//! - [`page_map`] prints the memory pages a call touched (`icrun call --page-map`);
//! - [`args`] parses a subcommand's arguments with clap.

pub mod args;
pub mod bench;
pub mod breakdown;
pub mod call;
pub mod candid_io;
pub mod flamegraph;
pub mod page_map;
pub mod speed;
