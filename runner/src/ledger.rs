//! Where a message's instructions went: the [`Breakdown`] icrun reports with every
//! [`crate::CallResult`] (and `icrun call --breakdown`, `icrun bench --breakdown`).
//!
//! The runtime adds every charge it makes outside the Wasm code to a [`Ledger`] as it makes
//! it: each system API function's charge (docs/metering.md §4, §5) and each page charge
//! (§6). What is left of the message's instructions was charged by the Wasm code itself:
//! its operators, block by block (§2, §3), and the per-byte part of its bulk memory
//! operations. So the parts always add up to the total.

use crate::prices::Api;
use std::collections::BTreeMap;

/// Calls of one system API function and the instructions they were charged.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ApiUse {
    /// How many times it was called.
    pub calls: u64,
    /// Instructions its calls were charged (without the caller's `call` operator and without
    /// page charges, which are counted apart).
    pub instructions: u64,
}

/// Page charges of one kind: how many pages and what they cost.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PageUse {
    /// Pages (4 KiB or 64 KiB, see the field that holds this).
    pub pages: u64,
    /// Instructions charged for them.
    pub instructions: u64,
}

/// Where the instructions of a message (or of a window of it) went.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Breakdown {
    /// Every instruction of the message, as [`crate::CallResult::instructions`] counts them.
    pub instructions: u64,
    /// System API functions called, by name.
    pub system_api: BTreeMap<&'static str, ApiUse>,
    /// Bytes copied from stable memory by `stable*_read`.
    pub stable_bytes_read: u64,
    /// Bytes copied to stable memory by `stable*_write`.
    pub stable_bytes_written: u64,
    /// 4 KiB stable pages a write dirtied first in the message
    /// ([`crate::Metering::PocketIc13`] charges them, in-band).
    pub stable_pages_dirtied: PageUse,
    /// 4 KiB heap pages the message dirtied ([`crate::Metering::PocketIc13`] charges them
    /// after update, init and upgrade messages; queries are not charged).
    pub heap_pages_dirtied: PageUse,
    /// 64 KiB Wasm pages of the heap first accessed ([`crate::Metering::Current`]).
    pub heap_regions_accessed: PageUse,
    /// 64 KiB Wasm pages of the heap first written ([`crate::Metering::Current`]).
    pub heap_regions_written: PageUse,
    /// 64 KiB pages of stable memory first accessed ([`crate::Metering::Current`]).
    pub stable_regions_accessed: PageUse,
    /// 64 KiB pages of stable memory first written ([`crate::Metering::Current`]).
    pub stable_regions_written: PageUse,
}

impl Breakdown {
    /// Instructions of every system API call together.
    pub fn system_api_instructions(&self) -> u64 {
        self.system_api.values().map(|use_| use_.instructions).sum()
    }

    /// Instructions of every page charge together.
    pub fn page_instructions(&self) -> u64 {
        [
            self.stable_pages_dirtied,
            self.heap_pages_dirtied,
            self.heap_regions_accessed,
            self.heap_regions_written,
            self.stable_regions_accessed,
            self.stable_regions_written,
        ]
        .iter()
        .map(|use_| use_.instructions)
        .sum()
    }

    /// Instructions the Wasm code was charged for its own operators (blocks and bulk-memory
    /// bytes): what is left once the system API and the pages are accounted for.
    pub fn operators(&self) -> u64 {
        self.instructions
            .saturating_sub(self.system_api_instructions())
            .saturating_sub(self.page_instructions())
    }
}

/// The charges of the message in progress, kept by the runtime as it makes them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Ledger {
    /// Per system API function, indexed by [`Api`] (a map would cost a lookup per call).
    api: Vec<ApiUse>,
    /// The byte and page charges, in the shape they are reported: only its stable byte and
    /// page fields are kept here (`instructions` and `system_api` stay empty; [`Ledger::since`]
    /// fills them in).
    pub memory: Breakdown,
}

impl Default for Ledger {
    fn default() -> Self {
        Ledger {
            api: vec![ApiUse::default(); Api::ALL.len()],
            memory: Breakdown::default(),
        }
    }
}

