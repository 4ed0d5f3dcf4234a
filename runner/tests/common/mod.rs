//! Helpers shared by the integration tests: WAT modules with the ic0 imports,
//! installing them and reading results.
#![allow(dead_code)]

use candid::Principal;
use icrun::{CallResult, Canister, Env, Limits, Options};

/// The anonymous principal, the caller of most test messages.
pub const ANONYMOUS: Principal = Principal::anonymous();

/// Every ic0 import the tests use, with wasm32 signatures.
pub const IMPORTS: &str = r#"
  (import "ic0" "msg_reply" (func $msg_reply))
  (import "ic0" "msg_reply_data_append" (func $msg_reply_data_append (param i32 i32)))
  (import "ic0" "msg_reject" (func $msg_reject (param i32 i32)))
  (import "ic0" "msg_arg_data_size" (func $msg_arg_data_size (result i32)))
  (import "ic0" "msg_arg_data_copy" (func $msg_arg_data_copy (param i32 i32 i32)))
  (import "ic0" "msg_caller_size" (func $msg_caller_size (result i32)))
  (import "ic0" "msg_caller_copy" (func $msg_caller_copy (param i32 i32 i32)))
  (import "ic0" "msg_method_name_size" (func $msg_method_name_size (result i32)))
  (import "ic0" "msg_method_name_copy" (func $msg_method_name_copy (param i32 i32 i32)))
  (import "ic0" "msg_reject_code" (func $msg_reject_code (result i32)))
  (import "ic0" "canister_self_size" (func $canister_self_size (result i32)))
  (import "ic0" "canister_self_copy" (func $canister_self_copy (param i32 i32 i32)))
  (import "ic0" "canister_cycle_balance128" (func $canister_cycle_balance128 (param i32)))
  (import "ic0" "canister_version" (func $canister_version (result i64)))
  (import "ic0" "msg_cycles_available128" (func $msg_cycles_available128 (param i32)))
  (import "ic0" "msg_cycles_accept128" (func $msg_cycles_accept128 (param i64 i64 i32)))
  (import "ic0" "accept_message" (func $accept_message))
  (import "ic0" "is_controller" (func $is_controller (param i32 i32) (result i32)))
  (import "ic0" "time" (func $time (result i64)))
  (import "ic0" "global_timer_set" (func $global_timer_set (param i64) (result i64)))
  (import "ic0" "in_replicated_execution" (func $in_replicated_execution (result i32)))
  (import "ic0" "certified_data_set" (func $certified_data_set (param i32 i32)))
  (import "ic0" "performance_counter" (func $performance_counter (param i32) (result i64)))
  (import "ic0" "debug_print" (func $debug_print (param i32 i32)))
  (import "ic0" "trap" (func $trap (param i32 i32)))
  (import "ic0" "call_new" (func $call_new (param i32 i32 i32 i32 i32 i32 i32 i32)))
  (import "ic0" "call_data_append" (func $call_data_append (param i32 i32)))
  (import "ic0" "call_cycles_add128" (func $call_cycles_add128 (param i64 i64)))
  (import "ic0" "call_on_cleanup" (func $call_on_cleanup (param i32 i32)))
  (import "ic0" "call_perform" (func $call_perform (result i32)))
  (import "ic0" "stable64_size" (func $stable64_size (result i64)))
  (import "ic0" "stable64_grow" (func $stable64_grow (param i64) (result i64)))
  (import "ic0" "stable64_read" (func $stable64_read (param i64 i64 i64)))
  (import "ic0" "stable64_write" (func $stable64_write (param i64 i64 i64)))
  (import "ic0" "stable_size" (func $stable_size (result i32)))
  (import "ic0" "stable_grow" (func $stable_grow (param i32) (result i32)))
  (import "ic0" "stable_read" (func $stable_read (param i32 i32 i32)))
  (import "ic0" "stable_write" (func $stable_write (param i32 i32 i32)))
"#;

/// A module with [`IMPORTS`], one page of memory and `items` (functions, data, ...).
pub fn module(items: &str) -> Vec<u8> {
    let text = format!("(module {IMPORTS} (memory (export \"memory\") 1) {items})");
    match wat::parse_str(&text) {
        Ok(wasm) => wasm,
        Err(e) => panic!("invalid test WAT: {e}\n{text}"),
    }
}

/// Installs `wasm` with an empty init argument and the default environment.
pub fn install_wasm(wasm: &[u8]) -> Canister {
    install_with(wasm, Limits::default())
}

/// Installs `wasm` with the given limits.
pub fn install_with(wasm: &[u8], limits: Limits) -> Canister {
    install_with_options(
        wasm,
        Options {
            limits,
            ..Options::default()
        },
    )
}

/// Installs `wasm` with the given options (limits, metering, tracing).
pub fn install_with_options(wasm: &[u8], options: Options) -> Canister {
    match Canister::install_with(wasm, &[], ANONYMOUS, Env::default(), options) {
        Ok((canister, _)) => canister,
        Err(e) => panic!("install failed: {e}"),
    }
}

/// Installs a module made of `items` (see [`module`]).
pub fn install(items: &str) -> Canister {
    install_wasm(&module(items))
}

/// The reply bytes of a result, panicking with the reject otherwise.
pub fn reply(result: &CallResult) -> Vec<u8> {
    match &result.reply {
        Ok(bytes) => bytes.clone(),
        Err(reject) => panic!("call rejected: {reject}"),
    }
}

/// The reply interpreted as a little-endian u64.
pub fn reply_u64(result: &CallResult) -> u64 {
    let bytes = reply(result);
    let array: [u8; 8] = match bytes.as_slice().try_into() {
        Ok(array) => array,
        Err(_) => panic!("expected 8 reply bytes, got {bytes:?}"),
    };
    u64::from_le_bytes(array)
}

/// The reject message of a result, panicking if it replied.
pub fn reject_message(result: &CallResult) -> String {
    match &result.reply {
        Ok(bytes) => panic!("expected a reject, got reply {bytes:?}"),
        Err(reject) => reject.message.clone(),
    }
}

/// Body fragment replying with the 8 bytes at heap address 0.
pub const REPLY_8_AT_0: &str =
    "(call $msg_reply_data_append (i32.const 0) (i32.const 8)) (call $msg_reply)";
