//! Stable memory functions, 64- and 32-bit (ic-metering.md §4).

use super::{charge, heap_range, trap, u, Ctx, HostResult, IC0};
use crate::stable::{DIRTY_PAGE_SIZE, MAX_PAGES};
use crate::state::{HostState, HostTrap};
use wasmtime::Linker;

// ic-metering.md §4: stable64_grow / stable_grow = 100.
const STABLE_GROW: u64 = 100;
// ic-metering.md §4: stable read/write = 20 + size (+ dirty pages on writes).
const STABLE_ACCESS_BASE: u64 = 20;
// ic-metering.md §4: 1000 for every 4 KiB stable page newly dirtied by a write.
const STABLE_DIRTY_PAGE: u64 = 1000;
/// 32-bit stable API limit: 4 GiB in 64 KiB pages.
const MAX_PAGES_32BIT: u64 = 65_536;

/// Charges and performs a stable memory read into the heap.
fn stable_read(c: &mut Ctx<'_>, dst: u64, offset: u64, size: u64) -> HostResult<()> {
    // ic-metering.md §4: stable read = 20 + size (also when size is 0).
    charge(c, STABLE_ACCESS_BASE.saturating_add(size))?;
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
fn stable_write(c: &mut Ctx<'_>, offset: u64, src: u64, size: u64) -> HostResult<()> {
    let newly_dirtied = c.data().stable.newly_dirtied(offset, size);
    // ic-metering.md §4: 20 + size + 1000 per 4 KiB page not yet dirtied in this message.
    let cost = STABLE_ACCESS_BASE
        .saturating_add(size)
        .saturating_add(STABLE_DIRTY_PAGE.saturating_mul(newly_dirtied));
    charge(c, cost)?;
    let limit = c.data().msg.kind.stable_dirty_limit();
    let dirty_after = c.data().stable.dirty_bytes() + newly_dirtied * DIRTY_PAGE_SIZE;
    if dirty_after > limit {
        return trap(HostTrap::StableDirtyLimit(limit));
    }
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
    // ic-metering.md §4: stable64_size / stable_size cost nothing beyond the call.
    linker.func_wrap(IC0, "stable64_size", |c: Ctx<'_>| {
        Ok(c.data().stable.size_pages() as i64)
    })?;
    linker.func_wrap(IC0, "stable_size", |c: Ctx<'_>| stable_size_32(&c))?;
    linker.func_wrap(IC0, "stable64_grow", |mut c: Ctx<'_>, pages: i64| {
        charge(&mut c, STABLE_GROW)?; // ic-metering.md §4: 100.
        let grown = c.data_mut().stable.grow(pages as u64, MAX_PAGES);
        // ic-metering.md §4: returns the old size in pages or -1.
        Ok(grown.map_or(-1, |old| old as i64))
    })?;
    linker.func_wrap(IC0, "stable_grow", |mut c: Ctx<'_>, pages: i32| {
        charge(&mut c, STABLE_GROW)?; // ic-metering.md §4: 100.
        stable_size_32(&c)?;
        let grown = c.data_mut().stable.grow(u(pages), MAX_PAGES_32BIT);
        Ok(grown.map_or(-1, |old| old as i32))
    })?;
    linker.func_wrap(
        IC0,
        "stable64_read",
        |mut c: Ctx<'_>, dst: i64, offset: i64, size: i64| {
            stable_read(&mut c, dst as u64, offset as u64, size as u64)
        },
    )?;
    linker.func_wrap(
        IC0,
        "stable64_write",
        |mut c: Ctx<'_>, offset: i64, src: i64, size: i64| {
            stable_write(&mut c, offset as u64, src as u64, size as u64)
        },
    )?;
    linker.func_wrap(
        IC0,
        "stable_read",
        |mut c: Ctx<'_>, dst: i32, offset: i32, size: i32| {
            stable_size_32(&c)?;
            stable_read(&mut c, u(dst), u(offset), u(size))
        },
    )?;
    linker.func_wrap(
        IC0,
        "stable_write",
        |mut c: Ctx<'_>, offset: i32, src: i32, size: i32| {
            stable_size_32(&c)?;
            stable_write(&mut c, u(offset), u(src), u(size))
        },
    )?;
    Ok(())
}
