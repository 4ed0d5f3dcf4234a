//! `per_call_results.yml`: every measured call, in a form made to be diffed in review and
//! read by `scripts/report.py`. Maps are ordered, so the file is the same on every run.

use crate::stats::Spread;
use crate::storage::Storage;
use icrun::{Breakdown, FunctionCost, PageUse};
use serde::Serialize;
use std::collections::BTreeMap;

/// By metering profile, table state, engine configuration and workload.
pub type Calls = BTreeMap<String, BTreeMap<String, BTreeMap<String, BTreeMap<String, Call>>>>;

/// The whole file.
#[derive(Debug, Default, Serialize)]
pub struct Results {
    /// Every call.
    pub calls: Calls,
    /// The stable memory of each filled table, by state and configuration.
    pub storage: BTreeMap<String, BTreeMap<String, Storage>>,
    /// The headline traces, by `<state>_<configuration>_<workload>`, under the IC's current
    /// meter.
    pub traces: BTreeMap<String, TraceSummary>,
}

/// One workload of one configuration under one profile.
#[derive(Debug, Serialize)]
pub struct Call {
    /// `update`, `query` or `replicated`.
    pub mode: &'static str,
    /// The canister method.
    pub method: &'static str,
    /// Rows each message carries; `instructions` is per row when more than one.
    pub rows: u64,
    /// The spread of the measured messages' instructions, every charge included.
    pub instructions: Spread,
    /// Cycles the IC bills for the mean message (0 for a query).
    pub cycles: u64,
    /// Messages one canister executes per round at the mean (docs/metering.md §7.1); 0 for
    /// a query, which runs outside rounds.
    pub calls_per_round: u64,
    /// Bytes of the median message's Candid argument.
    pub argument_bytes: u64,
    /// Where the median message's instructions went.
    pub breakdown: Charges,
}

/// A [`Breakdown`] in the results file.
#[derive(Debug, Serialize)]
pub struct Charges {
    /// Instructions of the message.
    pub instructions: u64,
    /// Wasm operators.
    pub operators: u64,
    /// System API functions: calls and instructions.
    pub system_api: BTreeMap<String, [u64; 2]>,
    /// Stable memory bytes read.
    pub stable_bytes_read: u64,
    /// Stable memory bytes written.
    pub stable_bytes_written: u64,
    /// Page charges with pages and instructions, by kind (only those that occurred).
    pub pages: BTreeMap<&'static str, [u64; 2]>,
}

impl From<&Breakdown> for Charges {
    fn from(breakdown: &Breakdown) -> Self {
        let kinds: [(&'static str, PageUse); 6] = [
            ("stable_4k_dirtied", breakdown.stable_pages_dirtied),
            ("heap_4k_dirtied", breakdown.heap_pages_dirtied),
            ("heap_64k_accessed", breakdown.heap_regions_accessed),
            ("heap_64k_written", breakdown.heap_regions_written),
            ("stable_64k_accessed", breakdown.stable_regions_accessed),
            ("stable_64k_written", breakdown.stable_regions_written),
        ];
        Charges {
            instructions: breakdown.instructions,
            operators: breakdown.operators(),
            system_api: breakdown
                .system_api
                .iter()
                .map(|(name, use_)| (name.to_string(), [use_.calls, use_.instructions]))
                .collect(),
            stable_bytes_read: breakdown.stable_bytes_read,
            stable_bytes_written: breakdown.stable_bytes_written,
            pages: kinds
                .into_iter()
                .filter(|(_, use_)| use_.pages > 0)
                .map(|(kind, use_)| (kind, [use_.pages, use_.instructions]))
                .collect(),
        }
    }
}

/// What a headline call's trace shows.
#[derive(Debug, Serialize)]
pub struct TraceSummary {
    /// The metering profile it ran under.
    pub profile: String,
    /// Instructions of the traced message (the trace adds up to them).
    pub instructions: u64,
    /// The flame graph, relative to the repository.
    pub flamegraph: String,
    /// The functions with the most instructions, callees included.
    pub top_inclusive: Vec<FunctionRow>,
    /// The functions with the most instructions of their own.
    pub top_self: Vec<FunctionRow>,
    /// Every 64 KiB page the message touched (the IC's current meter only).
    pub page_map: Vec<crate::page_map::PageRow>,
}

/// One function of a trace summary.
#[derive(Debug, Serialize)]
pub struct FunctionRow {
    /// Its name.
    pub name: String,
    /// Its own instructions.
    pub self_instructions: u64,
    /// With its callees.
    pub inclusive_instructions: u64,
}

impl From<&FunctionCost> for FunctionRow {
    fn from(cost: &FunctionCost) -> Self {
        FunctionRow {
            name: cost.name.clone(),
            self_instructions: cost.self_instructions,
            inclusive_instructions: cost.inclusive_instructions,
        }
    }
}
