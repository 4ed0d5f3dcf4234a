//! Limits on how far a canister's memories may grow, below the IC's own maxima
//! (docs/metering.md §7), to inject the failures a full canister meets: `stable64_grow` and
//! `stable_grow` return −1 past the stable memory limit, as on the IC when the canister's
//! memory allocation or the subnet is full; `memory.grow` returns −1 past the heap limit,
//! as Wasm specifies for a failed grow.
//!
//! They apply to messages only: [`crate::Canister`] sets them at the start of each message
//! and clears them at its end, so that the runtime's own growing (instantiating a module,
//! rolling back onto a fresh instance, restoring a snapshot) is never refused.

use wasmtime::ResourceLimiter;

/// Size of a Wasm page, the heap limit's unit (64 KiB, as stable memory's pages, §5).
const WASM_PAGE: u64 = 64 * 1024;

/// How far the memories may grow during the message in progress (`None`: the IC's maxima).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct MemoryLimits {
    /// Stable memory, in 64 KiB pages.
    pub stable_pages: Option<u64>,
    /// The heap (memory 0), in 64 KiB Wasm pages.
    pub heap_pages: Option<u64>,
}

impl MemoryLimits {
    /// The most pages a stable grow may reach, given the API's own maximum `max_pages`.
    pub fn stable_max(&self, max_pages: u64) -> u64 {
        self.stable_pages
            .map_or(max_pages, |limit| limit.min(max_pages))
    }

    /// Whether the heap may grow to `desired` bytes.
    pub fn heap_allows(&self, desired: usize) -> bool {
        self.heap_pages
            .is_none_or(|pages| desired as u64 <= pages.saturating_mul(WASM_PAGE))
    }
}

/// wasmtime consults the store's limiter at every `memory.grow`; a refusal makes it return
/// −1 and leaves the memory as it was.
impl ResourceLimiter for MemoryLimits {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(self.heap_allows(desired))
    }

    fn table_growing(
        &mut self,
        _current: usize,
        _desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_cap_growth_and_none_is_the_ic_maximum() {
        let none = MemoryLimits::default();
        assert_eq!(none.stable_max(65_536), 65_536);
        assert!(none.heap_allows(usize::MAX));
        let limits = MemoryLimits {
            stable_pages: Some(3),
            heap_pages: Some(2),
        };
        assert_eq!(limits.stable_max(65_536), 3);
        // A limit above the API's own maximum does not raise it.
        let high = MemoryLimits {
            stable_pages: Some(1 << 40),
            heap_pages: None,
        };
        assert_eq!(high.stable_max(65_536), 65_536);
        assert!(limits.heap_allows(2 * 65_536));
        assert!(!limits.heap_allows(2 * 65_536 + 1));
    }
}
