//! performance_counter, debug_print and trap (ic-metering.md §4).

use super::{charge, instructions_used, log_cost, read_heap, trap, u, violation, Ctx, BASE, IC0};
use crate::state::{HostState, HostTrap};
use wasmtime::Linker;

// ic-metering.md §4: performance_counter = 200, charged before the counter is read.
const PERFORMANCE_COUNTER: u64 = 200;
// ic-metering.md §4: debug_print = 100 + 2·len + (log part, see `log_cost`).
const DEBUG_PRINT_BASE: u64 = 100;
const DEBUG_PRINT_PER_BYTE: u64 = 2;

pub(super) fn register_misc(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
    linker.func_wrap(IC0, "performance_counter", |mut c: Ctx<'_>, kind: i32| {
        // ic-metering.md §4: 200, charged before the counter is read.
        charge(&mut c, PERFORMANCE_COUNTER)?;
        match kind {
            // 0: instructions of this message.
            0 => Ok(instructions_used(&mut c) as i64),
            // 1: of the call context: this message and the earlier ones (the
            // update method and callbacks that already ran in it).
            1 => {
                let earlier = c.data().msg.call_context_instructions;
                Ok(instructions_used(&mut c).saturating_add(earlier) as i64)
            }
            _ => violation(format!(
                "ic0.performance_counter: unknown counter type {kind}"
            )),
        }
    })?;
    linker.func_wrap(IC0, "debug_print", |mut c: Ctx<'_>, src: i32, size: i32| {
        let len = u(size);
        // ic-metering.md §4: 100 + 2·len + 50·(part in the 4 KiB log buffer) + len.
        charge(
            &mut c,
            DEBUG_PRINT_BASE + DEBUG_PRINT_PER_BYTE * len + log_cost(len),
        )?;
        let bytes = read_heap(&mut c, u(src), len)?;
        let text = String::from_utf8_lossy(&bytes).into_owned();
        c.data_mut().msg.debug_output.push(text);
        Ok(())
    })?;
    linker.func_wrap(IC0, "trap", |mut c: Ctx<'_>, src: i32, size: i32| {
        let len = u(size);
        // ic-metering.md §4: 500 + len + the log terms of debug_print.
        charge(&mut c, BASE + len + log_cost(len))?;
        let bytes = read_heap(&mut c, u(src), len)?;
        let text = String::from_utf8_lossy(&bytes).into_owned();
        trap::<()>(HostTrap::Explicit(text))
    })?;
    // Not in ic-metering.md §4; base charge assumed. No environment variables.
    linker.func_wrap(IC0, "env_var_count", |mut c: Ctx<'_>| {
        charge(&mut c, BASE)?;
        Ok(0i32)
    })?;
    Ok(())
}
