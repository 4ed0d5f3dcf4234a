//! The ic0 system API as wasmtime host functions, with the replica's charges
//! (ic-metering.md §4).
//!
//! Every function charges its cost from the instance's instruction counter
//! global before doing its work; a negative counter traps the message with
//! [`HostTrap::OutOfInstructions`]. Signatures are those of wasm32 canisters
//! (addresses and sizes are `i32`; the `stable64_*` family uses `i64`), as
//! declared by the `ic0` crate that ic-cdk 0.20 uses and by ic-stable-structures.

mod calls;
mod environment;
mod message;
mod misc;
mod stable;

use crate::instrument::{HOST_MODULE, OUT_OF_INSTRUCTIONS};
use crate::state::{HostState, HostTrap};
use wasmtime::{Caller, Linker, Val};

/// The import module of the system API.
pub const IC0: &str = "ic0";

// ic-metering.md §4: the base charge of most system API functions.
const BASE: u64 = 500;
// ic-metering.md §4: the log part of debug_print and trap: 50 per byte that
// fits the 4 KiB log buffer.
const LOG_PER_BYTE: u64 = 50;
const LOG_BUFFER_BYTES: u64 = 4 * 1024;

type Ctx<'a> = Caller<'a, HostState>;
type HostResult<T> = wasmtime::Result<T>;

fn trap<T>(t: HostTrap) -> HostResult<T> {
    Err(wasmtime::Error::new(t))
}

fn violation<T>(msg: impl Into<String>) -> HostResult<T> {
    trap(HostTrap::ContractViolation(msg.into()))
}

/// Subtracts `amount` from the instruction counter; traps if it goes negative.
/// Charges nothing for an uninstrumented module run unmetered.
pub fn charge(caller: &mut Ctx<'_>, amount: u64) -> HostResult<()> {
    let Some(counter) = caller.data().counter else {
        if caller.data().unmetered {
            return Ok(());
        }
        return violation("instruction counter missing");
    };
    let value = counter.get(&mut *caller).i64().unwrap_or(0);
    let amount = i64::try_from(amount).unwrap_or(i64::MAX);
    let new = value.saturating_sub(amount);
    counter.set(&mut *caller, Val::I64(new))?;
    if new < 0 {
        return trap(HostTrap::OutOfInstructions);
    }
    Ok(())
}

/// Instructions executed so far in this message: limit − counter (ic-metering.md §1).
fn instructions_used(caller: &mut Ctx<'_>) -> u64 {
    let limit = caller.data().msg.limit as i64;
    let counter = match caller.data().counter {
        Some(c) => c.get(&mut *caller).i64().unwrap_or(0),
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

/// Cost of the log part of `debug_print` and `trap` for a message of `len`
/// bytes: 50 per byte that fits the 4 KiB log buffer, + len because debug
/// printing is on (ic-metering.md §4).
fn log_cost(len: u64) -> u64 {
    LOG_PER_BYTE * len.min(LOG_BUFFER_BYTES) + len
}

/// Registers `__icrun.out_of_instructions` and every ic0 function in `linker`.
pub fn register(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
    linker.func_wrap(HOST_MODULE, OUT_OF_INSTRUCTIONS, || -> HostResult<()> {
        trap(HostTrap::OutOfInstructions)
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
