//! What the edge peers share: which engine a data file belongs to ([`kind`]), and the
//! conformance tests every peer passes against a model (`conformance`, feature
//! `conformance`), and, as the edge host's engine, the session around a peer store
//! (`session`, feature `edge`) and the `wasi:http/proxy` glue (`component`, feature
//! `component`, WASI only).

#[cfg(all(feature = "component", target_os = "wasi"))]
pub mod component;
#[cfg(feature = "conformance")]
pub mod conformance;
pub mod kind;
#[cfg(feature = "edge")]
pub mod session;

pub use kind::{check_file, FileKind};
