//! Message semantics: trap rollback of heap, globals and stable memory, query
//! isolation, instruction limits, install and upgrade, inspect_message,
//! unknown imports.

mod common;

use common::ANONYMOUS;
use common::*;
use icrun::{Canister, Env, InstallError, Limits, RejectCode};

/// heap[16] and a global count the `inc` calls; stable[0..8] mirrors heap[16].
fn state_items(extra: &str) -> String {
    format!(
        r#"
        (global $calls (mut i64) (i64.const 0))
        (data (i32.const 16) "\07")
        (func $write_state
          (i64.store (i32.const 16) (i64.add (i64.load (i32.const 16)) (i64.const 1)))
          (if (i64.eqz (call $stable64_size))
            (then (drop (call $stable64_grow (i64.const 1)))))
          (call $stable64_write (i64.const 0) (i64.const 16) (i64.const 8))
          (global.set $calls (i64.add (global.get $calls) (i64.const 1))))
        (func $reply_at (param i32)
          (call $msg_reply_data_append (local.get 0) (i32.const 8))
          call $msg_reply)
        (func (export "canister_update inc") call $write_state (call $reply_at (i32.const 16)))
        (func (export "canister_update inc_then_trap") call $write_state unreachable)
        (func (export "canister_update inc_grow_trap")
          call $write_state (drop (memory.grow (i32.const 2))) unreachable)
        (func (export "canister_update spin") call $write_state (loop br 0))
        (func (export "canister_query inc_query") call $write_state (call $reply_at (i32.const 16)))
        (func (export "canister_query heap") (call $reply_at (i32.const 16)))
        (func (export "canister_query heap24") (call $reply_at (i32.const 24)))
        (func (export "canister_query stable") (call $stable_at (i64.const 0)))
        (func (export "canister_query stable8") (call $stable_at (i64.const 8)))
        (func $stable_at (param i64)
          (i64.store (i32.const 0) (i64.const 0))
          (if (i64.ne (call $stable64_size) (i64.const 0))
            (then (call $stable64_read (i64.const 0) (local.get 0) (i64.const 8))))
          (call $reply_at (i32.const 0)))
        (func (export "canister_query calls")
          (i64.store (i32.const 0) (global.get $calls)) (call $reply_at (i32.const 0)))
        (func (export "canister_query pages")
          (i64.store (i32.const 0) (i64.extend_i32_u (memory.size))) (call $reply_at (i32.const 0)))
        {extra}
        "#
    )
}

fn read(canister: &mut Canister, query: &str) -> u64 {
    reply_u64(&canister.query(query, &[], ANONYMOUS))
}

#[test]
fn trap_rolls_back_heap_globals_and_stable_memory() {
    let mut canister = install(&state_items(""));
    assert_eq!(reply_u64(&canister.update("inc", &[], ANONYMOUS)), 8);

    let result = canister.update("inc_then_trap", &[], ANONYMOUS);
    let reject = result.reply.expect_err("unreachable traps");
    assert_eq!(reject.code, RejectCode::CanisterError);
    assert!(
        reject.message.contains("Canister trapped: unreachable"),
        "{}",
        reject.message
    );

    assert_eq!(read(&mut canister, "heap"), 8);
    assert_eq!(read(&mut canister, "stable"), 8);
    assert_eq!(read(&mut canister, "calls"), 1);
    // Still usable.
    assert_eq!(reply_u64(&canister.update("inc", &[], ANONYMOUS)), 9);
}

#[test]
fn trap_after_memory_grow_restores_size() {
    let mut canister = install(&state_items(""));
    canister.update("inc", &[], ANONYMOUS);
    let reject = canister
        .update("inc_grow_trap", &[], ANONYMOUS)
        .reply
        .expect_err("traps");
    assert!(reject.message.contains("unreachable"), "{}", reject.message);
    assert_eq!(read(&mut canister, "pages"), 1);
    assert_eq!(read(&mut canister, "heap"), 8);
    assert_eq!(read(&mut canister, "stable"), 8);
    assert_eq!(read(&mut canister, "calls"), 1);
    assert_eq!(reply_u64(&canister.update("inc", &[], ANONYMOUS)), 9);
}

