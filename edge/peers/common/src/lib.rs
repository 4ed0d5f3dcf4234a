//! What the edge peers share: which engine a data file belongs to ([`kind`]), and the
//! conformance tests every peer passes against a model ([`conformance`], feature
//! `conformance`).

#[cfg(feature = "conformance")]
pub mod conformance;
pub mod kind;

pub use kind::{check_file, FileKind};
