//! canbench's result types (canbench-rs 0.7): what each `__canbench__<name>`
//! query replies, in Candid, and what the results file holds, in YAML.
//!
//! ```text
//! type Measurement = record { calls : nat64; instructions : nat64;
//!                             heap_increase : nat64; stable_memory_increase : nat64 };
//! type BenchResult = record { total : Measurement; scopes : vec record { text; Measurement } };
//! ```
//! The field order of the Rust structs is the order of the YAML keys canbench writes.

use candid::CandidType;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One measurement (docs/metering.md §9: memory increases in 64 KiB pages).
/// Fields absent from an older results file read as 0, as in canbench.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, CandidType)]
pub struct Measurement {
    /// Number of calls of the scope (1 for a bench's total).
    #[serde(default)]
    pub calls: u64,
    /// Instructions (`performance_counter(0)` difference).
    #[serde(default)]
    pub instructions: u64,
    /// Heap growth in 64 KiB Wasm pages.
    #[serde(default)]
    pub heap_increase: u64,
    /// Stable memory growth in 64 KiB pages.
    #[serde(default)]
    pub stable_memory_increase: u64,
}

/// The result of one bench: its total and its named scopes.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, CandidType)]
pub struct BenchResult {
    /// The whole bench.
    pub total: Measurement,
    /// Measurements of `bench_scope` scopes, by name.
    #[serde(default)]
    pub scopes: BTreeMap<String, Measurement>,
}

impl BenchResult {
    /// Decodes a bench query's Candid reply.
    pub fn from_candid(bytes: &[u8]) -> Result<BenchResult, String> {
        candid::decode_one(bytes).map_err(|e| format!("error decoding benchmark result: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candid_roundtrip() {
        let result = BenchResult {
            total: Measurement {
                calls: 1,
                instructions: 207,
                heap_increase: 0,
                stable_memory_increase: 2,
            },
            scopes: BTreeMap::from([("load".to_string(), Measurement::default())]),
        };
        let bytes = candid::encode_one(&result).expect("encodes");
        assert_eq!(BenchResult::from_candid(&bytes), Ok(result));
        assert!(BenchResult::from_candid(b"DIDL\x00\x00").is_err());
    }
}
