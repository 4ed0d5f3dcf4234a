//! What the bytes of a canister's heap hold, read from its module: the shadow stack, the
//! static data and where the heap proper (the allocator's memory) begins.
//!
//! A module compiled by LLVM (rustc, clang) for wasm32 keeps a *shadow stack* in linear
//! memory, addressed by a mutable global, the stack pointer (`__stack_pointer`), that
//! grows down from its initial value. Static data is placed by active data segments, and
//! the allocator starts at `__heap_base`, a global LLD exports when it is not stripped. Two
//! layouts are common:
//!
//! - **stack first** (`--stack-first`, what rustc passes for every wasm target): the stack
//!   occupies `[0, initial stack pointer)` (1 MiB by default), static data follows, then the
//!   heap;
//! - **stack last** (LLD's default, e.g. clang without `--stack-first`): static data from a
//!   small base address (1 KiB), the stack above it, growing down towards the data, then the
//!   heap.
//!
//! [`HeapLayout::of`] finds both from the module alone, without relying on exports a build
//! may strip (wasi2ic and ic-wasm keep globals and data segments, not always exports or the
//! name section). The heuristics and their limits are documented on each field.

use std::ops::Range;
use wasmparser::{
    ConstExpr, DataKind, ExternalKind, KnownCustom, Name, Operator, Parser, Payload, TypeRef,
    ValType,
};

/// The name LLD gives the stack pointer global.
const STACK_POINTER: &str = "__stack_pointer";
/// The name of the global LLD sets to the first byte after static data and the stack.
const HEAP_BASE: &str = "__heap_base";
/// The alignment LLD gives the stack pointer and `__heap_base` (the wasm C ABI's stack
/// alignment, 16 bytes); a guessed heap start is rounded up to it.
const HEAP_ALIGN: u64 = 16;
/// Size of a Wasm page of the heap (64 KiB, the unit docs/metering.md §6 charges).
const WASM_PAGE: u64 = 64 * 1024;

/// The layout of a module's heap (memory 0): which bytes are stack, static data and heap.
///
/// Derived from the module's globals and data segments by [`HeapLayout::of`]; every field
/// is a best guess for modules linked by LLD and is exact for rustc's wasm32 output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeapLayout {
    /// The shadow stack: `[lowest address the stack may reach, initial stack pointer)`.
    ///
    /// The stack pointer is the global exported as `__stack_pointer`, else the one the name
    /// section calls so, else global 0, if it is a mutable global of the memory's address
    /// type (i32, or i64 on wasm64) initialised by a constant; LLD always makes the stack
    /// pointer global 0. The stack grows down from its initial value to the end of the
    /// highest data segment lying below it, or to 0 if there is none: that covers the
    /// stack-first layout (no data below the stack: `0..sp`) and the stack-last one (data
    /// below: `data end..sp`). Empty (`0..0`) when no stack pointer is found (a module
    /// written by hand, or one whose stack pointer is imported). Nothing in Wasm prevents a
    /// stack from overflowing below this range: it is where the stack *should* stay.
    pub stack: Range<u64>,
    /// The bytes the active data segments of memory 0 initialise: from the lowest segment's
    /// start to the highest segment's end (gaps between segments included). Only segments
    /// whose offset is a constant count (not those placed by `global.get`, as in
    /// position-independent code, nor passive segments, which `memory.init` copies anywhere
    /// at run time). Zero-initialised statics (`.bss`) have no segment: they lie after this
    /// range, up to [`HeapLayout::heap_start`]. Empty (at the stack's end) when the module
    /// has no such segment.
    pub static_data: Range<u64>,
    /// The first byte of the heap proper: the value of the global exported (or named in the
    /// name section) `__heap_base` if there is one, else the end of the static data or of the
    /// stack, whichever is higher, rounded up to 16 bytes. rustc's wasm32-unknown-unknown
    /// cdylibs export `__heap_base`; its wasm32-wasip1 ones do not (nor after wasi2ic), so
    /// there the zero-initialised statics count as heap, since nothing else in the module
    /// says where they end. Rust's allocator on wasm32 takes its memory from `memory.grow`, so its blocks
    /// lie above the module's initial memory; the bytes between `heap_start` and there are
    /// heap that nothing may use.
    pub heap_start: u64,
}

