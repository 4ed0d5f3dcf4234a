//! Message data, replies and rejects (ic-metering.md §4).

use super::{charge, copy_to_heap, read_heap, u, violation, Ctx, HostResult, BASE, IC0};
use crate::state::{HostState, MessageKind, Response};
use wasmtime::Linker;

// ic-metering.md §4: msg_reply_data_append, msg_reject = 500 + 50 × size.
const PER_REPLY_BYTE: u64 = 50;

pub(super) fn register_message(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
    linker.func_wrap(IC0, "msg_arg_data_size", |mut c: Ctx<'_>| {
        charge(&mut c, BASE)?; // ic-metering.md §4: 500.
        Ok(c.data().msg.arg.len() as i32)
    })?;
    linker.func_wrap(
        IC0,
        "msg_arg_data_copy",
        |mut c: Ctx<'_>, dst: i32, off: i32, size: i32| {
            charge(&mut c, BASE + u(size))?; // ic-metering.md §4: 500 + size.
            copy_to_heap(&mut c, "msg_arg_data_copy", u(dst), u(off), u(size), |s| {
                &s.msg.arg
            })
        },
    )?;
    linker.func_wrap(IC0, "msg_caller_size", |mut c: Ctx<'_>| {
        charge(&mut c, BASE)?; // ic-metering.md §4: 500.
        Ok(c.data().msg.caller.len() as i32)
    })?;
    linker.func_wrap(
        IC0,
        "msg_caller_copy",
        |mut c: Ctx<'_>, dst: i32, off: i32, size: i32| {
            charge(&mut c, BASE + u(size))?; // ic-metering.md §4: 500 + size.
            copy_to_heap(&mut c, "msg_caller_copy", u(dst), u(off), u(size), |s| {
                &s.msg.caller
            })
        },
    )?;
    // Not in ic-metering.md §4; charged like its `_copy` sibling's base (500).
    linker.func_wrap(IC0, "msg_method_name_size", |mut c: Ctx<'_>| {
        charge(&mut c, BASE)?;
        Ok(c.data().msg.method_name.len() as i32)
    })?;
    linker.func_wrap(
        IC0,
        "msg_method_name_copy",
        |mut c: Ctx<'_>, dst: i32, off: i32, size: i32| {
            charge(&mut c, BASE + u(size))?; // ic-metering.md §4: 500 + size.
            copy_to_heap(
                &mut c,
                "msg_method_name_copy",
                u(dst),
                u(off),
                u(size),
                |s| s.msg.method_name.as_bytes(),
            )
        },
    )?;
    linker.func_wrap(IC0, "msg_reject_code", |mut c: Ctx<'_>| {
        charge(&mut c, BASE)?; // ic-metering.md §4: 500.
                               // No call is ever rejected back to this canister: 0 = "not a reject".
        Ok(0i32)
    })?;
    // Only meaningful in reject callbacks, which icrun does not run yet.
    linker.func_wrap(IC0, "msg_reject_msg_size", |mut c: Ctx<'_>| {
        charge(&mut c, BASE)?;
        violation::<i32>("ic0.msg_reject_msg_size called outside a reject callback")
    })?;
    linker.func_wrap(
        IC0,
        "msg_reject_msg_copy",
        |mut c: Ctx<'_>, _dst: i32, _off: i32, size: i32| {
            charge(&mut c, BASE + u(size))?; // ic-metering.md §4: 500 + size.
            violation::<()>("ic0.msg_reject_msg_copy called outside a reject callback")
        },
    )?;
    // Not in ic-metering.md §4; base charge assumed.
    linker.func_wrap(IC0, "msg_deadline", |mut c: Ctx<'_>| {
        charge(&mut c, BASE)?;
        Ok(0i64)
    })?;
    linker.func_wrap(IC0, "accept_message", |mut c: Ctx<'_>| {
        charge(&mut c, BASE)?; // ic-metering.md §4: 500.
        let msg = &mut c.data_mut().msg;
        if msg.kind != MessageKind::InspectMessage {
            return violation("ic0.accept_message called outside canister_inspect_message");
        }
        if msg.accepted {
            return violation("ic0.accept_message called twice");
        }
        msg.accepted = true;
        Ok(())
    })?;
    Ok(())
}

pub(super) fn register_reply(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
    linker.func_wrap(
        IC0,
        "msg_reply_data_append",
        |mut c: Ctx<'_>, src: i32, size: i32| {
            // ic-metering.md §4: 500 + 50 × size.
            charge(&mut c, BASE + PER_REPLY_BYTE * u(size))?;
            ensure_can_reply(&c, "msg_reply_data_append")?;
            let bytes = read_heap(&mut c, u(src), u(size))?;
            c.data_mut().msg.reply_buffer.extend_from_slice(&bytes);
            Ok(())
        },
    )?;
    linker.func_wrap(IC0, "msg_reply", |mut c: Ctx<'_>| {
        charge(&mut c, BASE)?; // ic-metering.md §4: 500.
        ensure_can_reply(&c, "msg_reply")?;
        let msg = &mut c.data_mut().msg;
        let data = std::mem::take(&mut msg.reply_buffer);
        msg.response = Some(Response::Reply(data));
        Ok(())
    })?;
    linker.func_wrap(IC0, "msg_reject", |mut c: Ctx<'_>, src: i32, size: i32| {
        // ic-metering.md §4: 500 + 50 × size.
        charge(&mut c, BASE + PER_REPLY_BYTE * u(size))?;
        ensure_can_reply(&c, "msg_reject")?;
        let bytes = read_heap(&mut c, u(src), u(size))?;
        let Ok(text) = String::from_utf8(bytes) else {
            return violation("ic0.msg_reject: the message is not valid UTF-8");
        };
        c.data_mut().msg.response = Some(Response::Reject(text));
        Ok(())
    })?;
    Ok(())
}

fn ensure_can_reply(c: &Ctx<'_>, api: &str) -> HostResult<()> {
    let msg = &c.data().msg;
    if !msg.kind.can_reply() {
        return violation(format!("ic0.{api} cannot be executed in {:?}", msg.kind));
    }
    if msg.response.is_some() {
        return violation(format!("ic0.{api}: the call is already replied"));
    }
    Ok(())
}
