//! `icrun call --page-map`: every 64 KiB page of heap and stable memory the call touched,
//! what the page holds, who touched and wrote it first, and what it cost (the current
//! meter's page charges, docs/metering.md §6).

use icrun::flamegraph::group_thousands;
use icrun::{Breakdown, HeapLayout, MemoryKind, PageTouch};
use std::fmt::Write;

/// The page charges of `breakdown` the map accounts for: the current meter's 64 KiB page
/// accesses and writes, of the heap and of stable memory.
pub fn page_charges(breakdown: &Breakdown) -> u64 {
    [
        breakdown.heap_regions_accessed,
        breakdown.heap_regions_written,
        breakdown.stable_regions_accessed,
        breakdown.stable_regions_written,
    ]
    .iter()
    .map(|pages| pages.instructions)
    .sum()
}

/// What a heap page holds by `layout` (`stack`, `static data`, `heap`, joined with `+` when
/// the page straddles regions); nothing for a stable page.
fn region(touch: &PageTouch, layout: &HeapLayout) -> String {
    match touch.memory {
        MemoryKind::Heap => layout
            .regions_of_page(touch.page)
            .iter()
            .map(|region| region.name())
            .collect::<Vec<_>>()
            .join("+"),
        MemoryKind::Stable => "-".to_string(),
    }
}

/// The map as text: a header, one line per page (memory, page index, byte range, region,
/// instructions, first accessor and first writer) and the total, which equals the call's
/// page charges in `breakdown` (a line says so if it ever does not).
pub fn render(touches: &[PageTouch], layout: &HeapLayout, breakdown: &Breakdown) -> String {
    let mut text = String::new();
    let _ = writeln!(
        text,
        "page map: 64 KiB pages first touched in the call (heap: stack {:#x}..{:#x}, static data \
         {:#x}..{:#x}, heap from {:#x})",
        layout.stack.start,
        layout.stack.end,
        layout.static_data.start,
        layout.static_data.end,
        layout.heap_start
    );
    let _ = writeln!(
        text,
        "  {:<6} {:>8}  {:<26} {:<22} {:>12}  by",
        "memory", "page", "bytes", "region", "instructions"
    );
    for touch in touches {
        let bytes = touch.bytes();
        let range = format!("{:#010x}..{:#010x}", bytes.start, bytes.end);
        let by = match &touch.written_by {
            Some(writer) => format!("accessed by {}, written by {writer}", touch.accessed_by),
            None => format!("accessed by {}", touch.accessed_by),
        };
        let _ = writeln!(
            text,
            "  {:<6} {:>8}  {:<26} {:<22} {:>12}  {by}",
            touch.memory.name(),
            touch.page,
            range,
            region(touch, layout),
            group_thousands(touch.instructions),
        );
    }
    let written = touches.iter().filter(|t| t.written_by.is_some()).count();
    let total: u64 = touches.iter().map(|t| t.instructions).sum();
    let summary = format!("{} pages, {written} written", touches.len());
    let _ = writeln!(
        text,
        "  {:<6} {:>8}  {:<26} {:<22} {:>12}",
        "total",
        "",
        summary,
        "",
        group_thousands(total)
    );
    let charged = page_charges(breakdown);
    if charged != total {
        let _ = writeln!(
            text,
            "  (the call was charged {} for these pages: the map is incomplete)",
            group_thousands(charged)
        );
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use icrun::PageUse;

    fn touch(memory: MemoryKind, page: u64, written: bool) -> PageTouch {
        PageTouch {
            memory,
            page,
            instance: 0,
            accessed_by: "reader".into(),
            written_by: written.then(|| "writer".into()),
            instructions: if written { 160_000 } else { 80_000 },
        }
    }

    #[test]
    fn one_line_per_page_and_a_total_that_matches_the_charges() {
        let layout = HeapLayout {
            stack: 0..0x10000,
            static_data: 0x10000..0x10100,
            heap_start: 0x10100,
        };
        let touches = [
            touch(MemoryKind::Heap, 0, true),
            touch(MemoryKind::Heap, 1, false),
            touch(MemoryKind::Stable, 3, true),
        ];
        let mut breakdown = Breakdown {
            heap_regions_accessed: PageUse {
                pages: 2,
                instructions: 160_000,
            },
            heap_regions_written: PageUse {
                pages: 1,
                instructions: 80_000,
            },
            stable_regions_accessed: PageUse {
                pages: 1,
                instructions: 80_000,
            },
            stable_regions_written: PageUse {
                pages: 1,
                instructions: 80_000,
            },
            ..Breakdown::default()
        };
        let text = render(&touches, &layout, &breakdown);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 6, "{text}");
        assert!(lines[2].contains("heap"), "{text}");
        assert!(lines[2].contains("0x00000000..0x00010000"), "{text}");
        assert!(lines[2].contains(" stack "), "{text}");
        assert!(
            lines[2].contains("accessed by reader, written by writer"),
            "{text}"
        );
        assert!(lines[3].contains("static data+heap"), "{text}");
        assert!(
            lines[3].trim_end().ends_with("accessed by reader"),
            "{text}"
        );
        assert!(
            lines[4].contains("stable") && lines[4].contains(" - "),
            "{text}"
        );
        assert!(lines[5].contains("3 pages, 2 written"), "{text}");
        assert!(lines[5].trim_end().ends_with("400,000"), "{text}");
        // A map that misses a charge says so.
        breakdown.stable_regions_written.instructions += 80_000;
        let text = render(&touches, &layout, &breakdown);
        assert!(text.contains("charged 480,000"), "{text}");
    }
}
