//! The ic0 system API as wasmtime host functions, with the replica's charges
//! (docs/metering.md §4, §5), and the runtime's own hooks.
//!
//! Every function charges its price from [`crate::prices::Api`] before doing its work
//! ([`charge_api`]); a negative counter traps the message with
//! [`HostTrap::OutOfInstructions`]. Every charge is also added to the message's
//! [`crate::ledger::Ledger`], and page charges the heap tracker took since the last host call
//! are applied first ([`apply_heap_page_charges`]). Signatures are those of wasm32
//! canisters (addresses and sizes are `i32`; the `stable64_*` family uses `i64`), as declared
//! by the `ic0` crate that ic-cdk 0.20 uses and by ic-stable-structures.

mod calls;
mod environment;
mod message;
mod misc;
mod stable;

use crate::instrument::{HOST_MODULE, OUT_OF_INSTRUCTIONS, TRACE_ENTER, TRACE_EXIT};
use crate::page_map::MemoryKind;
use crate::prices::Api;
use crate::state::{HostState, HostTrap};
use crate::trace::{PageCharge, TraceEvent};
use wasmtime::{AsContext, AsContextMut, Caller, Linker, Val};

/// The import module of the system API.
pub(crate) const IC0: &str = "ic0";

type Ctx<'a> = Caller<'a, HostState>;
type HostResult<T> = wasmtime::Result<T>;

fn trap<T>(t: HostTrap) -> HostResult<T> {
    Err(wasmtime::Error::new(t))
}

fn violation<T>(msg: impl Into<String>) -> HostResult<T> {
    trap(HostTrap::ContractViolation(msg.into()))
}

/// A host function's caller, or the runtime's store between calls.
pub(crate) trait Host: AsContextMut<Data = HostState> {}

impl<T: AsContextMut<Data = HostState>> Host for T {}

/// Subtracts `amount` from the instruction counter; traps if it goes negative.
/// Charges nothing for an uninstrumented module run unmetered.
fn charge(host: &mut impl Host, amount: u64) -> HostResult<()> {
    let state = host.as_context().data();
    let Some(counter) = state.counter else {
        if state.unmetered {
            return Ok(());
        }
        return violation("instruction counter missing");
    };
    let value = counter.get(&mut *host).i64().unwrap_or(0);
    let amount = i64::try_from(amount).unwrap_or(i64::MAX);
    let new = value.saturating_sub(amount);
    counter.set(&mut *host, Val::I64(new))?;
    if new < 0 {
        return trap(HostTrap::OutOfInstructions);
    }
    Ok(())
}

/// Charges one call of `api` moving `bytes` bytes, at its price (docs/metering.md §4, §5),
/// after the page charges waiting in the heap tracker.
pub(crate) fn charge_api(caller: &mut Ctx<'_>, api: Api, bytes: u64) -> HostResult<()> {
    apply_heap_page_charges(caller)?;
    let amount = api.price().charge(bytes);
    caller.data_mut().ledger.api_call(api, amount);
    charge(caller, amount)
}

/// Charges `amount` for `pages` pages of `kind` (docs/metering.md §6), in the ledger and the
/// trace as well.
fn charge_pages(host: &mut impl Host, kind: PageCharge, pages: u64, amount: u64) -> HostResult<()> {
    if pages == 0 {
        return Ok(());
    }
    let mut context = host.as_context_mut();
    page_use(&mut context.data_mut().ledger, kind).add(pages, amount);
    let charged = charge(host, amount);
    if host.as_context().data().trace.is_some() {
        let at = instructions_used(host);
        record(
            host,
            TraceEvent::Pages {
                kind,
                instructions: amount,
                at,
            },
        );
    }
    charged
}

/// The ledger's entry for page charges of `kind`.
fn page_use(ledger: &mut crate::ledger::Ledger, kind: PageCharge) -> &mut crate::ledger::PageUse {
    match kind {
        PageCharge::StableDirty => &mut ledger.memory.stable_pages_dirtied,
        PageCharge::HeapAccess => &mut ledger.memory.heap_regions_accessed,
        PageCharge::HeapWrite => &mut ledger.memory.heap_regions_written,
        PageCharge::StableAccess => &mut ledger.memory.stable_regions_accessed,
        PageCharge::StableWrite => &mut ledger.memory.stable_regions_written,
    }
}

