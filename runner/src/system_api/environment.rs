//! The canister's identity, environment, cycles, and fixed-answer stubs
//! (docs/metering.md §4).

use super::{charge_api, copy_to_heap, read_heap, u, violation, write_heap, Ctx, HostResult, IC0};
use crate::prices::Api;
use crate::state::HostState;
use wasmtime::Linker;

/// Longest principal, in bytes.
const MAX_PRINCIPAL_BYTES: u64 = 29;

pub(super) fn register_canister(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
    linker.func_wrap(IC0, "canister_self_size", |mut c: Ctx<'_>| {
        charge_api(&mut c, Api::CanisterSelfSize, 0)?;
        Ok(c.data().env.canister_id.as_slice().len() as i32)
    })?;
    linker.func_wrap(
        IC0,
        "canister_self_copy",
        |mut c: Ctx<'_>, dst: i32, off: i32, size: i32| {
            charge_api(&mut c, Api::CanisterSelfCopy, u(size))?;
            copy_to_heap(&mut c, "canister_self_copy", u(dst), u(off), u(size), |s| {
                s.env.canister_id.as_slice()
            })
        },
    )?;
    linker.func_wrap(IC0, "canister_version", |mut c: Ctx<'_>| {
        charge_api(&mut c, Api::CanisterVersion, 0)?;
        Ok(c.data().env.canister_version as i64)
    })?;
    linker.func_wrap(IC0, "canister_status", |mut c: Ctx<'_>| {
        charge_api(&mut c, Api::CanisterStatus, 0)?;
        Ok(1i32)
    })?;
    linker.func_wrap(
        IC0,
        "is_controller",
        |mut c: Ctx<'_>, src: i32, size: i32| {
            charge_api(&mut c, Api::IsController, u(size))?;
            if u(size) > MAX_PRINCIPAL_BYTES {
                return violation("ic0.is_controller: invalid principal");
            }
            let principal = read_heap(&mut c, u(src), u(size))?;
            let controls = c
                .data()
                .env
                .controllers
                .iter()
                .any(|controller| controller.as_slice() == principal.as_slice());
            Ok(controls as i32)
        },
    )?;
    linker.func_wrap(IC0, "time", |mut c: Ctx<'_>| {
        charge_api(&mut c, Api::Time, 0)?;
        Ok(c.data().env.time_nanos as i64)
    })?;
    linker.func_wrap(IC0, "global_timer_set", |mut c: Ctx<'_>, when: i64| {
        charge_api(&mut c, Api::GlobalTimerSet, 0)?;
        let previous = std::mem::replace(&mut c.data_mut().env.global_timer, when as u64);
        Ok(previous as i64)
    })?;
    linker.func_wrap(IC0, "in_replicated_execution", |mut c: Ctx<'_>| {
        charge_api(&mut c, Api::InReplicatedExecution, 0)?;
        Ok(c.data().msg.replicated as i32)
    })?;
    linker.func_wrap(
        IC0,
        "certified_data_set",
        |mut c: Ctx<'_>, src: i32, size: i32| {
            charge_api(&mut c, Api::CertifiedDataSet, u(size))?;
            if u(size) > 32 {
                return violation("ic0.certified_data_set: more than 32 bytes");
            }
            let data = read_heap(&mut c, u(src), u(size))?;
            c.data_mut().env.certified_data = data;
            Ok(())
        },
    )?;
    // No certificate is ever present (icrun does not sign). Base charge assumed.
    linker.func_wrap(IC0, "data_certificate_present", |mut c: Ctx<'_>| {
        charge_api(&mut c, Api::DataCertificatePresent, 0)?;
        Ok(0i32)
    })?;
    linker.func_wrap(IC0, "data_certificate_size", |mut c: Ctx<'_>| {
        charge_api(&mut c, Api::DataCertificateSize, 0)?;
        violation::<i32>("ic0.data_certificate_size: no certificate present")
    })?;
    linker.func_wrap(
        IC0,
        "data_certificate_copy",
        |mut c: Ctx<'_>, _dst: i32, _off: i32, size: i32| {
            charge_api(&mut c, Api::DataCertificateCopy, u(size))?;
            violation::<()>("ic0.data_certificate_copy: no certificate present")
        },
    )?;
    Ok(())
}

fn write_u128(c: &mut Ctx<'_>, dst: i32, value: u128) -> HostResult<()> {
    write_heap(c, u(dst), &value.to_le_bytes())
}

