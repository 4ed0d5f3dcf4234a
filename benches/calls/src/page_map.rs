//! The page map of a traced call: every 64 KiB page of heap or stable memory the message
//! touched, what it holds, and the function that first touched (and first wrote) it — the
//! instrument for cutting pages under the IC's current meter (docs/metering.md §6).

use ic_stable_structures::Memory;
use icrun::{Canister, HeapLayout, MemoryKind, PageTouch, StableMemory};
use serde::Serialize;
use userstore::layout::{self, formats, REGION_FIRST_PAGE};

/// One page of a call's page map.
#[derive(Debug, Clone, Serialize)]
pub struct PageRow {
    /// `heap` or `stable`.
    pub memory: &'static str,
    /// The page's index in that memory.
    pub page: u64,
    /// For an upgrade's heap pages, the instance whose heap it is in: `pre_upgrade` (the old
    /// one) or `post_upgrade` (the fresh one); absent in a message of one instance.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instance: Option<&'static str>,
    /// What it holds: a heap region (stack, static data, heap) or the stable-memory
    /// structure at that offset.
    pub holds: String,
    /// The function that first touched it.
    pub accessed_by: String,
    /// The function that first wrote it, if the message wrote it.
    pub written_by: Option<String>,
    /// What the page cost the message.
    pub instructions: u64,
}

/// The page map of the touches `touches` of `canister`'s message.
pub fn rows(canister: &Canister, touches: &[PageTouch]) -> Vec<PageRow> {
    let heap = canister.heap_layout();
    let stable = canister.stable_memory();
    touches
        .iter()
        .map(|touch| PageRow {
            memory: touch.memory.name(),
            page: touch.page,
            instance: None,
            holds: match touch.memory {
                MemoryKind::Heap => heap_holds(&heap, touch.page),
                MemoryKind::Stable => stable_holds(stable, touch.page),
            },
            accessed_by: touch.accessed_by.clone(),
            written_by: touch.written_by.clone(),
            instructions: touch.instructions,
        })
        .collect()
}

/// The page map of an upgrade's touches `touches` on `canister` (upgraded): [`rows`], each
/// heap page named by the instance whose heap it is in. Both instances run the same Wasm,
/// so the upgraded one's layout names the regions of both heaps.
pub fn upgrade_rows(canister: &Canister, touches: &[PageTouch]) -> Vec<PageRow> {
    let mut rows = rows(canister, touches);
    for (row, touch) in rows.iter_mut().zip(touches) {
        if touch.memory == MemoryKind::Heap {
            row.instance = Some(match touch.instance {
                0 => "pre_upgrade",
                _ => "post_upgrade",
            });
        }
    }
    rows
}

/// The heap regions a page overlaps, in address order.
fn heap_holds(heap: &HeapLayout, page: u64) -> String {
    heap.regions_of_page(page)
        .iter()
        .map(|region| region.name())
        .collect::<Vec<_>>()
        .join(" + ")
}

/// What a stable-memory page holds in a store canister's layout (`userstore::layout`).
fn stable_holds(stable: &StableMemory, page: u64) -> String {
    let view = View(stable);
    if page == 0 {
        return "memory manager's header".into();
    }
    match formats::bucket_owner(&view, page) {
        Some(id) => format!("virtual memory {id}: {}", memory_name(id)),
        None if formats::manager_end_page(&view) == Some(REGION_FIRST_PAGE)
            && page >= REGION_FIRST_PAGE =>
        {
            "the engine's region".into()
        }
        None => "outside the memory manager".into(),
    }
}

/// What the layout keeps in virtual memory `id`.
fn memory_name(id: u8) -> &'static str {
    let known = [
        (layout::SETTINGS_MEMORY_ID, "settings"),
        (layout::BTREE_USERS_MEMORY_ID, "B-tree (earlier layout)"),
        (layout::SQLITE_DATABASE_MEMORY_ID, "SQLite database file"),
        (layout::ENGINE_DATA_MEMORY_ID, "engine data"),
        (
            layout::STABLE_SQLITE_DATABASE_MEMORY_ID,
            "stable SQLite database",
        ),
    ];
    if layout::FILE_SYSTEM_MEMORY_IDS.contains(&id) {
        return "WASI file system";
    }
    known
        .into_iter()
        .find(|(known, _)| *known == ic_stable_structures::memory_manager::MemoryId::new(id))
        .map_or("unknown", |(_, name)| name)
}

/// A canister's stable memory, read through ic-stable-structures' `Memory` trait so the
/// layout's readers of its formats work on it. It is only read.
pub struct View<'a>(pub &'a StableMemory);

impl Memory for View<'_> {
    fn size(&self) -> u64 {
        self.0.size_pages()
    }

    fn grow(&self, _pages: u64) -> i64 {
        unreachable!("a view of a canister's stable memory is only read")
    }

    fn read(&self, offset: u64, dst: &mut [u8]) {
        // The readers stay within the memory's size; past it a view reads zeros.
        if self.0.read(offset, dst).is_err() {
            dst.fill(0);
        }
    }

    fn write(&self, _offset: u64, _src: &[u8]) {
        unreachable!("a view of a canister's stable memory is only read")
    }
}