/// The part of the heap a byte belongs to (see [`HeapLayout::region_of`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum HeapRegion {
    /// The shadow stack ([`HeapLayout::stack`]).
    Stack,
    /// Static data: the data segments, the zero-initialised statics after them and any
    /// other byte below the heap that is not stack.
    StaticData,
    /// The heap proper, from [`HeapLayout::heap_start`] on.
    Heap,
}

impl HeapRegion {
    /// A short lower-case name: `stack`, `static data`, `heap`.
    pub fn name(self) -> &'static str {
        match self {
            HeapRegion::Stack => "stack",
            HeapRegion::StaticData => "static data",
            HeapRegion::Heap => "heap",
        }
    }
}

impl HeapLayout {
    /// The layout of `wasm`'s memory 0 (see the fields for how each part is found). A
    /// module that cannot be read gives what could be read before the error.
    pub fn of(wasm: &[u8]) -> HeapLayout {
        let facts = LayoutFacts::of(wasm);
        let stack_pointer = facts
            .global_named(STACK_POINTER)
            .or_else(|| facts.first_defined_global())
            .and_then(|index| facts.stack_pointer_value(index));
        let heap_base = facts
            .global_named(HEAP_BASE)
            .and_then(|index| facts.constant_global(index));
        HeapLayout::from_parts(stack_pointer, &facts.segments, heap_base)
    }

    /// The layout given the stack pointer's initial value, the byte ranges of the active data
    /// segments and `__heap_base`, when known.
    fn from_parts(
        stack_pointer: Option<u64>,
        segments: &[Range<u64>],
        heap_base: Option<u64>,
    ) -> HeapLayout {
        let stack = match stack_pointer {
            Some(sp) => {
                let floor = segments
                    .iter()
                    .map(|segment| segment.end)
                    .filter(|end| *end <= sp)
                    .max()
                    .unwrap_or(0);
                floor..sp
            }
            None => 0..0,
        };
        let static_data = match (
            segments.iter().map(|s| s.start).min(),
            segments.iter().map(|s| s.end).max(),
        ) {
            (Some(start), Some(end)) => start..end,
            _ => stack.end..stack.end,
        };
        let heap_start = heap_base.unwrap_or_else(|| {
            let end = static_data.end.max(stack.end);
            end.checked_next_multiple_of(HEAP_ALIGN).unwrap_or(end)
        });
        HeapLayout {
            stack,
            static_data,
            heap_start,
        }
    }

    /// The region byte `byte` of the heap belongs to: [`HeapRegion::Stack`] inside
    /// [`HeapLayout::stack`], else [`HeapRegion::Heap`] from [`HeapLayout::heap_start`] on,
    /// else [`HeapRegion::StaticData`] (which so includes the zero-initialised statics, and
    /// in a stack-last layout the unused bytes below the first data segment).
    pub fn region_of(&self, byte: u64) -> HeapRegion {
        if self.stack.contains(&byte) {
            HeapRegion::Stack
        } else if byte >= self.heap_start {
            HeapRegion::Heap
        } else {
            HeapRegion::StaticData
        }
    }

    /// The regions the 64 KiB Wasm page `page` of the heap overlaps, in the order of their
    /// first byte in the page, each once. A page holds one region unless it straddles a
    /// boundary (e.g. the page where the stack ends and static data begins).
    pub fn regions_of_page(&self, page: u64) -> Vec<HeapRegion> {
        let start = page.saturating_mul(WASM_PAGE);
        let end = start.saturating_add(WASM_PAGE);
        // The region can only change at a boundary: the stack's ends and the heap's start.
        let mut points = vec![start];
        points.extend(
            [self.stack.start, self.stack.end, self.heap_start]
                .into_iter()
                .filter(|point| *point > start && *point < end),
        );
        points.sort_unstable();
        let mut regions = Vec::new();
        for point in points {
            let region = self.region_of(point);
            if !regions.contains(&region) {
                regions.push(region);
            }
        }
        regions
    }
}

