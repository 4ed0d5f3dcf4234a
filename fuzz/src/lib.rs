//! Fuzz targets that run on the stable toolchain (cargo-fuzz's libFuzzer needs a nightly
//! compiler, which the build machines cannot fetch): each target takes arbitrary bytes and
//! checks an invariant, panicking when it does not hold. [`run`] feeds a target the committed
//! corpus (`fuzz/corpus/<target>/`) and, for as many iterations as asked, inputs mutated from
//! it by a seeded generator (bytes replaced, inserted, removed, cut, spliced). A failing input
//! is written to `fuzz/crashes/<target>-<n>`, to be replayed with `fuzz <target> --input FILE`.
//!
//! - [`args`]: the service's argument decoding against `candid`'s;
//! - [`memory_file`]: the stable-memory SQLite engine's file (the VFS's storage) against a
//!   byte vector, reopened from its memory now and then;
//! - [`engines`]: every native engine against the model, the page cache under eviction;
//! - [`edge_request`]: the edge layer's HTTP request decoding and dispatch.

pub mod args;
pub mod edge_request;
pub mod engines;
pub mod input;
pub mod memory_file;
mod mutate;

pub use mutate::{run, Outcome};

/// A fuzz target: bytes in, a panic when an invariant breaks.
pub type Target = fn(&[u8]);

/// The targets by name.
pub const TARGETS: [(&str, Target); 4] = [
    ("args", args::check),
    ("edge_request", edge_request::check),
    ("memory_file", memory_file::check),
    ("engines", engines::check),
];

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// CI's slice: every target on its corpus and a fixed number of mutations.
    #[test]
    fn every_target_holds_on_its_corpus_and_mutations() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        for (name, target) in TARGETS {
            let iterations = if name == "engines" { 60 } else { 3_000 };
            let outcome = run(root, name, target, iterations, 7);
            assert!(outcome.crashes.is_empty(), "{name}: {:?}", outcome.crashes);
        }
    }
}
