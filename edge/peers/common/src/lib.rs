//! What the edge peers share: which engine a data file belongs to ([`kind`]), and the
//! conformance tests every peer passes against a model (`conformance`, feature
//! `conformance`), and, as the edge host's engine, the session around a peer store
//! (`session`, feature `edge`). The `wasi:http/proxy` glue of the peers' components is the
//! library's (`userstore::edge::wasi_http`).

#[cfg(feature = "conformance")]
pub mod conformance;
pub mod io;
pub mod kind;
pub mod page;
#[cfg(feature = "edge")]
pub mod session;

pub use io::{IoCounters, IoCounts};
pub use kind::{check_file, FileKind};
pub use page::page_start;