/// What [`HeapLayout::of`] reads from a module.
#[derive(Debug, Default)]
struct LayoutFacts {
    /// How many globals are imported (defined globals are numbered after them).
    imported_globals: u32,
    /// Defined globals: type and, if it is one constant, its value.
    globals: Vec<(wasmparser::GlobalType, Option<u64>)>,
    /// Global indices by export name.
    exports: Vec<(String, u32)>,
    /// Global indices by name section name.
    names: Vec<(String, u32)>,
    /// Whether memory 0 is 64-bit.
    memory64: bool,
    /// Byte ranges of the active data segments of memory 0 with a constant offset.
    segments: Vec<Range<u64>>,
}

impl LayoutFacts {
    fn of(wasm: &[u8]) -> LayoutFacts {
        let mut facts = LayoutFacts::default();
        let mut memories = 0u32;
        for payload in Parser::new(0).parse_all(wasm) {
            let Ok(payload) = payload else { break };
            match payload {
                Payload::ImportSection(section) => {
                    for import in section.into_imports().flatten() {
                        match import.ty {
                            TypeRef::Global(_) => facts.imported_globals += 1,
                            TypeRef::Memory(memory) => {
                                if memories == 0 {
                                    facts.memory64 = memory.memory64;
                                }
                                memories += 1;
                            }
                            _ => {}
                        }
                    }
                }
                Payload::MemorySection(section) => {
                    for memory in section.into_iter().flatten() {
                        if memories == 0 {
                            facts.memory64 = memory.memory64;
                        }
                        memories += 1;
                    }
                }
                Payload::GlobalSection(section) => {
                    for global in section.into_iter().flatten() {
                        facts.globals.push((global.ty, constant(&global.init_expr)));
                    }
                }
                Payload::ExportSection(section) => {
                    for export in section.into_iter().flatten() {
                        if export.kind == ExternalKind::Global {
                            facts.exports.push((export.name.to_string(), export.index));
                        }
                    }
                }
                Payload::DataSection(section) => {
                    for data in section.into_iter().flatten() {
                        let DataKind::Active {
                            memory_index: 0,
                            offset_expr,
                        } = data.kind
                        else {
                            continue;
                        };
                        let Some(offset) = constant(&offset_expr) else {
                            continue;
                        };
                        let end = offset.saturating_add(data.data.len() as u64);
                        if end > offset {
                            facts.segments.push(offset..end);
                        }
                    }
                }
                Payload::CustomSection(section) => {
                    if let KnownCustom::Name(reader) = section.as_known() {
                        for subsection in reader.flatten() {
                            if let Name::Global(map) = subsection {
                                for naming in map.into_iter().flatten() {
                                    facts.names.push((naming.name.to_string(), naming.index));
                                }
                            }
                        }
                    }
                }
                _ => {}
            }
        }
        facts
    }

    /// The global exported as `name`, else the one the name section calls `name`.
    fn global_named(&self, name: &str) -> Option<u32> {
        let find = |list: &[(String, u32)]| {
            list.iter()
                .find(|(candidate, _)| candidate == name)
                .map(|(_, index)| *index)
        };
        find(&self.exports).or_else(|| find(&self.names))
    }

    /// Global 0, if the module defines it (LLD's stack pointer).
    fn first_defined_global(&self) -> Option<u32> {
        (self.imported_globals == 0 && !self.globals.is_empty()).then_some(0)
    }

    /// The defined global `index`: its type and constant value.
    fn defined(&self, index: u32) -> Option<&(wasmparser::GlobalType, Option<u64>)> {
        let defined = index.checked_sub(self.imported_globals)?;
        self.globals.get(usize::try_from(defined).ok()?)
    }

    /// The initial value of global `index` if it can be the stack pointer: defined, mutable,
    /// of the memory's address type, initialised by a constant.
    fn stack_pointer_value(&self, index: u32) -> Option<u64> {
        let (ty, value) = self.defined(index)?;
        let address = if self.memory64 {
            ValType::I64
        } else {
            ValType::I32
        };
        (ty.mutable && ty.content_type == address)
            .then_some(*value)
            .flatten()
    }

