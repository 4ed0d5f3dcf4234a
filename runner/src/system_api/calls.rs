//! Inter-canister calls (docs/metering.md §4 for the charges).
//!
//! `call_new` starts a call under construction in the message context,
//! `call_data_append`, `call_on_cleanup`, `call_cycles_add128` and
//! `call_with_best_effort_response` add to it, and `call_perform` moves it to
//! the message's outgoing calls. The runtime sends them only if the message
//! completes ([`crate::World`]); a standalone [`crate::Canister`] has nowhere to
//! send them, so there `call_perform` returns 2 (SYS_TRANSIENT) and the call is
//! dropped. In a world, as on the replica, `call_perform` also returns 2 and
//! drops the call when the caller already has 500 calls to the same callee
//! whose responses are not processed yet (the queue capacity), and a request
//! may hold at most 10 MiB (same subnet). Cycles attached to calls are
//! recorded, never moved.
//!
//! Every function charges first (as the replica does) and then checks the
//! interface spec's contract: the `call_*` functions are available in update
//! methods and in reply and reject callbacks only (U Ry Rt), and all but
//! `call_new` need a call under construction.

use super::{charge_api, read_heap, u, violation, write_heap, Ctx, HostResult, IC0};
use crate::prices::Api;
use crate::state::{Closure, HostState, OutgoingCall};
use candid::Principal;
use wasmtime::Linker;

/// What `call_perform` returns when the call was enqueued.
const CALL_PERFORMED: i32 = 0;
/// What `call_perform` returns when the call cannot be sent: SYS_TRANSIENT
/// (the replica's RejectCode::SysTransient, rs/types/error_types/src/lib.rs),
/// as for a full queue; a standalone canister has no other canister to call.
const CALL_PERFORM_FAILED: i32 = 2;
/// Longest principal, in bytes.
const MAX_PRINCIPAL_BYTES: u64 = 29;
/// The largest request (method name + argument) to a canister of the same
/// subnet, where all canisters of a [`crate::World`] are: the replica's
/// MAX_INTER_CANISTER_PAYLOAD_IN_BYTES (2 MiB, rs/types/types/src/messages.rs)
/// times MULTIPLIER_MAX_SIZE_LOCAL_SUBNET (5,
/// rs/embedders/src/wasmtime_embedder/system_api.rs), checked by
/// `RequestInPrep::extend_method_payload` (…/system_api/request_in_prep.rs).
const MAX_LOCAL_REQUEST_BYTES: u64 = 5 * 2 * 1024 * 1024;
/// Outstanding requests a canister may have to one callee: the replica's
/// DEFAULT_QUEUE_CAPACITY (rs/replicated_state/src/canister_state/queues.rs);
/// each request reserves a slot for its response in the caller's queue from
/// the callee until the response is processed. `call_perform` past it
/// returns 2 and drops the call.
const QUEUE_CAPACITY: usize = 500;

// What `cost_call` reports, in cycles: the fees of a 13-node application
// subnet (docs/metering.md §8: an update costs 5,000,000 + 1 cycle per
// instruction), i.e. the call fee, the request bytes, the largest response
// (2 MiB) and the execution of its callback at the 40 billion update limit.
// An estimate only: icrun moves no cycles.
const XNET_CALL_FEE: u128 = 260_000;
const XNET_BYTE_FEE: u128 = 1_000;
const MAX_RESPONSE_BYTES: u128 = 2 * 1024 * 1024;
const RESPONSE_EXECUTION_FEE: u128 = 5_000_000 + 40_000_000_000;

/// Traps unless the message may make calls.
fn ensure_can_call(c: &Ctx<'_>, api: &str) -> HostResult<()> {
    let kind = c.data().msg.kind;
    if kind.can_call() {
        Ok(())
    } else {
        violation(format!("ic0.{api} cannot be executed in {kind:?}"))
    }
}

/// The call under construction; traps if there is none.
fn pending<'a>(c: &'a mut Ctx<'_>, api: &str) -> HostResult<&'a mut OutgoingCall> {
    ensure_can_call(c, api)?;
    match c.data_mut().msg.pending_call.as_mut() {
        Some(call) => Ok(call),
        None => violation(format!(
            "ic0.{api} called when no call is under construction."
        )),
    }
}

