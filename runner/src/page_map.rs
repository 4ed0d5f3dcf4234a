//! The page map of a message: every 64 KiB page of heap or stable memory it touched, which
//! function touched it first and which function wrote it first, with what the page cost.
//!
//! Under [`crate::Metering::Current`] each such page is charged when first accessed and,
//! in update, init and upgrade messages, again when first written (docs/metering.md §6).
//! A message recording a [`crate::Trace`] also records these first touches
//! ([`crate::Trace::page_touches`]); recording costs the canister nothing (§1), and the
//! map's instructions add up to the message's page charges in its [`crate::Breakdown`].
//!
//! Who touched a page is decided by the runtime when it applies the charge (see
//! `system_api`): heap faults are charged at the next trace hook or system call, and
//! between two of those only one function runs, the innermost open frame of the trace
//! (an ic0 function for the heap bytes a system call reads or writes itself); a stable
//! page is charged by the `stable*_read`/`stable*_write` call itself and attributed to
//! the Wasm function that called it.

use crate::function_names::FunctionNames;
use std::collections::HashMap;
use std::ops::Range;

/// Size of the pages the map lists (docs/metering.md §6: the replica's memory tracker
/// charges 64 KiB Wasm pages, of the heap and of stable memory alike).
pub const PAGE_BYTES: u64 = 64 * 1024;

/// The name a touch is attributed to when no function was running (the runtime applied
/// the charge outside any traced frame; not expected for a message that ran normally).
pub const RUNTIME_TOUCHER: &str = "[runtime]";

/// Which memory a page belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum MemoryKind {
    /// The Wasm heap (memory 0).
    Heap,
    /// Stable memory.
    Stable,
}

impl MemoryKind {
    /// A lower-case name: `heap` or `stable`.
    pub fn name(self) -> &'static str {
        match self {
            MemoryKind::Heap => "heap",
            MemoryKind::Stable => "stable",
        }
    }
}

/// A 64 KiB page a message touched, with who touched it and what it cost.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageTouch {
    /// The memory the page is in.
    pub memory: MemoryKind,
    /// Its index in that memory, in 64 KiB pages.
    pub page: u64,
    /// The instance whose heap it is in: 0 for the message's, 1 for the fresh instance an
    /// upgrade's `post_upgrade` runs on (its heap pages are new pages, even at the same
    /// indices). Always 0 for stable memory, which the instances share.
    pub instance: u32,
    /// The (demangled) name of the function that touched it first in the message: the
    /// innermost function running for a heap page (an ic0 function such as
    /// `ic0::msg_arg_data_copy` when the system call itself read or wrote the bytes), the
    /// Wasm function that called the stable memory API for a stable page.
    pub accessed_by: String,
    /// The function that wrote it first, if the message's writes are charged and it wrote
    /// the page (updates, init, upgrade; queries are charged for accesses only).
    pub written_by: Option<String>,
    /// The instructions the page was charged in the message: its access, and its write.
    pub instructions: u64,
}

impl PageTouch {
    /// The page's bytes in its memory.
    pub fn bytes(&self) -> Range<u64> {
        let start = self.page.saturating_mul(PAGE_BYTES);
        start..start.saturating_add(PAGE_BYTES)
    }
}

/// A touch as recorded, with function indices (`None`: no function was running).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Touch {
    memory: MemoryKind,
    page: u64,
    instance: u32,
    accessed_by: Option<u32>,
    written_by: Option<Option<u32>>,
    instructions: u64,
}

/// The first touches of the message in progress, by function index.
#[derive(Debug, Default)]
pub(crate) struct PageLog {
    touches: Vec<Touch>,
    /// The entry in `touches` of each page of the current heap and of stable memory.
    entries: HashMap<(MemoryKind, u64), usize>,
    /// The instance whose heap is the current one ([`PageTouch::instance`]).
    heap_instance: u32,
}

impl PageLog {
    /// The entry of `page` of `memory`, created as accessed by `by` if it has none.
    fn entry(&mut self, memory: MemoryKind, page: u64, by: Option<u32>) -> &mut Touch {
        let next = self.touches.len();
        let index = *self.entries.entry((memory, page)).or_insert(next);
        if index == next {
            let instance = match memory {
                MemoryKind::Heap => self.heap_instance,
                MemoryKind::Stable => 0,
            };
            self.touches.push(Touch {
                memory,
                page,
                instance,
                accessed_by: by,
                written_by: None,
                instructions: 0,
            });
        }
        &mut self.touches[index]
    }