    /// The value of global `index` if it is defined by a constant.
    fn constant_global(&self, index: u32) -> Option<u64> {
        self.defined(index).and_then(|(_, value)| *value)
    }
}

/// The value of a constant expression that is a single `i32.const` (read as unsigned, an
/// address) or `i64.const`.
fn constant(expr: &ConstExpr<'_>) -> Option<u64> {
    let mut reader = expr.get_operators_reader();
    let value = match reader.read().ok()? {
        Operator::I32Const { value } => u64::from(value as u32),
        Operator::I64Const { value } => value as u64,
        _ => return None,
    };
    matches!(reader.read().ok()?, Operator::End).then_some(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1024 * 1024;

    /// One data segment.
    fn segment(range: Range<u64>) -> Vec<Range<u64>> {
        vec![range]
    }

    #[test]
    fn stack_first_puts_the_stack_at_the_bottom() {
        let layout = HeapLayout::from_parts(
            Some(MIB),
            &[MIB..MIB + 100, MIB + 200..MIB + 300],
            Some(MIB + 1024),
        );
        assert_eq!(layout.stack, 0..MIB);
        assert_eq!(layout.static_data, MIB..MIB + 300);
        assert_eq!(layout.heap_start, MIB + 1024);
        assert_eq!(layout.region_of(0), HeapRegion::Stack);
        assert_eq!(layout.region_of(MIB - 1), HeapRegion::Stack);
        assert_eq!(layout.region_of(MIB), HeapRegion::StaticData);
        // Zero-initialised statics, after the last segment and below `__heap_base`.
        assert_eq!(layout.region_of(MIB + 500), HeapRegion::StaticData);
        assert_eq!(layout.region_of(MIB + 1024), HeapRegion::Heap);
        assert_eq!(layout.regions_of_page(0), vec![HeapRegion::Stack]);
        assert_eq!(
            layout.regions_of_page(MIB / WASM_PAGE),
            vec![HeapRegion::StaticData, HeapRegion::Heap]
        );
        assert_eq!(layout.regions_of_page(100), vec![HeapRegion::Heap]);
    }

    #[test]
    fn stack_last_puts_the_stack_above_the_data() {
        // clang's layout: data from 1 KiB, a 64 KiB stack after it (its pointer 16-byte
        // aligned), the heap above.
        let sp = 1536 + WASM_PAGE;
        let layout = HeapLayout::from_parts(Some(sp), &segment(1024..1530), None);
        assert_eq!(layout.stack, 1530..sp);
        assert_eq!(layout.static_data, 1024..1530);
        // No `__heap_base`: the stack's end, rounded up to 16 bytes (already aligned).
        assert_eq!(layout.heap_start, sp);
        assert_eq!(layout.region_of(0), HeapRegion::StaticData);
        assert_eq!(layout.region_of(2000), HeapRegion::Stack);
        assert_eq!(
            layout.regions_of_page(0),
            vec![HeapRegion::StaticData, HeapRegion::Stack]
        );
        assert_eq!(
            layout.regions_of_page(1),
            vec![HeapRegion::Stack, HeapRegion::Heap]
        );
        // An unaligned end is rounded up; the padding is below the heap, not stack.
        let layout = HeapLayout::from_parts(Some(sp + 4), &segment(1024..1530), None);
        assert_eq!(layout.heap_start, sp + 16);
        assert_eq!(layout.region_of(sp + 8), HeapRegion::StaticData);
    }

    #[test]
    fn without_a_stack_pointer_or_data_everything_is_heap() {
        let layout = HeapLayout::from_parts(None, &[], None);
        assert_eq!(layout.stack, 0..0);
        assert_eq!(layout.static_data, 0..0);
        assert_eq!(layout.heap_start, 0);
        assert_eq!(layout.region_of(0), HeapRegion::Heap);
        assert_eq!(layout.regions_of_page(0), vec![HeapRegion::Heap]);
        // Without `__heap_base` the heap starts after the data, rounded up.
        let layout = HeapLayout::from_parts(None, &segment(8..13), None);
        assert_eq!(layout.heap_start, 16);
        assert_eq!(layout.regions_of_page(u64::MAX), vec![HeapRegion::Heap]);
    }
}
