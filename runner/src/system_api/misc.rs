//! performance_counter, debug_print and trap (docs/metering.md §4).

use super::{charge_api, instructions_used, read_heap, record, trap, u, violation, Ctx, IC0};
use crate::prices::Api;
use crate::state::{HostState, HostTrap, Reading};
use crate::trace::TraceEvent;
use wasmtime::Linker;

pub(super) fn register_misc(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
    linker.func_wrap(IC0, "performance_counter", |mut c: Ctx<'_>, kind: i32| {
        // docs/metering.md §4: 200, charged before the counter is read.
        charge_api(&mut c, Api::PerformanceCounter, 0)?;
        match kind {
            // 0: instructions of this message.
            0 => {
                let at = instructions_used(&mut c);
                record(&mut c, TraceEvent::Counter { at });
                let state = c.data_mut();
                if let Some(readings) = state.readings.as_mut() {
                    let ledger = state.ledger.clone();
                    readings.push(Reading { at, ledger });
                }
                Ok(at as i64)
            }
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
        charge_api(&mut c, Api::DebugPrint, len)?;
        let bytes = read_heap(&mut c, u(src), len)?;
        let text = String::from_utf8_lossy(&bytes).into_owned();
        c.data_mut().msg.debug_output.push(text);
        Ok(())
    })?;
    linker.func_wrap(IC0, "trap", |mut c: Ctx<'_>, src: i32, size: i32| {
        let len = u(size);
        charge_api(&mut c, Api::Trap, len)?;
        let bytes = read_heap(&mut c, u(src), len)?;
        let text = String::from_utf8_lossy(&bytes).into_owned();
        trap::<()>(HostTrap::Explicit(text))
    })?;
    linker.func_wrap(IC0, "env_var_count", |mut c: Ctx<'_>| {
        charge_api(&mut c, Api::EnvVarCount, 0)?;
        Ok(0i32)
    })?;
    Ok(())
}
