//! Message data, replies and rejects (docs/metering.md §4).

use super::{charge_api, copy_to_heap, read_heap, u, violation, Ctx, HostResult, IC0};
use crate::prices::Api;
use crate::state::{HostState, MessageKind, Response};
use wasmtime::Linker;

/// The largest reply of a replicated execution (updates, replicated queries,
/// callbacks; to canisters and to ingress alike): the replica's
/// MAX_INTER_CANISTER_PAYLOAD_IN_BYTES, 2 MiB (rs/types/types/src/messages.rs),
/// the `max_reply_size` its `ApiType::update` and callbacks get
/// (rs/embedders/src/wasmtime_embedder/system_api.rs).
const MAX_REPLICATED_REPLY_BYTES: u64 = 2 * 1024 * 1024;
/// The largest reply of a non-replicated query: the replica's
/// MAX_NON_REPLICATED_QUERY_REPLY_SIZE, 3 MiB = 3,145,728 bytes
/// (rs/embedders/src/wasmtime_embedder/system_api.rs).
const MAX_NON_REPLICATED_REPLY_BYTES: u64 = 3 * 1024 * 1024;

/// The reply size limit of a message (see the constants above).
fn max_reply_bytes(replicated: bool) -> u64 {
    if replicated {
        MAX_REPLICATED_REPLY_BYTES
    } else {
        MAX_NON_REPLICATED_REPLY_BYTES
    }
}

pub(super) fn register_message(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
    linker.func_wrap(IC0, "msg_arg_data_size", |mut c: Ctx<'_>| {
        charge_api(&mut c, Api::MsgArgDataSize, 0)?;
        ensure_has_arg(&c, "msg_arg_data_size")?;
        Ok(c.data().msg.arg.len() as i32)
    })?;
    linker.func_wrap(
        IC0,
        "msg_arg_data_copy",
        |mut c: Ctx<'_>, dst: i32, off: i32, size: i32| {
            charge_api(&mut c, Api::MsgArgDataCopy, u(size))?;
            ensure_has_arg(&c, "msg_arg_data_copy")?;
            copy_to_heap(&mut c, "msg_arg_data_copy", u(dst), u(off), u(size), |s| {
                &s.msg.arg
            })
        },
    )?;
    linker.func_wrap(IC0, "msg_caller_size", |mut c: Ctx<'_>| {
        charge_api(&mut c, Api::MsgCallerSize, 0)?;
        Ok(c.data().msg.caller.len() as i32)
    })?;
    linker.func_wrap(
        IC0,
        "msg_caller_copy",
        |mut c: Ctx<'_>, dst: i32, off: i32, size: i32| {
            charge_api(&mut c, Api::MsgCallerCopy, u(size))?;
            copy_to_heap(&mut c, "msg_caller_copy", u(dst), u(off), u(size), |s| {
                &s.msg.caller
            })
        },
    )?;
    linker.func_wrap(IC0, "msg_method_name_size", |mut c: Ctx<'_>| {
        charge_api(&mut c, Api::MsgMethodNameSize, 0)?;
        Ok(c.data().msg.method_name.len() as i32)
    })?;
    linker.func_wrap(
        IC0,
        "msg_method_name_copy",
        |mut c: Ctx<'_>, dst: i32, off: i32, size: i32| {
            charge_api(&mut c, Api::MsgMethodNameCopy, u(size))?;
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
        charge_api(&mut c, Api::MsgRejectCode, 0)?;
        let msg = &c.data().msg;
        match msg.kind {
            // 0 = "no error" in a reply callback (and its cleanup).
            MessageKind::ReplyCallback | MessageKind::RejectCallback | MessageKind::Cleanup => {
                Ok(msg.reject_code as i32)
            }
            kind => violation(format!(
                "ic0.msg_reject_code cannot be executed in {kind:?}"
            )),
        }
    })?;
    linker.func_wrap(IC0, "msg_reject_msg_size", |mut c: Ctx<'_>| {
        charge_api(&mut c, Api::MsgRejectMsgSize, 0)?;
        ensure_reject_callback(&c, "msg_reject_msg_size")?;
        Ok(c.data().msg.reject_message.len() as i32)
    })?;
    linker.func_wrap(
        IC0,
        "msg_reject_msg_copy",
        |mut c: Ctx<'_>, dst: i32, off: i32, size: i32| {
            charge_api(&mut c, Api::MsgRejectMsgCopy, u(size))?;
            ensure_reject_callback(&c, "msg_reject_msg_copy")?;
            copy_to_heap(
                &mut c,
                "msg_reject_msg_copy",
                u(dst),
                u(off),
                u(size),
                |s| s.msg.reject_message.as_bytes(),
            )
        },
    )?;
    linker.func_wrap(IC0, "msg_deadline", |mut c: Ctx<'_>| {
        charge_api(&mut c, Api::MsgDeadline, 0)?;
        Ok(c.data().msg.deadline as i64)
    })?;
    linker.func_wrap(IC0, "accept_message", |mut c: Ctx<'_>| {
        charge_api(&mut c, Api::AcceptMessage, 0)?;
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
            // docs/metering.md §4: 500 + 50 × size.
            charge_api(&mut c, Api::MsgReplyDataAppend, u(size))?;
            ensure_can_reply(&c, "msg_reply_data_append")?;
            let msg = &c.data().msg;
            let limit = max_reply_bytes(msg.replicated);
            let payload = msg.reply_buffer.len() as u64 + u(size);
            if payload > limit {
                return violation(format!(
                    "ic0.msg_reply_data_append: application payload size ({payload}) cannot be larger than {limit}."
                ));
            }
            let bytes = read_heap(&mut c, u(src), u(size))?;
            c.data_mut().msg.reply_buffer.extend_from_slice(&bytes);
            Ok(())
        },
    )?;
    linker.func_wrap(IC0, "msg_reply", |mut c: Ctx<'_>| {
        charge_api(&mut c, Api::MsgReply, 0)?;
        ensure_can_reply(&c, "msg_reply")?;
        let msg = &mut c.data_mut().msg;
        let data = std::mem::take(&mut msg.reply_buffer);
        msg.response = Some(Response::Reply(data));
        Ok(())
    })?;
    linker.func_wrap(IC0, "msg_reject", |mut c: Ctx<'_>, src: i32, size: i32| {
        // docs/metering.md §4: 500 + 50 × size.
        charge_api(&mut c, Api::MsgReject, u(size))?;
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
    if msg.response.is_some() || msg.replied_before {
        return violation(format!("ic0.{api}: the call is already replied"));
    }
    Ok(())
}

/// Traps where there is no argument: in reject callbacks and cleanups (the
/// interface spec lists `msg_arg_data_*` for I U RQ NRQ TQ CQ Ry CRy F).
fn ensure_has_arg(c: &Ctx<'_>, api: &str) -> HostResult<()> {
    let kind = c.data().msg.kind;
    match kind {
        MessageKind::RejectCallback | MessageKind::Cleanup => {
            violation(format!("ic0.{api} cannot be executed in {kind:?}"))
        }
        _ => Ok(()),
    }
}

/// Traps outside a reject callback (`msg_reject_msg_*` are Rt only).
fn ensure_reject_callback(c: &Ctx<'_>, api: &str) -> HostResult<()> {
    let kind = c.data().msg.kind;
    if kind == MessageKind::RejectCallback {
        Ok(())
    } else {
        violation(format!(
            "ic0.{api} called outside a reject callback ({kind:?})"
        ))
    }
}