/// Applies the page charges the heap tracker's fault handler took since the last host call
/// ([`crate::Metering::Current`]: they are made in a signal handler, which cannot reach
/// the counter). Also accounts for heap growth since then.
pub(crate) fn apply_heap_page_charges(host: &mut impl Host) -> HostResult<()> {
    let state = host.as_context().data();
    let pages = state.metering.pages();
    let Some(tracker) = state.tracker.clone() else {
        return Ok(());
    };
    if !pages.tracks_regions() {
        return Ok(());
    }
    if let Some(memory) = state.memory {
        tracker.catch_up_growth(memory.data_size(&*host));
    }
    let charges = tracker.take_charges();
    if charges.instructions == 0 {
        return Ok(());
    }
    // The pages behind the charges, for the trace's page map: each is recorded with the
    // charge that makes it into the ledger, so that the map adds up to the ledger's pages
    // even if a charge traps.
    let regions = state.trace.is_some().then(|| tracker.take_regions());
    if let Some(regions) = &regions {
        debug_assert_eq!(regions.accessed.len() as u64, charges.accessed);
        debug_assert_eq!(regions.written.len() as u64, charges.written);
        record_touches(host, MemoryKind::Heap, &regions.accessed, false);
    }
    charge_pages(
        host,
        PageCharge::HeapAccess,
        charges.accessed,
        charges.accessed * pages.region_access,
    )?;
    if let Some(regions) = &regions {
        record_touches(host, MemoryKind::Heap, &regions.written, true);
    }
    charge_pages(
        host,
        PageCharge::HeapWrite,
        charges.written,
        charges.written * pages.region_write,
    )
}

/// Records the first accesses (or, if `write`, the first writes) of `pages` of `memory` in
/// the trace's page map, if a trace is recorded, at the profile's price per page
/// (docs/metering.md §6), attributed to the function running now (see [`crate::page_map`]).
fn record_touches(host: &mut impl Host, memory: MemoryKind, pages: &[u64], write: bool) {
    if pages.is_empty() {
        return;
    }
    let mut context = host.as_context_mut();
    let state = context.data_mut();
    let prices = state.metering.pages();
    let price = if write {
        prices.region_write
    } else {
        prices.region_access
    };
    if let Some(recorder) = state.trace.as_mut() {
        recorder.touched(memory, pages, write, price);
    }
}

/// Records the heap pages first written since the last hook ([`TraceEvent::HeapPagesWritten`]),
/// where the heap's pages are charged after the message (docs/metering.md §6, pocketic-13) and
/// the write tracker sees them as they are written.
fn record_heap_pages_written(host: &mut impl Host) {
    let mut context = host.as_context_mut();
    let state = context.data_mut();
    if state.metering.pages().heap_dirty_4k_after == 0 || state.metering.pages().tracks_regions() {
        return;
    }
    let Some(written) = state
        .tracker
        .as_ref()
        .map(|tracker| tracker.saved_units() as u64)
    else {
        return;
    };
    if let Some(recorder) = state.trace.as_mut() {
        if written > recorder.heap_pages_written {
            let pages = written - recorder.heap_pages_written;
            recorder.heap_pages_written = written;
            recorder.events.push(TraceEvent::HeapPagesWritten { pages });
        }
    }
}

/// Adds `event` to the message's trace, if one is recorded.
fn record(host: &mut impl Host, event: TraceEvent) {
    if let Some(recorder) = host.as_context_mut().data_mut().trace.as_mut() {
        recorder.events.push(event);
    }
}

/// Instructions executed so far in this message: limit − counter (docs/metering.md §1).
fn instructions_used(host: &mut impl Host) -> u64 {
    let state = host.as_context().data();
    let limit = state.msg.limit as i64;
    let counter = match state.counter {
        Some(c) => c.get(&mut *host).i64().unwrap_or(0),
        None => limit,
    };
    limit.saturating_sub(counter).max(0) as u64
}