    /// Records the first access of `page` of `memory` by function `by`, charged
    /// `instructions`.
    pub fn accessed(&mut self, memory: MemoryKind, page: u64, by: Option<u32>, instructions: u64) {
        self.entry(memory, page, by).instructions += instructions;
    }

    /// Records the first write of `page` of `memory` by function `by`, charged
    /// `instructions` (a page is accessed before it is written; should the access be missing,
    /// the writer is recorded as the first accessor too).
    pub fn written(&mut self, memory: MemoryKind, page: u64, by: Option<u32>, instructions: u64) {
        let touch = self.entry(memory, page, by);
        touch.written_by.get_or_insert(by);
        touch.instructions += instructions;
    }

    /// The message goes on with another heap (an upgrade's post_upgrade runs on a fresh
    /// instance): later heap touches are of new pages, even at the same indices.
    pub fn new_heap(&mut self) {
        self.entries
            .retain(|(memory, _), _| *memory != MemoryKind::Heap);
        self.heap_instance += 1;
    }

    /// The touches with their functions named, ordered by memory, then instance (an
    /// upgrade's two heaps in the order they ran), then page.
    pub fn finish(self, names: &FunctionNames) -> Vec<PageTouch> {
        let name = |by: Option<u32>| match by {
            Some(index) => names.name(index),
            None => RUNTIME_TOUCHER.to_string(),
        };
        let mut touches: Vec<PageTouch> = self
            .touches
            .into_iter()
            .map(|touch| PageTouch {
                memory: touch.memory,
                page: touch.page,
                instance: touch.instance,
                accessed_by: name(touch.accessed_by),
                written_by: touch.written_by.map(name),
                instructions: touch.instructions,
            })
            .collect();
        touches.sort_by_key(|touch| (touch.memory, touch.instance, touch.page));
        touches
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn touches_are_merged_per_page_and_ordered() {
        let mut log = PageLog::default();
        log.accessed(MemoryKind::Stable, 2, Some(7), 80);
        log.accessed(MemoryKind::Heap, 5, Some(3), 80);
        log.accessed(MemoryKind::Heap, 1, None, 80);
        log.written(MemoryKind::Heap, 5, Some(4), 80);
        // A second write of the page keeps its first writer.
        log.written(MemoryKind::Heap, 5, Some(9), 0);
        let touches = log.finish(&FunctionNames::default());
        let summary: Vec<_> = touches
            .iter()
            .map(|t| {
                (
                    t.memory,
                    t.page,
                    t.accessed_by.as_str(),
                    t.written_by.as_deref(),
                    t.instructions,
                )
            })
            .collect();
        assert_eq!(
            summary,
            vec![
                (MemoryKind::Heap, 1, RUNTIME_TOUCHER, None, 80),
                (MemoryKind::Heap, 5, "func_3", Some("func_4"), 160),
                (MemoryKind::Stable, 2, "func_7", None, 80),
            ]
        );
        assert_eq!(touches[2].bytes(), 2 * PAGE_BYTES..3 * PAGE_BYTES);
    }

    #[test]
    fn a_new_heap_starts_new_heap_pages_and_keeps_stable_ones() {
        let mut log = PageLog::default();
        log.accessed(MemoryKind::Heap, 0, Some(1), 80);
        log.accessed(MemoryKind::Heap, 4, Some(1), 80);
        log.accessed(MemoryKind::Stable, 0, Some(1), 80);
        log.new_heap();
        log.accessed(MemoryKind::Heap, 0, Some(2), 80);
        log.written(MemoryKind::Stable, 0, Some(2), 80);
        // A write without an access names the writer for both.
        log.written(MemoryKind::Heap, 3, Some(5), 80);
        let touches = log.finish(&FunctionNames::default());
        let heap: Vec<_> = touches
            .iter()
            .filter(|t| t.memory == MemoryKind::Heap)
            .map(|t| {
                (
                    t.instance,
                    t.page,
                    t.accessed_by.as_str(),
                    t.written_by.as_deref(),
                )
            })
            .collect();
        // The first heap's pages, then the new one's, each in page order.
        assert_eq!(
            heap,
            vec![
                (0, 0, "func_1", None),
                (0, 4, "func_1", None),
                (1, 0, "func_2", None),
                (1, 3, "func_5", Some("func_5")),
            ]
        );
        let stable = &touches[4];
        assert_eq!(stable.instance, 0, "stable memory is the instances' own");
        assert_eq!(
            (stable.accessed_by.as_str(), stable.written_by.as_deref()),
            ("func_1", Some("func_2"))
        );
        assert_eq!(stable.instructions, 160);
    }
}