impl PageUse {
    /// Adds `pages` pages costing `instructions`.
    pub(crate) fn add(&mut self, pages: u64, instructions: u64) {
        self.pages += pages;
        self.instructions += instructions;
    }

    fn minus(self, earlier: PageUse) -> PageUse {
        PageUse {
            pages: self.pages.saturating_sub(earlier.pages),
            instructions: self.instructions.saturating_sub(earlier.instructions),
        }
    }
}

impl Breakdown {
    /// The byte and page charges made after `earlier`'s, with `instructions` and `system_api`
    /// as given.
    fn memory_since(
        &self,
        earlier: &Breakdown,
        instructions: u64,
        system_api: BTreeMap<&'static str, ApiUse>,
    ) -> Breakdown {
        Breakdown {
            instructions,
            system_api,
            stable_bytes_read: self
                .stable_bytes_read
                .saturating_sub(earlier.stable_bytes_read),
            stable_bytes_written: self
                .stable_bytes_written
                .saturating_sub(earlier.stable_bytes_written),
            stable_pages_dirtied: self
                .stable_pages_dirtied
                .minus(earlier.stable_pages_dirtied),
            heap_pages_dirtied: self.heap_pages_dirtied.minus(earlier.heap_pages_dirtied),
            heap_regions_accessed: self
                .heap_regions_accessed
                .minus(earlier.heap_regions_accessed),
            heap_regions_written: self
                .heap_regions_written
                .minus(earlier.heap_regions_written),
            stable_regions_accessed: self
                .stable_regions_accessed
                .minus(earlier.stable_regions_accessed),
            stable_regions_written: self
                .stable_regions_written
                .minus(earlier.stable_regions_written),
        }
    }
}

impl Ledger {
    /// Records one call of `api` charged `instructions`.
    pub fn api_call(&mut self, api: Api, instructions: u64) {
        let use_ = &mut self.api[api as usize];
        use_.calls += 1;
        use_.instructions += instructions;
    }

    /// The breakdown of a message of `instructions` instructions with these charges.
    pub fn breakdown(&self, instructions: u64) -> Breakdown {
        self.since(&Ledger::default(), instructions)
    }

    /// The breakdown of the charges made after `earlier` was copied, for a window of
    /// `instructions` instructions.
    pub fn since(&self, earlier: &Ledger, instructions: u64) -> Breakdown {
        let system_api = Api::ALL
            .iter()
            .map(|api| {
                let (now, then) = (self.api[*api as usize], earlier.api[*api as usize]);
                let use_ = ApiUse {
                    calls: now.calls.saturating_sub(then.calls),
                    instructions: now.instructions.saturating_sub(then.instructions),
                };
                (api.name(), use_)
            })
            .filter(|(_, use_)| use_.calls > 0)
            .collect();
        self.memory
            .memory_since(&earlier.memory, instructions, system_api)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operators_are_what_the_runtime_did_not_charge() {
        let mut ledger = Ledger::default();
        ledger.api_call(Api::MsgReply, 500);
        ledger.api_call(Api::MsgReply, 500);
        ledger.memory.stable_pages_dirtied.add(2, 2_000);
        let breakdown = ledger.breakdown(10_000);
        assert_eq!(breakdown.system_api["msg_reply"].calls, 2);
        assert_eq!(breakdown.system_api_instructions(), 1_000);
        assert_eq!(breakdown.page_instructions(), 2_000);
        assert_eq!(breakdown.operators(), 7_000);
        assert!(!breakdown.system_api.contains_key("msg_reject"));
    }

    #[test]
    fn a_window_subtracts_what_came_before() {
        let mut ledger = Ledger::default();
        ledger.api_call(Api::PerformanceCounter, 200);
        let start = ledger.clone();
        ledger.api_call(Api::PerformanceCounter, 200);
        ledger.memory.stable_bytes_read += 64;
        let window = ledger.since(&start, 1_000);
        assert_eq!(window.system_api["performance_counter"].calls, 1);
        assert_eq!(window.stable_bytes_read, 64);
        assert_eq!(window.operators(), 800);
    }
}