pub(super) fn register_cycles(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
    linker.func_wrap(
        IC0,
        "canister_cycle_balance128",
        |mut c: Ctx<'_>, dst: i32| {
            charge_api(&mut c, Api::CanisterCycleBalance128, 0)?;
            let balance = c.data().env.cycle_balance;
            write_u128(&mut c, dst, balance)
        },
    )?;
    linker.func_wrap(
        IC0,
        "canister_liquid_cycle_balance128",
        |mut c: Ctx<'_>, dst: i32| {
            charge_api(&mut c, Api::CanisterLiquidCycleBalance128, 0)?;
            let balance = c.data().env.cycle_balance;
            write_u128(&mut c, dst, balance)
        },
    )?;
    // docs/metering.md §4: msg_cycles_* = 500. No message carries cycles here.
    linker.func_wrap(
        IC0,
        "msg_cycles_available128",
        |mut c: Ctx<'_>, dst: i32| {
            charge_api(&mut c, Api::MsgCyclesAvailable128, 0)?;
            write_u128(&mut c, dst, 0)
        },
    )?;
    linker.func_wrap(IC0, "msg_cycles_refunded128", |mut c: Ctx<'_>, dst: i32| {
        charge_api(&mut c, Api::MsgCyclesRefunded128, 0)?;
        write_u128(&mut c, dst, 0)
    })?;
    linker.func_wrap(
        IC0,
        "msg_cycles_accept128",
        |mut c: Ctx<'_>, _high: i64, _low: i64, dst: i32| {
            charge_api(&mut c, Api::MsgCyclesAccept128, 0)?;
            write_u128(&mut c, dst, 0)
        },
    )?;
    linker.func_wrap(
        IC0,
        "cycles_burn128",
        |mut c: Ctx<'_>, _high: i64, _low: i64, dst: i32| {
            charge_api(&mut c, Api::CyclesBurn128, 0)?;
            write_u128(&mut c, dst, 0)
        },
    )?;
    Ok(())
}

/// A size function `api` returning the length of `source(state)`.
fn sized(
    linker: &mut Linker<HostState>,
    api: Api,
    source: fn(&HostState) -> &[u8],
) -> wasmtime::Result<()> {
    linker.func_wrap(IC0, api.name(), move |mut c: Ctx<'_>| {
        charge_api(&mut c, api, 0)?;
        Ok(source(c.data()).len() as i32)
    })?;
    Ok(())
}

/// A `_copy(dst, offset, size)` function `api` over `source(state)`.
fn copier(
    linker: &mut Linker<HostState>,
    api: Api,
    source: fn(&HostState) -> &[u8],
) -> wasmtime::Result<()> {
    linker.func_wrap(
        IC0,
        api.name(),
        move |mut c: Ctx<'_>, dst: i32, off: i32, size: i32| {
            charge_api(&mut c, api, u(size))?;
            copy_to_heap(&mut c, api.name(), u(dst), u(off), u(size), source)
        },
    )?;
    Ok(())
}

/// The 29-byte principal `subnet_self_*` reports (a fixed, made-up subnet id).
const SUBNET_ID: &[u8] = &[
    0x9e, 0x2a, 0x5f, 0x11, 0x83, 0x6c, 0x4d, 0x20, 0x71, 0x0b, 0xe4, 0x39, 0xa6, 0x57, 0x12, 0xc8,
    0x3d, 0x90, 0x4e, 0x2b, 0x6a, 0x15, 0xf7, 0x08, 0xd1, 0x63, 0x2c, 0x44, 0x02,
];

/// Caller info, subnet, root key and environment-variable functions with
/// fixed answers: no caller info, a made-up 13-node subnet, no root key, no
/// environment variables.
pub(super) fn register_identity_stubs(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
    const EMPTY: fn(&HostState) -> &[u8] = |_| &[];
    sized(linker, Api::MsgCallerInfoDataSize, EMPTY)?;
    copier(linker, Api::MsgCallerInfoDataCopy, EMPTY)?;
    sized(linker, Api::MsgCallerInfoSignerSize, EMPTY)?;
    copier(linker, Api::MsgCallerInfoSignerCopy, EMPTY)?;
    sized(linker, Api::SubnetSelfSize, |_| SUBNET_ID)?;
    copier(linker, Api::SubnetSelfCopy, |_| SUBNET_ID)?;
    linker.func_wrap(IC0, "subnet_self_node_count", |mut c: Ctx<'_>| {
        charge_api(&mut c, Api::SubnetSelfNodeCount, 0)?;
        Ok(13i32)
    })?;
    sized(linker, Api::RootKeySize, EMPTY)?;
    copier(linker, Api::RootKeyCopy, EMPTY)?;
    linker.func_wrap(IC0, "env_var_name_size", |mut c: Ctx<'_>, _index: i32| {
        charge_api(&mut c, Api::EnvVarNameSize, 0)?;
        violation::<i32>("ic0.env_var_name_size: index out of bounds")
    })?;
    linker.func_wrap(
        IC0,
        "env_var_name_copy",
        |mut c: Ctx<'_>, _index: i32, _dst: i32, _off: i32, size: i32| {
            charge_api(&mut c, Api::EnvVarNameCopy, u(size))?;
            violation::<()>("ic0.env_var_name_copy: index out of bounds")
        },
    )?;
    linker.func_wrap(
        IC0,
        "env_var_name_exists",
        |mut c: Ctx<'_>, _src: i32, size: i32| {
            charge_api(&mut c, Api::EnvVarNameExists, u(size))?;
            Ok(0i32)
        },
    )?;
    linker.func_wrap(
        IC0,
        "env_var_value_size",
        |mut c: Ctx<'_>, _src: i32, size: i32| {
            charge_api(&mut c, Api::EnvVarValueSize, u(size))?;
            violation::<i32>("ic0.env_var_value_size: no such variable")
        },
    )?;
    linker.func_wrap(
        IC0,
        "env_var_value_copy",
        |mut c: Ctx<'_>, _src: i32, name_size: i32, _dst: i32, _off: i32, size: i32| {
            charge_api(&mut c, Api::EnvVarValueCopy, u(name_size) + u(size))?;
            violation::<()>("ic0.env_var_value_copy: no such variable")
        },
    )?;
    Ok(())
}
