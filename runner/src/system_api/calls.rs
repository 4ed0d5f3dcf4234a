//! Inter-canister calls: charged, but `call_perform` always fails for now
//! (ic-metering.md §4).

use super::{charge, u, Ctx, BASE, IC0};
use crate::state::HostState;
use wasmtime::Linker;

// ic-metering.md §4: call_data_append = 500 + 50 × size.
const PER_CALL_BYTE: u64 = 50;
// ic-metering.md §4: call_new = 1500 + callee size + method name length.
const CALL_NEW_BASE: u64 = 1500;
// ic-metering.md §4: call_perform = 5000.
const CALL_PERFORM: u64 = 5000;
/// Reject code a failed `call_perform` returns (SYS_TRANSIENT): inter-canister
/// calls are not implemented yet.
const CALL_PERFORM_FAILED: i32 = 2;

pub(super) fn register_calls(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
    linker.func_wrap(
        IC0,
        "call_new",
        |mut c: Ctx<'_>,
         _callee_src: i32,
         callee_size: i32,
         _name_src: i32,
         name_size: i32,
         _reply_fun: i32,
         _reply_env: i32,
         _reject_fun: i32,
         _reject_env: i32| {
            // ic-metering.md §4: 1500 + callee size + method name length.
            charge(&mut c, CALL_NEW_BASE + u(callee_size) + u(name_size))
        },
    )?;
    linker.func_wrap(
        IC0,
        "call_data_append",
        |mut c: Ctx<'_>, _src: i32, size: i32| {
            // ic-metering.md §4: 500 + 50 × size.
            charge(&mut c, BASE + PER_CALL_BYTE * u(size))
        },
    )?;
    linker.func_wrap(
        IC0,
        "call_on_cleanup",
        |mut c: Ctx<'_>, _fun: i32, _env: i32| {
            charge(&mut c, BASE) // ic-metering.md §4: 500.
        },
    )?;
    linker.func_wrap(
        IC0,
        "call_cycles_add128",
        |mut c: Ctx<'_>, _high: i64, _low: i64| {
            charge(&mut c, BASE) // ic-metering.md §4: 500.
        },
    )?;
    // Not in ic-metering.md §4; base charge assumed.
    linker.func_wrap(
        IC0,
        "call_with_best_effort_response",
        |mut c: Ctx<'_>, _timeout: i32| charge(&mut c, BASE),
    )?;
    linker.func_wrap(IC0, "call_perform", |mut c: Ctx<'_>| {
        charge(&mut c, CALL_PERFORM)?; // ic-metering.md §4: 5000.
                                       // Inter-canister calls are not implemented: the call cannot be enqueued.
        Ok(CALL_PERFORM_FAILED)
    })?;
    Ok(())
}