/// The byte range `[addr, addr + size)` of a heap of `len` bytes.
fn heap_range(addr: u64, size: u64, len: usize) -> HostResult<std::ops::Range<usize>> {
    match addr.checked_add(size) {
        Some(end) if end <= len as u64 => Ok(addr as usize..end as usize),
        _ => trap(HostTrap::HeapOutOfBounds),
    }
}

/// Reads `size` bytes of the heap at `addr`.
fn read_heap(caller: &mut Ctx<'_>, addr: u64, size: u64) -> HostResult<Vec<u8>> {
    let Some(memory) = caller.data().memory else {
        return trap(HostTrap::HeapOutOfBounds);
    };
    let heap = memory.data(&*caller);
    let range = heap_range(addr, size, heap.len())?;
    Ok(heap[range].to_vec())
}

/// Copies `source(state)[offset..offset + size]` to the heap at `dst`, the
/// shape of every `*_copy(dst, offset, size)` function.
fn copy_to_heap(
    caller: &mut Ctx<'_>,
    api: &str,
    dst: u64,
    offset: u64,
    size: u64,
    source: impl Fn(&HostState) -> &[u8],
) -> HostResult<()> {
    let Some(memory) = caller.data().memory else {
        return trap(HostTrap::HeapOutOfBounds);
    };
    let (heap, state) = memory.data_and_store_mut(&mut *caller);
    let src = source(state);
    let src_range = match offset.checked_add(size) {
        Some(end) if end <= src.len() as u64 => offset as usize..end as usize,
        _ => return violation(format!("{api}: offset + size out of bounds")),
    };
    let dst_range = heap_range(dst, size, heap.len())?;
    heap[dst_range].copy_from_slice(&src[src_range]);
    Ok(())
}

/// Writes `bytes` to the heap at `dst`.
fn write_heap(caller: &mut Ctx<'_>, dst: u64, bytes: &[u8]) -> HostResult<()> {
    let Some(memory) = caller.data().memory else {
        return trap(HostTrap::HeapOutOfBounds);
    };
    let heap = memory.data_mut(&mut *caller);
    let range = heap_range(dst, bytes.len() as u64, heap.len())?;
    heap[range].copy_from_slice(bytes);
    Ok(())
}

/// Address or size argument of a wasm32 canister.
fn u(value: i32) -> u64 {
    value as u32 as u64
}

/// The trace hook at a function entry or exit: records the event (after the page charges
/// made since the last host call, so that they land in the frame that caused them, in the
/// flame graph and in the page map).
fn trace_hook(caller: &mut Ctx<'_>, function: i32, entry: bool) -> HostResult<()> {
    apply_heap_page_charges(caller)?;
    if caller.data().trace.is_some() {
        record_heap_pages_written(caller);
        let at = instructions_used(caller);
        let function = function as u32;
        if let Some(recorder) = caller.data_mut().trace.as_mut() {
            if entry {
                recorder.enter(function, at);
            } else {
                recorder.exit(function, at);
            }
        }
    }
    Ok(())
}

/// Registers the runtime's hooks (`__icrun.out_of_instructions`, `__icrun.trace_enter`,
/// `__icrun.trace_exit`) and every ic0 function in `linker`.
pub(crate) fn register(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
    linker.func_wrap(HOST_MODULE, OUT_OF_INSTRUCTIONS, || -> HostResult<()> {
        trap(HostTrap::OutOfInstructions)
    })?;
    linker.func_wrap(HOST_MODULE, TRACE_ENTER, |mut c: Ctx<'_>, function: i32| {
        trace_hook(&mut c, function, true)
    })?;
    linker.func_wrap(HOST_MODULE, TRACE_EXIT, |mut c: Ctx<'_>, function: i32| {
        trace_hook(&mut c, function, false)
    })?;
    message::register_message(linker)?;
    message::register_reply(linker)?;
    environment::register_canister(linker)?;
    environment::register_cycles(linker)?;
    environment::register_identity_stubs(linker)?;
    calls::register_calls(linker)?;
    stable::register_stable(linker)?;
    misc::register_misc(linker)?;
    Ok(())
}
