//! Stable memory functions, 64- and 32-bit (docs/metering.md §5), with the page charges of
//! the metering profile (§6).

use super::{charge_api, charge_pages, heap_range, record_touches, trap, u, Ctx, HostResult, IC0};
use crate::page_map::MemoryKind;
use crate::prices::Api;
use crate::stable::{DIRTY_PAGE_SIZE, MAX_PAGES};
use crate::state::{HostState, HostTrap};
use crate::trace::PageCharge;
use wasmtime::Linker;

/// 32-bit stable API limit: 4 GiB in 64 KiB pages.
const MAX_PAGES_32BIT: u64 = 65_536;

/// Charges the 64 KiB stable pages of `[offset, offset + size)` the message touches first
/// ([`crate::Metering::Current`], docs/metering.md §6): on first access and, if `write`
/// in a message whose writes are tracked, on first write.
fn charge_stable_regions(c: &mut Ctx<'_>, offset: u64, size: u64, write: bool) -> HostResult<()> {
    let pages = c.data().metering.pages();
    if !pages.tracks_regions() {
        return Ok(());
    }
    let track_writes = write && c.data().msg.kind.persists();
    // The pages behind the counts, for the trace's page map (recorded with their charges).
    let first = c.data().trace.is_some().then(|| {
        c.data()
            .stable
            .untouched_regions(offset, size, track_writes)
    });
    let (accessed, written) = c
        .data_mut()
        .stable
        .touch_regions(offset, size, track_writes);
    if let Some((first_accessed, _)) = &first {
        record_touches(c, MemoryKind::Stable, first_accessed, false);
    }
    charge_pages(
        c,
        PageCharge::StableAccess,
        accessed,
        accessed * pages.region_access,
    )?;
    if let Some((_, first_written)) = &first {
        record_touches(c, MemoryKind::Stable, first_written, true);
    }
    charge_pages(
        c,
        PageCharge::StableWrite,
        written,
        written * pages.region_write,
    )
}

/// Charges and performs a stable memory read into the heap.
fn stable_read(c: &mut Ctx<'_>, api: Api, dst: u64, offset: u64, size: u64) -> HostResult<()> {
    // §5: 20 + size, charged before anything is checked (also when size is 0).
    charge_api(c, api, size)?;
    if !c.data().stable.in_bounds(offset, size) {
        return trap(HostTrap::StableOutOfBounds);
    }
    charge_stable_regions(c, offset, size, false)?;
    c.data_mut().ledger.memory.stable_bytes_read += size;
    let Some(memory) = c.data().memory else {
        return trap(HostTrap::HeapOutOfBounds);
    };
    let (heap, state) = memory.data_and_store_mut(&mut *c);
    let range = heap_range(dst, size, heap.len())?;
    match state.stable.read(offset, &mut heap[range]) {
        Ok(()) => Ok(()),
        Err(_) => trap(HostTrap::StableOutOfBounds),
    }
}

/// Charges and performs a stable memory write from the heap.
fn stable_write(c: &mut Ctx<'_>, api: Api, offset: u64, src: u64, size: u64) -> HostResult<()> {
    // §5: 20 + size, charged before anything is checked.
    charge_api(c, api, size)?;
    if !c.data().stable.in_bounds(offset, size) {
        return trap(HostTrap::StableOutOfBounds);
    }
    let newly_dirtied = c.data().stable.newly_dirtied(offset, size);
    let limit = c.data().msg.kind.stable_dirty_limit();
    let dirty_after = c.data().stable.dirty_bytes() + newly_dirtied * DIRTY_PAGE_SIZE;
    if dirty_after > limit {
        return trap(HostTrap::StableDirtyLimit(limit));
    }
    // §6 (PocketIC 13): per 4 KiB page this message had not dirtied yet.
    let per_page = c.data().metering.pages().stable_dirty_4k;
    if per_page > 0 {
        charge_pages(
            c,
            PageCharge::StableDirty,
            newly_dirtied,
            newly_dirtied * per_page,
        )?;
    }
    charge_stable_regions(c, offset, size, true)?;
    c.data_mut().ledger.memory.stable_bytes_written += size;
    let Some(memory) = c.data().memory else {
        return trap(HostTrap::HeapOutOfBounds);
    };
    let (heap, state) = memory.data_and_store_mut(&mut *c);
    let range = heap_range(src, size, heap.len())?;
    match state.stable.write(offset, &heap[range]) {
        Ok(()) => Ok(()),
        Err(_) => trap(HostTrap::StableOutOfBounds),
    }
}

fn stable_size_32(c: &Ctx<'_>) -> HostResult<i32> {
    let pages = c.data().stable.size_pages();
    if pages > MAX_PAGES_32BIT {
        return trap(HostTrap::Stable32Bit);
    }
    Ok(pages as i32)
}

pub(super) fn register_stable(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
    linker.func_wrap(IC0, "stable64_size", |mut c: Ctx<'_>| {
        charge_api(&mut c, Api::Stable64Size, 0)?;
        Ok(c.data().stable.size_pages() as i64)
    })?;
    linker.func_wrap(IC0, "stable_size", |mut c: Ctx<'_>| {
        charge_api(&mut c, Api::StableSize, 0)?;
        stable_size_32(&c)
    })?;
    linker.func_wrap(IC0, "stable64_grow", |mut c: Ctx<'_>, pages: i64| {
        charge_api(&mut c, Api::Stable64Grow, 0)?;
        let max = c.data().memory_limits.stable_max(MAX_PAGES);
        let grown = c.data_mut().stable.grow(pages as u64, max);
        // §5: returns the old size in pages or -1 (also past the canister's stable memory
        // limit, as when its memory allocation or the subnet is full).
        Ok(grown.map_or(-1, |old| old as i64))
    })?;
    linker.func_wrap(IC0, "stable_grow", |mut c: Ctx<'_>, pages: i32| {
        charge_api(&mut c, Api::StableGrow, 0)?;
        stable_size_32(&c)?;
        let max = c.data().memory_limits.stable_max(MAX_PAGES_32BIT);
        let grown = c.data_mut().stable.grow(u(pages), max);
        Ok(grown.map_or(-1, |old| old as i32))
    })?;
    linker.func_wrap(
        IC0,
        "stable64_read",
        |mut c: Ctx<'_>, dst: i64, offset: i64, size: i64| {
            stable_read(
                &mut c,
                Api::Stable64Read,
                dst as u64,
                offset as u64,
                size as u64,
            )
        },
    )?;
    linker.func_wrap(
        IC0,
        "stable64_write",
        |mut c: Ctx<'_>, offset: i64, src: i64, size: i64| {
            stable_write(
                &mut c,
                Api::Stable64Write,
                offset as u64,
                src as u64,
                size as u64,
            )
        },
    )?;
    linker.func_wrap(
        IC0,
        "stable_read",
        |mut c: Ctx<'_>, dst: i32, offset: i32, size: i32| {
            stable_size_32(&c)?;
            stable_read(&mut c, Api::StableRead, u(dst), u(offset), u(size))
        },
    )?;
    linker.func_wrap(
        IC0,
        "stable_write",
        |mut c: Ctx<'_>, offset: i32, src: i32, size: i32| {
            stable_size_32(&c)?;
            stable_write(&mut c, Api::StableWrite, u(offset), u(src), u(size))
        },
    )?;
    Ok(())
}
