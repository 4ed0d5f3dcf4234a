//! How much stable memory a filled table takes: the whole stable memory, and the engine's own
//! share (its virtual memories and its region, as the memory manager's header records them;
//! without the header page, the settings and the unused rest of the manager's buckets).

use crate::page_map::View;
use ic_stable_structures::Memory;
use icrun::StableMemory;
use serde::Serialize;
use userstore::layout::{formats, REGION_FIRST_PAGE};

/// The settings' virtual memory, which is the canister's, not the engine's.
const SETTINGS_MEMORY: u8 = 0;

/// Virtual memory ids of a memory manager (255 marks a free bucket).
const MEMORY_IDS: std::ops::Range<u8> = 0..255;

/// Stable memory of a filled table.
#[derive(Debug, Clone, Serialize)]
pub struct Storage {
    /// Rows in the table.
    pub rows: u64,
    /// Bytes of the whole stable memory.
    pub stable_bytes: u64,
    /// Bytes of the engine's own memories.
    pub engine_bytes: u64,
    /// `stable_bytes` per row, to one decimal.
    pub stable_bytes_per_row: f64,
    /// `engine_bytes` per row, to one decimal.
    pub engine_bytes_per_row: f64,
}

impl Storage {
    /// The storage of a table of `rows` in `stable`.
    pub fn of(stable: &StableMemory, rows: u64) -> Storage {
        let view = View(stable);
        let page = formats::WASM_PAGE_BYTES;
        let virtual_pages: u64 = MEMORY_IDS
            .filter(|id| *id != SETTINGS_MEMORY)
            .filter_map(|id| formats::virtual_memory_pages(&view, id))
            .sum();
        let region_pages = match formats::manager_end_page(&view) {
            Some(REGION_FIRST_PAGE) => view.size().saturating_sub(REGION_FIRST_PAGE),
            _ => 0,
        };
        let stable_bytes = stable.size_bytes();
        let engine_bytes = (virtual_pages + region_pages) * page;
        let per_row = |bytes: u64| (bytes as f64 / rows as f64 * 10.0).round() / 10.0;
        Storage {
            rows,
            stable_bytes,
            engine_bytes,
            stable_bytes_per_row: per_row(stable_bytes),
            engine_bytes_per_row: per_row(engine_bytes),
        }
    }
}