pub(super) fn register_calls(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
    linker.func_wrap(
        IC0,
        "call_new",
        |mut c: Ctx<'_>,
         callee_src: i32,
         callee_size: i32,
         name_src: i32,
         name_size: i32,
         reply_fun: i32,
         reply_env: i32,
         reject_fun: i32,
         reject_env: i32| {
            // docs/metering.md §4: 1500 + callee size + method name length.
            charge_api(&mut c, Api::CallNew, u(callee_size) + u(name_size))?;
            ensure_can_call(&c, "call_new")?;
            // A call still under construction is discarded.
            c.data_mut().msg.pending_call = None;
            if u(callee_size) > MAX_PRINCIPAL_BYTES {
                return violation("ic0.call_new: the callee is not a valid principal");
            }
            let callee = read_heap(&mut c, u(callee_src), u(callee_size))?;
            let name = read_heap(&mut c, u(name_src), u(name_size))?;
            let Ok(method) = String::from_utf8(name) else {
                return violation("ic0.call_new: the method name is not valid UTF-8");
            };
            c.data_mut().msg.pending_call = Some(OutgoingCall {
                callee,
                method,
                arg: Vec::new(),
                on_reply: closure(reply_fun, reply_env),
                on_reject: closure(reject_fun, reject_env),
                on_cleanup: None,
                cycles: 0,
                timeout_seconds: None,
            });
            Ok(())
        },
    )?;
    linker.func_wrap(
        IC0,
        "call_data_append",
        |mut c: Ctx<'_>, src: i32, size: i32| {
            // docs/metering.md §4: 500 + 50 × size.
            charge_api(&mut c, Api::CallDataAppend, u(size))?;
            let call = pending(&mut c, "call_data_append")?;
            // As the replica: the method name counts, and the size is
            // checked before the heap range.
            let current = (call.method.len() + call.arg.len()) as u64;
            if u(size) > MAX_LOCAL_REQUEST_BYTES.saturating_sub(current) {
                let callee = Principal::from_slice(&call.callee);
                return violation(format!(
                    "Request to {callee}:{} has a payload size of {}, which exceeds the allowed limit of {MAX_LOCAL_REQUEST_BYTES}.",
                    call.method,
                    current + u(size)
                ));
            }
            let bytes = read_heap(&mut c, u(src), u(size))?;
            let call = pending(&mut c, "call_data_append")?;
            call.arg.extend_from_slice(&bytes);
            Ok(())
        },
    )?;
    linker.func_wrap(
        IC0,
        "call_on_cleanup",
        |mut c: Ctx<'_>, fun: i32, env: i32| {
            charge_api(&mut c, Api::CallOnCleanup, 0)?;
            let call = pending(&mut c, "call_on_cleanup")?;
            if call.on_cleanup.is_some() {
                return violation("ic0.call_on_cleanup: the cleanup callback is already set");
            }
            call.on_cleanup = Some(closure(fun, env));
            Ok(())
        },
    )?;
    linker.func_wrap(
        IC0,
        "call_cycles_add128",
        |mut c: Ctx<'_>, high: i64, low: i64| {
            charge_api(&mut c, Api::CallCyclesAdd128, 0)?;
            let call = pending(&mut c, "call_cycles_add128")?;
            let amount = (u128::from(high as u64) << 64) | u128::from(low as u64);
            // Recorded only: icrun moves no cycles.
            call.cycles = call.cycles.saturating_add(amount);
            Ok(())
        },
    )?;
    linker.func_wrap(
        IC0,
        "call_with_best_effort_response",
        |mut c: Ctx<'_>, timeout: i32| {
            charge_api(&mut c, Api::CallWithBestEffortResponse, 0)?;
            let call = pending(&mut c, "call_with_best_effort_response")?;
            if call.timeout_seconds.is_some() {
                return violation("ic0.call_with_best_effort_response: the timeout is already set");
            }
            call.timeout_seconds = Some(timeout as u32);
            Ok(())
        },
    )?;
    linker.func_wrap(
        IC0,
        "cost_call",
        |mut c: Ctx<'_>, method_name_size: i64, payload_size: i64, dst: i32| {
            charge_api(&mut c, Api::CostCall, 0)?;
            let bytes = u128::from(method_name_size as u64) + u128::from(payload_size as u64);
            let cost = XNET_CALL_FEE
                + XNET_BYTE_FEE * (bytes + MAX_RESPONSE_BYTES)
                + RESPONSE_EXECUTION_FEE;
            write_heap(&mut c, u(dst), &cost.to_le_bytes())
        },
    )?;
    linker.func_wrap(IC0, "call_perform", |mut c: Ctx<'_>| {
        charge_api(&mut c, Api::CallPerform, 0)?;
        pending(&mut c, "call_perform")?;
        let msg = &mut c.data_mut().msg;
        let Some(call) = msg.pending_call.take() else {
            return violation("ic0.call_perform called when no call is under construction.");
        };
        if !msg.calls_enabled {
            // No runtime to send it to: the call is dropped.
            return Ok(CALL_PERFORM_FAILED);
        }
        let earlier = msg.outstanding_calls.get(&call.callee).copied();
        let this_message = msg.outgoing.iter().filter(|c| c.callee == call.callee);
        if earlier.unwrap_or(0) + this_message.count() >= QUEUE_CAPACITY {
            // The queue to the callee is full: the call is dropped.
            return Ok(CALL_PERFORM_FAILED);
        }
        msg.outgoing.push(call);
        Ok(CALL_PERFORMED)
    })?;
    Ok(())
}

/// A wasm32 callback: table index and environment.
fn closure(fun: i32, env: i32) -> Closure {
    Closure {
        fun: fun as u32,
        env: u(env),
    }
}