#[test]
fn queries_never_persist_changes() {
    let mut canister = install(&state_items(""));
    canister.update("inc", &[], ANONYMOUS);
    // The query sees the state and changes it (8 -> 9) ...
    assert_eq!(read(&mut canister, "inc_query"), 9);
    // ... but nothing is kept.
    assert_eq!(read(&mut canister, "heap"), 8);
    assert_eq!(read(&mut canister, "stable"), 8);
    assert_eq!(read(&mut canister, "calls"), 1);
}

#[test]
fn instruction_limit_exceeded_rolls_back() {
    let limits = Limits {
        update: 10_000,
        ..Limits::default()
    };
    let mut canister = install_with(&module(&state_items("")), limits);
    canister.update("inc", &[], ANONYMOUS);
    let result = canister.update("spin", &[], ANONYMOUS);
    let reject = result.reply.expect_err("limit exceeded");
    assert_eq!(reject.code, RejectCode::CanisterError);
    assert_eq!(
        reject.message,
        "Canister exceeded the limit of 10000 instructions for single message execution."
    );
    assert!(result.instructions >= 10_000);
    assert_eq!(read(&mut canister, "heap"), 8);
    assert_eq!(read(&mut canister, "stable"), 8);
    assert_eq!(reply_u64(&canister.update("inc", &[], ANONYMOUS)), 9);
}

#[test]
fn heap_dirty_pages_count_toward_the_limit() {
    // Static cost 1 + 3 stores × 3 = 10; three heap pages dirtied: 3000 (§4).
    let items = r#"(func (export "canister_update touch")
        (i32.store (i32.const 0) (i32.const 1))
        (i32.store (i32.const 4096) (i32.const 1))
        (i32.store (i32.const 8192) (i32.const 1)))
      (func (export "canister_query peek")
        (call $msg_reply_data_append (i32.const 4096) (i32.const 8)) call $msg_reply)"#;
    let limits = Limits {
        update: 2_000,
        ..Limits::default()
    };
    let mut canister = install_with(&module(items), limits);
    let result = canister.update("touch", &[], ANONYMOUS);
    assert_eq!(result.instructions, 3010);
    assert!(reject_message(&result).contains("exceeded the limit of 2000"));
    assert_eq!(reply_u64(&canister.query("peek", &[], ANONYMOUS)), 0);

    canister.set_limits(Limits::default());
    let result = canister.update("touch", &[], ANONYMOUS);
    // No reply, but the message completed: changes are kept, 10 + 3000.
    assert_eq!(result.instructions, 3010);
    assert_eq!(reply_u64(&canister.query("peek", &[], ANONYMOUS)), 1);
}

#[test]
fn install_runs_start_then_init_with_argument() {
    let items = r#"
      (func $start (i64.store (i32.const 40) (i64.const 100)))
      (start $start)
      (func (export "canister_init")
        (i64.store (i32.const 48)
          (i64.add (i64.load (i32.const 40)) (i64.extend_i32_u (call $msg_arg_data_size)))))
      (func (export "canister_query init_value")
        (call $msg_reply_data_append (i32.const 48) (i32.const 8)) call $msg_reply)"#;
    let wasm = module(items);
    let (mut canister, result) =
        Canister::install(&wasm, b"four", ANONYMOUS, Env::default()).expect("installs");
    assert!(result.reply.is_ok());
    // start: 1 + (1 + 1 + 1) = 4; init: 1 + const 1 + load (1+1) + call 5 +
    // extend 1 + add 1 + store 1 = 12; msg_arg_data_size 500. Heap page 0
    // dirtied: 1000 (§4). 4 + 12 + 500 + 1000.
    assert_eq!(result.instructions, 1516);
    assert_eq!(
        reply_u64(&canister.query("init_value", &[], ANONYMOUS)),
        104
    );
}

#[test]
fn install_fails_when_init_traps() {
    let wasm = module(r#"(func (export "canister_init") unreachable)"#);
    match Canister::install(&wasm, &[], ANONYMOUS, Env::default()) {
        Err(InstallError::Trapped(result)) => {
            assert!(reject_message(&result).contains("unreachable"))
        }
        Err(other) => panic!("unexpected error {other}"),
        Ok(_) => panic!("install should fail"),
    }
}

#[test]
fn unknown_import_fails_install_naming_it() {
    let wasm = wat::parse_str(r#"(module (import "ic0" "no_such_call" (func)) (memory 1))"#)
        .expect("valid WAT");
    match Canister::install(&wasm, &[], ANONYMOUS, Env::default()) {
        Err(e @ InstallError::Load(_)) => {
            let message = e.to_string();
            assert!(
                message.contains("no_such_call") && message.contains("ic0"),
                "{message}"
            );
        }
        Err(other) => panic!("unexpected error {other}"),
        Ok(_) => panic!("install should fail"),
    }
}

const UPGRADE_HOOKS: &str = r#"
  (func (export "canister_pre_upgrade")
    (call $stable64_write (i64.const 8) (i64.const 16) (i64.const 8)))
  (func (export "canister_post_upgrade")
    (call $msg_arg_data_copy (i32.const 24) (i32.const 0) (call $msg_arg_data_size)))"#;

#[test]
fn upgrade_keeps_stable_memory_and_resets_heap() {
    let wasm = module(&state_items(UPGRADE_HOOKS));
    let mut canister = install_wasm(&wasm);
    canister.update("inc", &[], ANONYMOUS);
    canister.update("inc", &[], ANONYMOUS);
    assert_eq!(read(&mut canister, "heap"), 9);

    let result = canister
        .upgrade(&wasm, &5u64.to_le_bytes(), ANONYMOUS)
        .expect("upgrade succeeds");
    assert!(result.reply.is_ok());
    // Heap and globals start afresh: the data segment's 7, no calls.
    assert_eq!(read(&mut canister, "heap"), 7);
    assert_eq!(read(&mut canister, "calls"), 0);
    // Stable memory kept, including what pre_upgrade wrote.
    assert_eq!(read(&mut canister, "stable"), 9);
    assert_eq!(read(&mut canister, "stable8"), 9);
    // post_upgrade received the argument.
    assert_eq!(read(&mut canister, "heap24"), 5);
}

#[test]
fn failed_upgrade_changes_nothing() {
    let wasm = module(&state_items(UPGRADE_HOOKS));
    let mut canister = install_wasm(&wasm);
    canister.update("inc", &[], ANONYMOUS);
    let broken = module(&state_items(
        r#"(func (export "canister_post_upgrade") unreachable)"#,
    ));
    match canister.upgrade(&broken, &[], ANONYMOUS) {
        Err(InstallError::Trapped(result)) => {
            assert!(reject_message(&result).contains("unreachable"))
        }
        Err(other) => panic!("unexpected error {other}"),
        Ok(_) => panic!("upgrade should fail"),
    }
    assert_eq!(read(&mut canister, "heap"), 8);
    assert_eq!(read(&mut canister, "calls"), 1);
    assert_eq!(read(&mut canister, "stable"), 8);
    // pre_upgrade's write to stable[8..16] was rolled back.
    assert_eq!(read(&mut canister, "stable8"), 0);
    assert_eq!(reply_u64(&canister.update("inc", &[], ANONYMOUS)), 9);
}

#[test]
fn inspect_message_filters_updates() {
    let items = state_items(
        r#"(func (export "canister_inspect_message")
             call $write_state
             (if (i32.gt_u (call $msg_arg_data_size) (i32.const 0))
               (then call $accept_message)))"#,
    );
    let mut canister = install(&items);
    let rejected = canister.update("inc", &[], ANONYMOUS);
    let reject = rejected.reply.expect_err("not accepted");
    assert_eq!(reject.code, RejectCode::CanisterReject);
    assert_eq!(read(&mut canister, "heap"), 7);
    // Accepted: the update runs; inspect_message's own changes are discarded.
    assert_eq!(reply_u64(&canister.update("inc", b"x", ANONYMOUS)), 8);
    assert_eq!(read(&mut canister, "calls"), 1);
}

#[test]
fn custom_sections_are_readable() {
    let mut wasm = module("");
    // A custom section: id 0, size, name length, name, payload.
    let name = b"icp:public candid:service";
    let payload = b"service : {}";
    let mut section = vec![name.len() as u8];
    section.extend_from_slice(name);
    section.extend_from_slice(payload);
    wasm.push(0);
    wasm.push(section.len() as u8);
    wasm.extend_from_slice(&section);
    let canister = install_wasm(&wasm);
    let found = canister
        .custom_section("icp:public candid:service")
        .expect("parses");
    assert_eq!(found.as_deref(), Some(&payload[..]));
}

#[test]
fn written_pages_are_dirty_even_with_unchanged_content() {
    let items = r#"
      (func (export "canister_update same") (i32.store (i32.const 4096) (i32.const 0)))
      (func (export "canister_update copy_arg")
        (call $msg_arg_data_copy (i32.const 8192) (i32.const 0) (i32.const 3)))
      (func (export "canister_update copy_then_trap")
        (call $msg_arg_data_copy (i32.const 8192) (i32.const 0) (i32.const 3)) unreachable)
      (func (export "canister_update fill_then_trap")
        (memory.fill (i32.const 12288) (i32.const 9) (i32.const 5000)) unreachable)
      (func (export "canister_query peek") (param)
        (call $msg_reply_data_append (i32.const 8192) (i32.const 8)) call $msg_reply)
      (func (export "canister_query peek_fill")
        (call $msg_reply_data_append (i32.const 12288) (i32.const 8)) call $msg_reply)"#;
    let mut canister = install(items);
    // 1 + const + const + store = 4; page 1 written (with the zero it already
    // held) counts as dirtied, as on the replica: + 1000 (§4).
    assert_eq!(canister.update("same", &[], ANONYMOUS).instructions, 1004);
    // A host function's write to the heap dirties its page too:
    // 1 + 3 consts + call 5 = 9, + 500 + 3, + 1 page × 1000.
    assert_eq!(
        canister.update("copy_arg", b"abc", ANONYMOUS).instructions,
        1512
    );
    assert_eq!(reply_u64(&canister.query("peek", &[], ANONYMOUS)), 0x636261);
    // Writes by host functions and by bulk memory operations are rolled back.
    assert!(canister
        .update("copy_then_trap", b"xyz", ANONYMOUS)
        .reply
        .is_err());
    assert_eq!(reply_u64(&canister.query("peek", &[], ANONYMOUS)), 0x636261);
    assert!(canister
        .update("fill_then_trap", &[], ANONYMOUS)
        .reply
        .is_err());
    assert_eq!(reply_u64(&canister.query("peek_fill", &[], ANONYMOUS)), 0);
}

#[test]
fn lists_methods() {
    let canister = install(
        r#"(func (export "canister_query a")) (func (export "canister_update b"))
           (func (export "canister_composite_query c")) (func (export "other"))"#,
    );
    let mut queries = canister.query_methods();
    queries.sort();
    assert_eq!(queries, vec!["a".to_string(), "c".to_string()]);
    assert_eq!(canister.update_methods(), vec!["b".to_string()]);
}

#[test]
fn a_snapshot_puts_back_heap_globals_and_stable_memory() {
    let wasm = module(&state_items(""));
    let mut canister = install_wasm(&wasm);
    canister.update("inc", &[], ANONYMOUS);
    let snapshot = canister.snapshot();
    canister.update("inc", &[], ANONYMOUS);
    canister.update("inc", &[], ANONYMOUS);
    assert_eq!(read(&mut canister, "heap"), 10);
    canister.restore(&snapshot).expect("restores");
    assert_eq!(read(&mut canister, "heap"), 8);
    assert_eq!(read(&mut canister, "calls"), 1);
    assert_eq!(read(&mut canister, "stable"), 8);
    // The same state in another canister of the same module, here with trace hooks.
    let options = icrun::Options {
        tracing: true,
        ..icrun::Options::default()
    };
    let mut traced = install_with_options(&wasm, options);
    traced
        .restore(&snapshot)
        .expect("restores into a traced instance");
    assert_eq!(reply_u64(&traced.update("inc", &[], ANONYMOUS)), 9);
    // Not into a canister of another module.
    let mut other = install("");
    assert!(other.restore(&snapshot).is_err());
}
